"""minmax: the elementwise maximum or minimum of two int8 tensors, with broadcasting.

TFLite MAXIMUM / MINIMUM (int8). TFLite Micro's kernel (maximum_minimum.cc,
reference_ops::MaximumMinimumBroadcastSlow, or CMSIS-NN's arm_maximum_s8) compares the stored
integers and never rescales: that is the maximum of the real values only when both inputs
and the output share one scale and zero point, which TFLite's quantizer guarantees (the
operator is "same scale" in its quantization spec). A model where they differ is refused
(TFLite Micro would still compare the integers of two different grids).
Operands: two activations, or an activation and an int8 constant, broadcast numpy-style
(TFLite's rule); the node works on TFLite's own row-major layout (a zero-copy view after a
spatial layer). Kernel: tinyaot_minmax_s8, walking the output with each operand's strides.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TinyAotError
from .base import Op, Traits, Unsupported
from .binary_f32 import broadcast_dims
from .physical import int32_array

BUILTINS = {"MAXIMUM": 1, "MINIMUM": 0}  # -> is_max


@dataclass
class MinMaxParams:
    is_max: int


def lower_tflite(tl, op):
    a_idx, b_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), op.outputs[0]
    tl.check_int8(op, a_idx, b_idx, y_idx)
    if tl.is_const(a_idx) and tl.is_const(b_idx):
        raise Unsupported(f"{op.builtin} of two constants")
    ys = tuple(tl.tensor(y_idx).shape)
    if len(ys) > 6:
        raise Unsupported(f"{op.builtin} of rank {len(ys)} (at most 6)")
    for i in (a_idx, b_idx):
        if not tl.same_q(i, y_idx):
            t, y = tl.tensor(i), tl.tensor(y_idx)
            raise Unsupported(
                f"input '{t.name}' is quantized (scale {float(t.scale[0]):g}, zero point "
                f"{int(t.zero_point[0])}) unlike output '{y.name}' (scale "
                f"{float(y.scale[0]):g}, zero point {int(y.zero_point[0])}); TFLite's "
                f"{op.builtin} compares the integers, so every operand must share the "
                "output's quantization: requantize the model")
        s = tuple(tl.tensor(i).shape)
        if len(s) > len(ys) or any(d not in (1, e) for d, e in zip(s[::-1], ys[::-1])):
            raise Unsupported(f"operand shape {list(s)} does not broadcast to the output's "
                              f"{list(ys)}")
    # max and min are symmetric: the operand of the output's shape goes first, so that the
    # output may take over its block (planner/inplace.py: slot 0)
    order = (a_idx, b_idx)
    if tl.is_const(a_idx) or tuple(tl.tensor(a_idx).shape) != ys:
        order = (b_idx, a_idx)
    ins = [tl.int8_const(i) if tl.is_const(i) else tl.act(i, "plain") for i in order]
    tl.emit("minmax", tl.node_name(op), ins, [tl.new_act(y_idx)],
            {"is_max": BUILTINS[op.builtin]})


class MinMax(Op):
    name = "minmax"
    traits = Traits(layout="row_major", inplace=(0,))
    tflite = {b: lower_tflite for b in BUILTINS}

    def prepare(self, g, n, numerics):
        if numerics != "tflite":
            raise TinyAotError(f"{'MAXIMUM' if n.attrs['is_max'] else 'MINIMUM'} is lowered "
                               "for tflite numerics only", model=g.source, node=n.name)
        return MinMaxParams(int(n.attrs["is_max"]))

    def reference(self, g, n, ins, p, numerics):
        a, b = (np.asarray(v, np.int32) for v in ins)
        y = np.maximum(a, b) if p.is_max else np.minimum(a, b)
        return y.reshape(g.tensors[n.outputs[0]].shape)

    def emit(self, em, lid, n, p, info):
        a, b = (em.g.tensors[i] for i in n.inputs)
        y = em.g.tensors[n.outputs[0]]
        dims, sa = broadcast_dims(a, y.shape)
        _, sb = broadcast_dims(b, y.shape)
        d = int32_array(em, f"{lid}_d", dims + sa + sb)
        info["kernel"] = "tinyaot_minmax_s8"
        pa, pb = (em.const("int8_t", f"{lid}_{tag}", t.data.reshape(-1)) if t.is_const
                  else em.ptr(t.name) for t, tag in ((a, "a"), (b, "b")))
        em.call(info["kernel"], [str(p.is_max), d, pa, pb, em.ptr(y.name)])


OP = MinMax()
