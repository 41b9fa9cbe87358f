"""runtime_c's layout holds (runtime_c/README.md): include/ is exactly the
public API the generated C includes, one kernel per file named after it, the
helpers and .inc parts reached only from inside the kernel library."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from codegen.compiler import compile_model
from codegen.paths import BOARDS_DIR, REPO_ROOT, RUNTIME_INCLUDE, RUNTIME_INTERNAL, RUNTIME_SRC
from codegen.paths import runtime_sources

from tests.helpers.env import DEFAULT_MODEL

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def test_include_holds_exactly_what_the_generated_c_includes():
    public = {p.name for p in RUNTIME_INCLUDE.iterdir()}
    seen = set()
    for numerics in ("ort", "tflite"):
        for optimize in ("speed", "size"):
            c = compile_model(DEFAULT_MODEL, numerics=numerics, optimize=optimize)
            seen |= {h for h in INCLUDE_RE.findall(c.module.source) if h.startswith("tinyaot_")}
    assert public == seen == {"tinyaot_kernels.h", "tinyaot_fast_kernels.h"}


def test_one_kernel_per_file_named_after_it(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found")
    srcs = runtime_sources()
    assert len({p.name for p in srcs}) == len(srcs), "two kernel files share a name"
    api = "".join(p.read_text() for p in RUNTIME_INCLUDE.glob("*.h"))
    obj = tmp_path / "k.o"
    for src in srcs:
        assert src.parent.parent == RUNTIME_SRC and src.parent != RUNTIME_INTERNAL, src
        subprocess.run(["gcc", "-std=c99", "-O0", f"-I{RUNTIME_INCLUDE}", "-c", str(src),
                        "-o", str(obj)], check=True)
        nm = subprocess.run(["nm", "-g", "--defined-only", str(obj)], capture_output=True,
                            text=True, check=True).stdout
        defined = {ln.split()[-1] for ln in nm.splitlines() if ln.strip()}
        assert defined in ({src.stem}, {src.stem, src.stem + "_get_buffer_size"}), (src, defined)
        for sym in defined:
            assert re.search(rf"\b{sym}\s*\(", api), f"{sym} is not declared in runtime_c/include"


def test_parts_and_helpers_stay_inside_the_library():
    files = [p for p in RUNTIME_SRC.rglob("*") if p.is_file()]
    included = {}
    for f in files:
        for inc in INCLUDE_RE.findall(f.read_text()):
            target = (f.parent / inc).resolve()
            if target.is_file():
                included.setdefault(target, []).append(f)
    # every internal header is reached by a relative path from inside src/
    for h in RUNTIME_INTERNAL.glob("*.h"):
        assert h.resolve() in included, f"{h.name} is included by no kernel"
    # a .inc part: one includer, the entry whose name it extends, in its folder
    for part in RUNTIME_SRC.rglob("*.inc"):
        by = included.get(part.resolve(), [])
        assert len(by) == 1 and by[0].suffix == ".c" and by[0].parent == part.parent and \
            part.stem.startswith(by[0].stem + "_"), (part, by)
    # outside runtime_c (compiler, boards) nothing names an internal file
    internal = {p.name for p in RUNTIME_INTERNAL.iterdir()} | \
        {p.name for p in RUNTIME_SRC.rglob("*.inc")}
    for f in list((REPO_ROOT / "codegen").rglob("*")) + list(BOARDS_DIR.rglob("*")):
        if f.is_file() and f.suffix in (".py", ".c", ".h"):
            for inc in INCLUDE_RE.findall(f.read_text()):
                assert inc not in internal, f"{f} includes the internal {inc}"
