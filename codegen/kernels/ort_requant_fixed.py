"""onnxruntime's requantization as one SMMLAR, found and proven at compile time.

onnxruntime requantizes an int32 accumulator acc (bias included) as
q(acc) = clamp(round_half_even(fl32(float(acc) * scale)) + zp, lo, hi)
(numerics/ort_float.py:requantize_acc). For a fixed scale > 0 that is a
monotone step function of acc: it is entirely described by the first acc of
each output level (its thresholds). The kernel computes instead, with its
accumulator started at B rather than the bias (a = acc - bias + B),

    f(acc) = clamp(floor((a * M + 2^31) / 2^32) + R, 0, 255) - 128

(SMMLAR a, M, R; a saturation to [0, 255]; a bytewise - 128). f is monotone
too, and its threshold for level L is ceil(((L + 128 - R) * 2^32 - 2^31) / M)
- (B - bias), so f == q on the accumulator's whole reachable range exactly
when every threshold of q inside the range is one of f and neither function
has a level the other lacks at the range's ends. For a given d = B - bias and
R each level bounds M to an integer interval; the search intersects them for
every d in a small window and keeps the M nearest scale * 2^32. No sampling.
"""
from __future__ import annotations

import numpy as np

from ..numerics.ort_float import requantize_acc

D_WINDOW = 64        # |B - bias| searched
R_WINDOW = 1         # |R - (128 + zp)| searched
M_LIMIT = (1 << 31) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT16_MAX = (1 << 15) - 1
LEVELS = np.arange(-127, 128, dtype=np.int64)  # level L: q(acc) >= L


def acc_range(w_row, bias, in_zp):
    """Exact [min, max] of bias + sum_k w_k * (x_k - in_zp), x_k in [-128, 127]."""
    w = np.asarray(w_row, dtype=np.int64)
    lo = w * (-128 - int(in_zp))
    hi = w * (127 - int(in_zp))
    return int(bias) + int(np.minimum(lo, hi).sum()), int(bias) + int(np.maximum(lo, hi).sum())


def thresholds(scale, zp, lo, hi, amin, amax):
    """First acc in [amin, amax] with q(acc) >= L for L = -127..127 (amax + 1: none);
    q is monotone, so a bisection per level (all levels at once) is exact."""
    def q(a):
        return requantize_acc(a.astype(np.int32), np.float32(scale), zp, lo, hi).astype(np.int64)

    n = LEVELS.size
    left = np.full(n, amin, dtype=np.int64)        # q(left - 1) < L (or left == amin)
    right = np.full(n, amax + 1, dtype=np.int64)   # q(right) >= L (or right == amax + 1)
    while np.any(left < right):
        mid = (left + right) // 2
        ok = q(np.minimum(mid, amax)) >= LEVELS
        right = np.where((left < right) & ok, mid, right)
        left = np.where((left < right) & ~ok, mid + 1, left)
    return left


