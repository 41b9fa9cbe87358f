"""More integer kernels in numpy on logical (ONNX, NCHW) layouts: Mul, ...

Same conventions as ops.py: prepared parameters in, integer tensor out.
"""
from __future__ import annotations

import numpy as np

from ..numerics import ort_float as of

F32 = np.float32


def mul(a, b, p, numerics):
    """Elementwise a * b with numpy broadcasting."""
    a = np.asarray(a, dtype=np.int32)
    b = np.asarray(b, dtype=np.int32)
    if numerics != "ort":
        from . import tflite_fixedpoint as tfp
        return tfp.mul_int8(a, b, {"a_zp": p["a_zp"], "b_zp": p["b_zp"], "out_zp": p["out_zp"],
                                   "out_mult": p["out_mult"], "out_shift": p["out_shift"]},
                            p["act_min"], p["act_max"])
    if p["mode"] == 1:
        # MLAS QLinearMul (SSE2 / NEON): cvt(float(prod) * ratio + float(zp_c)),
        # round to nearest even; out-of-range float -> INT32_MIN; then saturating packs.
        prod = ((a - p["a_zp"]) * (b - p["b_zp"])).astype(F32)
        v = ((prod * F32(p["ratio"])).astype(F32) + F32(p["out_zp"])).astype(F32)
        r = np.where(v >= F32(2.0**31), -128, np.clip(np.rint(np.clip(v, -256, 256)), -128, 127))
        return np.clip(r, p["act_min"], p["act_max"]).astype(np.int32)
    fa = of.dequantize(a, p["a_scale"], p["a_zp"])
    fb = of.dequantize(b, p["b_scale"], p["b_zp"])
    return of.quantize((fa * fb).astype(F32), p["out_scale"], p["out_zp"], p["act_min"], p["act_max"])


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
