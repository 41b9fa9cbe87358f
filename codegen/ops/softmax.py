"""softmax: Softmax over the last axis of an int8 tensor (ONNX Softmax, axis = last; TFLite
SOFTMAX, whose beta scales the input multiplier).

Three arithmetics, one record each:
  ort, float     DequantizeLinear -> onnxruntime's float Softmax -> QuantizeLinear
                 (tinyaot_softmax_s8, use_float 1);
  ort, QLinear   onnxruntime's QLinearSoftmax where ORT fuses the group (frontend/ort_facts.py:
                 ort_qlinear): a 256-entry float exp table, the row sum, one rounding
                 (tinyaot_softmax_qlinear_s8, its own arguments);
  tflite         TFLite Micro's int8 Softmax, gemmlowp fixed point (tinyaot_softmax_s8,
                 use_float 0); its output is fixed at scale 1/256, zero point -128.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import TinyAotError
from ..kernels.c_format import c_float, c_struct
from ..numerics import ort_float as of
from ..numerics import tflite_fixedpoint as tfp
from .base import Op, Pending, Traits, Unsupported

F32 = np.float32


@dataclass
class SoftmaxParams:  # tinyaot_softmax_params_t
    CTYPE: ClassVar[str] = "tinyaot_softmax_params_t"
    use_float: int  # 0: TFLite fixed point, 1: onnxruntime's float Softmax
    in_scale: float = 0.0  # use_float 1
    out_scale: float = 0.0
    in_zp: int = 0
    out_zp: int = 0
    input_multiplier: int = 0  # use_float 0
    input_left_shift: int = 0
    diff_min: int = 0


@dataclass
class QLinearSoftmaxParams:  # tinyaot_softmax_qlinear_s8's arguments
    table: np.ndarray  # float[256]: qlinear_softmax_table
    y_mult: float  # floor(1 / s_y)
    out_zp: int
    u8: bool  # ORT ran it on uint8 (its saturation differs)


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    x = lw.act_input(ins[0], name)
    rank = len(shape)
    axis = int(attrs.get("axis", -1 if lw.opset >= 13 else 1))
    axis %= rank
    if lw.opset < 13 and axis != rank - 1:
        raise Unsupported("Softmax before opset 13 with axis != last")
    if axis != rank - 1:
        raise Unsupported("Softmax over an axis other than the last")
    lw.pending[out] = Pending("softmax", name, [x], {"axis": axis}, shape=shape)


def lower_tflite(tl, op):
    """SOFTMAX over the last axis; its beta (SoftmaxOptions) goes into the input multiplier."""
    x_idx, y_idx = tl.inp(op, 0), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    x = tl.act(x_idx, "plain")
    a = {"axis": len(tl.tensor(x_idx).shape) - 1, "act_lo": None, "act_hi": None}
    beta = float(op.options.get("beta", 1.0))
    if beta != 1.0:
        a["beta"] = beta
    tl.emit("softmax", tl.node_name(op), [x], [tl.new_act(y_idx)], a)


def qlinear_softmax_table(x_scale, d):
    """onnxruntime QLinearSoftmax's float table: e[k] = exp((k - 255 + b) * s), indexed by
    k = 255 - (max - x)."""
    bs = math.log(float(F32(np.finfo(np.float32).max) / F32(d)))
    bs = max(0.0, bs - 5.0) / float(x_scale)
    return np.array([math.exp((k - 255 + bs) * float(x_scale)) for k in range(256)]).astype(F32)


def qlinear_softmax(x, p):
    """onnxruntime QLinearSoftmax (C: runtime_c/src/activation/tinyaot_softmax_qlinear_s8.c)."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.int32)
    e = p.table[255 - (rows.max(axis=1, keepdims=True) - rows)]
    s = np.zeros((rows.shape[0], 1), dtype=F32)
    for k in range(rows.shape[1]):
        s = (s + e[:, k:k + 1]).astype(F32)
    q = np.rint(((e * F32(p.y_mult)).astype(F32) / s).astype(F32)).astype(np.int64)
    v = q + p.out_zp
    if p.u8:
        out = np.minimum(v, 127)
    else:
        out = np.minimum(v, 255).astype(np.uint8).astype(np.int8)
    return out.astype(np.int32).reshape(x.shape)


def softmax(x, p):
    """Softmax over the last axis, as p says."""
    if isinstance(p, QLinearSoftmaxParams):
        return qlinear_softmax(x, p)
    if p.use_float:
        xf = of.dequantize(x, p.in_scale, p.in_zp)
        m = xf.max(axis=-1, keepdims=True)
        e = of.expf((xf - m).astype(F32))
        s = np.zeros(e.shape[:-1] + (1,), dtype=F32)
        for k in range(e.shape[-1]):
            s = (s + e[..., k:k + 1]).astype(F32)
        y = (e / s).astype(F32)
        return of.quantize(y, p.out_scale, p.out_zp)
    rows = x.reshape(-1, x.shape[-1])
    out = np.stack([tfp.softmax_int8(r, vars(p)) for r in rows])
    return out.reshape(x.shape)


class Softmax(Op):
    name = "softmax"
    traits = Traits()
    onnx = {"Softmax": lower_onnx}
    tflite = {"SOFTMAX": lower_tflite}

    def prepare(self, g, n, numerics):
        x = g.tensors[n.inputs[0]]
        y = g.tensors[n.outputs[0]]
        sx, zx = x.q.scalar()
        sy, zy = y.q.scalar()
        if numerics == "ort":
            if n.attrs.get("ort_qlinear"):  # onnxruntime QLinearSoftmax (frontend/ort_facts.py)
                u8 = bool(n.attrs.get("ort_u8") or getattr(y, "zp_shift", 0))
                return QLinearSoftmaxParams(qlinear_softmax_table(sx, x.shape[-1]),
                                            F32(np.floor(F32(1.0) / sy)), zy, u8)
            return SoftmaxParams(1, in_scale=sx, out_scale=sy, in_zp=zx, out_zp=zy)
        if zy != -128 or sy != F32(1.0 / 256):
            raise TinyAotError("tflite numerics: int8 Softmax output must have scale 1/256 and "
                               "zero point -128", model=g.source, node=n.name)
        beta = float(n.attrs.get("beta", 1.0))  # TFLite SOFTMAX's option; ONNX has none
        return SoftmaxParams(0, **tfp.softmax_params(float(sx), beta=beta))

    def reference(self, g, n, ins, p, numerics):
        return softmax(ins[0], p)

    def emit(self, em, lid, n, p, info):
        x = em.g.tensors[n.inputs[0]]
        nlast = x.shape[-1]
        rows = x.size // nlast
        if isinstance(p, QLinearSoftmaxParams):
            table = em.const("float", f"{lid}_table", p.table)
            info["kernel"] = "tinyaot_softmax_qlinear_s8"
            em.call(info["kernel"], [str(rows), str(nlast), table, c_float(p.y_mult),
                                     str(p.out_zp), str(int(p.u8)), em.ptr(n.inputs[0]),
                                     em.ptr(n.outputs[0])])
            return
        em.consts.append(c_struct(f"{lid}_p", p))
        info["kernel"] = "tinyaot_softmax_s8"
        em.call(info["kernel"], [str(rows), str(nlast), f"&{lid}_p", em.ptr(n.inputs[0]),
                                 em.ptr(n.outputs[0])])


OP = Softmax()
