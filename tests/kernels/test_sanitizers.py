"""Generated C + runtime under AddressSanitizer/UBSan, and strict warnings.

The sanitized code is NOT loaded into the pytest process (ASan would need
its runtime preloaded): each model is linked into a small standalone
executable that reads the golden inputs from a binary file, calls
<name>_run on each one and writes the outputs to another binary file.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from codegen.compiler import compile_model, write_outputs

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, SHARED_MODELS, shared_model
from tests.helpers.sanitizers import (BASE_FLAGS, MAIN_C, RUNTIME_INC, RUNTIME_SRCS, SAN_ENV,
                                      SAN_FLAGS, need_gcc, run_tool, strict_compile)

# one worker builds the sanitized kernels for every ASan test (pytest-xdist)
pytestmark = pytest.mark.xdist_group("asan")

GOLDEN_KEY = {"ort": "outputs_onnxruntime", "tflite": "outputs_tflm"}
CASES = [pytest.param("default", "ort", id="default-ort")] + [
    pytest.param(k, n, id=f"{k}-{n}", marks=pytest.mark.shared)
    for k in sorted(SHARED_MODELS) for n in ("ort", "tflite")]


def _model_and_golden(key, numerics):
    if key == "default":
        path, golden = DEFAULT_MODEL, DEFAULT_GOLDEN
        gkey = "outputs"
    else:
        path, golden = shared_model(key)
        gkey = GOLDEN_KEY[numerics]
    g = np.load(golden)
    return path, np.asarray(g["inputs"]), np.asarray(g[gkey])


@pytest.fixture(scope="session")
def compiled_cache():
    return {}


def _compiled(cache, key, numerics):
    if (key, numerics) not in cache:
        path, inputs, expected = _model_and_golden(key, numerics)
        cache[(key, numerics)] = (compile_model(path, numerics=numerics), inputs, expected)
    return cache[(key, numerics)]


@pytest.mark.parametrize("key,numerics", CASES)
def test_asan_ubsan_bit_exact(key, numerics, asan_runtime_objs, compiled_cache, tmp_path):
    c, inputs, expected = _compiled(compiled_cache, key, numerics)
    name = c.module.name
    gen = Path(write_outputs(c, tmp_path / "gen"))
    (gen / "main.c").write_text(MAIN_C.format(name=name, NAME=name.upper()))
    exe = tmp_path / (name + "_asan")
    p = run_tool(["gcc", *SAN_FLAGS, *BASE_FLAGS, f"-I{RUNTIME_INC}", f"-I{gen}",
                 gen / f"{name}.c", gen / "main.c", *asan_runtime_objs, "-lm", "-o", exe])
    assert p.returncode == 0, f"sanitized build failed:\n{p.stdout}{p.stderr}"

    g = c.graph
    in_size = g.tensors[g.inputs[0]].size
    out_size = g.tensors[g.outputs[0]].size
    flat = np.ascontiguousarray(inputs.astype(np.int8).reshape(len(inputs), -1))
    assert flat.shape[1] == in_size
    fin, fout = tmp_path / "in.bin", tmp_path / "out.bin"
    fin.write_bytes(flat.tobytes())
    env = dict(os.environ, **SAN_ENV)
    p = run_tool([exe, fin, fout, len(flat)], env=env, timeout=120)
    report = (p.stdout + p.stderr).strip()
    assert p.returncode == 0, f"exit {p.returncode}:\n{report[-6000:]}"
    assert report == "", f"sanitizer output:\n{report[-6000:]}"

    outs = np.frombuffer(fout.read_bytes(), dtype=np.int8)
    assert outs.size == len(flat) * out_size
    outs = outs.reshape(len(flat), out_size)
    np.testing.assert_array_equal(outs.reshape(expected.shape), expected)


# --- strict warnings (compile only) ------------------------------------------------

def test_runtime_strict_warnings(tmp_path):
    need_gcc()
    diag = strict_compile(RUNTIME_SRCS, [RUNTIME_INC], tmp_path)
    assert not diag, f"{len(diag)} diagnostics, first:\n" + "\n".join(diag[:10])


@pytest.mark.parametrize("key,numerics", CASES)
def test_generated_c_strict_warnings(key, numerics, compiled_cache, tmp_path):
    need_gcc()
    c, _, _ = _compiled(compiled_cache, key, numerics)
    gen = Path(write_outputs(c, tmp_path / "gen"))
    diag = strict_compile([gen / f"{c.module.name}.c"], [RUNTIME_INC, gen], tmp_path)
    assert not diag, f"{len(diag)} diagnostics, first:\n" + "\n".join(diag[:10])


# --- self-checks: the harness above really catches what it claims to --------------

@pytest.mark.parametrize("bug", ["heap-overflow", "signed-overflow", "leak"])
def test_sanitizer_setup_catches_bugs(bug, tmp_path):
    """A planted bug must give a non-zero exit and a report with these exact
    flags and options (so an empty report above means something)."""
    need_gcc()
    body = {
        "heap-overflow": "int8_t *p = malloc(8); volatile int i = 8; int r = p[i]; free(p); return r;",
        "signed-overflow": "volatile int32_t x = INT32_MAX; int32_t y = x + (int32_t)(argc > 0); return y == 0;",
        "leak": "int8_t *volatile p = malloc(64); p[0] = 1; p = 0; return 0;",
    }[bug]
    src = tmp_path / "bug.c"
    src.write_text("#include <stdint.h>\n#include <stdlib.h>\n"
                   "int main(int argc, char **argv) { (void)argv; " + body + " }\n")
    exe = tmp_path / "bug"
    p = run_tool(["gcc", *SAN_FLAGS, "-std=c99", "-ffp-contract=off", src, "-o", exe])
    assert p.returncode == 0, p.stderr
    p = run_tool([exe], env=dict(os.environ, **SAN_ENV), timeout=60)
    assert p.returncode != 0
    assert ("AddressSanitizer" in p.stderr or "LeakSanitizer" in p.stderr
            or "runtime error" in p.stderr), p.stderr


def test_strict_flags_catch_conversion(tmp_path):
    need_gcc()
    src = tmp_path / "conv.c"
    src.write_text("#include <stdint.h>\nint8_t f(int32_t x) { return x; }\n")
    diag = strict_compile([src], [], tmp_path)
    assert diag and "conversion" in diag[0], diag
    src.write_text("int g(int x) { int y = x; { int x = y + 1; y = x; } return y; }\n")
    diag = strict_compile([src], [], tmp_path)
    assert diag and "shadow" in diag[0], diag
