"""binary_f32: a op b on float32 tensors with broadcasting (the float fallback).

ONNX Add, Sub, Mul, Div, Max, Min (two operands: PReLU written as Max/Min/Mul/Add) where an operand is a float result (or a float constant) no integer
operator takes. Each output element is one IEEE operation, so onnxruntime's result is
reproduced exactly whatever its loop order; TFLite Micro's float ADD / SUB / MUL / DIV also
clamp the result to [-FLT_MAX, FLT_MAX] (their activation with no fused function).
Constants (float32 initializers, or DequantizeLinear of an integer one, folded) go to flash.
TFLite's float ADD / SUB / MUL / DIV (no fused activation) in a .tflite's float region are
lowered here too.
Kernel: tinyaot_binary_f32, walking the output's dims with each operand's own strides.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Op, Traits, Unsupported
from .float_io import ORT, fptr, mode_of
from .physical import int32_array

F32 = np.float32
CODES = {"Add": 0, "Sub": 1, "Mul": 2, "Div": 3, "Max": 4, "Min": 5}  # TINYAOT_F32_ADD ...
FLT_MAX = F32(np.finfo(F32).max)


@dataclass
class BinaryF32Params:
    op: int  # TINYAOT_F32_ADD ...
    mode: int  # float_io.ORT or TFLITE


def lower_float(lw, node, name, attrs, ins, out, shape):
    if len([x for x in ins if x]) != 2:  # Max / Min are variadic in ONNX
        raise Unsupported(f"{node.op_type} of {len(ins)} inputs (the float fallback takes two)")
    a, b = (lw.float_input(x, name) for x in ins[:2])
    lw.float_emit("binary_f32", name, [a, b], out, shape, {}, onnx_op=node.op_type)


TFLITE_FLOAT = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div"}


def lower_hard_sigmoid(lw, node, name, attrs, ins, out, shape):
    """HardSigmoid on a float tensor (e.g. x * HardSigmoid(x) written out): onnxruntime's
    kernel computes max(min(alpha * x + beta, 1), 0) one IEEE operation at a time, so it is
    four binary_f32 layers with float32 constants (TFLite has no HardSigmoid: the same
    arithmetic under both numerics)."""
    x = lw.float_input(ins[0], name)

    def const(tag, v):
        cname = f"{name}@{tag}"
        lw.consts[cname] = np.asarray(v, F32)
        return lw.float_input(cname, name)

    alpha, beta = F32(attrs.get("alpha", 0.2)), F32(attrs.get("beta", 0.5))
    steps = (("Mul", alpha, "alpha"), ("Add", beta, "beta"), ("Min", F32(1), "one"),
             ("Max", F32(0), "zero"))
    for k, (op, v, tag) in enumerate(steps):
        last = k == len(steps) - 1
        y_name = out if last else f"{out}@hardsigmoid_{k}"
        # onnx_op: the ONNX node onnxruntime must still run as itself (ort_facts.py)
        x = lw.float_emit("binary_f32", name if last else f"{name}@{op.lower()}",
                          [x, const(tag, v)], y_name, shape,
                          {"binary_op": op, "onnx_check_tensor": out}, onnx_op="HardSigmoid")


def lower_tflite_float(tl, op):
    """A float32 ADD / SUB / MUL / DIV of a .tflite (no fused activation), broadcasting."""
    if int(op.options.get("fused_activation_function", 0)) != 0:
        raise Unsupported(f"float {op.builtin} with a fused activation")
    a, b = (tl.float_act(tl.inp(op, k)) for k in (0, 1))
    y = tl.new_float(op.outputs[0])
    if len(tl.graph.tensors[y].shape) > 6:
        raise Unsupported(f"float {op.builtin} of rank > 6")
    tl.emit("binary_f32", tl.node_name(op), [a, b], [y], {"onnx_op": TFLITE_FLOAT[op.builtin]})


def binary_f32(a, b, p):
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    with np.errstate(all="ignore"):
        y = (a + b, a - b, a * b, a / b,
             np.where(a < b, b, a),  # Max: std::max's (a < b) ? b : a
             np.where(b < a, b, a))[p.op].astype(F32)  # Min: std::min's (b < a) ? b : a
    if p.mode != ORT:
        y = np.where(y < -FLT_MAX, -FLT_MAX, y)
        y = np.where(FLT_MAX < y, FLT_MAX, y)
    return y.astype(F32)


def broadcast_dims(t, out_shape):
    """(output dims padded to rank 6, t's element strides per output axis, 0 if broadcast)."""
    rank = len(out_shape)
    shape = (1,) * (rank - len(t.shape)) + tuple(t.shape)
    strides, s = [0] * rank, 1
    for ax in reversed(range(rank)):
        strides[ax] = s if shape[ax] != 1 else 0
        s *= shape[ax]
    pad = 6 - rank
    return [1] * pad + list(out_shape), [0] * pad + strides


class BinaryF32(Op):
    name = "binary_f32"
    traits = Traits(layout="row_major", inplace=(0, 1))
    onnx_float = {**{op: lower_float for op in CODES}, "HardSigmoid": lower_hard_sigmoid}
    tflite_float = {b: lower_tflite_float for b in TFLITE_FLOAT}

    def prepare(self, g, n, numerics):
        return BinaryF32Params(CODES[n.attrs.get("binary_op", n.attrs["onnx_op"])],
                               mode_of(numerics))

    def reference(self, g, n, ins, p, numerics):
        return binary_f32(ins[0], ins[1], p)

    def emit(self, em, lid, n, p, info):
        a, b = (em.g.tensors[i] for i in n.inputs)
        y = em.g.tensors[n.outputs[0]]
        if len(y.shape) > 6:
            raise NotImplementedError("binary_f32 of rank > 6")
        dims, sa = broadcast_dims(a, y.shape)
        _, sb = broadcast_dims(b, y.shape)
        d = int32_array(em, f"{lid}_d", dims + sa + sb)
        info["kernel"] = "tinyaot_binary_f32"
        em.call(info["kernel"], [str(p.op), str(p.mode), d, fptr(em, a.name, const=True),
                                 fptr(em, b.name, const=True), fptr(em, y.name)])


OP = BinaryF32()
