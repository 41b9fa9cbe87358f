"""Models whose weights minus their zero point leave int8 (uint8 weights with any zero
point, asymmetric int8 weights), built the way quantize_static and QDQ exporters write
them, and the comparison with onnxruntime that `verify` makes (tests' helper)."""
from __future__ import annotations

import numpy as np

from codegen.compiler import compile_model
from codegen.driver.verify import run_model
from codegen.numerics.ort_float import dequantize, quantize
from codegen.reference import run_graph
from codegen.reference.onnxruntime_oracle import run_onnxruntime

from tests.helpers import quantize_static_models as qmodels
from tests.helpers.qdq_builder import QdqBuilder
from tests.helpers.saturating_models import _identity_conv as identity_conv

X_Q = (0.047, 3)
Y_Q = (0.11, -2)


def static_vs_ort(path, tmp_path, optimize="speed", raw=False, board="host"):
    """A quantize_static model (float ends): tinyaot on `board` (C == numpy oracle) and
    onnxruntime on the same float inputs -> (tinyaot dequantized, ORT's output, compiled)
    (raw: (float inputs, tinyaot's integers, ORT's output, compiled))."""
    c = compile_model(path, numerics="ort", optimize=optimize)
    g = c.graph
    xt = g.tensors[g.inputs[0]]
    xs = qmodels.sample_inputs(shape=tuple(xt.shape))
    s, zp = xt.q.scalar()
    lo, hi = (0, 255) if xt.dtype == "uint8" else (-128, 127)
    qx = np.stack([quantize(x, s, zp, lo, hi).astype(xt.dtype) for x in xs])
    outs, info = run_model(path, qx, board=board, numerics="ort", compiled=c,
                           build_dir=tmp_path / "gen", optimize=optimize)
    assert info["status"] == [0] * len(xs)
    ref = np.stack([run_graph(g, "ort", {g.inputs[0]: q[None]}, c.params)[g.outputs[0]] for q in qx])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)
    ys, yzp = g.tensors[g.outputs[0]].q.scalar()
    want = np.stack([run_onnxruntime(path, {"x": x})["y"] for x in xs])
    if raw:
        return xs, outs, want, c
    return dequantize(outs, ys, yzp).reshape(want.shape), want, c


def assert_ort_or_saturating(c, per, outs, want):
    """tinyaot's outputs equal onnxruntime's, or differ only on vectors where onnxruntime
    (x86 without VNNI) saturates int16 pairs and tinyaot equals the exact integer
    computation: the check `verify` makes (driver/saturation.explain_vectors)."""
    from codegen.driver.saturation import explain_vectors
    g = c.graph
    ys, yzp = g.tensors[g.outputs[0]].q.scalar()
    outs = np.asarray(outs).reshape((len(per),) + np.shape(want)[1:])
    if want.dtype == np.float32:
        got = [dequantize(o, ys, yzp).astype(np.float32).view(np.uint32) for o in outs]
        exp = [w.view(np.uint32) for w in want]
    else:
        got, exp = list(outs.astype(np.int64)), list(want.astype(np.int64))
    bad = [v for v in range(len(per)) if not np.array_equal(got[v], exp[v])]
    if bad:
        n = len(per)
        s = explain_vectors(c, [np.asarray(per).reshape(n, -1)], [outs.reshape(n, -1)],
                            [np.asarray(want).reshape(n, -1)], bad)
        assert s is not None and sorted(s["vectors"]) == bad, f"vectors {bad} differ"


# quantize_static forms whose w - zp leaves int8 (refused before; now int16 weights)
WIDE_FORMS = [
    ("QDQ", "QUInt8", "QUInt8", False, None, "cnn"),       # u8u8, per tensor: zp = round(-min/s)
    ("QOperator", "QUInt8", "QUInt8", True, None, "cnn"),  # QGemm keeps one zp per column
    ("QOperator", "QUInt8", "QUInt8", False, None, "cnn"),  # QLinearConv uint8 constants
    ("QOperator", "QUInt8", "QUInt8", False, None, "matmul"),  # QLinearMatMul uint8 constants
    ("QDQ", "QUInt8", "QUInt8", False, False, "matmul"),   # MatMul, asymmetric uint8
    ("QDQ", "QUInt8", "QInt8", False, False, "cnn"),       # u8s8, WeightSymmetric=False
    ("QDQ", "QInt8", "QInt8", False, False, "cnn"),        # s8s8, WeightSymmetric=False
    ("QOperator", "QInt8", "QInt8", False, False, "cnn"),  # QLinearConv, asymmetric int8
]


