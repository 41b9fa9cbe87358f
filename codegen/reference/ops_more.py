"""More integer kernels in numpy on logical (ONNX, NCHW) layouts: MatMul

Same conventions as ops.py: prepared parameters in, integer tensor out.
"""
from __future__ import annotations

import numpy as np

from ..numerics import ort_float as of

F32 = np.float32


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
    from ..numerics import tflite_fixedpoint as tfp
    return tfp.requantize(acc, np.int32(p["mult"]), np.int32(p["shift"]), p["out_zp"],
                          p["act_min"], p["act_max"])
