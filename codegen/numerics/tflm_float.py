"""TFLite Micro's float reference kernels of the float fallback, in numpy, operation by
operation (the C twins are in runtime_c/src/internal/tinyaot_f32_math.h and
runtime_c/src/float/):

  glibc_expf      std::exp of a float as TFLite Micro's host build calls it: glibc's expf
                  (sysdeps/ieee754/flt-32/e_expf.c) in the FMA build x86-64 glibc picks on
                  a CPU with FMA: the reduced argument r = x * 32/ln2 - k rounded once;
  softmax_rows    reference_ops::Softmax (beta 1): the row's max, exp(x - max) summed in
                  order in float, then e / sum;
  log_softmax_rows  reference_ops::LogSoftmax: (x - max) - logf(sum of exp(x - max)).
"""
from __future__ import annotations

import numpy as np

from .mlas_float import glibc_logf

F32 = np.float32

# e_exp2f_data.c: tab[i] = bits(2^(i/32)) - (i << 47)
EXPF_TAB = np.array([int(h, 16) for h in (
    "3ff0000000000000", "3fefd9b0d3158574", "3fefb5586cf9890f", "3fef9301d0125b51",
    "3fef72b83c7d517b", "3fef54873168b9aa", "3fef387a6e756238", "3fef1e9df51fdee1",
    "3fef06fe0a31b715", "3feef1a7373aa9cb", "3feedea64c123422", "3feece086061892d",
    "3feebfdad5362a27", "3feeb42b569d4f82", "3feeab07dd485429", "3feea47eb03a5585",
    "3feea09e667f3bcd", "3fee9f75e8ec5f74", "3feea11473eb0187", "3feea589994cce13",
    "3feeace5422aa0db", "3feeb737b0cdc5e5", "3feec49182a3f090", "3feed503b23e255d",
    "3feee89f995ad3ad", "3feeff76f2fb5e47", "3fef199bdd85529c", "3fef3720dcef9069",
    "3fef5818dcfba487", "3fef7c97337b9b5f", "3fefa4afa2a490da", "3fefd0765b6e4540")],
    dtype=np.uint64)
EXPF_INVLN2N = float.fromhex("0x1.71547652b82fep+5")  # 32 / ln 2
EXPF_INVLN2N_HI = float.fromhex("0x1.715476p+5")  # its first 26 bits: hi * x is exact
EXPF_INVLN2N_LO = float.fromhex("0x1.4ae0bf8p-21")  # the rest: lo * x is exact too
EXPF_SHIFT = float.fromhex("0x1.8p+52")
EXPF_POLY = (float.fromhex("0x1.c6af84b912394p-20"), float.fromhex("0x1.ebfce50fac4f3p-13"),
             float.fromhex("0x1.62e42ff0c52d6p-6"))


def glibc_expf(x):
    """glibc's expf: k = round(x * 32 / ln2), exp(x) = 2^(k/32) * (1 + c2 r + c1 r^2 +
    c0 r^3) in double, rounded once; 0 below log(2^-150), inf above log(2^128)."""
    x = np.asarray(x, F32)
    with np.errstate(over="ignore", invalid="ignore"):
        xd = x.astype(np.float64)
        kd = EXPF_INVLN2N * xd + EXPF_SHIFT
        ki = kd.view(np.uint64)
        r = (EXPF_INVLN2N_HI * xd - (kd - EXPF_SHIFT)) + EXPF_INVLN2N_LO * xd  # fma(C, x, -k)
        s = (EXPF_TAB[ki % np.uint64(32)] + (ki << np.uint64(47))).view(np.float64)
        c0, c1, c2 = EXPF_POLY
        y = (c0 * r + c1) * (r * r) + (c2 * r + 1.0)
        y = (y * s).astype(F32)
    y = np.where(x > F32(float.fromhex("0x1.62e42ep6")), F32(np.inf), y)
    y = np.where(x < F32(-float.fromhex("0x1.9fe368p6")), F32(0.0), y)
    return np.where(np.isnan(x), x, y).astype(F32)


