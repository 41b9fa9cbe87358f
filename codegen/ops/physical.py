"""Physical layouts of tensors, as passes/layout.py assigns them and the data-movement
kernels read them (no operator here).

A tensor's bytes are `logical.transpose(perm)` in C order (ir/graph.py); the 4-D kernels
(slice, pad, concat, transpose, mul) take dims in that physical order, padded on the left
to rank 4, in `static const int32_t` arrays.
"""
from __future__ import annotations


def identity(rank):
    """The row-major perm."""
    return tuple(range(rank))


def same_bytes(shape, p1, p2) -> bool:
    """Are bytes in orders p1 and p2 the same bytes (the non-unit axes ordered alike)?"""
    a = [i for i in p1 if shape[i] != 1]
    b = [i for i in p2 if shape[i] != 1]
    return a == b


def physical(t):
    """(physical dims, perm) of a tensor: its bytes are logical.transpose(perm)."""
    rank = len(t.shape)
    perm = tuple(t.perm) if t.perm is not None else tuple(range(rank))
    return [t.shape[a] for a in perm], perm


def dims4(vals, fill):
    """vals padded on the left to 4 entries with `fill`."""
    vals = list(vals)
    return [fill] * (4 - len(vals)) + vals


def int32_array(em, cname, vals):
    """A small `static const int32_t` array of the layer, on one line; returns its name."""
    vals = [int(v) for v in vals]
    em.consts.append(f"static const int32_t {cname}[{len(vals)}] = {{ {', '.join(map(str, vals))} }};\n")
    return cname
