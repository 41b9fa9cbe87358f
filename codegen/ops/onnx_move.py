"""The integer tensor an ONNX data-movement op moves (no operator here).

ONNX Reshape / Flatten / Squeeze / Unsqueeze / Identity / Transpose (alias.py) and Slice /
Split (slice.py) only move bytes, so they pass straight through on integer tensors: on an
integer tensor itself (a graph input or a QuantizeLinear output), or on the integer tensor
behind a DequantizeLinear (the moved float result is then represented by a new integer
tensor). On a constant they are folded at compile time by their module.
"""
from __future__ import annotations

from .base import Unsupported


def move_source(lw, x):
    """(integer IR tensor under ONNX input x, whether x is a float tensor), or None when x
    is a constant (the caller folds it)."""
    t = lw.graph.tensors.get(x)
    if t is not None and not t.is_const:
        return t, False
    if x in lw.qrepr:
        return lw.graph.tensors[lw.qrepr[x]], True
    if x in lw.consts:
        return None
    raise Unsupported(f"input '{x}' is a float tensor that is not quantized")
