"""The planner's C variants (in place, poison, --io-buffers arena) under ASan/UBSan
and the strict warning flags: exact, clean, warning-free."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from codegen.compiler import compile_model, write_outputs

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, shared_model
from tests.helpers.sanitizers import (BASE_FLAGS, MAIN_C, RUNTIME_INC, SAN_ENV, SAN_FLAGS, run_tool,
                                      strict_compile)

# one worker builds the sanitized kernels for every ASan test (pytest-xdist)
pytestmark = pytest.mark.xdist_group("asan")

CASES = [pytest.param("default", "ort", "user", id="default-user"),
         pytest.param("default", "ort", "arena", id="default-arena"),
         pytest.param("ic01", "tflite", "arena", id="ic01-arena", marks=pytest.mark.shared)]


@pytest.mark.parametrize("key,numerics,io", CASES)
def test_poisoned_asan_build_is_exact_and_clean(key, numerics, io, asan_runtime_objs, tmp_path):
    if key == "default":
        path, golden, gkey = DEFAULT_MODEL, DEFAULT_GOLDEN, "outputs"
    else:
        (path, golden), gkey = shared_model(key), "outputs_tflm"
    gold = np.load(golden)
    inputs, expected = gold["inputs"], gold[gkey]
    c = compile_model(path, numerics=numerics, io_buffers=io)
    name = c.module.name
    gen = Path(write_outputs(c, tmp_path / "gen"))
    assert not strict_compile([gen / f"{name}.c"], [RUNTIME_INC, gen], tmp_path)
    (gen / "main.c").write_text(MAIN_C.format(name=name, NAME=name.upper()))
    exe = tmp_path / (name + "_asan")
    p = run_tool(["gcc", *SAN_FLAGS, *BASE_FLAGS, "-DTINYAOT_POISON_BYTE=0xA5", f"-I{RUNTIME_INC}",
                  f"-I{gen}", gen / f"{name}.c", gen / "main.c", *asan_runtime_objs, "-lm", "-o",
                  exe])
    assert p.returncode == 0, p.stdout + p.stderr
    flat = np.ascontiguousarray(inputs.astype(np.int8).reshape(len(inputs), -1))
    fin, fout = tmp_path / "in.bin", tmp_path / "out.bin"
    fin.write_bytes(flat.tobytes())
    p = run_tool([exe, fin, fout, len(flat)], env=dict(os.environ, **SAN_ENV), timeout=120)
    report = (p.stdout + p.stderr).strip()
    assert p.returncode == 0 and report == "", report[-4000:]
    outs = np.frombuffer(fout.read_bytes(), dtype=np.int8)
    np.testing.assert_array_equal(outs.reshape(expected.shape), expected)
