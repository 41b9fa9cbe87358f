"""mul: elementwise int8 a * b with broadcasting (ONNX Mul).

Operands: two activations, or an activation and a per-tensor int8 / uint8 constant (DequantizeLinear
of an initializer) that broadcasts onto it. The kernel (tinyaot_mul_s8) walks the output's
4 physical dims and reads each operand at its own strides (0 on a broadcast axis), so
layouts and broadcasting cost no copy. Per numerics (the record's mode):
  0  TFLite MUL: out_zp + MBQM((a - a_zp) * (b - b_zp), out_mult, out_shift);
  1  onnxruntime's QLinearMul where ORT fuses the group (frontend/ort_facts.py: ort_fused):
     round_half_even(float(prod) * float32(sa * sb / sy) + zy), saturated (MLAS);
  2  DequantizeLinear -> onnxruntime's float Mul -> QuantizeLinear.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..kernels.c_format import c_struct
from ..numerics import ort_float as of
from ..numerics import tflite_fixedpoint as tfp
from ..numerics.quant import act_bounds
from .base import Op, Pending, Traits, Unsupported
from .physical import dims4, int32_array, physical

F32 = np.float32
TFLITE, ORT_QLINEAR, ORT_FLOAT = 0, 1, 2


@dataclass
class MulParams:  # tinyaot_mul_params_t
    CTYPE: ClassVar[str] = "tinyaot_mul_params_t"
    mode: int  # TFLITE, ORT_QLINEAR or ORT_FLOAT
    a_zp: int
    b_zp: int
    out_zp: int
    act_min: int
    act_max: int
    a_scale: float = 0.0  # ort
    b_scale: float = 0.0
    out_scale: float = 0.0
    ratio: float = 0.0  # ORT_QLINEAR: float32(a_scale * b_scale / out_scale)
    out_mult: int = 0  # TFLITE
    out_shift: int = 0


def _operand(lw, x, name):
    """An activation, or a per-tensor int8 / uint8 constant (DequantizeLinear of an
    initializer; a uint8 one becomes int8 with its zero point - 128, passes/uint8.py)."""
    if x in lw.qrepr and lw.graph.tensors[lw.qrepr[x]].is_const:
        t = lw.graph.tensors[lw.qrepr[x]]
        if t.dtype not in ("int8", "uint8") or t.q.per_channel:
            raise Unsupported(f"constant '{x}' must be int8 / uint8, quantized per tensor")
        return t.name
    return lw.act_input(x, name)


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    xs = [_operand(lw, i, name) for i in ins[:2]]
    if all(lw.graph.tensors[i].is_const for i in xs):
        raise Unsupported("Mul of two constants")
    if len(shape) > 4:
        raise Unsupported("Mul of rank > 4")
    acts = [i for i in xs if not lw.graph.tensors[i].is_const]
    if len(acts) == 1 and lw.graph.tensors[acts[0]].shape != tuple(shape):
        raise Unsupported("Mul where a constant broadcasts the activation to a larger shape")
    lw.pending[out] = Pending("mul", name, xs, {}, shape=shape)


def lower_tflite(tl, op):
    """MUL of two activations of one shape, or of an activation and a scalar int8 constant."""
    a_idx, b_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), op.outputs[0]
    tl.check_int8(op, a_idx, b_idx, y_idx)
    ca, cb = tl.is_const(a_idx), tl.is_const(b_idx)
    if ca and cb:
        raise Unsupported("MUL of two constants")
    if ca or cb:
        act_idx, c_idx = (b_idx, a_idx) if ca else (a_idx, b_idx)
        if tl.consts[c_idx].size != 1:
            raise Unsupported("MUL by a constant: only a scalar constant is supported")
        lay = tl.layout_of(act_idx)
        a, c = tl.act(act_idx, lay), tl.int8_const(c_idx)
        ins = [c, a] if ca else [a, c]
    else:
        ins, lay = tl.act_pair(op)
    tl.emit("mul", tl.node_name(op), ins, [tl.new_act(y_idx, lay)], tl.act_attrs(op))


def broadcast_strides(x, out):
    """Element strides of x for each *physical* axis of out (0 where x broadcasts)."""
    dims, perm = physical(x) if not x.is_const else (list(x.shape), tuple(range(len(x.shape))))
    rx, r = len(x.shape), len(out.shape)
    logical = [0] * rx
    step = 1
    for k in range(rx - 1, -1, -1):
        logical[perm[k]] = step
        step *= dims[k]
    padded = [0] * (r - rx) + [logical[i] if x.shape[i] != 1 else 0 for i in range(rx)]
    _, operm = physical(out)
    return [padded[a] for a in operm]


def mul(a, b, p):
    """a * b with numpy broadcasting, as p.mode says."""
    a = np.asarray(a, dtype=np.int32)
    b = np.asarray(b, dtype=np.int32)
    if p.mode == TFLITE:
        return tfp.mul_int8(a, b, vars(p), p.act_min, p.act_max)
    if p.mode == ORT_QLINEAR:
        # MLAS QLinearMul (SSE2 / NEON): cvt(float(prod) * ratio + float(zp_c)),
        # round to nearest even; out-of-range float -> INT32_MIN; then saturating packs.
        prod = ((a - p.a_zp) * (b - p.b_zp)).astype(F32)
        v = ((prod * F32(p.ratio)).astype(F32) + F32(p.out_zp)).astype(F32)
        r = np.where(v >= F32(2.0**31), -128, np.clip(np.rint(np.clip(v, -256, 256)), -128, 127))
        return np.clip(r, p.act_min, p.act_max).astype(np.int32)
    fa = of.dequantize(a, p.a_scale, p.a_zp)
    fb = of.dequantize(b, p.b_scale, p.b_zp)
    return of.quantize((fa * fb).astype(F32), p.out_scale, p.out_zp, p.act_min, p.act_max)


class Mul(Op):
    name = "mul"
    traits = Traits(layout="elementwise")
    onnx = {"Mul": lower_onnx}
    tflite = {"MUL": lower_tflite}

    def prepare(self, g, n, numerics):
        a, b = (g.tensors[i] for i in n.inputs)
        y = g.tensors[n.outputs[0]]
        sa, za = a.q.scalar()
        sb, zb = b.q.scalar()
        sy, zy = y.q.scalar()
        lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
        zps = (int(za), int(zb), int(zy), lo, hi)
        if numerics == "ort":
            mode = ORT_QLINEAR if n.attrs.get("ort_fused", False) else ORT_FLOAT
            return MulParams(mode, *zps, a_scale=F32(sa), b_scale=F32(sb), out_scale=F32(sy),
                             ratio=F32(F32(F32(sa) * F32(sb)) / F32(sy)))
        mp = tfp.mul_params(float(sa), za, float(sb), zb, float(sy), zy)
        return MulParams(TFLITE, *zps, out_mult=int(mp["out_mult"]), out_shift=int(mp["out_shift"]))

    def reference(self, g, n, ins, p, numerics):
        return mul(ins[0], ins[1], p)

    def emit(self, em, lid, n, p, info):
        a, b = (em.g.tensors[i] for i in n.inputs)
        y = em.g.tensors[n.outputs[0]]
        odims, _ = physical(y)
        dims = int32_array(em, f"{lid}_dims", dims4(odims, 1))
        sa = int32_array(em, f"{lid}_as", dims4(broadcast_strides(a, y), 0))
        sb = int32_array(em, f"{lid}_bs", dims4(broadcast_strides(b, y), 0))
        em.consts.append(c_struct(f"{lid}_p", p))
        pa, pb = (em.const("int8_t", f"{lid}_{tag}", t.data.reshape(-1)) if t.is_const
                  else em.ptr(t.name) for tag, t in (("a", a), ("b", b)))
        info["kernel"] = "tinyaot_mul_s8"
        em.call("tinyaot_mul_s8", [dims, sa, sb, f"&{lid}_p", pa, pb, em.ptr(y.name)])
        info["macs"] = int(np.prod(y.shape))


OP = Mul()
