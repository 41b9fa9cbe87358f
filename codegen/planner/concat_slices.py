"""Zero-copy Concat: producers write straight into their slice of the output.

A planning decision on top of `build_blocks` / `merge_inplace`. For a concat
node at step s whose output bytes are the inputs' bytes one after the other
(the concat axis is the outermost physical axis of size > 1, so every slice
is contiguous; strided slices would need producers that write with an output
stride, which no kernel here does), an input becomes a *sub-block* of the
output block at its slice's byte offset when

* it has the output's dtype, quantization and physical layout (the kernel
  would copy its bytes unchanged; a requantizing input is still copied),
* it is an arena block of exactly the input's size, not scratch, not already
  inside another block, not the output itself, and appears once in the node
  (aliases included),
* step s is its last reader (after s its bytes belong to the output, which an
  in-place consumer of the output may overwrite),
* its slice offset is a multiple of the block's alignment (the output block
  then takes the largest alignment of its slices).

The output block then lives from the earliest first step of its slices: it
is placed as one block and every sub-block sits at `parent.offset + rel`.
The emitted C skips the copy of an input whose arena offset already is its
slice (codegen/ops/concat.py, emit); when every input is in place the
concat costs nothing. The independent checker (check.py) allows exactly this
overlap: an input of a concat, at step s, at its exact slice offset.
"""
from __future__ import annotations

import numpy as np


def contiguous_slices(g, n):
    """Byte offset of each input's slice in the output of concat node n, or None
    when the slices are not contiguous."""
    y = g.tensors[n.outputs[0]]
    perm = list(y.physical_perm)
    k = perm.index(int(n.attrs["axis"]))
    if int(np.prod([y.shape[a] for a in perm[:k]], dtype=np.int64)) != 1:
        return None
    offs, pos = [], 0
    for i in n.inputs:
        offs.append(pos)
        pos += g.tensors[i].nbytes
    return offs if pos == y.nbytes else None


def copied_unchanged(g, n, name):
    """Does concat node n copy input `name` byte for byte (no requantization)?"""
    x, y = g.tensors[name], g.tensors[n.outputs[0]]
    return (not x.is_const and x.dtype == y.dtype and x.q is not None and y.q is not None
            and x.q.same_as(y.q) and x.physical_perm == y.physical_perm)


def merge_concat_slices(g, blocks):
    """Make each legal concat input a sub-block of the concat output's block (in step order).

    Blocks need their `align` set already. Returns the same list; sub-blocks get
    `parent` and `parent_offset` and stay in it (the report lists them)."""
    where = {t: b for b in blocks for t in b.tensors}
    for step, n in enumerate(g.nodes):
        if n.op != "concat":
            continue
        offs = contiguous_slices(g, n)
        bo = where.get(n.outputs[0])
        if offs is None or bo is None or bo.external is not None or bo.first != step:
            continue
        for k, (name, rel) in enumerate(zip(n.inputs, offs)):
            bi = where.get(name)
            if (bi is None or bi is bo or bi.external is not None or bi.parent is not None
                    or getattr(bi, "scratch", False)
                    or sum(where.get(m) is bi for m in n.inputs) != 1  # e.g. x and reshape(x)
                    or bi.last != step or bi.size != g.tensors[name].nbytes
                    or rel % bi.align or not copied_unchanged(g, n, name)):
                continue
            bi.parent, bi.parent_offset = bo, rel
            bo.first = min(bo.first, bi.first)
            bo.align = max(bo.align, bi.align)
            bo.slices.append({"step": step, "node": n.name, "input": name, "operand": k,
                              "block": bi.name, "offset": rel})
    return blocks


def resolve_offsets(blocks):
    """Offsets of sub-blocks from their (placed) parents, nested concats included."""
    def off(b):
        return b.offset if b.parent is None else off(b.parent) + b.parent_offset
    for b in blocks:
        if b.parent is not None:
            b.offset = off(b)
