"""Fold inference-mode BatchNormalization into the Conv / Gemm / MatMul before it.

A pass on a *float* ONNX model (before quantization, run by `tinyaot
quantize`): quantizing a separate BatchNormalization would add a rounding
step and a node tinyaot has no kernel for. Per output channel c:

    s[c] = gamma[c] / sqrt(var[c] + eps)
    W'[c] = W[c] * s[c]          b'[c] = (b[c] - mean[c]) * s[c] + beta[c]

computed in float64, stored as float32. A BN is folded only when that is the
same function: the producer's output has no other reader and is not a graph
output, weights / bias / BN parameters are initializers (not overridable
graph inputs), BN has one output (not training mode), and the BN channel
axis (1) is the producer's output-channel axis. Anything else is left as it
is. The folded weights get new initializer names (the old ones may be
shared) and initializers nobody reads any more are dropped.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

PRODUCERS = ("Conv", "Gemm", "MatMul")


def fold_batchnorm(model: onnx.ModelProto) -> int:
    """Fold every legal BatchNormalization of `model` (in place); returns the count."""
    g = model.graph
    folded, replaced = 0, set()
    for bn in [n for n in g.node if n.op_type == "BatchNormalization"]:
        old = [t for n in g.node if n is bn or bn.input[0] in n.output for t in n.input]
        if _fold_one(model, bn):
            folded += 1
            replaced.update(old)
    _drop_unread_initializers(g, replaced)
    return folded


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class _Consts:
    """Float32 initializers that a user cannot override (not graph inputs)."""

    def __init__(self, g):
        inputs = {i.name for i in g.input}
        self.protos = {i.name: i for i in g.initializer if i.name not in inputs}

    def get(self, name):
        p = self.protos.get(name)
        if p is None or p.data_type != onnx.TensorProto.FLOAT:
            return None
        return numpy_helper.to_array(p).astype(np.float64)


def _fold_one(model, bn):
    g = model.graph
    a = _attrs(bn)
    if a.get("training_mode", 0) or any(o for o in bn.output[1:]) or a.get("spatial", 1) != 1:
        return False
    if len(bn.input) != 5:
        return False
    x = bn.input[0]
    producers = [n for n in g.node if x in n.output]
    readers = [n for n in g.node if x in n.input]
    if (len(producers) != 1 or producers[0].op_type not in PRODUCERS or readers != [bn]
            or x in {o.name for o in g.output} or x in _subgraph_names(g)):
        return False
    prod = producers[0]
    consts = _Consts(g)
    gamma, beta, mean, var = (consts.get(i) for i in bn.input[1:5])
    if any(v is None or v.ndim != 1 for v in (gamma, beta, mean, var)):
        return False
    m = gamma.shape[0]
    if not all(v.shape == (m,) for v in (beta, mean, var)):
        return False
    s = gamma / np.sqrt(var + float(a.get("epsilon", 1e-5)))
    shift = beta - mean * s  # b' = b * s + shift
    fold = {"Conv": _fold_conv, "Gemm": _fold_gemm, "MatMul": _fold_matmul}[prod.op_type]
    if not fold(model, prod, bn, consts, s, shift):
        return False
    g.node.remove(bn)
    for vi in [v for v in g.value_info if v.name == x]:
        g.value_info.remove(vi)
    return True


def _fold_conv(model, conv, bn, consts, s, shift):
    w = consts.get(conv.input[1]) if len(conv.input) > 1 else None
    if w is None or w.ndim < 3 or w.shape[0] != s.shape[0]:
        return False  # BN axis 1 = Conv output channels = W axis 0, any group
    b = _bias(consts, conv.input, 2, s.shape[0])
    if b is None:
        return False
    w_new = w * s.reshape((-1,) + (1,) * (w.ndim - 1))
    _set_inputs(model, conv, {1: w_new, 2: b * s + shift}, bn.output[0])
    return True


def _fold_gemm(model, gemm, bn, consts, s, shift):
    a = _attrs(gemm)
    w = consts.get(gemm.input[1])
    trans_b = int(a.get("transB", 0))
    if w is None or w.ndim != 2 or w.shape[0 if trans_b else 1] != s.shape[0]:
        return False  # Y [N, M]: BN axis 1 = M = B's rows (transB=1) or columns
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    c = _bias(consts, gemm.input, 2, s.shape[0])
    if c is None or alpha == 0.0:
        return False
    # Y = alpha * A B + beta * C: alpha and beta go into the new B and C (both become 1)
    w_new = alpha * w * (s[:, None] if trans_b else s[None, :])
    _set_inputs(model, gemm, {1: w_new, 2: beta * c * s + shift}, bn.output[0])
    for at in [at for at in gemm.attribute if at.name in ("alpha", "beta")]:
        gemm.attribute.remove(at)
    return True


def _fold_matmul(model, mm, bn, consts, s, shift):
    """A [N, K] @ W [K, M]: scale W's columns; the shift becomes an Add of a
    constant after the MatMul (the MatMul + Add pattern the quantizer knows)."""
    w = consts.get(mm.input[1])
    if w is None or w.ndim != 2 or w.shape[1] != s.shape[0] or _rank(model, mm.input[0]) != 2:
        return False  # BN axis 1 is the last axis only for a 2-D product
    g = model.graph
    mid = _fresh(g, mm.output[0] + "_bnfold")
    _set_inputs(model, mm, {1: w * s[None, :]}, mid)
    b_name = _add_initializer(g, mm.input[1] + "_bias", shift)
    add = helper.make_node("Add", [mid, b_name], [bn.output[0]], name=_fresh(g, bn.name + "_bias"))
    g.node.insert(list(g.node).index(bn), add)
    return True


def _bias(consts, inputs, i, m):
    """The producer's bias as a [m] float64 vector (zeros if absent), or None
    if it is not a constant of shape [m], [1, m] or a scalar."""
    if len(inputs) <= i or not inputs[i]:
        return np.zeros(m)
    b = consts.get(inputs[i])
    if b is None or b.shape not in ((m,), (1, m), (), (1,)):
        return None
    return np.broadcast_to(b.reshape(-1), (m,)).astype(np.float64)


def _rank(model, name):
    from onnx import shape_inference
    try:
        g = shape_inference.infer_shapes(model).graph
    except Exception:  # an unknown rank: not folded (the quantizer reports the model's error)
        return None
    for v in list(g.input) + list(g.value_info) + list(g.output):
        if v.name == name and v.type.tensor_type.HasField("shape"):
            return len(v.type.tensor_type.shape.dim)
    return None


def _set_inputs(model, node, new, output):
    """Replace node inputs by new float32 initializers; node now writes `output`."""
    g = model.graph
    for i, value in new.items():
        base = node.input[i] if len(node.input) > i and node.input[i] else node.name + "_bias"
        name = _add_initializer(g, base + "_bnfold", value)
        while len(node.input) <= i:
            node.input.append("")
        node.input[i] = name
    node.output[0] = output


def _add_initializer(g, base, value):
    name = _fresh(g, base)
    g.initializer.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
    return name


def _fresh(g, base):
    used = ({i.name for i in g.initializer} | {t for n in g.node for t in list(n.input) + list(n.output)}
            | {n.name for n in g.node} | {i.name for i in g.input})
    name, k = base, 1
    while name in used:
        name, k = f"{base}_{k}", k + 1
    return name


def _subgraph_names(g):
    """Every tensor name a node inside an If / Loop / Scan body reads (they may
    read outer tensors without listing them as the node's inputs)."""
    names = set()
    for n in g.node:
        for a in n.attribute:
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                for m in sub.node:
                    names.update(m.input)
                names |= _subgraph_names(sub)
    return names


def _drop_unread_initializers(g, candidates):
    """Drop the initializers among `candidates` that nothing reads any more."""
    read = ({t for n in g.node for t in n.input} | {o.name for o in g.output}
            | _subgraph_names(g))
    keep = [i for i in g.initializer if i.name in read or i.name not in candidates]
    del g.initializer[:]
    g.initializer.extend(keep)
