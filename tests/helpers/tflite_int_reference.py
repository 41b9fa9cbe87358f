"""A numpy reference of TFLite's integer conv arithmetic, written from TFLite's
reference kernels (tensorflow/lite/kernels/internal/common.h: QuantizeMultiplier,
SaturatingRoundingDoublingHighMul, RoundingDivideByPOT, MultiplyByQuantizedMultiplier;
kernel_util.cc PopulateConvolutionQuantizationParams: the effective scale of output
channel c is double(s_x) * double(s_w[c]) / double(s_y)), in Python integers.

acc = bias[c] + sum (x - zp_x) * (w - zp_w) exactly (the weights' zero point is 0 in
TFLite; a form with one has this meaning: the same real values), then
MultiplyByQuantizedMultiplier, + zp_y, clamped to the activation's range."""
from __future__ import annotations

import math

import numpy as np

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


def quantize_multiplier(m: float):
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    fixed = int(math.floor(abs(q) * 2**31 + 0.5)) * (1 if q >= 0 else -1)  # std::round
    if fixed == 2**31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def _srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    v = ab + nudge
    return (abs(v) >> 31) * (1 if v >= 0 else -1)  # C's int64 division truncates to 0


def _rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    rem = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > threshold else 0)


def mbqm(x: int, m: int, shift: int) -> int:
    left, right = max(shift, 0), max(-shift, 0)
    v = x * (1 << left)
    v = max(INT32_MIN, min(INT32_MAX, v))  # int32 arithmetic of the kernel (no overflow here)
    return _rdbpot(_srdhm(v, m), right)


def conv_acc(x, w, pads, strides, group, x_zp):
    """Exact int sums [N, O, OH, OW] of (x - x_zp) * w, x NCHW, w OIHW (zero point out)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    t, l, b, r = pads
    xp = np.full((n, c, h + t + b, wd + l + r), x_zp, np.int64)
    xp[:, :, t:t + h, l:l + wd] = x
    xp -= x_zp
    sh, sw = strides
    oh, ow = (h + t + b - kh) // sh + 1, (wd + l + r - kw) // sw + 1
    og = o // group
    acc = np.zeros((n, o, oh, ow), np.int64)
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                win = xp[:, g * cg:(g + 1) * cg, i * sh:i * sh + kh, j * sw:j * sw + kw]
                acc[:, oc, i, j] = (win * w[oc].astype(np.int64)).sum(axis=(1, 2, 3))
    return acc


def requantize(acc, bias, sx, sw, sy, zy, lo, hi, fc_per_tensor=False):
    """acc [N, O, ...] + bias[c] -> int8 per TFLite (sw: one scale per output channel).
    fc_per_tensor: FULLY_CONNECTED with one filter scale (GetQuantizedConvolutionMultipler:
    the product s_x * s_w taken in float32, then double / s_y)."""
    out = np.empty(acc.shape, np.int64)
    for c in range(acc.shape[1]):
        if fc_per_tensor:
            prod = np.float64(np.float32(np.float32(sx) * np.float32(sw[c])))
        else:
            prod = np.float64(np.float32(sx)) * np.float64(np.float32(sw[c]))
        m, s = quantize_multiplier(float(prod / np.float64(np.float32(sy))))
        for idx, a in np.ndenumerate(acc[:, c]):
            v = mbqm(int(a) + int(bias[c]), m, s) + int(zy)
            out[(idx[0], c) + idx[1:]] = min(hi, max(lo, v))
    return out
