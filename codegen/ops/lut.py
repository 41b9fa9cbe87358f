"""lut: an elementwise int8 nonlinearity as one 256-entry table lookup.

ONNX Sigmoid, Tanh, HardSwish, HardSigmoid and LeakyRelu between DequantizeLinear and
QuantizeLinear (and, under `ort` only, Elu, Selu, Celu, Softplus, Softsign, ThresholdedRelu,
Mish); TFLite LOGISTIC, TANH, HARD_SWISH and LEAKY_RELU. The table holds what the chosen numerics computes for each of the 256 inputs
(numerics/lut_tables.py: onnxruntime's float kernel, or TFLite Micro's integer kernel), with a
fused Relu/Clip applied to its entries, so the kernel is one load per element and exact.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TinyAotError
from ..numerics.lut_tables import LutError, lut_table
from ..numerics.quant import act_bounds
from .base import Op, Pending, Traits

FUNCTIONS = ("Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu",
             # onnxruntime's float kernels only (no TFLite int8 kernel reproduced):
             "Elu", "Selu", "Celu", "Softplus", "Softsign", "ThresholdedRelu", "Mish")


@dataclass
class LutParams:
    table: np.ndarray  # int8[256], indexed by input + 128
    act_min: int
    act_max: int


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    x = lw.act_input(ins[0], name)
    fa = tuple(sorted((k, float(v)) for k, v in attrs.items() if k in ("alpha", "beta", "gamma")))
    a = {"fn": node.op_type, "fn_attrs": fa, "opset": lw.opset}
    lw.pending[out] = Pending("lut", name, [x], a, shape=shape)


# TFLite builtin -> (the ONNX function it computes, its options and their defaults)
TFLITE_FUNCTIONS = {"LOGISTIC": ("Sigmoid", ()), "TANH": ("Tanh", ()),
                    "HARD_SWISH": ("HardSwish", ()), "LEAKY_RELU": ("LeakyRelu", (("alpha", 0.2),))}


def lower_tflite(tl, op):
    fn, options = TFLITE_FUNCTIONS[op.builtin]
    x_idx, y_idx = tl.inp(op, 0), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    lay = tl.layout_of(x_idx)
    x = tl.act(x_idx, lay)
    fa = tuple((k, float(op.options.get(k, v))) for k, v in options)
    tl.emit("lut", tl.node_name(op), [x], [tl.new_act(y_idx, lay)],
            {"fn": fn, "fn_attrs": fa, "opset": 13, "act_lo": None, "act_hi": None})


class Lut(Op):
    name = "lut"
    traits = Traits(layout="elementwise", inplace=(0,))  # one read, then one write per element
    onnx = {fn: lower_onnx for fn in FUNCTIONS}
    tflite = {builtin: lower_tflite for builtin in TFLITE_FUNCTIONS}

    def prepare(self, g, n, numerics):
        x = g.tensors[n.inputs[0]]
        y = g.tensors[n.outputs[0]]
        if x.dtype != "int8" or y.dtype != "int8":
            raise TinyAotError(f"{n.attrs['fn']}: only int8 input and output are supported",
                               model=g.source, node=n.name)
        sx, zx = x.q.scalar()
        sy, zy = y.q.scalar()
        try:
            table = lut_table(n.attrs["fn"], n.attrs.get("fn_attrs", ()), n.attrs.get("opset", 13),
                              sx, zx, sy, zy, numerics)
        except LutError as e:
            raise TinyAotError(str(e), model=g.source, node=n.name) from None
        lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
        return LutParams(np.clip(table.astype(np.int32), lo, hi).astype(np.int8), lo, hi)

    def reference(self, g, n, ins, p, numerics):
        return p.table[ins[0].astype(np.int32) + 128]

    def emit(self, em, lid, n, p, info):
        t = em.g.tensors[n.inputs[0]]
        table = em.const("int8_t", f"{lid}_table", p.table)
        info["kernel"] = "tinyaot_lut_s8"
        em.call("tinyaot_lut_s8", [str(t.size), table, em.ptr(n.inputs[0]), em.ptr(n.outputs[0])])


OP = Lut()
