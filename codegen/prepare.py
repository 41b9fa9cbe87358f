"""Compile-time preparation of every kernel's parameters, per numerics.

Like TFLite Micro's Prepare: all multipliers, shifts, float scales and clamp
bounds are computed here, once, and both the numpy reference and the C
emitter consume the result. Nothing is computed at run time.

numerics:
  "ort"    - what onnxruntime computes: float32 requantization,
             round half to even (MLAS), scale products in float32.
  "tflite" - TFLite Micro integer reference: 31-bit multipliers and shifts,
             double rounding, ties away from zero.
"""
from __future__ import annotations

import numpy as np

from . import ops
from .errors import TinyAotError
from .ir import Graph, Node
from .numerics.quant import act_bounds

NUMERICS = ("ort", "tflite")
F32 = np.float32


def prepare_node(g: Graph, n: Node, numerics: str) -> dict:
    op = ops.find(n.op)  # an operator module (codegen/ops/) prepares its own layer
    if op is not None:
        return op.prepare(g, n, numerics)
    fn = _PREPARE.get(n.op)
    if fn is None:
        return {}
    return fn(g, n, numerics)


def _add(g, n, numerics):
    a, b = (g.tensors[i] for i in n.inputs)
    y = g.tensors[n.outputs[0]]
    sa, za = a.q.scalar()
    sb, zb = b.q.scalar()
    sy, zy = y.q.scalar()
    p = {"a_zp": za, "b_zp": zb, "out_zp": zy}
    p["act_min"], p["act_max"] = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    if numerics == "ort":
        fused, u8 = n.attrs.get("ort_fused", False), n.attrs.get("ort_fused_u8", False)
        if fused:  # MLAS QLinearAdd, not the float formula (numerics/ort_qlinear_add.py)
            from .numerics.ort_qlinear_add import qlinear_add_params
            scalar = int(b.data.reshape(-1)[0]) if b.is_const and b.size == 1 else None
            p.update(qlinear_add_params((sa, za), (sb, zb), (sy, zy),
                                        u8 or bool(getattr(y, "zp_shift", 0)),
                                        bool(n.attrs.get("swapped")), scalar))
        else:
            p.update(mode=1, a_scale=sa, b_scale=sb, out_scale=sy)
    else:
        from .numerics import tflite_fixedpoint as tfp
        p.update(tfp.add_params(float(sa), za, float(sb), zb, float(sy), zy))
    return p


def _avgpool(g, n, numerics):
    x = g.tensors[n.inputs[0]]
    y = g.tensors[n.outputs[0]]
    sx, zx = x.q.scalar()
    sy, zy = y.q.scalar()
    p = {"in_zp": zx, "out_zp": zy}
    p["act_min"], p["act_max"] = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    if numerics == "ort":
        p.update(in_scale=sx, out_scale=sy)
        if n.attrs.get("ort_qlinear"):  # frontend/ort_facts.py: round(mean / s + zp)
            p["qlinear"] = True
            # the zero point ORT's kernel adds: uint8 (int8 + 128) if it ran on uint8
            p["mean_bias"] = int(n.attrs.get("ort_zp_shift", 0)) or int(getattr(y, "zp_shift", 0))
    else:
        if not x.q.same_as(y.q):
            # TFLite has no rescaling AveragePool; the converter emits MEAN over
            # H, W, whose int8 kernel (reference_integer_ops::Mean) rescales.
            a = n.attrs
            if tuple(a["kernel"]) != tuple(x.shape[2:]) or any(a["pads"]):
                raise TinyAotError("tflite numerics: AveragePool with different input and "
                                   "output quantization must be global (TFLite MEAN)",
                                   model=g.source, node=n.name)
            from .numerics import tflite_fixedpoint as tfp
            count = F32(x.shape[2] * x.shape[3])
            p["mean_bias"] = int(zy - int(F32(F32(zx) * sx) / sy))
            p["mean_mult"], p["mean_shift"] = tfp.quantize_multiplier(
                float(F32(sx / F32(count * sy))))
        if n.attrs.get("count_include_pad"):
            raise TinyAotError("tflite numerics: AveragePool with count_include_pad=1",
                               model=g.source, node=n.name)
    return p


def _maxpool(g, n, numerics):
    x = g.tensors[n.inputs[0]]
    y = g.tensors[n.outputs[0]]
    if not x.q.same_as(y.q):
        raise TinyAotError("MaxPool input and output quantization differ",
                           model=g.source, node=n.name)
    p = {}
    p["act_min"], p["act_max"] = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    return p


def _softmax(g, n, numerics):
    x = g.tensors[n.inputs[0]]
    y = g.tensors[n.outputs[0]]
    sx, zx = x.q.scalar()
    sy, zy = y.q.scalar()
    p = {"in_zp": zx, "out_zp": zy}
    if numerics == "ort":
        p.update(in_scale=sx, out_scale=sy)
        if n.attrs.get("ort_qlinear"):  # onnxruntime QLinearSoftmax (frontend/ort_facts.py)
            from .reference.ops import qlinear_softmax_table
            p.update(qlinear=True, table=qlinear_softmax_table(sx, x.shape[-1]),
                     y_mult=F32(np.floor(F32(1.0) / sy)),
                     u8=bool(n.attrs.get("ort_u8") or getattr(y, "zp_shift", 0)))
    else:
        from .numerics import tflite_fixedpoint as tfp
        if zy != -128 or sy != F32(1.0 / 256):
            raise TinyAotError("tflite numerics: int8 Softmax output must have scale 1/256 and "
                               "zero point -128", model=g.source, node=n.name)
        p.update(tfp.softmax_params(float(sx), beta=1.0))
    return p


_PREPARE = {
    "add": _add,
    "avgpool": _avgpool,
    "maxpool": _maxpool,
    "softmax": _softmax,
}




def _mul(g, n, numerics):
    """int8 Mul (broadcasting). ort: MLAS QLinearMul when ORT fuses the QDQ group
    (round_half_even(float(prod) * float32(sa * sb / sy) + zy), saturated), else
    DequantizeLinear -> float Mul -> QuantizeLinear; tflite: TFLM MUL (mul_params)."""
    a, b = (g.tensors[i] for i in n.inputs)
    y = g.tensors[n.outputs[0]]
    sa, za = a.q.scalar()
    sb, zb = b.q.scalar()
    sy, zy = y.q.scalar()
    p = {"a_zp": int(za), "b_zp": int(zb), "out_zp": int(zy)}
    p["act_min"], p["act_max"] = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    if numerics == "ort":
        fused = n.attrs.get("ort_fused", False)  # frontend/ort_facts.py
        p.update(mode=1 if fused else 2, a_scale=F32(sa), b_scale=F32(sb), out_scale=F32(sy),
                 ratio=F32(F32(F32(sa) * F32(sb)) / F32(sy)))
    else:
        from .numerics import tflite_fixedpoint as tfp
        mp = tfp.mul_params(float(sa), za, float(sb), zb, float(sy), zy)
        p.update(mode=0, out_mult=int(mp["out_mult"]), out_shift=int(mp["out_shift"]))
    return p


_PREPARE["mul"] = _mul


