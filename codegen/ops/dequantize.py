"""dequantize: int8 -> float32 where an integer tensor enters a float fallback region.

DequantizeLinear, per tensor: both numerics give the correctly rounded scale * (q - zp)
(onnxruntime: float(q - zp) * scale in float32; TFLite Micro: (float)(double(scale) *
(q - zp)), exact in double), so the layer is a 256-entry float table indexed by the byte,
computed here, and the existing row kernel tinyaot_dequantize_row_f32_s8.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Op, Traits
from .float_io import fptr

F32 = np.float32


@dataclass
class DequantizeParams:
    table: np.ndarray  # float32[256]: table[(uint8)q] = scale * (q - zp)


def dequantize_table(scale, zp):
    q = np.arange(256, dtype=np.int32).astype(np.uint8).view(np.int8).astype(np.int32)
    return ((q - np.int32(zp)).astype(F32) * F32(scale)).astype(F32)


class Dequantize(Op):
    name = "dequantize"
    traits = Traits()  # row-major in and out

    def prepare(self, g, n, numerics):
        s, zp = g.tensors[n.inputs[0]].q.scalar()
        return DequantizeParams(dequantize_table(s, zp))

    def reference(self, g, n, ins, p, numerics):
        return p.table[np.asarray(ins[0]).astype(np.int8).view(np.uint8)]

    def emit(self, em, lid, n, p, info):
        x = em.g.tensors[n.inputs[0]]
        table = em.const("float", f"{lid}_table", p.table)
        info["kernel"] = "tinyaot_dequantize_row_f32_s8"
        em.kernels.add(info["kernel"])
        em.body.append(f"    tinyaot_dequantize_row_f32_s8({em.ptr(x.name)}, {x.size}, {table}, "
                       f"{fptr(em, n.outputs[0])});")


OP = Dequantize()
