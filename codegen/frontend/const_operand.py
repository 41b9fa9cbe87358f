"""Add of an activation and a quantized constant (DequantizeLinear of an int8 /
uint8 initializer), e.g. the bias that onnxruntime's quantize_static adds
after a MatMul as its own QLinearAdd (QOperator) or DQ -> Add -> Q (QDQ).

The constant becomes operand b of the IR `add` (the kernels broadcast b: one
value, or a row repeated over the leading dimensions). When the ONNX node had
the constant first, `swapped` records it: onnxruntime's QLinearAdd folds its
operands in ONNX order (prepare.py).
"""
from __future__ import annotations


def _const_or_act(low, x, name):
    if x in low.qrepr and low.graph.tensors[low.qrepr[x]].is_const:
        return low.qrepr[x], True
    return low.act_input(x, name), False


def add_operands(low, ins, name, shape, unsupported):
    """-> (activation-or-a, constant-or-b, attrs) for an IR `add` node."""
    (a, ca), (b, cb) = (_const_or_act(low, x, name) for x in ins[:2])
    if not (ca or cb):
        return a, b, {}
    if ca and cb:
        raise unsupported("Add of two constants")
    act, const = (b, a) if ca else (a, b)
    ct, at = low.graph.tensors[const], low.graph.tensors[act]
    if ct.dtype not in ("int8", "uint8") or ct.q.per_channel:
        raise unsupported(f"constant '{const}' must be int8 / uint8 quantized per tensor")
    if ca and ct.size != 1:
        raise unsupported("Add with a constant first operand that is not a scalar")
    if tuple(at.shape) != tuple(shape):
        raise unsupported("Add where the constant broadcasts the activation to a larger shape")
    dims = list(ct.shape)
    while dims and dims[0] == 1:
        dims.pop(0)
    if ct.size != 1:
        tail = list(at.shape[len(at.shape) - len(dims):]) if dims else []
        if len(at.shape) > 2 or tail != dims:
            raise unsupported("Add of a constant: only a scalar, or a row [N] onto [M, N]")
    return act, const, {"swapped": bool(ca)}