# kind: (input shape, weight shape [O, I/group, kh, kw], group, pads, strides, kernel used)
WIDE_CONVS = {
    "conv": ((1, 5, 7, 7), (6, 5, 3, 3), 1, [1, 1, 1, 1], [1, 1], "tinyaot_convolve_fast_s8"),
    "depthwise": ((1, 8, 6, 6), (8, 1, 3, 3), 8, [1, 1, 1, 1], [1, 1],
                  "tinyaot_depthwise_conv_fast_s8"),
    "depthwise3": ((1, 3, 6, 6), (3, 1, 3, 3), 3, [1, 0, 1, 1], [2, 1], "tinyaot_convolve_w16_s8"),
    "multiplier2": ((1, 3, 5, 5), (6, 1, 3, 3), 3, [1, 1, 1, 1], [1, 1], "tinyaot_convolve_w16_s8"),
    "grouped": ((1, 4, 5, 5), (6, 2, 3, 3), 2, [0, 1, 1, 0], [1, 2], "tinyaot_convolve_w16_s8"),
}


def wide_weights(rng, shape, wtype, per_channel):
    """(weights, scale, zero point) whose w - zp spans more than int8: uint8 with zero
    points away from 128, or int8 with non-zero zero points and the whole int8 range."""
    cout = shape[0]
    n = cout if per_channel else 1
    if wtype == "uint8":
        zp = rng.integers(20, 236, size=n).astype(np.uint8)
        zp[0] = 20
        w = rng.integers(0, 256, size=shape).astype(np.uint8)
        w.reshape(cout, -1)[0, 0] = 255  # 255 - 20 = 235
    else:
        zp = rng.integers(-60, 61, size=n).astype(np.int8)
        zp[0] = -60
        w = rng.integers(-128, 128, size=shape).astype(np.int8)
        w.reshape(cout, -1)[0, 0] = 127  # 127 + 60 = 187
    scale = rng.uniform(0.002, 0.01, size=n).astype(np.float32)
    return w, (scale if per_channel else scale[0]), (zp if per_channel else zp[0])


def wide_conv_model(kind, wtype, per_channel, seed=0, between=False):
    """x -> DQ -> Conv(DQ(w), DQ(bias)) -> Relu -> Q -> y, as quantizers write it; with
    `between` the conv (no Relu) sits between two int8 identity convs, where onnxruntime
    runs it as integers (it keeps a layer reading the int8 graph input in float).
    -> (model, input shape, w - zp as int64 [O, I/g, kh, kw], bias int32, s_w [O])."""
    in_shape, wshape, group, pads, strides, _ = WIDE_CONVS[kind]
    rng = np.random.default_rng(seed)
    b = QdqBuilder(f"wide_{kind}")
    x = b.dq("x", *X_Q)
    if between:
        x = identity_conv(b, x, in_shape[1], X_Q[0])
    wq, ws, wz = wide_weights(rng, wshape, wtype, per_channel)
    w = b.dq(b.const_int(wq, np.dtype(wtype)), ws, wz, axis=0 if per_channel else None,
             dtype=np.dtype(wtype))
    cout = wshape[0]
    sw = np.broadcast_to(np.asarray(ws, np.float32), (cout,))
    bscale = (np.float32(X_Q[0]) * sw).astype(np.float32)
    bq = np.rint(rng.normal(0, 0.3, size=cout) / bscale).astype(np.int32)
    bias = b.dq(b.const_int(bq, np.int32), bscale, np.zeros(cout, np.int32), axis=0,
                dtype=np.int32)
    f = b.op("Conv", [x, w, bias], group=group, pads=pads, strides=strides)
    h, wd = in_shape[2] + pads[0] + pads[2], in_shape[3] + pads[1] + pads[3]
    out_shape = (1, cout, (h - 3) // strides[0] + 1, (wd - 3) // strides[1] + 1)
    if between:
        f = identity_conv(b, b.dq(b.q(f, *Y_Q), *Y_Q), cout, Y_Q[0])
        b.q(f, *Y_Q, out="y")
    else:
        b.q(b.op("Relu", [f]), *Y_Q, out="y")
    zshape = (-1, 1, 1, 1) if per_channel else ()
    d = wq.astype(np.int64) - np.asarray(wz, np.int64).reshape(zshape)
    return b.model("x", in_shape, "y", out_shape), in_shape, d, bq, sw
