"""unary_f32: an elementwise function of a float32 tensor (the float fallback).

ONNX Exp, Sigmoid, Tanh, Erf, Gelu, Sqrt, Neg, Abs, Relu, Reciprocal on float tensors no
integer operator takes (a DequantizeLinear -> Sigmoid -> QuantizeLinear group is a `lut` table
instead):
  ort     onnxruntime's kernels: Exp, Sigmoid, Tanh, Erf are MLAS's vector kernels as x86-64
          with AVX-512F dispatches them, Gelu onnxruntime's loop around MLAS's erf / tanh
          (numerics/mlas_float.py); Sqrt, Neg, Abs, Relu, Reciprocal are single IEEE
          operations;
  tflite  the IEEE ones; Exp as TFLite Micro's reference_ops::Exp calls std::exp (glibc's
          expf); Sigmoid as its float LOGISTIC (reference_ops::Logistic: cut-offs at
          16.619047 and -9 around 1 / (1 + expf(-x))); Tanh as its float TANH calls
          std::tanh (glibc's tanhf up to glibc 2.40, the fdlibm float port, on its expm1f)
          (numerics/tflm_float.py); Erf and Gelu are refused (not reproduced: TFLite
          Micro's float GELU calls std::erf).
TFLite's float LOGISTIC, TANH and EXP (a float region of a .tflite) are lowered here too.
Kernel: tinyaot_unary_f32 (one read, then one write, per element).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TinyAotError
from ..numerics import mlas_float as mf
from ..numerics import tflm_float as tf
from .base import Op, Traits, Unsupported
from .float_io import ORT, fptr, mode_of

F32 = np.float32

# ONNX op -> (C function code, numpy function); codes as in tinyaot_kernels.h
EXACT = {
    "Sqrt": (3, lambda x: np.sqrt(x)),
    "Neg": (4, lambda x: (-x)),
    "Abs": (5, lambda x: np.abs(x)),
    "Relu": (6, lambda x: np.where(x < F32(0), F32(0), x)),  # -0 and NaN stay
    "Reciprocal": (7, lambda x: F32(1) / x),
}
ORT_ONLY = {
    "Exp": (0, mf.exp),
    "Sigmoid": (1, mf.logistic),
    "Tanh": (2, mf.tanh),
    "Erf": (8, mf.erf),
    "Gelu": (9, mf.gelu),
    "Gelu:tanh": (10, lambda x: mf.gelu(x, "tanh")),
}
TFLITE_ONLY = {
    "Exp": (11, tf.glibc_expf),
    "Sigmoid": (12, tf.tflm_logistic),
    "Tanh": (13, tf.glibc_tanhf),
}


@dataclass
class UnaryF32Params:
    fn: int  # TINYAOT_F32_EXP ...
    onnx_op: str


def lower_float(lw, node, name, attrs, ins, out, shape):
    x = lw.float_input(ins[0], name)
    fn = node.op_type
    if fn == "Gelu":
        form = attrs.get("approximate", b"none")
        form = form.decode() if isinstance(form, bytes) else str(form)
        if form not in ("none", "tanh"):
            raise Unsupported(f"Gelu approximate '{form}'")
        fn = "Gelu" if form == "none" else "Gelu:tanh"
    lw.float_emit("unary_f32", name, [x], out, shape, {"fn": fn}, onnx_op=node.op_type)


TFLITE_FLOAT = {"LOGISTIC": "Sigmoid", "TANH": "Tanh", "EXP": "Exp"}  # builtin -> function


def lower_tflite_float(tl, op):
    """A float32 LOGISTIC / TANH / EXP in a .tflite (between a DEQUANTIZE and a QUANTIZE)."""
    x = tl.float_act(tl.inp(op, 0))
    y = tl.new_float(op.outputs[0])
    tl.emit("unary_f32", tl.node_name(op), [x], [y],
            {"fn": TFLITE_FLOAT[op.builtin], "onnx_op": op.builtin})


def unary_f32(x, p):
    fn = dict(list(EXACT.values()) + list(ORT_ONLY.values()) + list(TFLITE_ONLY.values()))[p.fn]
    with np.errstate(all="ignore"):
        return np.asarray(fn(np.asarray(x, F32)), F32)


class UnaryF32(Op):
    name = "unary_f32"
    traits = Traits(layout="elementwise", inplace=(0,))
    onnx_float = {op: lower_float for op in list(EXACT) + list(ORT_ONLY) if ":" not in op}
    tflite_float = {b: lower_tflite_float for b in TFLITE_FLOAT}

    def prepare(self, g, n, numerics):
        op = n.attrs["fn"]
        if op in EXACT:
            return UnaryF32Params(EXACT[op][0], op)
        if mode_of(numerics) != ORT and op in TFLITE_ONLY:
            return UnaryF32Params(TFLITE_ONLY[op][0], op)
        if mode_of(numerics) != ORT:
            op = n.attrs["onnx_op"]
            raise TinyAotError(f"{op} in float: tflite numerics do not reproduce TFLite Micro's "
                               f"float {op} yet; use --numerics ort", model=g.source, node=n.name)
        return UnaryF32Params(ORT_ONLY[op][0], op)

    def reference(self, g, n, ins, p, numerics):
        return unary_f32(ins[0], p)

    def emit(self, em, lid, n, p, info):
        x = em.g.tensors[n.inputs[0]]
        info["kernel"] = "tinyaot_unary_f32"
        em.call(info["kernel"], [str(p.fn), str(x.size), fptr(em, x.name, const=True),
                                 fptr(em, n.outputs[0])])


OP = UnaryF32()
