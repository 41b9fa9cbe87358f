"""Quantization helpers every operator uses: integer ranges, rounding, activation
clamps in the output's integers, and int8 -> int8 requantization tables."""
from __future__ import annotations

import numpy as np

from . import ort_float as of
from . import tflite_fixedpoint as tfp

F32 = np.float32


def qrange(dtype):
    return (-128, 127) if dtype == "int8" else (0, 255)


def round_half_away(x):
    """TfLiteRound / std::round."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_end(numerics, x, scale, zp, dtype="int8"):
    """A float input of the model -> its integers, as the numerics' reference quantizes it
    (runtime_c tinyaot_quantize_s8 in C): onnxruntime's QuantizeLinear (x / scale in
    float32, round half to even, + zero point, saturated) or TFLite's QUANTIZE
    (reference_ops::AffineQuantize: x / float(scale), TfLiteRound = std::round, half away
    from zero, + zero point, saturated)."""
    lo, hi = qrange(dtype)
    v = np.asarray(x, dtype=F32) / F32(scale)
    r = np.rint(v).astype(np.float64) if numerics == "ort" else round_half_away(v)
    return np.clip(r + int(zp), lo, hi).astype(dtype)


def dequantize_end(q, scale, zp):
    """An integer output of the model -> the float output after its DequantizeLinear:
    float32(q - zero point) * scale. TFLite's DEQUANTIZE, (float)((double)scale * (q -
    zp)), is the same bits: its double product is exact, so both round it once."""
    return (np.asarray(q, dtype=np.int32) - np.int32(zp)).astype(F32) * F32(scale)


def act_bounds(numerics, out_t, lo, hi):
    """Fused Relu/Clip bounds (real units) -> clamp bounds in the output's integers."""
    s, zp = out_t.q.scalar()
    qmin, qmax = qrange(out_t.dtype)
    a, b = qmin, qmax
    if numerics == "ort":
        # QuantizeLinear(max(lo, y)) == max(QuantizeLinear(lo), QuantizeLinear(y)).
        if lo is not None:
            a = max(qmin, min(qmax, int(np.rint(F32(lo) / s)) + zp))
        if hi is not None:
            b = min(qmax, max(qmin, int(np.rint(F32(hi) / s)) + zp))
    else:
        # TFLite CalculateActivationRangeQuantized: zp + round(f / scale), float.
        if lo is not None:
            a = max(qmin, zp + int(round_half_away(F32(F32(lo) / s))))
        if hi is not None:
            b = min(qmax, zp + int(round_half_away(F32(F32(hi) / s))))
    return int(a), int(b)


def requant_values(x, y, numerics, lo=-128, hi=127):
    """The int8 values -128 .. 127 of x in y's quantization, clamped to [lo, hi]
    (int32, index with q + 128). ort: DequantizeLinear -> QuantizeLinear in
    float32; tflite: TFLite QUANTIZE (int8 -> int8) fixed-point requantization."""
    sx, zx = x.q.scalar()
    sy, zy = y.q.scalar()
    if numerics == "ort":
        v = np.arange(-128, 128, dtype=np.int32)
        return of.quantize(of.dequantize(v, sx, zx), sy, zy, lo, hi)
    return tfp.requantize_int8_table(sx, zx, sy, zy, lo, hi).astype(np.int32)


def requant_table(x, y, numerics, lo, hi):
    """int8 -> int8 change of quantization (and clamp) as a 256-entry table, or
    None when it is the identity (requant_values; only the clamp when the
    quantization is the same)."""
    v = np.arange(-128, 128, dtype=np.int32)
    t = np.clip(v, lo, hi) if x.q.same_as(y.q) else requant_values(x, y, numerics, lo, hi)
    return None if np.array_equal(t, v) else t.astype(np.int8)
