"""pad: ONNX Pad (constant, reflect or edge) of an int8 tensor of rank <= 4.

The constant is the pad value quantized with the output's parameters (0.0 -> the zero
point). Elements are copied, or requantized through a table when the output's quantization
differs (ort only: DequantizeLinear -> Pad -> QuantizeLinear; TFLite PAD keeps the
quantization). tinyaot_pad_s8 pads on the physical axes: the output keeps the input's perm
(traits "same"). Padding commutes with quantization, so the input may be a float result still
pending (quantized with the output's parameters, the constant with them too), or the integer
tensor itself (ONNX Pad of an int8 tensor: the constant is an integer of its grid). TFLite PAD and PADV2
(constant mode) are lowered here too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TinyAotError
from ..numerics import ort_float as of
from ..numerics.quant import act_bounds, qrange, requant_values, round_half_away
from .base import ANY, Op, Pending, Traits, Unsupported
from .onnx_move import integer_sources
from .physical import dims4, int32_array, physical

F32 = np.float32
MODES = {"constant": 0, "reflect": 1, "edge": 2}  # tinyaot_pad_s8's mode


@dataclass
class PadParams:
    table: np.ndarray | None  # int8[256] requantizing copied elements (q + 128), or None
    pad_value: int  # the constant, in the output's integers


def _float_scalar(lw, x, name):
    """A constant float scalar, given directly or as DequantizeLinear of a constant."""
    if x in lw.qrepr and lw.graph.tensors[lw.qrepr[x]].is_const:
        t = lw.graph.tensors[lw.qrepr[x]]
        s, zp = t.q.scalar()
        return float((np.float32(int(np.asarray(t.data).reshape(-1)[0]) - int(zp))) * s)
    return float(np.asarray(lw.const(x, name, "scalar")).reshape(-1)[0])


def _integer_scalar(lw, x, t, name):
    """The constant value of a Pad of integer tensor t, in t's real units."""
    v = np.asarray(lw.const(x, name, "Pad constant_value")).reshape(-1)
    s, zp = t.q.scalar()
    return float((np.float64(int(v[0])) - zp) * np.float64(s)) if v.size else 0.0


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    ints = integer_sources(lw, ins[:1], name)  # a Pad of the integers themselves
    x = ints[0].name if ints is not None else lw.exact_input(ins[0], name)
    rank = len(lw.shape_of(ins[0], name))
    value = 0.0
    if lw.opset < 11:
        pads = list(attrs["pads"])
        value = float(attrs.get("value", 0.0))
        if ints is not None and value != int(value):
            raise Unsupported("Pad of an integer tensor with a fractional value")
        if ints is not None:
            s, zp = ints[0].q.scalar()
            value = float((np.float64(value) - zp) * np.float64(s))
    else:
        pads = [int(v) for v in np.asarray(lw.const(ins[1], name, "Pad pads")).reshape(-1)]
        if len(ins) > 2 and ins[2]:
            value = (_integer_scalar(lw, ins[2], ints[0], name) if ints is not None
                     else _float_scalar(lw, ins[2], name))
        elif ints is not None:  # the default 0 of an integer tensor, in real units
            s, zp = ints[0].q.scalar()
            value = float(-zp * np.float64(s))
        if len(ins) > 3 and ins[3]:
            raise Unsupported("Pad with axes")
    mode = attrs.get("mode", "constant")
    if mode not in MODES:
        raise Unsupported(f"Pad mode {mode}")
    if len(pads) != 2 * rank or min(pads) < 0 or rank > 4:
        raise Unsupported("Pad with negative pads or rank > 4")
    a = {"mode": mode, "before": tuple(pads[:rank]), "after": tuple(pads[rank:]),
         "value": value}
    if ints is not None:
        lw.add_int_tensor(out, shape, ints[0].dtype, ints[0].q)
        lw.emit("pad", name, [x], [out], a)
        return
    lw.pending[out] = Pending("pad", name, [x], a, shape=shape, commutes=ANY, fuses_clamp=False)


def lower_tflite(tl, op):
    """PAD / PADV2(input, paddings [rank, 2][, value]): constant padding; PADV2's value is
    one int8 constant, given in real units to the node as ONNX's is."""
    x_idx, p_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    rank = len(tl.tensor(x_idx).shape)
    pads = np.asarray(tl.const(p_idx, "the paddings")).reshape(-1, 2).astype(np.int64)
    if pads.shape[0] != rank or pads.min() < 0 or rank > 4:
        raise Unsupported("PAD with negative paddings or rank > 4")
    value = 0.0
    v_idx = tl.inp(op, 2)
    if op.builtin == "PADV2" and v_idx >= 0:
        vt = tl.tensor(v_idx)
        v = np.asarray(tl.const(v_idx, "the pad value")).reshape(-1)
        vq = tl.qparams(vt, "pad value")
        if v.size != 1 or vq is None or vt.dtype != "int8":
            raise Unsupported("PADV2 value must be one int8 quantized constant")
        value = float((int(v[0]) - int(vq.zero_point[0])) * np.float64(vq.scale[0]))
    lay = tl.layout_of(x_idx) if rank == 4 else "plain"
    before, after = [0] * rank, [0] * rank
    for a in range(rank):
        b = tl.ir_axis(a, lay, rank)
        before[b], after[b] = int(pads[a, 0]), int(pads[a, 1])
    x = tl.act(x_idx, lay)
    tl.emit("pad", tl.node_name(op), [x], [tl.new_act(y_idx, lay)],
            {"mode": "constant", "before": tuple(before), "after": tuple(after), "value": value,
             "act_lo": None, "act_hi": None})


class Pad(Op):
    name = "pad"
    traits = Traits(layout="same")
    onnx = {"Pad": lower_onnx}
    tflite = {"PAD": lower_tflite, "PADV2": lower_tflite}

    def prepare(self, g, n, numerics):
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
        return PadParams(table, pad_value)

    def reference(self, g, n, ins, p, numerics):
        x = np.asarray(ins[0], dtype=np.int32)
        if p.table is not None:
            x = p.table[x + 128].astype(np.int32)
        widths = list(zip(n.attrs["before"], n.attrs["after"]))
        mode = n.attrs["mode"]
        if mode == "constant":
            return np.pad(x, widths, mode="constant", constant_values=p.pad_value)
        return np.pad(x, widths, mode=mode)  # numpy's "reflect" and "edge" are ONNX's

    def emit(self, em, lid, n, p, info):
        x = em.g.tensors[n.inputs[0]]
        y = em.g.tensors[n.outputs[0]]
        idims, _ = physical(x)
        odims, operm = physical(y)
        before = [n.attrs["before"][a] for a in operm]
        d = int32_array(em, f"{lid}_d", dims4(idims, 1) + dims4(odims, 1) + dims4(before, 0))
        table = "NULL" if p.table is None else em.const("int8_t", f"{lid}_table", p.table)
        info["kernel"] = "tinyaot_pad_s8"
        em.call("tinyaot_pad_s8", [d, str(MODES[n.attrs["mode"]]), str(p.pad_value), table,
                                   em.ptr(x.name), em.ptr(y.name)])


OP = Pad()
