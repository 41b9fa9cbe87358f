"""onnxruntime's QLinearAdd (MLAS, x86 AVX2 kernel), emulated bit for bit.

ORT runs a fused QLinearAdd (a QOperator model's node, or a QDQ Add its
optimizer fused) not as DequantizeLinear -> float Add -> QuantizeLinear but as

    r_a = s_a / s_y,  r_b = s_b / s_y                              (float32)
    fixed = zp_y - fma(r_a, zp_a, r_b * zp_b)                      (float32)
    y = saturate(round_half_even(fma(a, r_a, fma(b, r_b, fixed))))

in the type ORT ran it on (uint8 values and zero points when it ran uint8),
which rounds differently from the float formula in a few elements per 65536.
A scalar operand is folded first, unfused: fixed += s * r_s (its own path in
MLAS), so the kernel sees ratio 0 for it; a one-value activation is folded
the same way, once per call, by the kernel. The rest is prepared here at
compile time; the C kernel (tinyaot_add_s8, mode 2) does the two fmaf.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32


def fma32(x, y, z):
    """float32 fused multiply-add (x * y exact in float64 for 8-bit x)."""
    return (np.asarray(x, np.float64) * np.asarray(y, np.float64)
            + np.asarray(z, np.float64)).astype(F32)


def qlinear_add_params(a_q, b_q, y_q, u8, swapped=False, const_scalar=None):
    """IR add operands a (activation), b; *_q = (scale, int8 zero point).
    swapped: b was the ONNX node's first operand. const_scalar: b's one value
    (int8) when b is a constant scalar. Returns the kernel's fields."""
    sh = 128 if u8 else 0
    (sa, za), (sb, zb), (sy, zy) = a_q, b_q, y_q
    ra = F32(F32(sa) / F32(sy))
    rb = F32(F32(sb) / F32(sy))
    # the zero-point part in ONNX operand order (A first)
    (r1, z1), (r2, z2) = ((rb, zb), (ra, za)) if swapped else ((ra, za), (rb, zb))
    fixed = F32(F32(zy + sh) - fma32(r1, F32(z1 + sh), F32(r2 * F32(z2 + sh))))
    if const_scalar is not None:
        fixed = F32(fixed + F32(F32(int(const_scalar) + sh) * rb))
        rb = F32(0.0)
    return {"mode": 2, "a_scale": ra, "b_scale": rb, "qlinear_fixed": fixed, "u8_shift": sh}


def qlinear_add(a, b, p):
    """The kernel's arithmetic on int8 (internal) values; returns int32."""
    sh = p["u8_shift"]
    lo, hi = (0, 255) if sh else (-128, 127)
    a = np.asarray(a, np.int32) + sh
    b = np.asarray(b, np.int32) + sh
    fixed, rb = F32(p["qlinear_fixed"]), F32(p["b_scale"])
    if b.size == 1:  # a broadcast b: MLAS folds it first, unfused (a constant one already is)
        fixed, rb = F32(fixed + F32(F32(b.reshape(-1)[0]) * rb)), F32(0.0)
    t = fma32(a.astype(F32), p["a_scale"], fma32(b.astype(F32), rb, fixed))
    # cvtps: INT32_MIN out of range (-> lo after the saturating packs)
    r = np.where(t >= F32(2.0**31), lo, np.clip(np.rint(np.clip(t, -1024, 1024)), lo, hi))
    return np.clip(r.astype(np.int32) - sh, p["act_min"], p["act_max"]).astype(np.int32)
