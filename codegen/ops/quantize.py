"""quantize: float32 -> int8 where a float fallback region ends (QuantizeLinear, per tensor).

  ort     MLAS's QuantizeLinear: x / scale clamped to [-128 - zp, 127 - zp] (MAXPS puts a NaN
          at the low end), rounded half to even, + zp;
  tflite  TFLite Micro's AffineQuantize: round half away from zero of x / scale (float), + zp,
          clamped (x86-64's conversion of an out-of-range value: INT32_MIN).
Kernel: tinyaot_quantize_s8_f32.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Op, Traits
from .float_io import ORT, fptr, mode_of

F32 = np.float32


@dataclass
class QuantizeParams:
    mode: int  # float_io.ORT or TFLITE
    scale: float
    zp: int


def quantize(x, p):
    x = np.asarray(x, F32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = (x / F32(p.scale)).astype(F32)
        if p.mode == ORT:
            lo, hi = F32(-128 - p.zp), F32(127 - p.zp)
            v = np.where(v > lo, v, lo)  # MAXPS v, lo
            v = np.where(v < hi, v, hi)
            return (np.rint(v).astype(np.int64) + p.zp).astype(np.int8)
        r = np.where(np.abs(v) < F32(2.0 ** 23), _half_away(v), v)  # larger: integral already
        ok = (r < F32(2.0 ** 31)) & (r >= F32(-2.0 ** 31))  # else (NaN too) INT32_MIN
        ri = np.where(ok, np.where(ok, r, 0).astype(np.int64), np.int64(-2 ** 31))
    s = (ri + p.zp + 2 ** 31) % 2 ** 32 - 2 ** 31  # the int32 sum wraps
    return np.clip(s, -128, 127).astype(np.int8)


def _half_away(v):
    """std::round of float32 v (half away from zero), as the C computes it for |v| < 2^23."""
    with np.errstate(invalid="ignore"):
        t = np.trunc(np.where(np.abs(v) < F32(2.0 ** 23), v, 0)).astype(F32)
    d = (v - t).astype(F32)
    return np.where(d >= F32(0.5), t + F32(1), np.where(d <= F32(-0.5), t - F32(1), t)).astype(F32)


class Quantize(Op):
    name = "quantize"
    traits = Traits()  # row-major in and out

    def prepare(self, g, n, numerics):
        s, zp = g.tensors[n.outputs[0]].q.scalar()
        return QuantizeParams(mode_of(numerics), F32(s), int(zp))

    def reference(self, g, n, ins, p, numerics):
        return quantize(ins[0], p)

    def emit(self, em, lid, n, p, info):
        from ..kernels.c_format import c_float
        x = em.g.tensors[n.inputs[0]]
        info["kernel"] = "tinyaot_quantize_s8_f32"
        em.call(info["kernel"], [str(x.size), c_float(p.scale), str(p.zp), str(p.mode),
                                 fptr(em, x.name, const=True), em.ptr(n.outputs[0])])


OP = Quantize()
