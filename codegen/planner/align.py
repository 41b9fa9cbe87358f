"""Alignment of each arena buffer: part of the plan, checked by planner/check.py.

Every buffer starts at a multiple of 4 (the arena itself is 16-byte aligned),
of its element size (int32 / float32 tensors, scratch), and of 8 when a
conv2d or fully_connected kernel reads or writes it: those are the operands
the Cortex-M DSP kernels stream with 64-bit (LDRD / dual-word) loads. A node
may ask for more with `Node.attrs["align"]` (e.g. 16 for an MVE kernel) and a
scratch block with `Node.attrs["scratch_align"]`.
"""
from __future__ import annotations

import numpy as np

from .. import ops

MIN_ALIGN = 4


def tensor_align(g, name):
    """The alignment one tensor needs, from the nodes that touch it."""
    t = g.tensors.get(name)
    a = MIN_ALIGN
    if t is not None:
        a = max(a, np.dtype(t.dtype).itemsize)
    for n in g.nodes:
        if name in n.inputs or name in n.outputs:
            a = max(a, ops.traits(n.op).align, int(n.attrs.get("align", MIN_ALIGN)))
    return a


def buffer_align(g, block):
    a = MIN_ALIGN
    for t in block.tensors:
        if t in g.tensors:
            a = max(a, tensor_align(g, t))
    if getattr(block, "scratch", False) or block.name not in g.tensors:
        a = max(a, 8)
        node = getattr(block, "node", None)
        if node is not None and hasattr(node, "attrs"):
            a = max(a, int(node.attrs.get("scratch_align", 8)))
    return _pow2(a)


def _pow2(a):
    p = 1
    while p < a:
        p *= 2
    return p
