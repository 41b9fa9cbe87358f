"""Generated C + runtime under AddressSanitizer/UBSan, and strict warnings.

The sanitized code is NOT loaded into the pytest process (ASan would need
its runtime preloaded): each model is linked into a small standalone
executable that reads the golden inputs from a binary file, calls
<name>_run on each one and writes the outputs to another binary file.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from codegen.compiler import compile_model, write_outputs

from conftest import DEFAULT_GOLDEN, DEFAULT_MODEL, REPO, SHARED_MODELS, shared_model

# one worker builds the sanitized kernels for every ASan test (pytest-xdist)
pytestmark = pytest.mark.xdist_group("asan")

RUNTIME_INC = REPO / "runtime_c" / "include"
RUNTIME_SRCS = sorted((REPO / "runtime_c" / "src").rglob("*.c"), key=lambda p: p.name)

BASE_FLAGS = ["-std=c99", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror"]
SAN_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer", "-O1", "-g"]
STRICT_FLAGS = ["-Wall", "-Wextra", "-Werror", "-Wconversion", "-Wshadow"]

SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}

GOLDEN_KEY = {"ort": "outputs_onnxruntime", "tflite": "outputs_tflm"}
CASES = [pytest.param("default", "ort", id="default-ort")] + [
    pytest.param(k, n, id=f"{k}-{n}", marks=pytest.mark.shared)
    for k in sorted(SHARED_MODELS) for n in ("ort", "tflite")]

MAIN_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "{name}.h"

int main(int argc, char **argv)
{{
    if (argc != 4) {{
        fprintf(stderr, "usage: %s IN OUT N\n", argv[0]);
        return 2;
    }}
    long n = strtol(argv[3], NULL, 10);
    FILE *fin = fopen(argv[1], "rb");
    FILE *fout = fopen(argv[2], "wb");
    if (!fin || !fout) {{
        fprintf(stderr, "cannot open files\n");
        return 2;
    }}
    /* heap buffers of the exact sizes, so ASan catches any overrun of the
     * caller's input/output buffers */
    int8_t *in = (int8_t *)malloc({NAME}_INPUT_SIZE);
    int8_t *out = (int8_t *)malloc({NAME}_OUTPUT_SIZE);
    if (!in || !out) return 2;
    int rc = 0;
    for (long i = 0; i < n; i++) {{
        if (fread(in, 1, {NAME}_INPUT_SIZE, fin) != {NAME}_INPUT_SIZE) {{
            fprintf(stderr, "short read at vector %ld\n", i);
            rc = 2;
            break;
        }}
        int st = {name}_run(in, out);
        if (st != 0) {{
            fprintf(stderr, "vector %ld: status %d\n", i, st);
            rc = 3;
        }}
        if (fwrite(out, 1, {NAME}_OUTPUT_SIZE, fout) != {NAME}_OUTPUT_SIZE) {{
            rc = 2;
            break;
        }}
    }}
    free(in);
    free(out);
    fclose(fin);
    if (fclose(fout) != 0) rc = 2;
    return rc;
}}
"""


def _need_gcc():
    if shutil.which("gcc") is None:
        if os.environ.get("CI"):
            pytest.fail("gcc is missing (CI is set)")
        pytest.skip("gcc is missing")


def _model_and_golden(key, numerics):
    if key == "default":
        path, golden = DEFAULT_MODEL, DEFAULT_GOLDEN
        gkey = "outputs"
    else:
        path, golden = shared_model(key)
        gkey = GOLDEN_KEY[numerics]
    g = np.load(golden)
    return path, np.asarray(g["inputs"]), np.asarray(g[gkey])


