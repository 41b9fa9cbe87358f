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
