"""The suite's own layout (docs/testing.md): test files sit in one folder per layer, and no
module under tests/ imports a test module (or conftest.py): what tests share lives in
tests/helpers/.

The imports are read from the source with `ast`, inside functions too, so an
`import test_x` deep in a test body is found like one at the top.
"""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# The layers of docs/testing.md; a new folder goes here and there.
LAYERS = {"architecture", "ops", "kernels", "numerics", "frontend", "planner", "end_to_end",
          "firmware", "driver"}


def _is_test_module(name):
    last = name.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def imported_test_modules(source):
    """The test modules (or conftest) that `source` imports, as written."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if _is_test_module(a.name)]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            if node.module and _is_test_module(node.module):
                found.append(base)
            else:  # from tests.ops import test_concat / from . import test_concat
                found += [f"{base}.{a.name}" if node.module else base + a.name
                          for a in node.names if _is_test_module(a.name)]
    return found


def test_no_module_imports_a_test_module():
    bad = []
    for path in sorted(TESTS.rglob("*.py")):
        for name in imported_test_modules(path.read_text()):
            bad.append(f"{path.relative_to(TESTS)} imports {name}")
    assert not bad, ("move what is shared into tests/helpers/ and import it from there:\n"
                     + "\n".join(bad))


def test_detector_sees_every_form_of_import():
    src = """
import os
from tests.helpers.env import REPO
def f():
    import test_a
    from test_b import x
    from tests.ops.test_c import y
    from tests.ops import test_d, helper
    from . import test_e
    from .test_f import z
    import tests.ops.test_g as g
    from conftest import REPO
"""
    assert imported_test_modules(src) == [
        "test_a", "test_b", "tests.ops.test_c", "tests.ops.test_d", ".test_e", ".test_f",
        "tests.ops.test_g", "conftest"]


def test_test_files_sit_in_a_layer_folder():
    misplaced = [str(p.relative_to(TESTS)) for p in sorted(TESTS.rglob("test_*.py"))
                 if p.parent.parent != TESTS or p.parent.name not in LAYERS]
    assert not misplaced, (f"test files outside the layer folders {sorted(LAYERS)} "
                           f"(docs/testing.md says where each kind of test goes): {misplaced}")


def test_every_layer_folder_is_a_package():
    # tests/ and each layer are packages, so two layers may hold files of the same name
    # (tests.ops.test_concat, tests.planner.test_concat) without clashing in sys.modules.
    folders = {p.name for p in TESTS.iterdir()
               if p.is_dir() and any(p.glob("test_*.py"))}
    assert folders <= LAYERS, sorted(folders - LAYERS)
    missing = [d for d in sorted(LAYERS | {"helpers"}) + ["."]
               if not (TESTS / d / "__init__.py").exists()]
    assert not missing, missing