def _run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def asan_runtime_objects(d):
    """The runtime kernels compiled with the sanitizers into d (once per session:
    the asan_runtime_objs fixture of conftest.py)."""
    _need_gcc()
    objs = []
    for src in RUNTIME_SRCS:
        obj = d / (src.stem + ".o")
        p = _run(["gcc", *SAN_FLAGS, *BASE_FLAGS, f"-I{RUNTIME_INC}", "-c", src, "-o", obj])
        assert p.returncode == 0, f"{src.name}:\n{p.stdout}{p.stderr}"
        objs.append(obj)
    return objs


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
    p = _run(["gcc", *SAN_FLAGS, *BASE_FLAGS, f"-I{RUNTIME_INC}", f"-I{gen}",
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
    p = _run([exe, fin, fout, len(flat)], env=env, timeout=120)
    report = (p.stdout + p.stderr).strip()
    assert p.returncode == 0, f"exit {p.returncode}:\n{report[-6000:]}"
    assert report == "", f"sanitizer output:\n{report[-6000:]}"

    outs = np.frombuffer(fout.read_bytes(), dtype=np.int8)
    assert outs.size == len(flat) * out_size
    outs = outs.reshape(len(flat), out_size)
    np.testing.assert_array_equal(outs.reshape(expected.shape), expected)


# --- strict warnings (compile only) ------------------------------------------------

def _strict_compile(srcs, includes, outdir):
    """Returns the list of warning/error lines (empty when clean)."""
    lines = []
    for src in srcs:
        p = _run(["gcc", "-std=c99", "-O2", "-ffp-contract=off", *STRICT_FLAGS,
                  *[f"-I{i}" for i in includes], "-c", src, "-o", Path(outdir) / (Path(src).stem + ".o")])
        if p.returncode != 0:
            diag = [ln for ln in p.stderr.splitlines() if ": error:" in ln or ": warning:" in ln]
            lines += diag or [f"{Path(src).name}: exit {p.returncode}: {p.stderr.strip()[:300]}"]
    return lines


def test_runtime_strict_warnings(tmp_path):
    _need_gcc()
    diag = _strict_compile(RUNTIME_SRCS, [RUNTIME_INC], tmp_path)
    assert not diag, f"{len(diag)} diagnostics, first:\n" + "\n".join(diag[:10])


@pytest.mark.parametrize("key,numerics", CASES)
def test_generated_c_strict_warnings(key, numerics, compiled_cache, tmp_path):
    _need_gcc()
    c, _, _ = _compiled(compiled_cache, key, numerics)
    gen = Path(write_outputs(c, tmp_path / "gen"))
    diag = _strict_compile([gen / f"{c.module.name}.c"], [RUNTIME_INC, gen], tmp_path)
    assert not diag, f"{len(diag)} diagnostics, first:\n" + "\n".join(diag[:10])


# --- self-checks: the harness above really catches what it claims to --------------

@pytest.mark.parametrize("bug", ["heap-overflow", "signed-overflow", "leak"])
def test_sanitizer_setup_catches_bugs(bug, tmp_path):
    """A planted bug must give a non-zero exit and a report with these exact
    flags and options (so an empty report above means something)."""
    _need_gcc()
    body = {
        "heap-overflow": "int8_t *p = malloc(8); volatile int i = 8; int r = p[i]; free(p); return r;",
        "signed-overflow": "volatile int32_t x = INT32_MAX; int32_t y = x + (int32_t)(argc > 0); return y == 0;",
        "leak": "int8_t *volatile p = malloc(64); p[0] = 1; p = 0; return 0;",
    }[bug]
    src = tmp_path / "bug.c"
    src.write_text("#include <stdint.h>\n#include <stdlib.h>\n"
                   "int main(int argc, char **argv) { (void)argv; " + body + " }\n")
    exe = tmp_path / "bug"
    p = _run(["gcc", *SAN_FLAGS, "-std=c99", "-ffp-contract=off", src, "-o", exe])
    assert p.returncode == 0, p.stderr
    p = _run([exe], env=dict(os.environ, **SAN_ENV), timeout=60)
    assert p.returncode != 0
    assert ("AddressSanitizer" in p.stderr or "LeakSanitizer" in p.stderr
            or "runtime error" in p.stderr), p.stderr


def test_strict_flags_catch_conversion(tmp_path):
    _need_gcc()
    src = tmp_path / "conv.c"
    src.write_text("#include <stdint.h>\nint8_t f(int32_t x) { return x; }\n")
    diag = _strict_compile([src], [], tmp_path)
    assert diag and "conversion" in diag[0], diag
    src.write_text("int g(int x) { int y = x; { int x = y + 1; y = x; } return y; }\n")
    diag = _strict_compile([src], [], tmp_path)
    assert diag and "shadow" in diag[0], diag
