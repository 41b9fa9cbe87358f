"""ONNX nodes that fold into the conv2d / fully_connected layer pending before them (no
operator here): the front end (frontend/qdq_lowering.py) asks `fold_into_pending` before it
lowers a node on its own.
"""
from __future__ import annotations

from .integer_forms import fold_epilogue


def fold_into_pending(lw, node, name, attrs) -> bool:
    """Fold `node` into the layer pending before it; True when folded: the Cast / Mul / Add
    of a ConvInteger / MatMulInteger epilogue (integer_forms.py), or the constant int32
    bias Add of a MatMul / Conv that has none (and no clamp yet): one value per output
    channel, [C] or, on a conv's NCHW result, [C, 1, 1] / [1, C, 1, 1] (a conv bias added on
    its own), which becomes the layer's bias."""
    if fold_epilogue(lw, node, name, attrs):
        return True
    if node.op_type != "Add":
        return False
    ins, out = list(node.input), node.output[0]
    for i, j in ((0, 1), (1, 0)):
        p = lw.pending.get(ins[i])
        if (p is not None and p.op in ("fully_connected", "conv2d") and p.inputs[2] is None
                and p.act_lo is None and p.act_hi is None and ins[j] in lw.qrepr
                and lw.graph.tensors[lw.qrepr[ins[j]]].is_const
                and lw.graph.tensors[lw.qrepr[ins[j]]].dtype == "int32"):
            bias = _channel_bias(lw, lw.graph.tensors[lw.qrepr[ins[j]]], p, name)
            if bias is None:
                return False
            del lw.pending[ins[i]]
            p.inputs[2] = bias
            p.tensors.append(ins[i])
            lw.pending[out] = p
            return True
    return False


def _channel_bias(lw, t, p, name):
    """The int32 constant t as the bias of pending layer p (the kernels read its values in
    order), or None when it is not one value per output channel (axis 1 of the result)."""
    cout = p.shape[1]
    dims = [1] * (len(p.shape) - len(t.shape)) + list(t.shape)
    if len(t.shape) > len(p.shape) or t.size != cout or dims[1] != cout:
        return None
    return t.name
