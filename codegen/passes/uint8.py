"""uint8 activations -> int8, exactly, at compile time.

onnxruntime's quantize_static with QUInt8 activations (QDQ or QOperator)
gives uint8 tensors. Every kernel computes with `q - zero_point` only, so
subtracting 128 from both the stored values and the zero point changes no
result: an int8 tensor q' = q - 128 with zp' = zp - 128 has the same real
values, the same (q - zp), and the same rounding (zero points are added
after rounding, and clamps move with the range [0,255] -> [-128,127]).

All internal tensors become int8; the graph input / output keep uint8 (the
generated API keeps the user's type): a `sign_flip` node (x ^ 0x80, which is
x -/+ 128 between uint8 and int8) converts the input into the arena and the
last int8 result into the user's output buffer.
"""
from __future__ import annotations

import numpy as np

from ..ir import Node, QParams, Tensor


def _shifted(q: QParams | None):
    if q is None:
        return None
    return QParams(q.scale, (q.zero_point.astype(np.int32) - 128).astype(np.int32), q.axis)


def has_uint8(g) -> bool:
    return any(t.dtype == "uint8" for t in g.tensors.values())


def uint8_to_int8(g):
    if not has_uint8(g):
        return g
    io = set(g.inputs) | set(g.outputs)
    for t in g.tensors.values():
        if t.dtype != "uint8" or t.name in io:
            continue
        t.dtype = "int8"
        t.q = _shifted(t.q)
        t.zp_shift = 128  # kernels that round after adding zp use zp + zp_shift
        if t.data is not None:
            t.data = (t.data.astype(np.int16) - 128).astype(np.int8)
    head, tail = [], []
    for k, name in enumerate(g.inputs):
        t = g.tensors[name]
        if t.dtype != "uint8":
            continue
        new = g.add_tensor(Tensor(f"{name}@s8", t.shape, "int8", _shifted(t.q)))
        for n in g.nodes:
            n.inputs = [new.name if i == name else i for i in n.inputs]
        head.append(Node("sign_flip", f"{name}@to_int8", [name], [new.name], {}))
    for k, name in enumerate(g.outputs):
        t = g.tensors[name]
        if t.dtype != "uint8":
            continue
        new = g.add_tensor(Tensor(f"{name}@s8", t.shape, "int8", _shifted(t.q)))
        new.zp_shift = 128
        for n in g.nodes:
            n.outputs = [new.name if o == name else o for o in n.outputs]
            n.inputs = [new.name if i == name else i for i in n.inputs]
        tail.append(Node("sign_flip", f"{name}@to_uint8", [new.name], [name], {}))
    g.nodes = head + g.nodes + tail
    return g

