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
from .numerics.quant import act_bounds, qrange, requant_table, requant_values, round_half_away

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


def _concat(g, n, numerics):
    """Concat: an input with the output's quantization is copied; others are
    requantized through a 256-entry table. ort: DequantizeLinear -> float Concat
    -> QuantizeLinear per element (MLAS formulas; ORT's QLinearConcat builds the
    same table); tflite: TFLM CONCATENATION copies bytes, so an input whose
    quantization differs gets what the converter's int8 QUANTIZE in front of it
    would compute (reference Requantize), tabulated."""
    y = g.tensors[n.outputs[0]]
    lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    if (lo, hi) != qrange(y.dtype) or y.dtype != "int8":
        raise TinyAotError("Concat with a fused activation or a non-int8 output",
                           model=g.source, node=n.name)
    xs = [g.tensors[i] for i in n.inputs]
    tables = [None if x.q.same_as(y.q) and x.dtype == y.dtype
              else requant_values(x, y, numerics).astype(np.int8) for x in xs]
    return {"tables": tables, "axis": n.attrs["axis"]}


_PREPARE["concat"] = _concat


def _pad(g, n, numerics):
    """Pad: constant (the pad value quantized with the output's parameters; 0.0 ->
    the zero point), reflect or edge. Elements are copied, or requantized through
    a table when the output's quantization differs (ort only: DQ -> Pad -> Q)."""
    from .numerics import ort_float as of
    x = g.tensors[n.inputs[0]]
    y = g.tensors[n.outputs[0]]
    sy, zy = y.q.scalar()
    lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    if (lo, hi) != qrange(y.dtype) or y.dtype != "int8" or x.dtype != "int8":
        raise TinyAotError("Pad with a fused activation or non-int8 tensors",
                           model=g.source, node=n.name)
    table = None
    if not x.q.same_as(y.q):
        if numerics != "ort":
            raise TinyAotError("tflite numerics: TFLite PAD needs the input's and output's "
                               "quantization to be equal", model=g.source, node=n.name)
        table = requant_values(x, y, numerics).astype(np.int8)
    val = float(n.attrs["value"])
    if numerics == "ort":
        pad_value = int(of.quantize(np.float32(val), sy, zy))
    else:  # TFLM PAD int8: the constant is the output zero point (value 0) or a quantized scalar
        pad_value = int(np.clip(zy + round_half_away(F32(F32(val) / sy)), -128, 127))
    return {"table": table, "pad_value": pad_value}


_PREPARE["pad"] = _pad


def _slice(g, n, numerics):
    """Slice / Split piece: a strided copy (exact in both numerics)."""
    x = g.tensors[n.inputs[0]]
    y = g.tensors[n.outputs[0]]
    if x.dtype != y.dtype or (x.q is not None and y.q is not None and not x.q.same_as(y.q)):
        raise TinyAotError("Slice output must keep the input's type and quantization",
                           model=g.source, node=n.name)
    return {}


_PREPARE["slice"] = _slice


def _resize(g, n, numerics):
    """Resize over H, W: index tables (nearest) or per-axis indices and weights
    (bilinear), computed here from the chosen oracle (numerics/resize.py)."""
    from .numerics import resize as rr
    x = g.tensors[n.inputs[0]]
    y = g.tensors[n.outputs[0]]
    a = n.attrs
    if x.dtype != "int8" or y.dtype != "int8":
        raise TinyAotError("Resize: only int8 input and output are supported",
                           model=g.source, node=n.name)
    _, _, h, w = x.shape
    _, _, oh, ow = y.shape
    sh, sw = a["scales"]
    lo, hi = act_bounds(numerics, y, a.get("act_lo"), a.get("act_hi"))
    p = {"act_min": lo, "act_max": hi, "table": None}
    if numerics == "ort":
        if a["mode"] == "nearest":
            p["kind"] = "nearest"
            p["y_idx"] = rr.ort_nearest_axis(a["ctm"], a["nearest_mode"], sh, h, oh)
            p["x_idx"] = rr.ort_nearest_axis(a["ctm"], a["nearest_mode"], sw, w, ow)
            p["table"] = requant_table(x, y, numerics, lo, hi)
        else:
            if a.get("ort_int8"):  # frontend/ort_facts.py: ORT dropped the DQ/Q around it
                raise TinyAotError("onnxruntime runs this linear Resize on int8 directly; its "
                                   "integer bilinear kernel is not implemented in tinyaot",
                                   model=g.source, node=n.name)
            sx, zx = x.q.scalar()
            sy, zy = y.q.scalar()
            p.update(kind="bilinear_ort", in_scale=F32(sx), in_zp=int(zx), out_scale=F32(sy),
                     out_zp=int(zy), ax_h=rr.ort_bilinear_axis(a["ctm"], sh, h, oh),
                     ax_w=rr.ort_bilinear_axis(a["ctm"], sw, w, ow))
        return p
    try:
        align, half = rr.tflite_flags(a["mode"], a["ctm"], a["nearest_mode"], oh, ow)
    except rr.ResizeModeError as e:
        raise TinyAotError(str(e), model=g.source, node=n.name) from None
    p["table"] = requant_table(x, y, numerics, lo, hi)
    if a["mode"] == "nearest":
        p["kind"] = "nearest"
        p["y_idx"] = rr.tflite_nearest_axis(h, oh, align, half)
        p["x_idx"] = rr.tflite_nearest_axis(w, ow, align, half)
    else:
        p.update(kind="bilinear_tflite", ax_h=rr.tflite_bilinear_axis(h, oh, align, half),
                 ax_w=rr.tflite_bilinear_axis(w, ow, align, half))
    return p


_PREPARE["resize"] = _resize
