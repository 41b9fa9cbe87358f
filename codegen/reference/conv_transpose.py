"""ConvTranspose (2-D, NCHW logical layout) in numpy, both numerics.

Weights are ONNX's [C_in, C_out/group, kH, kW]. Output pixel (oy, ox) gets
input pixel (iy, ix) through tap (kh, kw) when oy = iy*sh - pad_top + kh*dh
(and likewise for x); the output size is the IR tensor's (output_padding and
output_shape only change it and the pads).

ort: onnxruntime runs a QDQ ConvTranspose in float (its optimizer does not
  fuse it): per group an SGEMM (MLAS: fma over the group's input channels,
  from zero) gives every (out channel, kh, kw, iy, ix) contribution; col2im
  adds them into a zeroed output in (kh, kw) order; then the bias; then
  QuantizeLinear.
tflite: reference_integer_ops::TransposeConv: int32 sums of
  (x + input_offset) * w over all taps, + bias, MultiplyByQuantizedMultiplier
  per channel, + output zero point, clamp.
"""
from __future__ import annotations

import numpy as np

from ..numerics import ort_float as of
from ..numerics.ort_float import fma_f32
from .ops import requant

F32 = np.float32


def _taps(n_in, n_out, k, stride, pad, dil):
    """Per tap: (input slice, output slice) of the pixels it connects, or None."""
    out = []
    for t in range(k):
        off = t * dil - pad  # out = in*stride + off
        lo = max(0, -(off // stride))
        hi = min(n_in - 1, (n_out - 1 - off) // stride)
        out.append(None if hi < lo else
                   (slice(lo, hi + 1), slice(lo * stride + off, hi * stride + off + 1, stride)))
    return out


def tap_blocks(x_shape, w_shape, attrs, out_hw):
    """(kh, kw, group input channels, group output channels, input pixels, output
    pixels) for every tap in (kh, kw) order -- col2im's order -- and group."""
    _, _, h, wd = x_shape
    cin, og, kh, kw = w_shape
    g = attrs["group"]
    cg = cin // g
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    t, l = attrs["pads"][:2]
    rows = _taps(h, out_hw[0], kh, sh, t, dh)
    cols = _taps(wd, out_hw[1], kw, sw, l, dw)
    for i, ry in enumerate(rows):
        for j, rx in enumerate(cols):
            if ry is None or rx is None:
                continue
            for gi in range(g):
                yield (i, j, slice(gi * cg, (gi + 1) * cg), slice(gi * og, (gi + 1) * og),
                       (ry[0], rx[0]), (ry[1], rx[1]))


def conv_transpose_acc(x, w, in_zp, attrs, out_hw):
    """int64 sums of (x - zp) * w, NCHW [n, C_out, oh, ow]."""
    acc = np.zeros((x.shape[0], w.shape[1] * attrs["group"]) + tuple(out_hw), dtype=np.int64)
    xv = x.astype(np.int64) - in_zp
    w64 = w.astype(np.int64)
    for i, j, ci, co, src, dst in tap_blocks(x.shape, w.shape, attrs, out_hw):
        xs = xv[(slice(None), ci) + src]
        acc[(slice(None), co) + dst] += np.einsum("nchw,co->nohw", xs, w64[ci, :, i, j])
    return acc


def conv_transpose_tflite(x, w, attrs, p, out_hw):
    acc = conv_transpose_acc(x, w, p["in_zp"], attrs, out_hw)
    return requant(acc, p, "tflite", 1)


def sgemm_column(xs, wk, gemv):
    """MLAS SGEMM's value of sum over c of xs[:, c] * wk[c] (xs [n, K, ...], wk [K, M])
    -> [n, M, ...]. A general GEMM (x86 AVX512F/FMA3 kernels) takes K in blocks
    of 128 (MLAS_SGEMM_STRIDEK): fma chain from zero per block, each block's sum
    then added to the previous. With a 1-pixel input (GEMM N == 1) MLAS uses its
    M=1 kernel instead: products rounded, summed in groups of four
    ((p0 + p1) + p2) + p3, each group's sum added to the total; a tail of two
    and then one the same way."""
    k = xs.shape[1]
    shape = (xs.shape[0], wk.shape[1]) + xs.shape[2:]
    wb = [wk[c].reshape((1, -1) + (1,) * (xs.ndim - 2)) for c in range(k)]
    xb = [xs[:, c:c + 1] for c in range(k)]
    total = None
    if gemv:
        c = 0
        for size in [4] * (k // 4) + [2] * (k % 4 // 2) + [1] * (k % 2):
            part = (xb[c] * wb[c]).astype(F32)
            for d in range(c + 1, c + size):
                part = (part + (xb[d] * wb[d]).astype(F32)).astype(F32)
            total = part if total is None else (part + total).astype(F32)
            c += size
        return np.broadcast_to(total, shape).astype(F32)
    for k0 in range(0, k, 128):
        part = np.zeros(shape, dtype=F32)
        for c in range(k0, min(k, k0 + 128)):
            part = fma_f32(part, xb[c], wb[c])
        total = part if total is None else (part + total).astype(F32)
    return total


def conv_transpose_ort_float(x, wt, bt, attrs, p, out_hw):
    """onnxruntime's float ConvTranspose on dequantized tensors + QuantizeLinear, bit for bit."""
    y = conv_transpose_f32(x, wt.data, attrs, p, out_hw)
    return of.quantize(y, p["out_scale"], p["out_zp"], p["act_min"], p["act_max"])


def conv_transpose_f32(x, w, attrs, p, out_hw):
    """The float32 output of onnxruntime's ConvTranspose (bias included), NCHW."""
    xf = of.dequantize(x, p["in_scale"], p["in_zp"])
    wf = (w.astype(F32) * p["filter_scale"].reshape(1, -1, 1, 1)).astype(F32)
    y = np.zeros((x.shape[0], w.shape[1] * attrs["group"]) + tuple(out_hw), dtype=F32)
    gemv = x.shape[2] * x.shape[3] == 1  # GEMM N (input pixels) == 1
    for i, j, ci, co, src, dst in tap_blocks(x.shape, w.shape, attrs, out_hw):
        col = sgemm_column(xf[(slice(None), ci) + src], wf[ci, :, i, j], gemv)
        y[(slice(None), co) + dst] = (y[(slice(None), co) + dst] + col).astype(F32)
    return (y + p["bias_f"].reshape(1, -1, 1, 1)).astype(F32)
