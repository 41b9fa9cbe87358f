"""More integer kernels in numpy on logical (ONNX, NCHW) layouts: MatMul, Concat, Pad, ...

Same conventions as ops.py: prepared parameters in, integer tensor out.
"""
from __future__ import annotations

import numpy as np

from . import ort_float as of

F32 = np.float32


def concat(xs, p):
    parts = [np.asarray(x, dtype=np.int32) if t is None else t[np.asarray(x, dtype=np.int32) + 128]
             for x, t in zip(xs, p["tables"])]
    return np.concatenate(parts, axis=p["axis"])


def pad(x, attrs, p):
    x = np.asarray(x, dtype=np.int32)
    if p["table"] is not None:
        x = p["table"][x + 128].astype(np.int32)
    widths = list(zip(attrs["before"], attrs["after"]))
    mode = attrs["mode"]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=p["pad_value"])
    return np.pad(x, widths, mode={"reflect": "reflect", "edge": "edge"}[mode])


def eigen_sum_f32(v):
    """Eigen's vectorized float sum (redux_vec_linear, 4-float packets, SSE / NEON),
    as onnxruntime's ReduceMean/ReduceSum run it on a contiguous row: two packet
    accumulators over 8-element steps, one more packet, a horizontal
    (a0 + a2) + (a1 + a3), then the scalar tail in order."""
    v = np.asarray(v, dtype=F32)
    n = v.shape[-1]
    if n < 4:
        s = v[..., 0]
        for i in range(1, n):
            s = (s + v[..., i]).astype(F32)
        return s
    a1, a2 = n // 4 * 4, n // 8 * 8
    p0 = v[..., 0:4]
    if a1 > 4:
        p1 = v[..., 4:8]
        for i in range(8, a2, 8):
            p0 = (p0 + v[..., i:i + 4]).astype(F32)
            p1 = (p1 + v[..., i + 4:i + 8]).astype(F32)
        p0 = (p0 + p1).astype(F32)
        if a1 > a2:
            p0 = (p0 + v[..., a2:a2 + 4]).astype(F32)
    s = ((p0[..., 0] + p0[..., 2]).astype(F32) + (p0[..., 1] + p0[..., 3]).astype(F32)).astype(F32)
    for i in range(a1, n):
        s = (s + v[..., i]).astype(F32)
    return s


def reduce_mean_hw_ort(x, p):
    """onnxruntime's float ReduceMean over H, W (DQ -> ReduceMean -> Q), x NCHW."""
    n, c, h, w = x.shape
    xf = of.dequantize(x, p["in_scale"], p["in_zp"]).reshape(n, c, h * w)
    mean = (eigen_sum_f32(xf) / F32(h * w)).astype(F32)
    y = of.quantize(mean, p["out_scale"], p["out_zp"], p["act_min"], p["act_max"])
    return y.reshape(n, c, 1, 1)


def matmul(a, b, p, numerics):
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if numerics == "ort" and p["mode"] == 2:
        fa = of.dequantize(a, p["a_scale"], p["a_zp"])
        fb = of.dequantize(b, p["b_scale"], p["b_zp"])
        acc = np.zeros(fa.shape[:-1] + (fb.shape[-1],), dtype=F32)
        for k in range(fa.shape[-1]):  # MLAS SGEMM: one fused multiply-add per k
            acc = (acc.astype(np.float64) + fa[..., :, k:k + 1].astype(np.float64)
                   * fb[..., k:k + 1, :].astype(np.float64)).astype(F32)
        return of.quantize(acc, p["out_scale"], p["out_zp"], p["act_min"], p["act_max"])
    acc = np.matmul(a - p["a_zp"], b - p["b_zp"])
    if np.any(np.abs(acc) > 2**31 - 1):
        raise OverflowError("int32 accumulator overflow")
    acc = acc.astype(np.int32)
    if numerics == "ort":
        return of.requantize_acc(acc, p["scale"], p["out_zp"], p["act_min"], p["act_max"])
    from . import tflite_fixedpoint as tfp
    return tfp.requantize(acc, np.int32(p["mult"]), np.int32(p["shift"]), p["out_zp"],
                          p["act_min"], p["act_max"])
