"""The float fallback next to qdq's ops that commute with quantization: DQ -> MaxPool -> Relu ->
LogSoftmax -> Q. MaxPool and Relu have exact integer forms (their float result is the
DequantizeLinear of the integers), so they stay integer layers and only the LogSoftmax runs in
float32; the whole model equals onnxruntime's default session bit for bit. With
--no-float-fallback only the LogSoftmax is refused."""
import numpy as np
import pytest
from onnx import TensorProto

from codegen.compiler import compile_model
from codegen.errors import TinyAotError

from tests.helpers.float_models import model_of
from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save

SHAPE = (1, 3, 4, 4)


def pool_relu_logsoftmax():
    b = QdqBuilder("pool_relu_logsoftmax")
    d = b.dq("x", 0.07, 5)
    p = b.op("MaxPool", [d], kernel_shape=[2, 2], strides=[2, 2])
    r = b.op("Relu", [p])
    s = b.op("LogSoftmax", [r], axis=1)
    y = b.q(s, 0.05, 120, out="y")
    return model_of(b, SHAPE, y, (1, 3, 2, 2), TensorProto.INT8)


def test_commuting_ops_stay_integer_and_match_onnxruntime(tmp_path):
    path = save(pool_relu_logsoftmax(), tmp_path)
    x = all_int8_inputs(SHAPE, 4, seed=3)
    outs, c = host_run_checked(path, x, "ort", tmp_path, "tinyaot_softmax_f32")
    ops = {n.op: c.graph.tensors[n.outputs[0]].dtype for n in c.graph.nodes}
    assert ops.get("maxpool") == "int8", ops  # settled in integers, not recomputed in float
    assert [onnx_op for onnx_op, _, _ in c.graph.float_fallback] == ["LogSoftmax"]
    want = run_ort(path, x)
    np.testing.assert_array_equal(outs.reshape(want.shape), want)


def test_no_float_fallback_refuses_only_the_logsoftmax(tmp_path):
    path = save(pool_relu_logsoftmax(), tmp_path)
    with pytest.raises(TinyAotError) as e:
        compile_model(path, numerics="ort", float_fallback=False)
    msg = str(e.value)
    assert "LogSoftmax" in msg and "MaxPool" not in msg, msg
