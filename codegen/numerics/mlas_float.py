"""onnxruntime's float32 kernels for the float fallback, operation by operation.

A float operator the integer path does not take (ops/*_f32.py) runs as onnxruntime runs it:
MLAS's vector kernels as x86-64 dispatches them on a processor with AVX-512F (the platform
table in MLAS's platform.cpp): Softmax / LogSoftmax through MlasComputeSumExpF32KernelAvx512F
(16 lanes, 48 elements a pass, vscalefps), Exp through MlasComputeExpF32KernelAvx512F,
Sigmoid / Tanh / Erf through the FMA3 kernels. Every step here is one float32 operation with
one rounding (a fused multiply-add rounds once), so the C kernels
(runtime_c/src/internal/tinyaot_f32_math.h) repeat them literally and give the same bits on
any IEEE machine; the tests hold both against onnxruntime's own session.

LogSoftmax also takes a logarithm: MLAS calls std::log, glibc's logf, whose table algorithm
(double precision inside) is `glibc_logf` here (checked equal to glibc's on every positive
normal float, FMA build or not).
"""
from __future__ import annotations

import numpy as np

F32 = np.float32


def fma_f32(a, b, c):
    """float32 a * b + c with one rounding, exactly: the product is exact in float64, the
    sum is rounded to odd (nearest, then the odd neighbour when inexact), which makes the
    final rounding to float32 correct."""
    a = np.asarray(a, F32).astype(np.float64)
    b = np.asarray(b, F32).astype(np.float64)
    c = np.asarray(c, F32).astype(np.float64)
    ab = a * b
    s = ab + c
    bb = s - ab
    with np.errstate(invalid="ignore"):
        err = (ab - (s - bb)) + (c - bb)
        bits = np.asarray(s).view(np.int64)
        fix = np.isfinite(s) & (err != 0) & ((bits & 1) == 0)
    step = np.where((err > 0) == (s > 0), 1, -1)
    out = np.where(fix, (bits + step).view(np.float64), s)
    return np.asarray(out).astype(F32)


def x86_max(a, b):
    """MAXPS a, b: a > b ? a : b (the second operand when either is NaN)."""
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    return np.where(a > b, a, b).astype(F32)


def x86_min(a, b):
    """MINPS a, b: a < b ? a : b (the second operand when either is NaN)."""
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    return np.where(a < b, a, b).astype(F32)


def scalef(p, m):
    """VSCALEFPS p, m for integral m: p * 2^m rounded once (subnormal results included).
    m is clamped to [-190, 254] as the C does (only a NaN-poisoned Softmax row gets there)."""
    p = np.asarray(p, F32)
    m = np.asarray(m, F32)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.clip(np.where(np.isnan(m), 0, m), -190, 254).astype(np.int64)
        out = np.ldexp(p.astype(np.float64), e).astype(F32)  # exact in float64, one rounding
    return np.where(np.isnan(m), m, out).astype(F32)


# MlasExpConstants (compute.cpp)
EXP_LOWER = F32(-103.9720840454)
EXP_UPPER = F32(88.7762626647950)
EXP_BIAS = F32(12582912.0)  # MLAS_ROUNDING_BIAS_MAGIC: 1.5 * 2^23
EXP_LOG2_RECIP = F32(1.44269504088896341)
EXP_LOG2_HIGH = F32(-6.93145752e-1)
EXP_LOG2_LOW = F32(-1.42860677e-6)
EXP_POLY = tuple(F32(float.fromhex(h)) for h in (
    "0x1.694000p-10", "0x1.125edcp-7", "0x1.555b5ap-5", "0x1.555450p-3", "0x1.fffff6p-2",
    "0x1.000000p+0"))


def _exp_core(x):
    """The range reduction and polynomial of MLAS's AVX-512F exp on clamped x."""
    biased = fma_f32(x, EXP_LOG2_RECIP, EXP_BIAS)
    m = (biased - EXP_BIAS).astype(F32)
    r = fma_f32(m, EXP_LOG2_HIGH, x)
    r = fma_f32(m, EXP_LOG2_LOW, r)
    p = np.full(np.shape(r), EXP_POLY[0], F32)
    for c in EXP_POLY[1:]:
        p = fma_f32(p, r, c)
    p = fma_f32(p, r, EXP_POLY[5])
    return scalef(p, m)


def exp(x):
    """MlasComputeExpF32KernelAvx512F (onnxruntime's Exp)."""
    x = x86_min(EXP_UPPER, x86_max(EXP_LOWER, x))
    return _exp_core(x)


