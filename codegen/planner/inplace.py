"""In-place elementwise ops: the output takes the bytes of an input that dies there.

A planning decision on top of `build_blocks`: when an elementwise node at step
s reads a tensor whose block is last read at s (and is an arena block of the
same size, dtype and layout as the output), the output's block is merged into
the input's block. The merged block keeps the input's offset, lives from the
input's first step to the output's last one, and records the decision in
`Block.inplace` so the report and the independent checker see it.

Legal only for kernels whose loop reads element i of that input before it
writes element i of the output and never reads element j > i after writing
out[j - k] (one index, one pass, same stride):

* clamp / requantize -> tinyaot_requantize_s8: `v = input[i]; output[i] = f(v)`
* lut                -> `output[i] = table[input[i]]` (one read, then one write)
* add                -> tinyaot_add_s8: `av = a[i]; bv = b[i * b_stride]; output[i] = ...`;
  in place on `a`, or on `b` only when b has a's shape (b_stride 1): with a
  broadcast b (stride 0) every output element would read the overwritten b[0].

* conv2d flagged `inplace_depthwise` (depthwise_inplace.py) -> its own kernel,
  which copies one input channel to scratch before writing that output channel;
  its output may be smaller than the input (stride, no padding).

Nothing else overlaps: the checker allows exactly this overlap (same offset,
same size, the input's last step == the output's first step == s, op and
operand as above) and nothing more.
"""
from __future__ import annotations

from .. import ops


def inplace_operands(g, n):
    """Input tensors of node n that its kernel could safely overwrite."""
    if n.attrs.get("inplace_depthwise"):  # depthwise_inplace.py: output no larger than input
        from .depthwise_inplace import is_inplace_depthwise_candidate
        return [n.inputs[0]] if is_inplace_depthwise_candidate(g, n) else []
    slots = ops.traits(n.op).inplace  # the input positions the output may overwrite
    if not slots or len(n.outputs) != 1:
        return []
    out = g.tensors[n.outputs[0]]
    res = []
    for k in slots:
        if k >= len(n.inputs) or not n.inputs[k]:
            continue
        t = g.tensors[n.inputs[k]]
        if t.is_const or t.dtype != out.dtype or t.nbytes != out.nbytes:
            continue
        if tuple(t.shape) != tuple(out.shape) or t.physical_perm != out.physical_perm:
            continue
        if n.op == "add" and k == 1:
            a = g.tensors[n.inputs[0]]
            if tuple(a.shape) != tuple(t.shape):  # b broadcast: stride 0
                continue
        res.append(t.name)
    return res


def merge_inplace(g, blocks):
    """Merge each legal in-place output into its dying input's block (in step order)."""
    where = {t: b for b in blocks for t in b.tensors}
    gone = set()
    for step, n in enumerate(g.nodes):
        cands = inplace_operands(g, n)
        if not cands:
            continue
        bo = where.get(n.outputs[0])
        if bo is None or bo.external is not None or bo.first != step or bo.name != n.outputs[0]:
            continue
        for t in cands:
            bi = where.get(t)
            if (bi is None or bi is bo or bi.external is not None or bi.last != step
                    or getattr(bi, "scratch", False)
                    or (bo.size > bi.size if n.attrs.get("inplace_depthwise") else bo.size != bi.size)):
                continue
            bi.inplace.append({"step": step, "op": n.op, "node": n.name, "input": t,
                               "output": n.outputs[0]})
            bi.inplace.extend(bo.inplace)
            bi.tensors.extend(bo.tensors)
            bi.last = bo.last
            for x in bo.tensors:
                where[x] = bi
            gone.add(id(bo))
            break
    return [b for b in blocks if id(b) not in gone]
