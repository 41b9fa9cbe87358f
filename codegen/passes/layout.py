"""Physical layouts: NHWC for spatial kernels, zero-copy reshapes/transposes.

A tensor's bytes are `logical.transpose(perm)` in C order. Transposes never
move data here: their output reuses the input bytes with a composed perm.
Reshape needs row-major bytes; spatial kernels need NHWC; where a tensor
does not already have the bytes a consumer needs, a real `layout` node
(a transpose kernel) is inserted. Two perms are the same bytes when they
order the non-unit axes alike.
"""
from __future__ import annotations

from .. import ops
from ..ir import Node, Tensor
from ..ops.physical import identity, same_bytes

NHWC = (0, 2, 3, 1)


def assign_layouts(g):
    perm = {}
    for name in g.inputs:
        perm[name] = identity(len(g.tensors[name].shape))
    new_nodes = []
    counter = [0]

    def need(name, want):
        """Return a tensor name holding `name` with bytes in order `want`."""
        t = g.tensors[name]
        have = perm[name]
        if same_bytes(t.shape, have, want):
            return name
        counter[0] += 1
        new = Tensor(f"{name}@layout{counter[0]}", t.shape, t.dtype, t.q)
        g.add_tensor(new)
        perm[new.name] = tuple(want)
        new_nodes.append(Node("layout", f"layout_{counter[0]}", [name], [new.name],
                              {"from_perm": tuple(have), "to_perm": tuple(want)}))
        return new.name

    for n in g.nodes:
        out = g.tensors[n.outputs[0]]
        rank = len(out.shape)
        layout = ops.traits(n.op).layout  # ops/base.py: Traits
        if layout == "spatial":
            n.inputs[0] = need(n.inputs[0], NHWC)
            perm[out.name] = NHWC
        elif layout == "elementwise":
            acts = [i for i in n.inputs if i and not g.tensors[i].is_const]
            shapes = {g.tensors[i].shape for i in acts}
            if len(shapes) == 1:
                p0 = perm[acts[0]]
                for k, i in enumerate(n.inputs):
                    if i in acts:
                        n.inputs[k] = need(i, p0)
                perm[out.name] = p0
            else:  # broadcasting: row-major everywhere
                for k, i in enumerate(n.inputs):
                    if i in acts:
                        n.inputs[k] = need(i, identity(len(g.tensors[i].shape)))
                perm[out.name] = identity(rank)
        elif layout == "row_major":  # e.g. MatMul of two activations
            n.inputs = [need(i, identity(len(g.tensors[i].shape))) if not g.tensors[i].is_const
                        else i for i in n.inputs]
            perm[out.name] = identity(rank)
        elif layout == "same":  # e.g. Concat: any perm, all alike
            p0 = perm[n.inputs[0]]
            n.inputs = [need(i, p0) for i in n.inputs]
            perm[out.name] = p0
        elif layout == "alias" and (
                kept := ops.get(n.op).alias_perm(g, n, perm[n.inputs[0]])) is not None:
            perm[out.name] = kept  # a view of its input's bytes, in the order the op says
        else:  # reshape, fully_connected, softmax: row-major in and out
            n.inputs[0] = need(n.inputs[0], identity(len(g.tensors[n.inputs[0]].shape)))
            perm[out.name] = identity(rank)
        new_nodes.append(n)
    g.nodes = new_nodes
    tail = []
    for k, name in enumerate(g.outputs):
        t = g.tensors[name]
        if not same_bytes(t.shape, perm[name], identity(len(t.shape))):
            new_nodes_before = len(new_nodes)
            g.outputs[k] = need(name, identity(len(t.shape)))
            tail.extend(new_nodes[new_nodes_before:])
    for name, p in perm.items():
        t = g.tensors[name]
        t.perm = None if p == identity(len(t.shape)) else tuple(p)
    return g
