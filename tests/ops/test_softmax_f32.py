"""softmax_f32: Softmax / LogSoftmax run in float32 by the float fallback, built as exporters
write them (DequantizeLinear -> LogSoftmax -> QuantizeLinear; a classifier head whose Softmax
comes after the last DequantizeLinear and leaves the model in float):

* ort: the generated C on the host equals onnxruntime's default session bit for bit (int8
  outputs, and float32 outputs compared as bit patterns), over rows short and long (MLAS's
  16-lane sum and 32-element max blocks), any axis, opset 11 (coerced to 2-D) and 13+;
* tflite: the C equals TFLite Micro's own interpreter on the same layer written as a .tflite
  (DEQUANTIZE -> float SOFTMAX / LOG_SOFTMAX -> QUANTIZE, or a float output);
* both: the C equals the operator's numpy oracle (host_run_checked);
* a group onnxruntime fuses into QLinearSoftmax is refused by name, not computed otherwise.
"""
import numpy as np
import pytest

from codegen.errors import TinyAotError
from codegen.compiler import compile_model

from tests.helpers.float_models import (gemm_softmax_float_out, run_tflite_micro,
                                        softmax_float_out, softmax_qdq, softmax_tflite_file)
from tests.helpers.qdq_builder import all_int8_inputs, host_run_checked, run_ort, save

KERNEL = "tinyaot_softmax_f32"


def assert_same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.reshape(want.shape).view(np.uint8), want.view(np.uint8))


# (id, ONNX op, shape, axis, output q, opset)
QDQ_CASES = [
    ("log_row10", "LogSoftmax", (2, 10), -1, (0.1, 127), 17),
    ("log_row100", "LogSoftmax", (3, 100), -1, (0.08, 127), 17),
    ("log_axis1_4d", "LogSoftmax", (1, 6, 3, 4), 1, (0.05, 100), 13),
    ("log_opset11_flattens", "LogSoftmax", (2, 3, 4), 1, (0.1, 127), 11),
    ("log_ties", "LogSoftmax", (4, 16), -1, (2.0 ** -4, 0), 17),
]


@pytest.mark.parametrize("case,op,shape,axis,y_q,opset", QDQ_CASES, ids=[c[0] for c in QDQ_CASES])
def test_softmax_f32_qdq_ort_bit_exact_with_onnxruntime(case, op, shape, axis, y_q, opset,
                                                        tmp_path):
    path = save(softmax_qdq(op, shape, axis, y_q=y_q, opset=opset), tmp_path)
    x = all_int8_inputs(shape, 6, seed=len(case))
    outs, c = host_run_checked(path, x, "ort", tmp_path, KERNEL)
    assert [n.op for n in c.graph.nodes] == ["dequantize", "softmax_f32", "quantize"]
    assert_same_bits(outs, run_ort(path, x))


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("classes", [10, 64, 1000])
def test_softmax_f32_float_output_after_last_dq_ort_bit_exact(op, classes, tmp_path):
    """MatMul -> Q -> DQ -> Softmax -> float32 output: the float32 bits onnxruntime returns."""
    path = save(gemm_softmax_float_out((1, 16), classes, seed=classes, op=op), tmp_path)
    x = all_int8_inputs((1, 16), 6, seed=classes)
    outs, c = host_run_checked(path, x, "ort", tmp_path, KERNEL)
    assert c.graph.tensors[c.graph.outputs[0]].dtype == "float32"
    assert_same_bits(outs, run_ort(path, x).astype(np.float32))


TFLM_CASES = [("SOFTMAX", "Softmax", None), ("LOG_SOFTMAX", "LogSoftmax", None),
              ("LOG_SOFTMAX", "LogSoftmax", (0.1, 127))]


@pytest.mark.parametrize("tfl_op,op,y_q", TFLM_CASES, ids=["softmax_f32out", "log_f32out",
                                                          "log_int8out"])
@pytest.mark.parametrize("shape", [(3, 10), (2, 100)])
def test_softmax_f32_tflite_equals_tflite_micro_interpreter(tfl_op, op, y_q, shape, tmp_path):
    pytest.importorskip("tflite_micro", reason="pip install tflite-micro")
    m = softmax_float_out(op, shape) if y_q is None else softmax_qdq(op, shape, y_q=y_q)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 8, seed=shape[1])
    want = run_tflite_micro(softmax_tflite_file(tfl_op, shape, y_q=y_q), x)
    outs, _ = host_run_checked(path, x, "tflite", tmp_path, KERNEL)
    assert_same_bits(outs, want)


def test_softmax_f32_numerics_differ_where_the_runtimes_do(tmp_path):
    """The two numerics are two kernels: on a long float row onnxruntime's (16-lane sum,
    e * (1 / sum)) and TFLite Micro's (in-order sum, e / sum) disagree somewhere, and each
    side matches its own runtime (the tests above); so neither test can pass by accident."""
    path = save(gemm_softmax_float_out((1, 16), 1000, seed=3), tmp_path)
    x = all_int8_inputs((1, 16), 4, seed=3)
    ort_c = compile_model(path, numerics="ort")
    tfl_c = compile_model(path, numerics="tflite")
    from codegen.reference import run_graph
    g = ort_c.graph
    a = run_graph(g, "ort", {g.inputs[0]: x[0]}, ort_c.params)[g.outputs[0]]
    b = run_graph(tfl_c.graph, "tflite", {g.inputs[0]: x[0]}, tfl_c.params)[g.outputs[0]]
    assert not np.array_equal(a, b)


def test_softmax_fused_by_onnxruntime_is_refused_by_name(tmp_path):
    """DQ -> Softmax(axis 1 of 3-D) -> Q: onnxruntime runs com.microsoft.QLinearSoftmax,
    which the float fallback does not reproduce: one error naming the node."""
    path = save(softmax_qdq("Softmax", (2, 5, 3), axis=1, y_q=(1 / 256, -128)), tmp_path)
    with pytest.raises(TinyAotError, match="node 'softmax_4': float fallback: onnxruntime's "
                                           "optimizer runs com.microsoft.QLinearSoftmax"):
        compile_model(path, numerics="ort")
