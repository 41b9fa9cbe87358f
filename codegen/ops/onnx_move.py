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
    if t is not None and not t.is_const and t.dtype != "float32":  # float32: the fallback's
        return t, False
    if x in lw.qrepr:
        return lw.graph.tensors[lw.qrepr[x]], True
    if x in lw.consts:
        return None
    raise Unsupported(f"input '{x}' is a float tensor that is not quantized")


def integer_sources(lw, ins, name):
    """The integer IR tensors when every input of an ONNX op is an integer activation
    itself (a graph input or a QuantizeLinear output: the op runs on the integers, as
    tf2onnx writes Q -> Concat -> DQ), else None. Their quantization (from the
    QuantizeLinear) must be known."""
    ts = [lw.graph.tensors.get(x) for x in ins]
    if not ts or any(t is None or t.is_const or t.dtype == "float32" for t in ts):
        return None  # float32: a tensor of the float fallback, not an integer activation
    for x, t in zip(ins, ts):
        if t.q is None or t.q.per_channel:
            raise Unsupported(f"integer input '{x}' has no per-tensor quantization (it must "
                              "come from a QuantizeLinear)")
    return ts


def reinterpret(lw, t, q, name):
    """A zero-copy view of integer tensor t read with quantization q."""
    view = lw.add_int_tensor(f"{t.name}@{name}", t.shape, t.dtype, q)
    lw.emit("reinterpret", f"{name}@{t.name}", [t.name], [view.name])
    return view
