"""The float fallback as a user meets it (tinyaot compile / report / run):

* a model with a LogSoftmax between DQ and Q compiles, with exactly one warning line on
  stderr naming the node and the option that refuses it; report.json and `tinyaot report`
  list the layer run in float32 (its node, ONNX op, kernel);
* `--no-float-fallback` keeps the error: exit 2, one line naming the model, the node and
  what to do, nothing written; on `run` and `report` as well;
* a model with no float node prints no warning and no float line.
"""
import json

import numpy as np
import pytest

from tests.helpers.cli import assert_clean_error, run_cli
from tests.helpers.env import DEFAULT_MODEL
from tests.helpers.float_models import gemm_softmax_float_out, softmax_qdq
from tests.helpers.qdq_builder import save


@pytest.fixture
def logsoftmax_model(tmp_path):
    return save(softmax_qdq("LogSoftmax", (2, 10)), tmp_path, "logsm.onnx")


def test_compile_warns_once_and_reports_the_float_layer(logsoftmax_model, tmp_path):
    out = tmp_path / "out"
    p = run_cli("compile", logsoftmax_model, "-o", out)
    assert p.returncode == 0, p.stderr
    warn = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(warn) == 1, p.stderr
    assert warn[0].startswith("tinyaot: warning: ")
    assert "LogSoftmax 'logsoftmax_4'" in warn[0] and "--no-float-fallback" in warn[0]
    rep = json.loads((out / "report.json").read_text())
    assert rep["float_fallback"] == [{"index": 1, "node": "logsoftmax_4",
                                      "onnx_op": "LogSoftmax", "op": "softmax_f32",
                                      "kernel": "tinyaot_softmax_f32"}]


def test_report_lists_the_float_layers(tmp_path):
    path = save(gemm_softmax_float_out(), tmp_path, "head.onnx")
    p = run_cli("report", path)
    assert p.returncode == 0, p.stderr
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("float")]
    assert line == ["float        1 layer(s) run in float32 (float fallback): "
                    "#2 Softmax 'softmax_21'"], p.stdout
    assert len([ln for ln in p.stderr.splitlines() if "warning" in ln]) == 1


@pytest.mark.parametrize("command", ["compile", "report", "run"])
def test_no_float_fallback_keeps_the_error(command, logsoftmax_model, tmp_path):
    out = tmp_path / "out"
    args = [command, logsoftmax_model, "--no-float-fallback"]
    if command == "compile":
        args += ["-o", out]
    if command == "run":
        x = np.zeros((1, 2, 10), np.int8)
        np.savez(tmp_path / "x.npz", inputs=x, outputs=x)
        args += ["--inputs", tmp_path / "x.npz", "-o", out / "y.npy"]
    p = run_cli(*args)
    assert_clean_error(p, "logsm.onnx", "LogSoftmax 'logsoftmax_4'",
                       "drop --no-float-fallback")
    assert "warning" not in p.stderr
    assert not out.exists() or not any(out.iterdir())


def test_integer_model_prints_no_float_fallback(tmp_path):
    out = tmp_path / "out"
    p = run_cli("compile", DEFAULT_MODEL, "-o", out)
    assert p.returncode == 0, p.stderr
    assert "float fallback" not in p.stderr
    assert "float_fallback" not in json.loads((out / "report.json").read_text())


@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_validate_and_verify_a_float_output(numerics, tmp_path):
    """A Softmax after the last DQ (float32 output): `validate` compares the float layers as
    bit patterns and the final output with the onnxruntime session; `verify` takes a golden
    with float32 outputs (onnxruntime's)."""
    from tests.helpers.qdq_builder import all_int8_inputs, run_ort
    path = save(gemm_softmax_float_out(), tmp_path, "head.onnx")
    x = all_int8_inputs((1, 16), 3, seed=9)[:, None]
    golden = tmp_path / "golden.npz"
    np.savez(golden, inputs=x, outputs=run_ort(path, x[:, 0])[:, None])
    p = run_cli("validate", path, "--inputs", golden, "--numerics", numerics)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "all 3 compared layers bit-exact" in p.stdout, p.stdout
    if numerics == "ort":
        assert "final output vs the onnxruntime session: 0 mismatching elements" in p.stdout
        p = run_cli("verify", path, "--golden", golden)
        assert p.returncode == 0 and "3/3 vectors bit-exact" in p.stdout, p.stdout + p.stderr