def sum_exp(row, neg_max):
    """MlasComputeSumExpF32KernelAvx512F on one row: (sum, exp values). 16 lanes; 48 elements
    a pass (three vectors added to the lanes in turn), then 16 at a time (the tail masked);
    the lanes reduced as 8 pairs (i, i + 8), then ((0+1)+(2+3)) + ((4+5)+(6+7))."""
    row = np.asarray(row, F32)
    e = _exp_core(x86_max(EXP_LOWER, (row + F32(neg_max)).astype(F32)))
    lanes = np.zeros(16, F32)
    n = len(row)
    i = 0
    while n - i >= 48:
        for k in range(3):
            lanes = (lanes + e[i + 16 * k:i + 16 * k + 16]).astype(F32)
        i += 48
    while i < n:
        c = min(16, n - i)
        lanes[:c] = (lanes[:c] + e[i:i + c]).astype(F32)
        i += c
    b = (lanes[8:] + lanes[:8]).astype(F32)
    s = F32(F32(F32(b[0] + b[1]) + F32(b[2] + b[3])) + F32(F32(b[4] + b[5]) + F32(b[6] + b[7])))
    return s, e


def softmax_rows(x, log=False):
    """MlasComputeSoftmax over the last axis of a 2-D float32 array: the row's max, the sum
    of exp(x - max), then e * (1 / sum), or for LogSoftmax (x - max) - logf(sum)."""
    x = np.asarray(x, F32)
    out = np.empty_like(x)
    for r in range(x.shape[0]):
        row = x[r]
        neg_max = F32(-reduce_max(row))
        s, e = sum_exp(row, neg_max)
        if log:
            out[r] = ((row + neg_max).astype(F32) - glibc_logf(s)).astype(F32)
        else:
            out[r] = (e * (F32(1.0) / s)).astype(F32)
    return out


def reduce_max(row):
    """MlasReduceMaximumF32KernelAvx512F (8 lanes): from FLT_LOWEST, four lane vectors over
    blocks of 32, combined, then 8 at a time, reduced (lanes i, i + 4; then 0, 2 and 1, 3;
    then 0, 1), then the rest one by one. Each step MAXPS, so a NaN lands as MAXPS puts it."""
    row = np.asarray(row, F32)
    n = len(row)
    acc = F32(np.finfo(F32).min)
    i = 0
    if n >= 8:
        v = np.full(8, acc, F32)
        if n >= 32:
            vs = [v.copy() for _ in range(4)]
            while n - i >= 32:
                for k in range(4):
                    vs[k] = x86_max(vs[k], row[i + 8 * k:i + 8 * k + 8])
                i += 32
            v = x86_max(x86_max(vs[0], vs[1]), x86_max(vs[2], vs[3]))
        while n - i >= 8:
            v = x86_max(v, row[i:i + 8])
            i += 8
        w = x86_max(v[:4], v[4:])
        w = x86_max(w, w[[2, 3, 2, 3]])
        acc = x86_max(w[0], w[1])[()]
    while i < n:
        acc = x86_max(acc, row[i])[()]
        i += 1
    return F32(acc)


# MlasLogisticConstants (logistic.cpp), LogisticKernelFma3
LOGISTIC_RANGE = F32(18.0)
LOGISTIC_ALPHA = tuple(F32(v) for v in (4.37031012579801e-11, 1.15627324459942e-07,
                                        6.08574864600143e-05, 8.51377133304701e-03,
                                        2.48287947061529e-01))
LOGISTIC_BETA = tuple(F32(v) for v in (6.10247389755681e-13, 5.76102136993427e-09,
                                       6.29106785017040e-06, 1.70198817374094e-03,
                                       1.16817656904453e-01, 9.93151921023180e-01))


def logistic(x):
    """MlasComputeLogisticF32KernelFma3 (onnxruntime's Sigmoid): x clamped to [-18, 18],
    x * p(x^2) / q(x^2) + 0.5, clamped below at 0."""
    v = x86_min(LOGISTIC_RANGE, x86_max(-LOGISTIC_RANGE, x))
    x2 = (v * v).astype(F32)
    p = fma_f32(x2, LOGISTIC_ALPHA[0], LOGISTIC_ALPHA[1])
    for c in LOGISTIC_ALPHA[2:]:
        p = fma_f32(p, x2, c)
    q = fma_f32(x2, LOGISTIC_BETA[0], LOGISTIC_BETA[1])
    for c in LOGISTIC_BETA[2:]:
        q = fma_f32(q, x2, c)
    p = (v * p).astype(F32)
    y = ((p / q).astype(F32) + F32(0.5)).astype(F32)
    return x86_max(F32(0.0), y)


