"""--input-shape on every command that reads a model (issue: symbolic batch dimensions).

A model whose batch dimension is symbolic ('N', as exporters write it) is refused by each
command with one line that says which --input-shape to give; with it, each command works
and names the user's own file, never its private copy, in what it prints.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, REPO


def cli(*args):
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO)


@pytest.fixture(scope="module")
def symbolic(tmp_path_factory):
    m = onnx.load(str(DEFAULT_MODEL))
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.shape.dim[0].dim_param = "N"
    del m.graph.value_info[:]
    path = tmp_path_factory.mktemp("sym") / "digits_symbolic.onnx"
    onnx.save(m, str(path))
    return path


SHAPE = "input=1,1,8,8"


def _commands(path, out):
    return {
        "verify": ["verify", path, "--golden", DEFAULT_GOLDEN],
        "run": ["run", path, "--inputs", DEFAULT_GOLDEN, "-o", out / "out.npz"],
        "golden": ["golden", path, "--inputs", DEFAULT_GOLDEN, "-o", out / "g.npz"],
        "validate": ["validate", path, "--inputs", DEFAULT_GOLDEN],
        "export": ["export", path, "--board", "qemu-m4", "--no-measure", "-o", out / "exp"],
    }


@pytest.mark.parametrize("cmd", ["verify", "run", "golden", "validate", "export"])
def test_symbolic_batch_needs_and_takes_input_shape(cmd, symbolic, tmp_path):
    args = _commands(symbolic, tmp_path)[cmd]
    p = cli(*args)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "--input-shape input=1,1,8,8" in p.stderr and "Traceback" not in p.stderr
    p = cli(*args, "--input-shape", SHAPE)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "tinyaot-input-shape-" not in p.stdout + p.stderr  # the copy is never shown
    if cmd == "verify":
        assert "64/64 vectors bit-exact" in p.stdout
    if cmd == "golden":
        made = np.load(tmp_path / "g.npz")
        np.testing.assert_array_equal(made["outputs_onnxruntime"],
                                      np.load(DEFAULT_GOLDEN)["outputs_onnxruntime"])
        assert str(symbolic) in p.stdout


def test_input_shape_json_and_errors_name_the_users_file(symbolic, tmp_path):
    p = cli("run", symbolic, "--inputs", DEFAULT_GOLDEN, "-o", tmp_path / "o.npz", "--json",
            "--input-shape", SHAPE)
    assert p.returncode == 0 and json.loads(p.stdout)["model"] == str(symbolic)
    p = cli("verify", symbolic, "--golden", DEFAULT_GOLDEN, "--input-shape", "inp=1,1,8,8")
    assert p.returncode == 2 and str(symbolic) in p.stderr and "inputs are: input" in p.stderr
    p = cli("verify", symbolic, "--golden", DEFAULT_GOLDEN, "--input-shape", "input=1,0,8,8")
    assert p.returncode == 2 and "every dimension must be > 0" in p.stderr
    assert not [d for d in os.listdir(os.path.dirname(str(tmp_path))) if "input-shape" in d]


def test_report_takes_input_shape(symbolic):
    p = cli("report", symbolic, "--board", "qemu-m4", "--input-shape", SHAPE, "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["model"] == str(symbolic) and r["totals"]["arena_bytes"] > 0


def test_quantize_takes_input_shape(tmp_path):
    f32 = onnx.load(str(REPO / "models" / "digits_cnn_f32.onnx"))
    for v in list(f32.graph.input) + list(f32.graph.output):
        v.type.tensor_type.shape.dim[0].dim_param = "batch"
    del f32.graph.value_info[:]
    src = tmp_path / "f32_symbolic.onnx"
    onnx.save(f32, str(src))
    calib = tmp_path / "calib.npz"
    np.savez(calib, inputs=np.random.default_rng(0).random((8, 1, 8, 8)).astype(np.float32))
    out = tmp_path / "q.onnx"
    p = cli("quantize", src, "--calib", calib, "-o", out, "--input-shape", "input=1,1,8,8")
    assert p.returncode == 0, p.stderr
    q = onnx.load(str(out))
    assert [d.dim_value for d in q.graph.input[0].type.tensor_type.shape.dim] == [1, 1, 8, 8]
    p = cli("compile", out, "-o", tmp_path / "gen")
    assert p.returncode == 0, p.stderr
