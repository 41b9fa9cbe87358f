"""unary_f32: an elementwise float32 function run by the float fallback, behind another
float operator (DQ -> Mul(float constant) -> op -> Q), so no integer table takes it:

* ort: the generated C on the host equals onnxruntime bit for bit for every function it
  runs (MLAS's Exp / Sigmoid / Tanh / Erf, onnxruntime's Gelu in both forms, the IEEE ones),
  and the C equals the operator's numpy oracle;
* tflite: Exp equals TFLite Micro's std::exp (glibc's expf), Sigmoid its float LOGISTIC
  and Tanh its std::tanh (glibc's tanhf); their numpy twins are checked against the host's
  libm in tests/numerics/test_tflm_float.py and against TFLite Micro's interpreter in
  tests/frontend/test_tflite_float_region.py; the IEEE ones are single operations; a
  function whose TFLite Micro float kernel is not reproduced (Erf, Gelu) is refused by name
  with what to do.
"""
import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.errors import TinyAotError

from tests.helpers.float_models import scaled_unary
from tests.helpers.qdq_builder import all_int8_inputs, host_run_checked, run_ort, save

KERNEL = "tinyaot_unary_f32"

ORT_CASES = [("Exp", 17, {}), ("Sigmoid", 17, {}), ("Tanh", 17, {}), ("Erf", 17, {}),
             ("Gelu", 20, {}), ("Gelu", 20, {"approximate": "tanh"}), ("Sqrt", 17, {}),
             ("Abs", 17, {}), ("Neg", 17, {}), ("Relu", 17, {}), ("Reciprocal", 17, {})]


@pytest.mark.parametrize("op,opset,attrs", ORT_CASES,
                         ids=[c[0] + ("_tanh" if c[2] else "") for c in ORT_CASES])
def test_unary_f32_ort_bit_exact_with_onnxruntime(op, opset, attrs, tmp_path):
    path = save(scaled_unary(op, opset=opset, **attrs), tmp_path)
    x = all_int8_inputs((2, 64), 6, seed=opset)
    outs, c = host_run_checked(path, x, "ort", tmp_path, KERNEL)
    assert [n.op for n in c.graph.nodes] == ["dequantize", "binary_f32", "unary_f32", "quantize"]
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))


@pytest.mark.parametrize("op", ["Exp", "Sigmoid", "Tanh", "Sqrt", "Abs", "Neg", "Relu",
                                "Reciprocal"])
def test_unary_f32_tflite_equals_its_oracle(op, tmp_path):
    """tflite: the C equals the numpy oracle (TFLite Micro's std::exp as glibc's expf, its
    float LOGISTIC, std::tanh as glibc's tanhf; the IEEE functions) on every int8 input."""
    path = save(scaled_unary(op), tmp_path)
    x = all_int8_inputs((2, 64), 4, seed=2)
    host_run_checked(path, x, "tflite", tmp_path, KERNEL)


@pytest.mark.parametrize("op,opset", [("Erf", 17), ("Gelu", 20)])
def test_unary_f32_tflite_refuses_what_it_does_not_reproduce(op, opset, tmp_path):
    path = save(scaled_unary(op, opset=opset), tmp_path)
    with pytest.raises(TinyAotError, match=f"node '{op.lower()}_\\d+': {op} in float: tflite "
                                           "numerics do not reproduce .*use --numerics ort"):
        compile_model(path, numerics="tflite")