# MlasTanhConstants (tanh.cpp), TanhKernelFma3
TANH_RANGE = F32(9.0)
TANH_ALPHA = tuple(F32(v) for v in (-2.76076847742355e-16, 2.00018790482477e-13,
                                    -8.60467152213735e-11, 5.12229709037114e-08,
                                    1.48572235717979e-05, 6.37261928875436e-04,
                                    4.89352455891786e-03))
TANH_BETA = tuple(F32(v) for v in (1.19825839466702e-06, 1.18534705686654e-04,
                                   2.26843463243900e-03, 4.89352518554385e-03))


def tanh(x):
    """MlasComputeTanhF32KernelFma3 (onnxruntime's Tanh): x clamped to [-9, 9],
    x * p(x^2) / q(x^2)."""
    v = x86_min(TANH_RANGE, x86_max(-TANH_RANGE, x))
    x2 = (v * v).astype(F32)
    p = fma_f32(x2, TANH_ALPHA[0], TANH_ALPHA[1])
    for c in TANH_ALPHA[2:]:
        p = fma_f32(p, x2, c)
    p = (p * v).astype(F32)
    q = fma_f32(x2, TANH_BETA[0], TANH_BETA[1])
    for c in TANH_BETA[2:]:
        q = fma_f32(q, x2, c)
    return (p / q).astype(F32)


# MlasErfConstants (erf.cpp), ErfKernelFma3: an odd polynomial below 0.921875, else
# 1 - exp(-q(|x|)) with an exp of its own; |x| clamped to 3.925, the sign put back.
ERF_UPPER = F32(3.925)
ERF_SPLIT = F32(0.921875)
ERF_SMALL = tuple(F32(v) for v in (-5.99104969e-4, 4.99339588e-3, -2.67667342e-2,
                                   1.12818025e-1, -3.76124859e-1, 1.28379151e-1))
ERF_BIG = tuple(F32(v) for v in (1.72948930e-5, -3.83208680e-4, 3.88393435e-3, -2.42545605e-2,
                                 1.06777847e-1, 6.34846687e-1, 1.28717512e-1))
ERF_EXP_LOWER = F32(-88.3762626647949)
ERF_EXP_C = F32(1.25829120e+7)
ERF_EXP_POLY = tuple(F32(v) for v in (1.38319808e-3, 8.37550033e-3, 4.16689515e-2,
                                      1.66664466e-1, 4.99999851e-1, 1.00000000e+0,
                                      1.00000000e+0))


def erf(x):
    """MlasErfKernelFma3 (onnxruntime's Erf)."""
    x = np.asarray(x, F32)
    bits = x.view(np.uint32)
    sign = bits & np.uint32(0x80000000)
    a = x86_min(ERF_UPPER, (bits & np.uint32(0x7FFFFFFF)).view(F32))  # a NaN passes
    s = (a * a).astype(F32)
    small = np.full(a.shape, ERF_SMALL[0], F32)
    for c in ERF_SMALL[1:]:
        small = fma_f32(small, s, c)
    small = fma_f32(small, a, a)
    big_lane = ERF_SPLIT <= a
    small = np.where(big_lane, F32(0), small).astype(F32)
    ab = np.where(big_lane, a, F32(0)).astype(F32)
    big = np.full(a.shape, ERF_BIG[0], F32)
    for c in ERF_BIG[1:]:
        big = fma_f32(big, ab, c)
    big = fma_f32(big, ab, ab)
    big = (big.view(np.uint32) ^ np.uint32(0x80000000)).view(F32)
    big = x86_max(big, ERF_EXP_LOWER)
    r = (fma_f32(EXP_LOG2_RECIP, big, ERF_EXP_C) - ERF_EXP_C).astype(F32)
    f = fma_f32(EXP_LOG2_HIGH, r, big)
    f = fma_f32(r, EXP_LOG2_LOW, f)
    y = np.full(a.shape, ERF_EXP_POLY[0], F32)
    for c in ERF_EXP_POLY[1:]:
        y = fma_f32(y, f, c)
    i = np.trunc(r).astype(np.int64)
    pow2 = ((i + 127).astype(np.uint32) << np.uint32(23)).view(F32)
    y = (F32(1.0) - (y * pow2).astype(F32)).astype(F32)
    out = y.view(np.uint32) | small.view(np.uint32) | sign
    return out.view(F32)


