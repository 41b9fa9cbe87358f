"""`tinyaot compile --dump-ir` of the five shared models, checked in as
regression fixtures (tests/frontend/fixtures/dump_ir/<model>.txt).

A change to the frontend or a pass that changes the IR shows up here as a
diff. If the change is intended, regenerate and review the diff:

    TINYAOT_REGEN_DUMP_IR=1 python -m pytest tests/frontend/test_shared_models_ir.py
"""
import os
from pathlib import Path

import pytest

from codegen.compiler import compile_model

from tests.helpers.env import SHARED_MODELS, shared_model

FIXTURES = Path(__file__).parent / "fixtures" / "dump_ir"
REGEN = "TINYAOT_REGEN_DUMP_IR"


def dump_ir(model_path):
    """The text `tinyaot compile --dump-ir` prints (ort numerics), paths stripped."""
    dumps = []
    compile_model(model_path, numerics="ort",
                  dump=lambda title, g: dumps.append(f"== after {title} ==\n{g.dump()}"))
    return "\n".join(dumps) + "\n"


@pytest.mark.shared
@pytest.mark.parametrize("key", sorted(SHARED_MODELS))
def test_dump_ir_matches_fixture(key):
    onnx_path, _ = shared_model(key)
    text = dump_ir(onnx_path)
    path = FIXTURES / f"{key}.txt"
    if os.environ.get(REGEN):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if not path.exists():
        pytest.fail(f"{path} is missing: run with {REGEN}=1 to create it")
    want = path.read_text()
    if text != want:
        import difflib
        diff = "".join(list(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                                 "fixture", "now"))[:60])
        pytest.fail(f"--dump-ir of {key} changed (if intended: {REGEN}=1):\n{diff}")
