"""reshape / transpose / reinterpret: zero-copy views of their input's bytes.

One module for three IR operators because they are one mechanism with one kernel, none:
the planner gives the output its input's block (traits "alias"), the emitter writes no
code, and the oracle is numpy's reshape / transpose of the logical array. They differ only
in the physical order their output's bytes have (`alias_perm`, read by passes/layout.py):
  reshape      ONNX Reshape, Flatten, Squeeze, Unsqueeze, Identity (also the lowering's
               Q(DQ(x)) with equal parameters and a 1-D conv's reshapes to and from 2-D):
               row-major bytes in and out; a same-shape one keeps its input's order.
  transpose    ONNX Transpose: the input's bytes, read through the composed perm.
  reinterpret  the same integers read with other quantization parameters (a second
               DequantizeLinear of a tensor, frontend/qdq_lowering.py): any order.
On a constant, the ONNX ops are folded at compile time.
"""
from __future__ import annotations

import numpy as np

from .base import Op, Traits
from .onnx_move import move_source
from .physical import identity, same_bytes


def _lower(lw, node, name, attrs, ins, out, shape):
    src = move_source(lw, ins[0])
    transpose = node.op_type == "Transpose"
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
    x = lw.float_input(ins[0], name)
    lw.float_emit("reshape", name, [x], out, shape, onnx_op=node.op_type)


class Alias(Op):
    traits = Traits(layout="alias")

    def __init__(self, name, onnx_types=(), float_types=()):
        self.name = name
        self.onnx = {t: _lower for t in onnx_types}
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


_RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")
OPS = (Reshape("reshape", _RESHAPES, float_types=_RESHAPES),
       Transpose("transpose", ("Transpose",)),
       Reinterpret("reinterpret"))
