"""Bad input: one line naming the file (and node), exit 2, no traceback, no output."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.helpers.cli import assert_clean_error, run_cli


def float_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    node = helper.make_node("Relu", ["x"], ["y"], name="relu0")
    m = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, path)


def unsupported_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.INT8, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.INT8, [1, 4])
    s = helper.make_tensor("s", TensorProto.FLOAT, [], [0.1])
    z = helper.make_tensor("z", TensorProto.INT8, [], [0])
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"], name="dq"),
        helper.make_node("Cos", ["xf"], ["e"], name="cos_node"),  # no float fallback form
        helper.make_node("Sin", ["e"], ["e2"], name="sin_node"),
        helper.make_node("QuantizeLinear", ["e2", "s", "z"], ["y"], name="q"),
    ]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [s, z]),
                          opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, path)


@pytest.mark.parametrize("case", ["missing", "not_onnx", "float", "unsupported"])
def test_bad_model_gives_one_line_error_and_no_output(case, tmp_path):
    model = tmp_path / f"{case}.onnx"
    needles = [str(model)]
    if case == "not_onnx":
        model.write_bytes(b"this is not a protobuf \x00\x01\x02 at all" * 10)
    elif case == "float":  # one line for the whole model, not one per node
        float_model(model)
        needles += ["float model", "tinyaot quantize"]
    elif case == "unsupported":
        unsupported_model(model)
        needles += ["cos_node", "sin_node", "Cos", "Sin"]
    out = tmp_path / "out"
    proc = run_cli("compile", model, "-o", out)
    assert_clean_error(proc, *needles)
    assert not out.exists()
    assert not any(p.name.startswith(".tinyaot-") for p in tmp_path.iterdir())


def test_bad_golden_and_board(tmp_path, default_model):
    model, golden = default_model
    proc = run_cli("verify", model, "--golden", tmp_path / "nope.npz")
    assert_clean_error(proc, "nope.npz")
    np.savez(tmp_path / "g.npz", inputs=np.zeros((2, 64), np.int8))
    proc = run_cli("verify", model, "--golden", tmp_path / "g.npz")
    assert_clean_error(proc, "outputs")
    proc = run_cli("verify", model, "--golden", golden, "--board", "nosuchboard")
    assert_clean_error(proc, "nosuchboard")


def test_compile_writes_c_header_and_report(tmp_path, default_model):
    model, _ = default_model
    out = tmp_path / "gen"
    proc = run_cli("compile", model, "-o", out)
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == ["digits_cnn_int8.c", "digits_cnn_int8.h", "report.json",
                     "tinyaot_model_config.h"]  # the kernels' specializations (kernels/specialize.py)
    h = (out / "digits_cnn_int8.h").read_text()
    assert "int digits_cnn_int8_run(const int8_t *input, int8_t *output);" in h
    for macro in ("ARENA_SIZE", "INPUT_SCALE", "INPUT_ZERO_POINT", "OUTPUT_SCALE", "OUTPUT_ZERO_POINT"):
        assert f"DIGITS_CNN_INT8_{macro}" in h
    src = (out / "digits_cnn_int8.c").read_text()
    assert "malloc" not in src and "stdio" not in src and "printf" not in src
    assert "static int8_t digits_cnn_int8_arena[" in src and "aligned(16)" in src


def test_run_writes_outputs_equal_to_golden(tmp_path, default_model, default_golden):
    model, _ = default_model
    inp = tmp_path / "in.npz"
    np.savez(inp, inputs=default_golden["inputs"][:5])
    out = tmp_path / "out.npz"
    proc = run_cli("run", model, "--board", "host", "--inputs", inp, "-o", out)
    assert proc.returncode == 0, proc.stderr
    got = np.load(out)["outputs"]
    np.testing.assert_array_equal(got.reshape(5, -1), default_golden["outputs"][:5].reshape(5, -1))
