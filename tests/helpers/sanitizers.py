"""Building C under AddressSanitizer + UBSan and under the strict warning flags: the flags,
a main() that runs a generated model over a file of inputs, the sanitized kernels."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.env import REPO

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


def need_gcc():
    if shutil.which("gcc") is None:
        if os.environ.get("CI"):
            pytest.fail("gcc is missing (CI is set)")
        pytest.skip("gcc is missing")


def run_tool(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def asan_runtime_objects(d):
    """The runtime kernels compiled with the sanitizers into d (once per session:
    the asan_runtime_objs fixture of tests/conftest.py)."""
    need_gcc()
    objs = []
    for src in RUNTIME_SRCS:
        obj = d / (src.stem + ".o")
        p = run_tool(["gcc", *SAN_FLAGS, *BASE_FLAGS, f"-I{RUNTIME_INC}", "-c", src, "-o", obj])
        assert p.returncode == 0, f"{src.name}:\n{p.stdout}{p.stderr}"
        objs.append(obj)
    return objs


def strict_compile(srcs, includes, outdir):
    """Returns the list of warning/error lines (empty when clean)."""
    lines = []
    for src in srcs:
        p = run_tool(["gcc", "-std=c99", "-O2", "-ffp-contract=off", *STRICT_FLAGS,
                      *[f"-I{i}" for i in includes], "-c", src,
                      "-o", Path(outdir) / (Path(src).stem + ".o")])
        if p.returncode != 0:
            diag = [ln for ln in p.stderr.splitlines() if ": error:" in ln or ": warning:" in ln]
            lines += diag or [f"{Path(src).name}: exit {p.returncode}: {p.stderr.strip()[:300]}"]
    return lines
