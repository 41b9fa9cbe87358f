"""prelu: ONNX PRelu between DequantizeLinear and QuantizeLinear, int8, the slope a constant.

y = x for x >= 0, slope * x for x < 0. The slope (DequantizeLinear of an int8 initializer,
unidirectionally broadcast onto x) is one number or varies along one axis of x: [C, 1, 1] on
an NCHW tensor, [C] on [N, C]. The kernel (tinyaot_prelu_s8) walks x's physical order as
[outer][channels][inner] around that axis, so an NHWC-stored tensor costs no copy. Per
numerics (the record's mode):
  0  TFLite Micro's PRELU (prelu_common.cc CalculatePreluParams, reference_ops::
     BroadcastPrelu4DSlow): v = x - x_zp;
     out_zp + (v >= 0 ? MBQM(v, M1, s1) : MBQM(v * (a - a_zp), M2, s2)), clamped to int8,
     M1 = QuantizeMultiplier(double(s_x) / double(s_y)),
     M2 = QuantizeMultiplier(double(s_x) * double(s_a) / double(s_y)); alpha is quantized
     per tensor (per-channel alpha scales are refused).
  1  onnxruntime: its optimizer keeps the group in float (there is no QLinear PRelu), so
     QuantizeLinear(x_f > 0 ? x_f : x_f * slope_f) in float32, x_f and slope_f from
     DequantizeLinear (per-channel slope scales allowed).
A fused Relu / Clip is the output clamp (act_min, act_max). TFLite PRELU (alpha a constant,
one scale) is lowered here too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import TinyAotError
from ..kernels.c_format import c_struct
from ..numerics import ort_float as of
from ..numerics import tflite_fixedpoint as tfp
from ..numerics.quant import act_bounds
from .base import Op, Pending, Traits, Unsupported
from .physical import physical

F32 = np.float32
TFLITE, ORT_FLOAT = 0, 1


@dataclass
class PreluParams:  # tinyaot_prelu_params_t
    CTYPE: ClassVar[str] = "tinyaot_prelu_params_t"
    mode: int  # TFLITE or ORT_FLOAT
    in_zp: int
    alpha_zp: int
    out_zp: int
    act_min: int
    act_max: int
    in_scale: float = 0.0  # ort
    out_scale: float = 0.0
    pos_mult: int = 0  # tflite: s_x / s_y
    pos_shift: int = 0
    neg_mult: int = 0  # tflite: s_x * s_a / s_y
    neg_shift: int = 0


def slope_axis(x_shape, s_shape):
    """The axis of x along which the slope varies (None: one slope), or a reason it cannot
    be taken (a str)."""
    if len(s_shape) > len(x_shape):
        return f"slope of shape {list(s_shape)} has more dimensions than the input"
    lead = len(x_shape) - len(s_shape)
    axes = []
    for k, d in enumerate(s_shape):
        if d == 1:
            continue
        if d != x_shape[lead + k]:
            return (f"slope of shape {list(s_shape)} does not broadcast onto the input's "
                    f"{list(x_shape)}")
        axes.append(lead + k)
    if len(axes) > 1:
        return (f"slope of shape {list(s_shape)} varies along more than one axis: only one "
                "slope or one per channel is supported")
    return axes[0] if axes else None


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    x = lw.act_input(ins[0], name)
    s = ins[1]
    if not (s in lw.qrepr and lw.graph.tensors[lw.qrepr[s]].is_const
            and lw.graph.tensors[lw.qrepr[s]].dtype in ("int8", "uint8")):
        raise Unsupported(f"slope '{s}' must be a DequantizeLinear of an int8 constant")
    st = lw.graph.tensors[lw.qrepr[s]]
    why = slope_axis(lw.graph.tensors[x].shape, st.shape)
    if isinstance(why, str):
        raise Unsupported(why)
    lw.pending[out] = Pending("prelu", name, [x, st.name], {}, shape=shape)


def lower_tflite(tl, op):
    """PRELU(input, alpha): alpha a constant broadcast onto the input from the right (NHWC,
    e.g. [1, 1, C]); on an NCHW IR tensor it is moved to [1, C, 1, 1] with it."""
    x_idx, a_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), op.outputs[0]
    tl.check_int8(op, x_idx, a_idx, y_idx)
    at = tl.tensor(a_idx)
    alpha = np.asarray(tl.const(a_idx, "alpha"))
    q = tl.qparams(at, "alpha")
    if q is None or q.per_channel:
        raise Unsupported(f"alpha '{at.name}' must be quantized per tensor")
    rank = len(tl.tensor(x_idx).shape)
    if alpha.ndim > rank:
        raise Unsupported(f"alpha of shape {list(alpha.shape)} has more dimensions than the input")
    lay = tl.layout_of(x_idx) if rank == 4 else "plain"
    alpha = alpha.reshape((1,) * (rank - alpha.ndim) + alpha.shape)
    if lay == "nchw":
        alpha = alpha.transpose(0, 3, 1, 2)
    x = tl.act(x_idx, lay)
    why = slope_axis(tl.graph.tensors[x].shape, alpha.shape)
    if isinstance(why, str):
        raise Unsupported(why)
    a = tl.add_const(f"{tl.names[a_idx]}@{tl.node_name(op)}", alpha, "int8", q)
    tl.emit("prelu", tl.node_name(op), [x, a], [tl.new_act(y_idx, lay)],
            {"act_lo": None, "act_hi": None})


def channel_slopes(t):
    """(int8 slope values, float32 DequantizeLinear of them), one per channel, in order."""
    data = np.asarray(t.data).astype(np.int32)
    zp, scale = t.q.zero_point.astype(np.int32), t.q.scale.astype(F32)
    if t.q.per_channel:  # broadcast the per-axis parameters onto the slope's shape
        shape = [1] * data.ndim
        shape[t.q.axis] = -1
        zp, scale = zp.reshape(shape), scale.reshape(shape)
    f = ((data - zp).astype(F32) * scale).astype(F32)  # ORT DequantizeLinear
    return data.reshape(-1), f.reshape(-1)


def prelu_tflite(x, a, p):
    """reference_ops::BroadcastPrelu4DSlow (int8) on broadcast x and alpha, then the clamp."""
    v = np.asarray(x, dtype=np.int32) - np.int32(p.in_zp)
    av = np.asarray(a, dtype=np.int32) - np.int32(p.alpha_zp)
    pos = tfp.multiply_by_quantized_multiplier(v, p.pos_mult, p.pos_shift)
    neg = tfp.multiply_by_quantized_multiplier(v * av, p.neg_mult, p.neg_shift)
    r = np.where(v >= 0, pos, neg).astype(np.int64) + p.out_zp
    return np.clip(r, p.act_min, p.act_max).astype(np.int32)


def prelu_ort(x, slope_f, p):
    """DequantizeLinear, onnxruntime's float PRelu (x > 0 ? x : x * slope), QuantizeLinear."""
    xf = of.dequantize(x, p.in_scale, p.in_zp)
    y = np.where(xf > F32(0), xf, (xf * slope_f).astype(F32)).astype(F32)
    return of.quantize(y, p.out_scale, p.out_zp, p.act_min, p.act_max)


