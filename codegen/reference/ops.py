"""Integer kernels in numpy, on logical (ONNX, NCHW) layouts.

Each function gets the prepared parameters of codegen.prepare and returns
the integer output tensor.
"""
from __future__ import annotations

import numpy as np

from ..numerics import ort_float as of
from ..numerics.ort_float import float_bias, float_weights

F32 = np.float32


def conv2d_acc(x, w, in_zp, strides, pads, dil, group):
    """int32 accumulators of sum((x - zp_x) * w) for NCHW x, OIHW w (weight zp 0)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    t, l, b, r = pads
    xp = np.full((n, c, h + t + b, wd + l + r), in_zp, dtype=np.int64)
    xp[:, :, t:t + h, l:l + wd] = x
    xp -= in_zp
    sh, sw = strides
    dh, dw = dil
    oh = (h + t + b - (dh * (kh - 1) + 1)) // sh + 1
    ow = (wd + l + r - (dw * (kw - 1) + 1)) // sw + 1
    og = o // group
    acc = np.zeros((n, o, oh, ow), dtype=np.int64)
    w64 = w.astype(np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
            for gi in range(group):
                pg = patch[:, gi * cg:(gi + 1) * cg]
                wg = w64[gi * og:(gi + 1) * og, :, i, j]
                acc[:, gi * og:(gi + 1) * og] += np.einsum("nchw,oc->nohw", pg, wg)
    return acc


def requant(acc, p, numerics, channel_axis):
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    acc = acc + p["bias"].astype(np.int64).reshape(shape)
    if np.any(acc > 2**31 - 1) or np.any(acc < -2**31):
        raise OverflowError("int32 accumulator overflow")
    acc = acc.astype(np.int32)
    if numerics == "ort" and "post_bias" in p:  # ConvInteger / MatMulInteger chain (prepare.py)
        v = (acc.astype(F32) * p["scale"].reshape(shape)).astype(F32)
        v = (v + p["post_bias"].reshape(shape)).astype(F32)
        return of.quantize(v, p["out_scale"], p["out_zp"], p["act_min"], p["act_max"])
    if numerics == "ort":
        return of.requantize_acc(acc, p["scale"].reshape(shape), p["out_zp"], p["act_min"], p["act_max"])
    from ..numerics import tflite_fixedpoint as tfp
    return tfp.requantize(acc, p["mult"].reshape(shape), p["shift"].reshape(shape),
                          p["out_zp"], p["act_min"], p["act_max"])


def conv2d(x, w, attrs, p, numerics):
    acc = conv2d_acc(x, w, p["in_zp"], attrs["strides"], attrs["pads"], attrs["dilations"], attrs["group"])
    return requant(acc, p, numerics, 1)


def fully_connected(x, w, p, numerics):
    """x [M, K], w [N, K]."""
    acc = (x.astype(np.int64) - p["in_zp"]) @ w.astype(np.int64).T
    return requant(acc, p, numerics, 1)


def conv2d_ort_float(x, wt, bt, attrs, p):
    """onnxruntime's float Conv (DQ -> Conv -> Q), bit for bit."""
    y = conv2d_ort_f32(x, wt, bt, attrs, p)
    return of.quantize(y, p["out_scale"], p["out_zp"], p["act_min"], p["act_max"])


def conv2d_ort_f32(x, wt, bt, attrs, p):
    """The float32 output of onnxruntime's Conv (bias included, before
    QuantizeLinear), NCHW: per group im2col in (c, ky, kx) order and MLAS's
    summation order (numerics/mlas_conv_order.py; it depends on ORT's
    intra-op thread count, attrs["ort_threads"], default 1)."""
    from ..numerics.mlas_conv_order import node_segments, run_segments
    xf = of.dequantize(x, p["in_scale"], p["in_zp"])
    wf = float_weights(wt)
    n, c, h, w = xf.shape
    o, cg, kh, kw = wf.shape
    t, l, b, r = attrs["pads"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilations"]
    group = attrs["group"]
    xp = np.zeros((n, c, h + t + b, w + l + r), dtype=F32)
    xp[:, :, t:t + h, l:l + w] = xf
    oh = (h + t + b - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + l + r - (dw * (kw - 1) + 1)) // sw + 1
    og = o // group
    segs = node_segments(x.shape, (n, o, oh, ow), attrs, attrs.get("ort_threads", 1))
    y = np.zeros((n, o, oh, ow), dtype=F32)
    for bi in range(n):
        for gi in range(group):
            cols = np.zeros((cg * kh * kw, oh * ow), dtype=F32)
            for ci in range(cg):
                for i in range(kh):
                    for j in range(kw):
                        cols[(ci * kh + i) * kw + j] = xp[bi, gi * cg + ci,
                                                          i * dh: i * dh + sh * (oh - 1) + 1: sh,
                                                          j * dw: j * dw + sw * (ow - 1) + 1: sw].reshape(-1)
            wm = wf[gi * og:(gi + 1) * og].reshape(og, -1)
            y[bi, gi * og:(gi + 1) * og] = run_segments(cols, wm, segs).reshape(og, oh, ow)
    return (y + float_bias(bt, o).reshape(1, -1, 1, 1)).astype(F32)


def fully_connected_ort_float(x, wt, bt, p):
    """onnxruntime's float Gemm/MatMul in MLAS's order (numerics/mlas_fc_order.py)."""
    from ..numerics.mlas_fc_order import fc_float
    xf = of.dequantize(x, p["in_scale"], p["in_zp"])
    wf = float_weights(wt)
    y = fc_float(xf, wf, float_bias(bt, wf.shape[0]), p["fc_order"], p["k_block"])
    return of.quantize(y, p["out_scale"], p["out_zp"], p["act_min"], p["act_max"])
