"""matmul: MatMul of two int8 activations, [..., M, K] x [..., K, N] with equal batch dims.

(A MatMul by a constant is a fully_connected layer; ONNX MatMul is recognised in
fully_connected.py, which hands the activation x activation form to `lower_onnx` here.)
One kernel, tinyaot_matmul_s8, in three modes:
  0: TFLite Micro BATCH_MATMUL: int32 sums of (a - za) * (b - zb), one QuantizeMultiplier
     of sa * sb / sy (double precision), MultiplyByQuantizedMultiplier;
  1: onnxruntime QLinearMatMul (its optimizer fused the QDQ group): the same int32 sums,
     * float32(float32(sa * sb) / sy), round half to even (MLAS);
  2: onnxruntime's float MatMul (not fused): DequantizeLinear, one fma per k (MLAS SGEMM),
     QuantizeLinear.
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

F32 = np.float32


@dataclass
class MatmulParams:  # tinyaot_matmul_params_t
    CTYPE: ClassVar[str] = "tinyaot_matmul_params_t"
    mode: int  # 0: TFLite BATCH_MATMUL, 1: ORT QLinearMatMul, 2: ORT float MatMul
    a_zp: int
    b_zp: int
    out_zp: int
    act_min: int
    act_max: int
    a_scale: float = 0.0  # modes 1, 2
    b_scale: float = 0.0
    out_scale: float = 0.0
    scale: float = 0.0  # mode 1: float32(float32(a_scale * b_scale) / out_scale)
    mult: int = 0  # mode 0
    shift: int = 0


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    """MatMul whose second operand is an activation too."""
    a = lw.act_input(ins[0], name)
    b = lw.act_input(ins[1], name)
    sa, sb = lw.graph.tensors[a].shape, lw.graph.tensors[b].shape
    if len(sa) < 2 or len(sa) != len(sb) or sa[:-2] != sb[:-2] or sa[-1] != sb[-2]:
        raise Unsupported("MatMul of two activations needs [..., M, K] x [..., K, N] "
                          "with equal batch dimensions")
    lw.pending[out] = Pending("matmul", name, [a, b], {}, shape=shape)


def _operand(em, lid, tag, t):
    if t.is_const:
        return em.const("int8_t", f"{lid}_{tag}", t.data.reshape(-1))
    return em.ptr(t.name)


class Matmul(Op):
    name = "matmul"
    traits = Traits(layout="row_major")

    def prepare(self, g, n, numerics):
        a, b = (g.tensors[i] for i in n.inputs)
        y = g.tensors[n.outputs[0]]
        sa, za = a.q.scalar()
        sb, zb = b.q.scalar()
        sy, zy = y.q.scalar()
        lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
        zps = (int(za), int(zb), int(zy), lo, hi)
        if numerics == "ort":
            fused = n.attrs.get("ort_fused", False)  # frontend/ort_facts.py
            return MatmulParams(1 if fused else 2, *zps, a_scale=F32(sa), b_scale=F32(sb),
                                out_scale=F32(sy), scale=F32(F32(F32(sa) * F32(sb)) / F32(sy)))
        real = float(F32(sa)) * float(F32(sb)) / float(F32(sy))
        m, s = tfp.quantize_multiplier(real)
        return MatmulParams(0, *zps, mult=int(m), shift=int(s))

    def reference(self, g, n, ins, p, numerics):
        a = np.asarray(ins[0], dtype=np.int64)
        b = np.asarray(ins[1], dtype=np.int64)
        if p.mode == 2:
            fa = of.dequantize(a, p.a_scale, p.a_zp)
            fb = of.dequantize(b, p.b_scale, p.b_zp)
            acc = np.zeros(fa.shape[:-1] + (fb.shape[-1],), dtype=F32)
            for k in range(fa.shape[-1]):  # MLAS SGEMM: one fused multiply-add per k
                acc = (acc.astype(np.float64) + fa[..., :, k:k + 1].astype(np.float64)
                       * fb[..., k:k + 1, :].astype(np.float64)).astype(F32)
            return of.quantize(acc, p.out_scale, p.out_zp, p.act_min, p.act_max)
        acc = np.matmul(a - p.a_zp, b - p.b_zp)
        if np.any(np.abs(acc) > 2**31 - 1):
            raise OverflowError("int32 accumulator overflow")
        acc = acc.astype(np.int32)
        if p.mode == 1:
            return of.requantize_acc(acc, p.scale, p.out_zp, p.act_min, p.act_max)
        return tfp.requantize(acc, np.int32(p.mult), np.int32(p.shift), p.out_zp,
                              p.act_min, p.act_max)

    def emit(self, em, lid, n, p, info):
        a, b = (em.g.tensors[i] for i in n.inputs)
        y = em.g.tensors[n.outputs[0]]
        m, k = a.shape[-2:]
        nn = b.shape[-1]
        batches = int(np.prod(a.shape[:-2], dtype=np.int64))
        em.consts.append(c_struct(f"{lid}_p", p))
        info["kernel"] = "tinyaot_matmul_s8"
        info["macs"] = int(batches * m * k * nn)
        em.call("tinyaot_matmul_s8", [str(batches), str(m), str(k), str(nn), f"&{lid}_p",
                                      _operand(em, lid, "a", a), _operand(em, lid, "b", b),
                                      em.ptr(y.name)])


OP = Matmul()
