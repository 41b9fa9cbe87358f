"""Float ops before the first QuantizeLinear on the input, as exporters write them.

PyTorch and tf2onnx exports quantized with onnxruntime often move the float input before
quantizing it: `x (float) -> Reshape / Transpose / Unsqueeze / Flatten / Squeeze -> Q`.
Quantization commutes with moving elements, so tinyaot quantizes the input as the model
declares it (the generated API takes those integers, report.json `io` says with which scale
and zero point) and moves the integers. Oracle: onnxruntime on the float input; the input
values lie on the quantization grid, so the integers given to tinyaot are exactly what the
model's QuantizeLinear makes of them.
"""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.helpers.qdq_builder import QdqBuilder, host_run_checked, save

IN_Q = (0.0625, -3)
Y_Q = (0.09, 2)


class Builder(QdqBuilder):
    def const_i64(self, v):
        return self.const_int(np.asarray(v, np.int64), np.int64)

    def float_model(self, x_shape, y_shape, opset=17):
        g = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
            [helper.make_tensor_value_info("y", TensorProto.INT8, list(y_shape))], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def conv_after(b, xq, cin):
    rng = np.random.default_rng(cin)
    w, ws = b.weight(rng.normal(size=(4, cin, 3, 3)).astype(np.float32) * 0.3)
    bias = b.bias(rng.normal(size=4) * 0.2, IN_Q[0] * ws)
    return b.op("Conv", [b.dq(xq, *IN_Q), w, bias], pads=[1, 1, 1, 1])


def _transpose_nhwc(b):  # an NHWC float input, transposed to NCHW before Q (tf2onnx)
    t = b.op("Transpose", ["x"], perm=[0, 3, 1, 2])
    return conv_after(b, b.q(t, *IN_Q), 3), (1, 5, 6, 3), (1, 4, 5, 6)


def _reshape(b):  # a flat float input reshaped to an image (a PyTorch export's view)
    r = b.op("Reshape", ["x", b.const_i64([1, 2, 4, 4])])
    return conv_after(b, b.q(r, *IN_Q), 2), (1, 32), (1, 4, 4, 4)


def _unsqueeze(b):  # an unbatched float input given its batch axis
    u = b.op("Unsqueeze", ["x", b.const_i64([0])])
    return conv_after(b, b.q(u, *IN_Q), 3), (3, 4, 5), (1, 4, 4, 5)


def _chain(b):  # Squeeze -> Transpose -> Unsqueeze: several moves before the Q
    s = b.op("Squeeze", ["x", b.const_i64([0])])
    t = b.op("Transpose", [s], perm=[2, 0, 1])
    u = b.op("Unsqueeze", [t, b.const_i64([0])])
    return conv_after(b, b.q(u, *IN_Q), 2), (1, 5, 3, 2), (1, 4, 5, 3)


def _flatten_gemm(b):
    f = b.op("Flatten", ["x"], axis=1)
    rng = np.random.default_rng(1)
    w, _ = b.weight(rng.normal(size=(24, 6)).astype(np.float32) * 0.3, axis=1)
    return b.op("Gemm", [b.dq(b.q(f, *IN_Q), *IN_Q), w]), (1, 2, 3, 4), (1, 6)


FORMS = {"transpose_nhwc": _transpose_nhwc, "reshape": _reshape, "unsqueeze": _unsqueeze,
         "squeeze_transpose_unsqueeze": _chain, "flatten_gemm": _flatten_gemm}


def model(name, tmp_path):
    b = Builder(name)
    y, x_shape, y_shape = FORMS[name](b)
    b.q(y, *Y_Q, out="y")
    return save(b.float_model(x_shape, y_shape), tmp_path), x_shape


def ort_float(path, xf):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return np.stack([sess.run(None, {"x": v})[0] for v in xf])


@pytest.mark.parametrize("name", sorted(FORMS))
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_float_moves_before_the_first_quantize(name, numerics, tmp_path):
    path, x_shape = model(name, tmp_path)
    rng = np.random.default_rng(4)
    q = rng.integers(-128, 128, size=(4,) + x_shape).astype(np.int8)
    xf = ((q.astype(np.float32) - IN_Q[1]) * np.float32(IN_Q[0])).astype(np.float32)
    outs, c = host_run_checked(path, q, numerics, tmp_path, None)
    g = c.graph
    assert g.tensors[g.inputs[0]].shape == x_shape  # the input as the model declares it
    io = c.report["io"]["input"]
    assert (io["model_boundary"], io["onnx_name"], io["scale"], io["zero_point"]) == \
        ("float", "x", np.float32(IN_Q[0]), IN_Q[1])
    if numerics == "ort":
        np.testing.assert_array_equal(outs, ort_float(path, xf).reshape(outs.shape))
    else:  # the same integers moved after the Q: the model with the moves on the int8 input
        ref = save(int8_form(path), tmp_path, "int8.onnx")
        want, _ = host_run_checked(ref, q, numerics, tmp_path / "ref", None)
        np.testing.assert_array_equal(outs, want)


MOVES = {"Reshape", "Transpose", "Unsqueeze", "Squeeze", "Flatten"}


def int8_form(path):
    """The model with an int8 input (the same shape) and the first QuantizeLinear moved in
    front of the moves: x_int8 -> moves -> the rest."""
    m = onnx.load(str(path))
    nodes = list(m.graph.node)
    q = next(n for n in nodes if n.op_type == "QuantizeLinear")
    last_move = [n for n in nodes if n.op_type in MOVES and nodes.index(n) < nodes.index(q)][-1]
    new = []
    for n in nodes:
        if n is q:
            continue
        c = onnx.NodeProto()
        c.CopyFrom(n)
        if n is last_move:
            c.output[0] = q.output[0]  # the moves now run on the int8 input
        new.append(c)
    shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    g = helper.make_graph(new, m.graph.name,
                          [helper.make_tensor_value_info("x", TensorProto.INT8, shape)],
                          list(m.graph.output), list(m.graph.initializer))
    mm = helper.make_model(g, opset_imports=list(m.opset_import))
    mm.ir_version = m.ir_version
    onnx.checker.check_model(mm)
    return mm
