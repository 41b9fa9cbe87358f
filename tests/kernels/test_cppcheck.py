"""cppcheck (static analysis) finds nothing in the generated C, runtime_c and the harness.

`--enable=warning,portability` with `--error-exitcode=1`: any error, warning
or portability finding fails. A file with a known out-of-bounds write checks
that cppcheck really runs and reports (this test can fail).
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from codegen.compiler import compile_model, write_outputs
from tests.helpers.env import DEFAULT_MODEL, REPO, shared_model

RUNTIME = REPO / "runtime_c"
FLAGS = ["-q", "--error-exitcode=1", "--enable=warning,portability", "--std=c99",
         "--language=c", "--inconclusive", "-D__GNUC__", "--suppress=missingIncludeSystem"]


def cppcheck(files, includes, defines=()):
    exe = shutil.which("cppcheck")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("cppcheck is missing (bootstrap.sh installs it; CI must not skip)")
        pytest.skip("cppcheck is missing")
    cmd = [exe, *FLAGS, *defines, *[f"-I{i}" for i in includes], *map(str, files)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_cppcheck_reports_a_real_bug(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("#include <stdint.h>\nint8_t f(void)\n{\n    int8_t a[4];\n"
                   "    for (int i = 0; i <= 4; i++) { a[i] = (int8_t)i; }\n    return a[0];\n}\n")
    p = cppcheck([bad], [])
    assert p.returncode == 1 and "arrayIndexOutOfBounds" in p.stderr + p.stdout or \
        "out of bounds" in p.stderr, p.stderr


def test_runtime_and_harness_are_clean():
    files = sorted((RUNTIME / "src").rglob("*.c")) + sorted((REPO / "boards" / "common").glob("*.c"))
    p = cppcheck(files, [RUNTIME / "include", REPO / "boards" / "common"],
                 ["-DTINYAOT_DUALTIMER_BASE=0x40002000u",   # boards/qemu-m4/board.toml
                  "-DTINYAOT_NRF51_TIMER_BASE=0x40008000u"])  # boards/nrf51822/board.toml
    assert p.returncode == 0, p.stderr + p.stdout


@pytest.mark.parametrize("model,numerics,integrity", [
    ("default", "ort", "sha256"), ("default", "tflite", "crc32"),
    ("kws01", "tflite", None),
])
def test_generated_c_is_clean(model, numerics, integrity, tmp_path):
    path = DEFAULT_MODEL if model == "default" else shared_model(model)[0]
    c = compile_model(path, numerics=numerics, integrity=integrity)
    gen = tmp_path / "gen"
    write_outputs(c, gen)
    p = cppcheck([gen / f"{c.module.name}.c"], [RUNTIME / "include", gen])
    assert p.returncode == 0, p.stderr + p.stdout
