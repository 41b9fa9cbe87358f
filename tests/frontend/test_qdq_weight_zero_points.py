"""Weights with a zero point: uint8 weights (u8u8, onnxruntime's QUInt8 weights) and
asymmetric int8 weights, in QDQ and QOperator form.

The kernels multiply by symmetric weights, so the front end stores w - zp (zero point
0): the same integer products, exact. It is int8 when it fits (uint8 weights with zero
point 128, int8 weights whose zero point leaves room), else int16 (any uint8 zero point,
the full asymmetric int8 range: values in [-255, 255]), which the fast kernels widen to
anyway; layers without a fast kernel run tinyaot_convolve_w16_s8, and --optimize size
keeps the speed kernel for such a layer. ConvTranspose (int8-weight kernels only) refuses
them in one line naming the weights and the fix.

Oracles: onnxruntime's default session on the same file (the integers equal, or where
onnxruntime on x86 without VNNI saturates int16 pairs, the exact integer computation, as
`verify` checks it: driver/saturation.py); under `tflite` a numpy reference of TFLite's
integer arithmetic (tests/helpers/tflite_int_reference.py). The C also equals the numpy
oracle (tests.helpers.qdq_builder.host_run_checked / run_graph).
"""
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from codegen.compiler import compile_model
from codegen.errors import UnsupportedError

from tests.helpers import quantize_static_models as qmodels
from tests.helpers import tflite_int_reference as tfl_ref
from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save
from tests.helpers.wide_weights import (WIDE_CONVS, WIDE_FORMS, X_Q, Y_Q,
                                        assert_ort_or_saturating, static_vs_ort, wide_conv_model,
                                        wide_weights)


@pytest.mark.parametrize("model", ["cnn", "matmul"])
@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("form", ["QDQ", "QOperator"])
def test_uint8_weights_quantize_static_u8u8(form, per_channel, model, tmp_path):
    """quantize_static, uint8 activations and symmetric uint8 weights (zero point 128)."""
    m = getattr(qmodels, model)()
    path = qmodels.quantize(m, tmp_path / "m.onnx", form, "QUInt8", "QUInt8", per_channel,
                            weight_symmetric=True)
    got, want, c = static_vs_ort(path, tmp_path)
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
    got, want, _ = static_vs_ort(path, tmp_path)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("form,act,weights,per_channel,sym,model", WIDE_FORMS)
def test_weights_beyond_int8_exact(form, act, weights, per_channel, sym, model, tmp_path):
    path = qmodels.quantize(getattr(qmodels, model)(), tmp_path / "m.onnx", form, act, weights,
                            per_channel, weight_symmetric=sym)
    xs, outs, want, c = static_vs_ort(path, tmp_path, raw=True)
    assert_ort_or_saturating(c, xs, outs, want)
    wide = [n for n in c.graph.nodes if n.op in ("conv2d", "fully_connected")
            and c.graph.tensors[n.inputs[1]].dtype == "int16"]
    assert wide  # the form does reach the int16 weights


@pytest.mark.parametrize("form,act,weights,per_channel,sym,model", [WIDE_FORMS[0], WIDE_FORMS[6]])
def test_weights_beyond_int8_optimize_size(form, act, weights, per_channel, sym, model,
                                           tmp_path):
    """--optimize size keeps the speed kernel (int16 weights) for those layers only."""
    path = qmodels.quantize(getattr(qmodels, model)(), tmp_path / "m.onnx", form, act, weights,
                            per_channel, weight_symmetric=sym)
    xs, outs, want, c = static_vs_ort(path, tmp_path, optimize="size", raw=True)
    assert_ort_or_saturating(c, xs, outs, want)
    for n in c.graph.nodes:
        if n.op in ("conv2d", "fully_connected") and not n.attrs.get("ort_float"):
            wide = c.graph.tensors[n.inputs[1]].dtype == "int16"
            assert bool(n.attrs.get("fast_kernel")) == wide, n.name
            assert bool(n.attrs.get("int_w8")) != wide, n.name


def test_conv_transpose_weights_beyond_int8_are_refused(tmp_path):
    rng = np.random.default_rng(3)
    b = QdqBuilder("wide_convtranspose")
    x = b.dq("x", *X_Q)
    wq = rng.integers(0, 256, size=(4, 6, 3, 3)).astype(np.uint8)
    wq[0, 0, 0, 0] = 255
    w = b.dq(b.const_int(wq, np.uint8), 0.01, 20, dtype=np.uint8)
    f = b.op("ConvTranspose", [x, w], strides=[2, 2])
    b.q(f, *Y_Q, out="y")
    path = save(b.model("x", (1, 4, 6, 6), "y", (1, 6, 13, 13)), tmp_path)
    with pytest.raises(UnsupportedError, match=r"uint8 weights '.*' minus their zero point span "
                       r"\[-20, 235\], more than int8 holds, and this layer's kernels read int8 "
                       r"weights: quantize the weights symmetrically.*WeightSymmetric=True"):
        compile_model(path, numerics="ort")


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