def _max_and_sum(x):
    x = np.asarray(x, F32)
    mx = x.max(axis=1)  # std::max from FLT_LOWEST over finite values
    e = glibc_expf((x - mx[:, None]).astype(F32))
    s = np.zeros(x.shape[0], F32)
    for c in range(x.shape[1]):  # sum += exp_c, in order, in float
        s = (s + e[:, c]).astype(F32)
    return x, mx, e, s


def softmax_rows(x):
    """reference_ops::Softmax over the last axis of a 2-D float32 array (beta 1)."""
    _, _, e, s = _max_and_sum(x)
    return (e / s[:, None]).astype(F32)


def log_softmax_rows(x):
    """reference_ops::LogSoftmax over the last axis: x - max - logf(sum)."""
    x, mx, _, s = _max_and_sum(x)
    return ((x - mx[:, None]).astype(F32) - glibc_logf(s)[:, None]).astype(F32)


def tflm_logistic(x):
    """reference_ops::Logistic on float32: 1 above 16.619047..., expf(x) below -9, else
    1 / (1 + expf(-x)) (std::exp is glibc's expf)."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        mid = (F32(1) / (F32(1) + glibc_expf(-x))).astype(F32)
        y = np.where(x < F32(-9.0), glibc_expf(x), mid)
        return np.where(x > F32(16.619047164916992188), F32(1), y).astype(F32)


_U32 = np.uint32


def _bits(x):
    return np.asarray(x, F32).view(_U32)


def _from_bits(u):
    return np.asarray(u, np.uint64).astype(_U32).view(F32)


def _add_exponent(y, k):
    """y's bits plus k * 2^23, modulo 2^32."""
    u = _bits(y).astype(np.int64) + (np.asarray(k, np.int64) << 23)
    return _from_bits(u % (1 << 32))


