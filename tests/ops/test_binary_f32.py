"""binary_f32: Add / Sub / Mul / Div on float32 tensors with broadcasting, run by the float
fallback where an operand is a float result or a float32 constant (no integer Add / Mul
takes them): a chain DQ -> Exp -> Mul(float const) -> Add(DQ of an int8 const) -> Div(DQ
result) -> Q, and the same chain ending in a float32 graph output.

* ort: the generated C on the host equals onnxruntime bit for bit (int8, and float32 output
  as bit patterns); every element is one IEEE operation;
* both: the C equals the operator's numpy oracle (tflite also clamps to +-FLT_MAX, as
  TFLite Micro's float ADD / SUB / MUL / DIV do);
* the layer's operand strides broadcast a [C, H, W] and a [W] constant onto [N, C, H, W].
"""
import numpy as np
import pytest

from tests.helpers.float_models import float_chain
from tests.helpers.qdq_builder import all_int8_inputs, host_run_checked, run_ort, save

KERNEL = "tinyaot_binary_f32"


@pytest.mark.parametrize("out_float", [False, True], ids=["int8_out", "float_out"])
def test_binary_f32_chain_ort_bit_exact_with_onnxruntime(out_float, tmp_path):
    path = save(float_chain(out_float=out_float), tmp_path)
    x = all_int8_inputs((1, 3, 4, 5), 6, seed=4)
    outs, c = host_run_checked(path, x, "ort", tmp_path, KERNEL)
    assert [n.op for n in c.graph.nodes][:5] == ["dequantize", "unary_f32", "binary_f32",
                                                 "binary_f32", "binary_f32"]
    want = run_ort(path, x)
    np.testing.assert_array_equal(np.asarray(outs).reshape(want.shape).view(np.uint8),
                                  want.view(np.uint8))


def test_binary_f32_chain_tflite_equals_its_oracle(tmp_path):
    path = save(float_chain(), tmp_path)
    x = all_int8_inputs((1, 3, 4, 5), 4, seed=5)
    host_run_checked(path, x, "tflite", tmp_path, KERNEL)


def prelu_as_max_min(slope_shape=(4, 1, 1), seed=7):
    """PReLU as exporters write it without a PReLU op: Max(x, 0) + slope * Min(x, 0) on the
    dequantized tensor, the zero constant shared by Max and Min, then QuantizeLinear."""
    from tests.helpers.qdq_builder import QdqBuilder
    rng = np.random.default_rng(seed)
    b = QdqBuilder("prelu_max_min")
    x = b.dq("x", 0.05, -3)
    zero = b.const_int(np.zeros((), np.float32), np.float32)
    slope = b.const_int((rng.random(slope_shape) * 0.5 - 0.1).astype(np.float32), np.float32)
    y = b.op("Add", [b.op("Max", [x, zero]), b.op("Mul", [b.op("Min", [x, zero]), slope])])
    b.q(y, 0.04, 10, out="y")
    return b.model("x", (1, 4, 5, 6), "y", (1, 4, 5, 6))


def test_max_min_float_fallback_bit_exact_with_onnxruntime(tmp_path):
    path = save(prelu_as_max_min(), tmp_path)
    x = all_int8_inputs((1, 4, 5, 6), 4, seed=2)
    outs, c = host_run_checked(path, x, "ort", tmp_path, KERNEL)
    onnx_ops = [fb["onnx_op"] for fb in c.report["float_fallback"]]
    assert sorted(onnx_ops) == ["Add", "Max", "Min", "Mul"]
    want = run_ort(path, x)
    np.testing.assert_array_equal(np.asarray(outs).reshape(want.shape), want)


def test_max_min_float_fallback_tflite_equals_its_oracle(tmp_path):
    path = save(prelu_as_max_min(), tmp_path)
    host_run_checked(path, all_int8_inputs((1, 4, 5, 6), 3, seed=3), "tflite", tmp_path, KERNEL)


def test_variadic_max_is_one_clear_refusal(tmp_path):
    from tests.helpers.qdq_builder import QdqBuilder
    from codegen.compiler import compile_model
    from codegen.errors import TinyAotError
    b = QdqBuilder("max3")
    x = b.dq("x", 0.05, -3)
    z = b.const_int(np.zeros((), np.float32), np.float32)
    b.q(b.op("Max", [x, z, x]), 0.05, -3, out="y")
    path = save(b.model("x", (1, 4), "y", (1, 4)), tmp_path)
    with pytest.raises(TinyAotError, match="Max of 3 inputs"):
        compile_model(path, numerics="ort")


@pytest.mark.parametrize("alpha,beta", [(None, None), (1 / 6, 0.5), (0.25, 0.4)])
def test_hard_sigmoid_times_x_float_fallback_bit_exact_with_onnxruntime(alpha, beta, tmp_path):
    """x * HardSigmoid(x) written out (a hard-swish as PyTorch exports MobileNetV3's without
    a HardSwish op), no QuantizeLinear between the two: onnxruntime runs HardSigmoid and Mul
    in float (each reading its own copy of the DequantizeLinear); the fallback computes
    max(min(alpha * x + beta, 1), 0) and the product one IEEE operation at a time."""
    from tests.helpers.qdq_builder import QdqBuilder
    b = QdqBuilder("hard_swish_written_out")
    x = b.dq("x", 0.05, -3)
    kw = {} if alpha is None else {"alpha": alpha, "beta": beta}
    b.q(b.op("Mul", [x, b.op("HardSigmoid", [x], **kw)]), 0.03, -20, out="y")
    path = save(b.model("x", (1, 4, 8, 8), "y", (1, 4, 8, 8)), tmp_path)
    x_in = all_int8_inputs((1, 4, 8, 8), 3, seed=6)
    outs, c = host_run_checked(path, x_in, "ort", tmp_path, KERNEL)
    assert {fb["onnx_op"] for fb in c.report["float_fallback"]} == {"HardSigmoid", "Mul"}
    want = run_ort(path, x_in)
    np.testing.assert_array_equal(np.asarray(outs).reshape(want.shape), want)