def _m_bounds(t, d, c, amin, amax):
    """Integer interval [lo, hi] of M (per d row) such that f's threshold for
    each level equals t: (t - 1 + d) * M < c <= (t + d) * M, one side only at
    the range's ends. Arrays: t, c (levels), d (column)."""
    u = t[None, :] + d[:, None]        # a at the threshold
    a = u - 1                          # a just before it
    big = np.int64(1) << 62
    lo = np.full(u.shape, 1, dtype=np.int64)
    hi = np.full(u.shape, M_LIMIT, dtype=np.int64)
    cc = np.broadcast_to(c[None, :], u.shape)
    need_low = np.broadcast_to((t <= amax)[None, :], u.shape)   # f(t) >= L: u * M >= c
    need_high = np.broadcast_to((t > amin)[None, :], u.shape)   # f(t - 1) < L: a * M <= c - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        su = np.where(u == 0, 1, u)
        sa = np.where(a == 0, 1, a)
        lo = np.where(need_low & (u > 0), np.maximum(lo, -((-cc) // su)), lo)
        hi = np.where(need_low & (u < 0), np.minimum(hi, cc // su), hi)
        lo = np.where(need_low & (u == 0) & (cc > 0), big, lo)
        hi = np.where(need_high & (a > 0), np.minimum(hi, (cc - 1) // sa), hi)
        lo = np.where(need_high & (a < 0), np.maximum(lo, -((-(cc - 1)) // sa)), lo)
        lo = np.where(need_high & (a == 0) & (cc < 1), big, lo)
    return lo.max(axis=1), hi.min(axis=1)


def channel_params(scale, bias, zp, lo, hi, amin, amax):
    """(B, M, R) with f == q on every acc in [amin, amax], or None."""
    s = np.float32(scale)
    if not np.isfinite(s) or s <= 0 or amin > amax or amin < INT32_MIN or amax > INT32_MAX:
        return None
    t = thresholds(s, zp, lo, hi, amin, amax)
    target = int(np.rint(np.float64(s) * 2.0 ** 32))
    d = np.arange(-D_WINDOW, D_WINDOW + 1, dtype=np.int64)
    d = d[np.argsort(np.abs(d), kind="stable")]   # prefer B == bias
    best = None
    for r in sorted(range(128 + zp - R_WINDOW, 128 + zp + R_WINDOW + 1), key=lambda v: abs(v - 128 - zp)):
        c = (LEVELS + 128 - r) * (np.int64(1) << 32) - (np.int64(1) << 31)
        # B == bias alone first (most channels; the same choice as the whole window's
        # first hit, ~100x less work), then the whole window
        for ds in (d[:1], d):
            mlo, mhi = _m_bounds(t, ds, c, amin, amax)
            for i in np.flatnonzero(mlo <= mhi):
                m = min(max(target, int(mlo[i])), int(mhi[i]))
                b = int(bias) + int(ds[i])
                if INT32_MIN <= amin - int(bias) + b and amax - int(bias) + b <= INT32_MAX:
                    best = (b, m, r)
                    break
            if best is not None:
                break
        if best is not None:
            break
    if best is None or not fixed_equals_ort(best, s, bias, zp, lo, hi, amin, amax, t):
        return None
    return best


def fixed_equals_ort(params, scale, bias, zp, lo, hi, amin, amax, t=None):
    """The proof: f and q have the same value at amin and the same threshold
    for every level (exact integer arithmetic on f's closed form)."""
    b, m, r = params
    if t is None:
        t = thresholds(scale, zp, lo, hi, amin, amax)
    d = b - int(bias)
    for level, tl in zip(LEVELS.tolist(), t.tolist()):
        c = (level + 128 - r) * (1 << 32) - (1 << 31)
        tf = -((-c) // m) - d                       # first acc with f(acc) >= level
        if max(min(tf, amax + 1), amin) != tl:
            return False
    return True


def raw_bounds(params, bias, amin, amax):
    """[min, max] of floor((a * M + 2^31) / 2^32) + R before the saturation."""
    b, m, r = params
    ends = [((a - int(bias) + b) * m + (1 << 31) >> 32) + r for a in (amin, amax)]
    return min(ends), max(ends)


def layer_params(w2d, bias, scale, in_zp, zp, lo, hi):
    """Per output channel (B, M, R) as int64 arrays and the layer's bound of the
    SMMLAR result, or None when a channel has no exact form."""
    w = np.asarray(w2d)
    n = w.shape[0]
    bias = np.broadcast_to(np.asarray(bias, dtype=np.int64).reshape(-1), (n,))
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float32).reshape(-1), (n,))
    out = np.zeros((n, 3), dtype=np.int64)
    bound = 0
    for ch in range(n):
        amin, amax = acc_range(w[ch], bias[ch], in_zp)
        p = channel_params(scale[ch], bias[ch], int(zp), int(lo), int(hi), amin, amax)
        if p is None:
            return None
        out[ch] = p
        rmin, rmax = raw_bounds(p, bias[ch], amin, amax)
        bound = max(bound, abs(rmin), abs(rmax))
    return out, bound


def fc_fixed_requant(w2d, bias, scale, in_zp, zp, lo, hi):
    """A fast FC layer's per-channel (B, M, R) for onnxruntime's requantization (weights
    [N][K], its int32 bias and float32 scales, zero points and clamp), or None: a channel
    without an exact form, or an SMMLAR result outside int16 (the kernel packs two per
    word before USAT16)."""
    found = layer_params(w2d, bias, scale, in_zp, zp, lo, hi)
    if found is None or found[1] > INT16_MAX:
        return None
    return found[0]
