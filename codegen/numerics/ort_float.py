"""onnxruntime's float32 steps, emulated operation by operation.

Ops that ORT runs as DequantizeLinear -> float op -> QuantizeLinear (Add,
AveragePool, Softmax) are computed here in float32 in the same order, so the
result has the same bits. Every function is plain float32 arithmetic that
the C kernels repeat literally (compiled with -ffp-contract=off).
"""
from __future__ import annotations

import numpy as np

F32 = np.float32


def dequantize(q, scale, zp):
    """MLAS DequantizeLinear: float(x - zp) * scale."""
    return (np.asarray(q, dtype=np.int32) - np.int32(zp)).astype(F32) * F32(scale)


def quantize(x, scale, zp, lo=-128, hi=127):
    """MLAS QuantizeLinear: round_half_even(x / scale) + zp, saturated."""
    v = np.rint(np.asarray(x, dtype=F32) / F32(scale)).astype(np.float64) + zp
    return np.clip(v, lo, hi).astype(np.int32)


def requantize_acc(acc, scale, zp, lo, hi):
    """MLAS requantization of an int32 accumulator: clamp, round half even, + zp."""
    v = np.asarray(acc).astype(F32) * np.asarray(scale, dtype=F32)
    v = np.minimum(np.maximum(v, F32(lo - zp)), F32(hi - zp))
    return (np.rint(v).astype(np.int32) + np.int32(zp)).astype(np.int32)


# exp() for Softmax: Cody-Waite range reduction and a degree-6 polynomial, in
# float32 without FMA. C: tinyaot_expf in runtime_c/src/activation/tinyaot_softmax_s8.c.
_LN2_HI = F32(0.693359375)
_LN2_LO = F32(-2.12194440e-4)
_LOG2E = F32(1.44269504088896341)
_EXP_P = [F32(1.9875691500e-4), F32(1.3981999507e-3), F32(8.3334519073e-3),
          F32(4.1665795894e-2), F32(1.6666665459e-1), F32(5.0000001201e-1)]


def expf(x):
    """exp of float32 x <= 0 (Softmax after max subtraction)."""
    x = np.asarray(x, dtype=F32)
    x = np.maximum(x, F32(-87.0))
    k = np.floor(x * _LOG2E + F32(0.5)).astype(F32)
    r = x - k * _LN2_HI
    r = r - k * _LN2_LO
    p = _EXP_P[0]
    for c in _EXP_P[1:]:
        p = (p * r + c).astype(F32)
    r2 = (r * r).astype(F32)
    y = (p * r2 + r).astype(F32)
    y = (y + F32(1.0)).astype(F32)
    ki = k.astype(np.int32)
    pow2 = ((ki + 127).astype(np.int32) << 23).view(F32)
    return (y * pow2).astype(F32)


def fma_f32(acc, a, b):
    """float32 fused multiply-add: the product is exact in float64, one rounding.
    (A double rounding could differ from a true fma only on exact float64 ties.)"""
    return (acc.astype(np.float64) + a.astype(np.float64) * b.astype(np.float64)).astype(F32)


def float_weights(w):
    shape = [1] * w.data.ndim
    shape[0] = -1
    scale = np.broadcast_to(w.q.scale.astype(F32), (w.shape[0],)).reshape(shape)
    return (w.data.astype(F32) * scale).astype(F32)


def float_bias(bt, cout):
    if bt is None:
        return np.zeros(cout, dtype=F32)
    data = bt.data.reshape(-1)  # [C], or a conv's [C, 1, 1] bias added on its own
    scale = np.broadcast_to(bt.q.scale.astype(F32), data.shape)
    return (data.astype(F32) * scale).astype(F32)