def gelu(x, approximate="none"):
    """onnxruntime's Gelu (opset 20, gelu.cc): none: x * float(1/sqrt 2) -> MLAS erf ->
    0.5f * x * (erf + 1); tanh: x * (C x x + B) -> MLAS tanh -> 0.5f * x * (tanh + 1)."""
    x = np.asarray(x, F32)
    if approximate == "tanh":
        t = (x * ((F32(0.035677408136300125) * x).astype(F32) * x + F32(0.7978845608028654))
             .astype(F32)).astype(F32)
        e = tanh(t)
    else:
        e = erf((x * F32(0.70710678118654752440)).astype(F32))
    return ((F32(0.5) * x).astype(F32) * (e + F32(1.0)).astype(F32)).astype(F32)


# glibc's logf (sysdeps/ieee754/flt-32/e_logf.c, table e_logf_data.c): 16 subintervals of
# [0x3f330000, 2 * 0x3f330000), log(x) = k ln2 + log(c) + log1p(z / c - 1) in double.
LOGF_INVC = tuple(float.fromhex(h) for h in (
    "0x1.661ec79f8f3bep+0", "0x1.571ed4aaf883dp+0", "0x1.49539f0f010bp+0",
    "0x1.3c995b0b80385p+0", "0x1.30d190c8864a5p+0", "0x1.25e227b0b8eap+0",
    "0x1.1bb4a4a1a343fp+0", "0x1.12358f08ae5bap+0", "0x1.0953f419900a7p+0", "0x1p+0",
    "0x1.e608cfd9a47acp-1", "0x1.ca4b31f026aap-1", "0x1.b2036576afce6p-1",
    "0x1.9c2d163a1aa2dp-1", "0x1.886e6037841edp-1", "0x1.767dcf5534862p-1"))
LOGF_LOGC = tuple(float.fromhex(h) for h in (
    "-0x1.57bf7808caadep-2", "-0x1.2bef0a7c06ddbp-2", "-0x1.01eae7f513a67p-2",
    "-0x1.b31d8a68224e9p-3", "-0x1.6574f0ac07758p-3", "-0x1.1aa2bc79c81p-3",
    "-0x1.a4e76ce8c0e5ep-4", "-0x1.1973c5a611cccp-4", "-0x1.252f438e10c1ep-5", "0x0p+0",
    "0x1.aa5aa5df25984p-5", "0x1.c5e53aa362eb4p-4", "0x1.526e57720db08p-3",
    "0x1.bc2860d22477p-3", "0x1.1058bc8a07ee1p-2", "0x1.4043057b6ee09p-2"))
LOGF_LN2 = float.fromhex("0x1.62e42fefa39efp-1")
LOGF_POLY = tuple(float.fromhex(h) for h in (
    "-0x1.00ea348b88334p-2", "0x1.5575b0be00b6ap-2", "-0x1.ffffef20a4123p-2"))


def glibc_logf(x):
    """glibc's logf: its table algorithm for positive floats (subnormals scaled by 2^23
    first), -inf at zero, inf at inf, NaN below zero and at NaN."""
    x = np.asarray(x, F32)
    ix = x.view(np.uint32).astype(np.int64)
    sub = (ix > 0) & (ix < 0x00800000)
    with np.errstate(invalid="ignore", over="ignore"):
        ix = np.where(sub, (x * F32(2.0 ** 23)).view(np.uint32).astype(np.int64) - (23 << 23), ix)
    tmp = ix - 0x3F330000
    i = (tmp >> 19) & 15
    k = (tmp.astype(np.int32) >> 23).astype(np.int64)
    iz = ix - (tmp & 0xFF800000)
    z = (iz & 0xFFFFFFFF).astype(np.uint32).view(F32).astype(np.float64)
    invc = np.asarray(LOGF_INVC)[i]
    logc = np.asarray(LOGF_LOGC)[i]
    with np.errstate(invalid="ignore", over="ignore"):
        r = z * invc - 1.0
        y0 = logc + k.astype(np.float64) * LOGF_LN2
        r2 = r * r
        y = LOGF_POLY[1] * r + LOGF_POLY[2]
        y = LOGF_POLY[0] * r2 + y
        y = y * r2 + (y0 + r)
        y = y.astype(F32)
    xs = x.view(np.uint32)
    y = np.where(xs == 0x3F800000, F32(0.0), y)
    y = np.where((xs & 0x7FFFFFFF) == 0, F32(-np.inf), y)
    y = np.where(xs == 0x7F800000, F32(np.inf), y)
    y = np.where(((xs >> 31) == 1) & ((xs & 0x7FFFFFFF) != 0) | np.isnan(x), F32(np.nan), y)
    return y.astype(F32)