@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("wtype", ["uint8", "int8"])
@pytest.mark.parametrize("kind", list(WIDE_CONVS))
def test_wide_weight_convs_ort(kind, wtype, per_channel, tmp_path):
    model, in_shape, d, _, _ = wide_conv_model(kind, wtype, per_channel, between=True)
    assert d.min() < -128 or d.max() > 127
    path = save(model, tmp_path)
    x = all_int8_inputs(in_shape, 6)
    got, c = host_run_checked(path, x, "ort", tmp_path, None)
    assert_ort_or_saturating(c, x, got, run_ort(path, x).reshape(got.shape))
    layer = next(n for n in c.graph.nodes
                 if n.op == "conv2d" and c.graph.tensors[n.inputs[1]].dtype == "int16")
    assert not layer.attrs.get("ort_float")  # onnxruntime runs it as integers, as tinyaot
    assert WIDE_CONVS[kind][5] in c.report["kernels"]


@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("wtype", ["uint8", "int8"])
@pytest.mark.parametrize("kind", list(WIDE_CONVS))
def test_wide_weight_convs_tflite(kind, wtype, per_channel, tmp_path):
    """`tflite`: bias + sum (x - zp_x) * (w - zp_w), TFLite's per-channel multipliers."""
    model, in_shape, d, bq, sw = wide_conv_model(kind, wtype, per_channel)
    _, _, group, pads, strides, kernel = WIDE_CONVS[kind]
    path = save(model, tmp_path)
    x = all_int8_inputs(in_shape, 4)
    got, c = host_run_checked(path, x, "tflite", tmp_path, kernel)
    acc = tfl_ref.conv_acc(x.reshape((-1,) + in_shape[1:]), d, (pads[0], pads[1], pads[2], pads[3]), strides, group, X_Q[1])
    want = tfl_ref.requantize(acc, bq, X_Q[0], sw, Y_Q[0], Y_Q[1], Y_Q[1], 127)  # Relu
    np.testing.assert_array_equal(got.reshape(want.shape), want)


def test_wide_weight_depthwise_is_no_in_place_candidate(tmp_path):
    """--depthwise-inplace: the in-place kernel reads int8 weights, so a depthwise layer
    with int16 weights is no candidate (the same layer with weights that fit int8 is)."""
    from codegen.planner.depthwise_inplace import is_inplace_depthwise_candidate
    wide, *_ = wide_conv_model("depthwise", "uint8", True, between=True)
    fits = onnx.ModelProto()
    fits.CopyFrom(wide)
    for init in fits.graph.initializer:  # the same layer with zero points 128: w - zp fits int8
        a = numpy_helper.to_array(init)
        if a.dtype == np.uint8 and a.ndim == 1:
            init.CopyFrom(numpy_helper.from_array(np.full_like(a, 128), init.name))
    for model, wdtype, candidate in ((fits, "int8", True), (wide, "int16", False)):
        c = compile_model(save(model, tmp_path, f"{wdtype}.onnx"), numerics="ort")
        g = c.graph
        n = next(n for n in g.nodes if n.op == "conv2d" and n.attrs["group"] == 8)
        assert g.tensors[n.inputs[1]].dtype == wdtype
        assert is_inplace_depthwise_candidate(g, n) == candidate


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("wtype", ["uint8", "int8"])
def test_wide_weight_gemm_tflite(wtype, per_channel, tmp_path):
    """`tflite` Gemm (FULLY_CONNECTED): the fast FC with int16 weights, TFLite's
    multipliers (per tensor: the float32 product of the scales)."""
    rng = np.random.default_rng(7)
    b = QdqBuilder("wide_gemm")
    x = b.dq("x", *X_Q)
    wq, ws, wz = wide_weights(rng, (10, 32), wtype, per_channel)
    w = b.dq(b.const_int(wq, np.dtype(wtype)), ws, wz, axis=0 if per_channel else None,
             dtype=np.dtype(wtype))
    sw = np.broadcast_to(np.asarray(ws, np.float32), (10,))
    bscale = (np.float32(X_Q[0]) * sw).astype(np.float32)
    bq = rng.integers(-300, 300, size=10).astype(np.int32)
    bias = b.dq(b.const_int(bq, np.int32), bscale, np.zeros(10, np.int32), axis=0,
                dtype=np.int32)
    b.q(b.op("Relu", [b.op("Gemm", [x, w, bias], transB=1)]), *Y_Q, out="y")
    path = save(b.model("x", (1, 32), "y", (1, 10)), tmp_path)
    xs = all_int8_inputs((1, 32), 6)
    got, c = host_run_checked(path, xs, "tflite", tmp_path, "tinyaot_fully_connected_fast_s8")
    d = wq.astype(np.int64) - np.asarray(wz, np.int64).reshape((-1, 1) if per_channel else ())
    assert d.min() < -128 or d.max() > 127
    acc = (xs.reshape(-1, 32).astype(np.int64) - X_Q[1]) @ d.T
    want = tfl_ref.requantize(acc, bq, X_Q[0], sw, Y_Q[0], Y_Q[1], Y_Q[1], 127,
                              fc_per_tensor=not per_channel)
    np.testing.assert_array_equal(got.reshape(want.shape), want)
