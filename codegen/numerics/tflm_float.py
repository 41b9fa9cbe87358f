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
