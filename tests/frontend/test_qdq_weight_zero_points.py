"""Weights with a zero point: uint8 weights (u8u8, onnxruntime's QUInt8 weights) and
asymmetric int8 weights, in QDQ and QOperator form.

Every kernel multiplies by symmetric int8 weights, so the front end stores w - zp (int8,
zero point 0) when it fits int8: the same integer products, exact. That covers uint8
weights with zero point 128 (quantize_static's symmetric QUInt8 weights, and its default
for per-channel QDQ convs) and int8 weights whose zero point leaves room; anything else
is refused in one line naming the weights and the fix.

Oracle: onnxruntime's default session on the same file (the integers equal); the C
equals the numpy oracle (tests.helpers.qdq_builder.host_run_checked / run_graph).
"""
import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.driver.verify import run_model
from codegen.errors import UnsupportedError
from codegen.numerics.ort_float import dequantize, quantize
from codegen.reference import run_graph
from codegen.reference.onnxruntime_oracle import run_onnxruntime

from tests.helpers import quantize_static_models as qmodels
from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save


def _static_host_vs_ort(path, tmp_path):
    """A quantize_static model (float ends): tinyaot on the host (C == numpy oracle) and
    onnxruntime on the same float inputs -> (tinyaot dequantized, ORT's output, compiled)."""
    c = compile_model(path, numerics="ort")
    g = c.graph
    xt = g.tensors[g.inputs[0]]
    xs = qmodels.sample_inputs(shape=tuple(xt.shape))
    s, zp = xt.q.scalar()
    lo, hi = (0, 255) if xt.dtype == "uint8" else (-128, 127)
    qx = np.stack([quantize(x, s, zp, lo, hi).astype(xt.dtype) for x in xs])
    outs, info = run_model(path, qx, board="host", numerics="ort", compiled=c,
                           build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(xs)
    ref = np.stack([run_graph(g, "ort", {g.inputs[0]: q[None]}, c.params)[g.outputs[0]] for q in qx])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)
    ys, yzp = g.tensors[g.outputs[0]].q.scalar()
    want = np.stack([run_onnxruntime(path, {"x": x})["y"] for x in xs])
    return dequantize(outs, ys, yzp).reshape(want.shape), want, c


@pytest.mark.parametrize("model", ["cnn", "matmul"])
@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("form", ["QDQ", "QOperator"])
def test_uint8_weights_quantize_static_u8u8(form, per_channel, model, tmp_path):
    """quantize_static, uint8 activations and symmetric uint8 weights (zero point 128)."""
    m = getattr(qmodels, model)()
    path = qmodels.quantize(m, tmp_path / "m.onnx", form, "QUInt8", "QUInt8", per_channel,
                            weight_symmetric=True)
    got, want, c = _static_host_vs_ort(path, tmp_path)
    # float32 equality of DequantizeLinear(q): the integers are identical
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    layers = [n for n in c.graph.nodes if n.op in ("conv2d", "fully_connected")]
    assert len(layers) == (4 if model == "cnn" else 2)
    for n in layers:  # the layers multiply by symmetric int8 weights
        w = c.graph.tensors[n.inputs[1]]
        assert w.dtype == "int8" and not np.any(w.q.zero_point)


def test_uint8_weights_per_channel_qdq_default(tmp_path):
    """quantize_static's default QUInt8 weights: per-channel QDQ gets zero point 128."""
    path = qmodels.quantize(qmodels.cnn(avgpool=True), tmp_path / "m.onnx", "QDQ", "QUInt8",
                            "QUInt8", per_channel=True)
    got, want, _ = _static_host_vs_ort(path, tmp_path)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("form,weights,per_channel", [
    ("QDQ", "QUInt8", False),        # per tensor: zero point = round(-min / scale)
    ("QOperator", "QUInt8", True),   # QGemm keeps one zero point per column
    ("QDQ", "QInt8", False),         # WeightSymmetric=False: the full int8 range
])
def test_weights_that_do_not_fit_int8_are_refused(form, weights, per_channel, tmp_path):
    sym = False if weights == "QInt8" else None
    path = qmodels.quantize(qmodels.cnn(), tmp_path / "m.onnx", form, "QUInt8", weights,
                            per_channel, weight_symmetric=sym)
    with pytest.raises(UnsupportedError, match=r"minus their zero point span \[-?\d+, \d+\], "
                       r"more than int8 holds: quantize the weights symmetrically.*"
                       r"WeightSymmetric=True"):
        compile_model(path, numerics="ort")


