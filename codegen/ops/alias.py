"""reshape / transpose / reinterpret: zero-copy views of their input's bytes.

One module for three IR operators because they are one mechanism with one kernel, none:
the planner gives the output its input's block (traits "alias"), the emitter writes no
code, and the oracle is numpy's reshape / transpose of the logical array. They differ only
in the physical order their output's bytes have (`alias_perm`, read by passes/layout.py):
  reshape      ONNX Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout at inference
               (also the lowering's
               Q(DQ(x)) with equal parameters and a 1-D conv's reshapes to and from 2-D):
               row-major bytes in and out; a same-shape one keeps its input's order.
  transpose    ONNX Transpose: the input's bytes, read through the composed perm.
  reinterpret  the same integers read with other quantization parameters (a second
               DequantizeLinear of a tensor, frontend/qdq_lowering.py): any order.
On a constant, the ONNX ops are folded at compile time. Moving elements commutes with
quantization, so on a float result still pending (a Conv's) they wait for the QuantizeLinear
after them, and on a float graph input they apply to its quantized integers.
TFLite RESHAPE, SQUEEZE, EXPAND_DIMS (reshape) and TRANSPOSE (transpose) are lowered here
too (frontend/tflite/fold.py folds them on constants).
"""
from __future__ import annotations

import numpy as np

from .base import SAME, Deferred, Op, Pending, Traits, Unsupported
from .onnx_move import move_source
from .physical import identity, same_bytes


def _dropout_is_identity(lw, node, name, ins):
    """ONNX Dropout at inference (no training_mode, or a constant false) passes its data on."""
    if len(ins) > 2 and ins[2]:
        if ins[2] not in lw.consts:
            raise Unsupported("Dropout whose training_mode is not a constant")
        if bool(np.asarray(lw.consts[ins[2]]).reshape(-1)[0]):
            raise Unsupported("Dropout in training mode (export the model in eval mode)")


def _lower(lw, node, name, attrs, ins, out, shape):
    if node.op_type == "Dropout":
        _dropout_is_identity(lw, node, name, ins)
    transpose = node.op_type == "Transpose"
    op = "transpose" if transpose else "reshape"
    a = {}
    if transpose:
        rank = len(lw.shape_of(ins[0], name))
        a["perm"] = tuple(int(p) for p in attrs.get("perm", list(reversed(range(rank)))))
    if lw.float_input_view(ins[0], out, (op, name, a, tuple(shape))):
        return  # on a float graph input: applied to it once it is quantized
    if ins[0] in lw.pending or ins[0] in lw.materialized:  # a float result still pending
        lw.pending[out] = Pending(op, name, [Deferred(ins[0])], a, shape=shape, commutes=SAME,
                                  fuses_clamp=False)
        return
    src = move_source(lw, ins[0])
    if src is None:  # a constant: folded
        x = np.asarray(lw.consts[ins[0]])
        if transpose:
            lw.consts[out] = np.transpose(x, attrs.get("perm", list(reversed(range(x.ndim)))))
        else:
            lw.consts[out] = x.reshape(shape)
        return
    src, float_out = src
    t = lw.add_int_tensor(out if not float_out else f"{out}@q", shape, src.dtype, src.q)
    if transpose:
        perm = attrs.get("perm", list(reversed(range(len(src.shape)))))
        lw.emit("transpose", name, [src.name], [t.name], {"perm": tuple(int(p) for p in perm)})
    else:
        lw.emit("reshape", name, [src.name], [t.name])
    if float_out:
        lw.qrepr[out] = t.name


def _lower_float(lw, node, name, attrs, ins, out, shape):
    """The float fallback (frontend/float_fallback.py): a zero-copy reshape of a float32
    tensor."""
    if node.op_type == "Dropout":
        _dropout_is_identity(lw, node, name, ins)
    x = lw.float_input(ins[0], name)
    lw.float_emit("reshape", name, [x], out, shape, onnx_op=node.op_type)


def lower_tflite_reshape(tl, op):
    """RESHAPE / SQUEEZE / EXPAND_DIMS: the TFLite output shape, row-major."""
    x_idx, y_idx = tl.inp(op, 0), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    xt, yt = tl.tensor(x_idx), tl.tensor(y_idx)
    if int(np.prod(xt.shape)) != int(np.prod(yt.shape)):
        raise Unsupported(f"reshape of {list(xt.shape)} to {list(yt.shape)} changes the size")
    if tl.qparams(xt) is not None and not tl.same_q(x_idx, y_idx):
        raise Unsupported("input and output quantization differ")
    x = tl.act(x_idx, "plain")
    tl.emit("reshape", tl.node_name(op), [x], [tl.new_act(y_idx)])


def lower_tflite_transpose(tl, op):
    x_idx, p_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    perm = tuple(int(v) for v in np.asarray(tl.const(p_idx, "the permutation")).reshape(-1))
    rank = len(tl.tensor(x_idx).shape)
    if sorted(p % rank for p in perm) != list(range(rank)):
        raise Unsupported(f"permutation {list(perm)} is not valid for rank {rank}")
    x = tl.act(x_idx, "plain")
    tl.emit("transpose", tl.node_name(op), [x], [tl.new_act(y_idx)],
            {"perm": tuple(p % rank for p in perm)})


class Alias(Op):
    traits = Traits(layout="alias")

    def __init__(self, name, onnx_types=(), tflite=None, float_types=()):
        self.name = name
        self.onnx = {t: _lower for t in onnx_types}
        self.tflite = tflite or {}
        self.onnx_float = {t: _lower_float for t in float_types}

    def reference(self, g, n, ins, p, numerics):
        return ins[0]

    def emit(self, em, lid, n, p, info):
        info["kernel"] = "alias (zero-copy)"


class Reshape(Alias):
    def alias_perm(self, g, n, in_perm):
        x, y = g.tensors[n.inputs[0]], g.tensors[n.outputs[0]]
        if x.shape == y.shape and not same_bytes(y.shape, in_perm, identity(len(y.shape))):
            # a same-shape reshape (Q(DQ(x)) with equal parameters) keeps its input's
            # bytes in any perm: no transpose there and back
            return in_perm
        return None  # row-major in and out


class Transpose(Alias):
    def alias_perm(self, g, n, in_perm):
        p = n.attrs["perm"]
        inv = sorted(range(len(p)), key=lambda i: p[i])
        return tuple(inv[qi] for qi in in_perm)

    def reference(self, g, n, ins, p, numerics):
        return np.transpose(ins[0], n.attrs["perm"])


class Reinterpret(Alias):
    def alias_perm(self, g, n, in_perm):
        return in_perm


_RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout")
OPS = (Reshape("reshape", _RESHAPES,
               {b: lower_tflite_reshape for b in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS")},
               float_types=_RESHAPES),
       Transpose("transpose", ("Transpose",), {"TRANSPOSE": lower_tflite_transpose}),
       Reinterpret("reinterpret"))