def glibc_expm1f(x):
    """expm1f as glibc up to 2.40 computes it (the fdlibm float port, s_expm1f.c), every
    step one float32 operation, all lanes computed and the right one selected."""
    ln2_hi, ln2_lo = F32(float.fromhex("0x1.62e3p-1")), F32(float.fromhex("0x1.2fefa2p-17"))
    invln2 = F32(float.fromhex("0x1.715476p+0"))
    q1, q2, q3, q4, q5 = (F32(float.fromhex(h)) for h in (
        "-0x1.111112p-5", "0x1.a01a02p-10", "-0x1.4ce19ap-14", "0x1.0cfca8p-18",
        "-0x1.afdb76p-23"))
    x = np.asarray(x, F32)
    bits = _bits(x)
    neg = (bits >> _U32(31)) == 1
    ax = bits & _U32(0x7fffffff)
    with np.errstate(all="ignore"):
        kf = (invln2 * x + np.where(neg, F32(-0.5), F32(0.5))).astype(F32)
        kbig = np.trunc(np.where(np.isfinite(kf) & (np.abs(kf) < 2.0 ** 30), kf, 0)) \
            .astype(np.int64)
        tb = kbig.astype(F32)
        near = ax < _U32(0x3f851592)  # |x| < 1.5 ln2
        hi = np.where(near, np.where(neg, x + ln2_hi, x - ln2_hi),
                      (x - (tb * ln2_hi).astype(F32)).astype(F32)).astype(F32)
        lo = np.where(near, np.where(neg, -ln2_lo, ln2_lo), (tb * ln2_lo).astype(F32)).astype(F32)
        reduce = ax > _U32(0x3eb17218)
        k = np.where(reduce, np.where(near, np.where(neg, -1, 1), kbig), 0).astype(np.int64)
        xr = np.where(reduce, (hi - lo).astype(F32), x).astype(F32)
        c = np.where(reduce, ((hi - xr).astype(F32) - lo).astype(F32), F32(0)).astype(F32)
        hfx = (F32(0.5) * xr).astype(F32)
        hxs = (xr * hfx).astype(F32)
        p = (q4 + (hxs * q5).astype(F32)).astype(F32)
        for q in (q3, q2, q1):
            p = (q + (hxs * p).astype(F32)).astype(F32)
        r1 = (F32(1) + (hxs * p).astype(F32)).astype(F32)
        t = (F32(3) - (r1 * hfx).astype(F32)).astype(F32)
        e = (hxs * ((r1 - t).astype(F32) / (F32(6) - (xr * t).astype(F32)).astype(F32))
             .astype(F32)).astype(F32)
        y_k0 = (xr - ((xr * e).astype(F32) - hxs).astype(F32)).astype(F32)
        e = ((xr * (e - c).astype(F32)).astype(F32) - c).astype(F32)
        e = (e - hxs).astype(F32)
        y_m1 = ((F32(0.5) * (xr - e).astype(F32)).astype(F32) - F32(0.5)).astype(F32)
        y_p1 = np.where(xr < F32(-0.25),
                        (F32(-2) * (e - (xr + F32(0.5)).astype(F32)).astype(F32)).astype(F32),
                        (F32(1) + (F32(2) * (xr - e).astype(F32)).astype(F32)).astype(F32))
        y_far = (_add_exponent((F32(1) - (e - xr).astype(F32)).astype(F32), k) - F32(1)) \
            .astype(F32)
        kk = np.clip(k, 0, 31)
        t_small = _from_bits(np.int64(0x3f800000) - (np.int64(0x1000000) >> kk))
        y_small = _add_exponent((t_small - (e - xr).astype(F32)).astype(F32), k)
        t_large = _from_bits((np.int64(0x7f) - np.clip(k, 0, 127)) << 23)
        y_large = _add_exponent(((xr - (e + t_large).astype(F32)).astype(F32) + F32(1))
                                .astype(F32), k)
        y = np.select([k == 0, k == -1, k == 1, (k <= -2) | (k > 56), k < 23],
                      [y_k0, y_m1, y_p1, y_far, y_small], y_large).astype(F32)
        y = np.where(ax < _U32(0x33000000), x, y)  # |x| < 2^-25
        big = ax >= _U32(0x4195b844)  # |x| >= 27 ln2
        y = np.where(big & neg, F32(-1), y)
        y = np.where(big & ~neg & (ax >= _U32(0x42b17218)), F32(np.inf), y)
        y = np.where(ax == _U32(0x7f800000), np.where(neg, F32(-1), x), y)
        return np.where(ax > _U32(0x7f800000), x, y).astype(F32)


def glibc_tanhf(x):
    """tanhf as glibc up to 2.40 computes it (s_tanhf.c, fdlibm), which TFLite Micro's float
    TANH calls (std::tanh): x near 0, +-1 from |x| = 22, else from expm1f(+-2|x|)."""
    x = np.asarray(x, F32)
    bits = _bits(x)
    neg = (bits >> _U32(31)) == 1
    ax = bits & _U32(0x7fffffff)
    a = ax.view(F32)
    with np.errstate(all="ignore"):
        t_big = glibc_expm1f((F32(2) * a).astype(F32))
        z_big = (F32(1) - (F32(2) / (t_big + F32(2)).astype(F32)).astype(F32)).astype(F32)
        t_small = glibc_expm1f((F32(-2) * a).astype(F32))
        z_small = (-t_small / (t_small + F32(2)).astype(F32)).astype(F32)
        z = np.where(ax >= _U32(0x3f800000), z_big, z_small)
        z = np.where(ax >= _U32(0x41b00000), F32(1), z).astype(F32)
        y = np.where(neg, -z, z).astype(F32)
        y = np.where(ax < _U32(0x24000000), (x * (F32(1) + x).astype(F32)).astype(F32), y)
        y = np.where(ax == 0, x, y)
        return np.where(ax >= _U32(0x7f800000), np.where(np.isnan(x), x, np.where(neg, F32(-1),
                                                                                 F32(1))), y) \
            .astype(F32)