X_Q = (0.047, 3)
Y_Q = (0.11, -2)


def _asym_weights(rng, shape, axis, per_channel):
    """int8 weights with a non-zero zero point (per channel along `axis`, or one) whose
    w - zp still fits int8, reaching -128 and 127 in the first and last channel."""
    n = shape[axis] if per_channel else 1
    zp = rng.integers(-20, 21, size=n).astype(np.int8)
    zp[0], zp[-1] = 17, -9
    bshape = [1] * len(shape)
    bshape[axis] = -1
    z = np.broadcast_to(zp.astype(np.int32).reshape(bshape) if per_channel else int(zp[0]), shape)
    d = rng.integers(-100, 101, size=shape)
    w = np.clip(d + z, -128, 127)
    w[np.unravel_index(0, shape)] = max(-128, z.reshape(-1)[0] - 128)
    w[np.unravel_index(w.size - 1, shape)] = min(127, z.reshape(-1)[-1] + 127)
    scale = rng.uniform(0.004, 0.02, size=n).astype(np.float32)
    if per_channel:
        return w.astype(np.int8), scale, zp
    return w.astype(np.int8), scale[0], zp[0]


def _asym_model(kind, per_channel, seed=0):
    rng = np.random.default_rng(seed)
    b = QdqBuilder(f"asym_{kind}")
    x = b.dq("x", *X_Q)
    if kind == "conv":
        in_shape, out_shape, wshape, axis = (1, 4, 6, 6), (1, 6, 6, 6), (6, 4, 3, 3), 0
    elif kind == "convtranspose":  # [Cin, Cout, kh, kw]: the channels along axis 1
        in_shape, out_shape, wshape, axis = (1, 4, 6, 6), (1, 6, 13, 13), (4, 6, 3, 3), 1
    elif kind == "gemm":
        in_shape, out_shape, wshape, axis = (1, 32), (1, 10), (10, 32), 0
    else:  # MatMul: [K, N], the channels along axis 1
        in_shape, out_shape, wshape, axis = (1, 32), (1, 10), (32, 10), 1
    wq, ws, wz = _asym_weights(rng, wshape, axis, per_channel)
    w = b.dq(b.const_int(wq, np.int8), ws, wz, axis=axis if per_channel else None)
    bias = b.bias(rng.normal(0, 0.3, size=wshape[axis]),
                  (X_Q[0] * np.broadcast_to(ws, (wshape[axis],))).astype(np.float32))
    if kind == "conv":
        f = b.op("Conv", [x, w, bias], pads=[1, 1, 1, 1])
    elif kind == "convtranspose":
        f = b.op("ConvTranspose", [x, w, bias], strides=[2, 2])
    elif kind == "gemm":
        f = b.op("Gemm", [x, w, bias], transB=1)
    else:
        f = b.op("Add", [b.op("MatMul", [x, w]), bias])
    b.q(b.op("Relu", [f]), *Y_Q, out="y")
    return b.model("x", in_shape, "y", out_shape), in_shape


@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("kind", ["conv", "convtranspose", "gemm", "matmul"])
def test_asymmetric_int8_weights_exact(kind, per_channel, tmp_path):
    model, in_shape = _asym_model(kind, per_channel)
    path = save(model, tmp_path)
    x = all_int8_inputs(in_shape, 6)
    got, c = host_run_checked(path, x, "ort", tmp_path, None)
    np.testing.assert_array_equal(got, run_ort(path, x).reshape(got.shape))
    layer = next(n for n in c.graph.nodes
                 if n.op in ("conv2d", "conv_transpose", "fully_connected"))
    w = c.graph.tensors[layer.inputs[1]]
    assert w.dtype == "int8" and not np.any(w.q.zero_point)
    assert w.data.min() == -128 or w.data.max() == 127  # the whole room is used