class Prelu(Op):
    name = "prelu"
    traits = Traits(layout="elementwise", inplace=(0,))  # one read, then one write per element
    onnx = {"PRelu": lower_onnx}
    tflite = {"PRELU": lower_tflite}

    def prepare(self, g, n, numerics):
        x, a = (g.tensors[i] for i in n.inputs)
        y = g.tensors[n.outputs[0]]
        sx, zx = x.q.scalar()
        sy, zy = y.q.scalar()
        lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
        if numerics == "ort":  # the slope's own scales are in the float slopes (emit)
            return PreluParams(ORT_FLOAT, zx, 0, zy, lo, hi, in_scale=F32(sx), out_scale=F32(sy))
        if a.q.per_channel:
            raise TinyAotError(f"PRelu slope '{a.name}' is quantized per channel, and TFLite's "
                               "PRELU takes one alpha scale: quantize the slope per tensor, "
                               "or use --numerics ort", model=g.source, node=n.name)
        sa, za = a.q.scalar()
        m1, s1 = tfp.quantize_multiplier(float(np.float64(sx) / np.float64(sy)))
        m2, s2 = tfp.quantize_multiplier(float(np.float64(sx) * np.float64(sa) / np.float64(sy)))
        if max(s1, s2) > 31:
            raise TinyAotError("PRelu: input scale / output scale too large for TFLite's "
                               "fixed-point multiplier", model=g.source, node=n.name)
        return PreluParams(TFLITE, zx, za, zy, lo, hi, pos_mult=m1, pos_shift=s1,
                           neg_mult=m2, neg_shift=s2)

    def reference(self, g, n, ins, p, numerics):
        x, a = ins[0], g.tensors[n.inputs[1]]
        shape = (1,) * (x.ndim - len(a.shape)) + tuple(a.shape)  # unidirectional broadcast
        if p.mode == TFLITE:
            return prelu_tflite(x, np.asarray(ins[1]).reshape(shape), p)
        return prelu_ort(x, channel_slopes(a)[1].reshape(shape), p)

    def emit(self, em, lid, n, p, info):
        x, a = (em.g.tensors[i] for i in n.inputs)
        axis = slope_axis(x.shape, a.shape)
        dims, perm = physical(x)
        outer, channels, inner = 1, 1, int(np.prod(dims))
        if axis is not None:  # around the slope's axis, in x's physical order
            k = perm.index(axis)
            outer, channels, inner = (int(np.prod(dims[:k])), int(dims[k]),
                                      int(np.prod(dims[k + 1:])))
        em.consts.append(c_struct(f"{lid}_p", p))
        alpha, slope = channel_slopes(a)
        if p.mode == TFLITE:
            ap, sp = em.const("int8_t", f"{lid}_alpha", alpha), "NULL"
        else:
            ap, sp = "NULL", em.const("float", f"{lid}_slope", slope)
        info["kernel"] = "tinyaot_prelu_s8"
        em.call("tinyaot_prelu_s8", [str(outer), str(channels), str(inner), f"&{lid}_p", ap, sp,
                                     em.ptr(x.name), em.ptr(n.outputs[0])])
        info["macs"] = int(np.prod(x.shape))


OP = Prelu()
