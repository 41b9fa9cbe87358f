"""Independent check of an arena plan (shares no code with the planner).

Recomputes every tensor's lifetime from the graph, then verifies that two
tensors live at the same step never share arena bytes, that every block
fits in the arena and that offsets are aligned.

One overlap is allowed, and only exactly: an elementwise node at step s
(clamp, requantize, lut: its input; add: input a, or b when b has a's shape)
may write its output over an input whose lifetime ends at s, when both start
at the same offset, have the same size, and the output's lifetime starts at s.
The kernels read element i before they write element i (see planner/inplace.py
for the loops), so that is safe; any other sharing is an error.

A second exact overlap: a concat at step s whose output bytes are its
inputs' bytes one after the other (every output axis before the concat axis,
in physical order, has size 1) may find an input already *inside* its output
(zero-copy: the producer wrote its slice), when that input has the output's
dtype, quantization and physical order (a byte copy), appears once in the
node, is last read at s, and sits exactly at the output's offset plus the
bytes of the inputs before it. The generated C does not copy it.

Third: a conv2d flagged `inplace_depthwise` (planner/depthwise_inplace.py:
depthwise, one output channel per input channel, same layout, int8) may write
its output, no larger than its input, at the offset of its dying input: its
kernel copies input channel c to scratch before it writes output channel c,
and output channel c only covers bytes of input channel c.

Alignment: every arena tensor at a multiple of max(align, its element size,
8 if a conv2d / fully_connected kernel touches it) and of its block's declared
`align`.
"""
from __future__ import annotations

from .. import ops


class PlanError(Exception):
    pass


_WIDE = {"conv2d": 8, "fully_connected": 8}


def _depthwise_inplace_allowed(g, root, dying, born, n, lo_d, hi_d, lo_b, hi_b):
    """The in-place depthwise kernel: output at the input's offset, no larger than it."""
    if not n.attrs.get("inplace_depthwise") or n.attrs.get("ort_float") or len(n.inputs) < 2:
        return False
    x, w, y = (g.tensors[t] for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
    xo = list(x.perm) if x.perm is not None else list(range(len(x.shape)))
    yo = list(y.perm) if y.perm is not None else list(range(len(y.shape)))
    return (root(n.inputs[0]) == dying and root(n.outputs[0]) == born and lo_d == lo_b
            and hi_b - lo_b == y.nbytes <= x.nbytes == hi_d - lo_d
            and n.attrs.get("group") == x.shape[1] == y.shape[1] and w.shape[1] == 1
            and x.dtype == y.dtype == "int8" and xo == yo)


def _inplace_allowed(g, root, dying, born, step, lo_d, hi_d, lo_b, hi_b):
    """May `born` (first step == step) take exactly the bytes of `dying` (last step == step)?"""
    if not 0 <= step < len(g.nodes):
        return False
    n = g.nodes[step]
    if n.op == "conv2d":
        return _depthwise_inplace_allowed(g, root, dying, born, n, lo_d, hi_d, lo_b, hi_b)
    if lo_d != lo_b or hi_d != hi_b:
        return False
    slots = ops.traits(n.op).inplace
    if not slots or len(n.outputs) != 1 or root(n.outputs[0]) != born:
        return False
    out = g.tensors[n.outputs[0]]
    for k in slots:
        if k >= len(n.inputs) or not n.inputs[k] or root(n.inputs[k]) != dying:
            continue
        t = g.tensors[n.inputs[k]]
        if t.dtype != out.dtype or t.nbytes != out.nbytes or tuple(t.shape) != tuple(out.shape):
            continue
        if (t.perm or tuple(range(len(t.shape)))) != (out.perm or tuple(range(len(out.shape)))):
            continue
        if k == 1 and tuple(g.tensors[n.inputs[0]].shape) != tuple(t.shape):
            continue
        return True
    return False


def _slice_allowed(g, root, part, whole, step, lo_p, hi_p, lo_w):
    """May `part` (last step == step) sit inside `whole` (first step == step) as its slice?"""
    if not 0 <= step < len(g.nodes):
        return False
    n = g.nodes[step]
    if n.op != "concat" or len(n.outputs) != 1 or root(n.outputs[0]) != whole:
        return False
    y = g.tensors[n.outputs[0]]
    order = list(y.perm) if y.perm is not None else list(range(len(y.shape)))
    axis = int(n.attrs["axis"])
    if any(y.shape[a] != 1 for a in order[:order.index(axis)]):
        return False  # slices interleave: not contiguous
    names = list(n.inputs)
    before = 0
    for k, name in enumerate(names):
        if root(name) == part:
            x = g.tensors[name]
            xo = list(x.perm) if x.perm is not None else list(range(len(x.shape)))
            return (sum(root(m) == part for m in names) == 1 and not x.is_const
                    and x.dtype == y.dtype and xo == order and x.q is not None and y.q is not None
                    and x.q.axis == y.q.axis
                    and x.q.scale.tobytes() == y.q.scale.tobytes()
                    and [int(v) for v in x.q.zero_point] == [int(v) for v in y.q.zero_point]
                    and g.tensors[part].nbytes == x.nbytes == hi_p - lo_p
                    and lo_p == lo_w + before)
        before += g.tensors[name].nbytes
    return False


def check_plan(g, plan, align=4, io_buffers=None):
    io_buffers = io_buffers or getattr(plan, "io_buffers", "user")
    alias_src = {}
    for n in g.nodes:
        if ops.traits(n.op).alias:
            alias_src[n.outputs[0]] = n.inputs[0]

    def root(t):
        while t in alias_src:
            t = alias_src[t]
        return t

    live = {}
    for name in g.inputs:
        live.setdefault(root(name), [-1, -1])
    for step, n in enumerate(g.nodes):
        for t in [i for i in n.inputs if i and not g.tensors[i].is_const] + list(n.outputs):
            r = root(t)
            span = live.setdefault(r, [step, step])
            span[0] = min(span[0], step)
            span[1] = max(span[1], step)
    for name in g.outputs:
        live[root(name)][1] = len(g.nodes)
    external = {root(t) for t in list(g.inputs) + list(g.outputs)} if io_buffers == "user" else set()
    need = {}
    for n in g.nodes:
        for t in list(n.inputs) + list(n.outputs):
            if t and not g.tensors[t].is_const:
                r = root(t)
                need[r] = max(need.get(r, 4), _WIDE.get(n.op, 4), int(n.attrs.get("align", 4)))
    spans = []
    for r, (a, b) in live.items():
        if r in external:
            continue
        blk = plan.where.get(r)
        if blk is None:
            raise PlanError(f"tensor {r} has no place in the plan")
        off, size = blk.offset, g.tensors[r].nbytes
        if off < 0 or off + size > plan.size:
            raise PlanError(f"tensor {r} [{off}, {off + size}) outside arena of {plan.size} B")
        want = max(align, need.get(r, 4), g.tensors[r].nbytes // max(g.tensors[r].size, 1),
                   getattr(blk, "align", 1))
        if off % want:
            raise PlanError(f"tensor {r} at offset {off} not {want}-aligned")
        spans.append((r, a, b, off, off + size))
    for step, n in enumerate(g.nodes):  # kernel scratch, staged weights: live at its node's step only
        for what, attr in (("scratch", "scratch_bytes"), ("staged", "staged_bytes")):
            nbytes = int(n.attrs.get(attr, 0) or 0)
            if nbytes <= 0:
                continue
            key = f"{n.name}::{what}"
            blk = plan.where.get(key)
            if blk is None:
                raise PlanError(f"{what} of node {n.name} has no place in the plan")
            off = blk.offset
            if blk.size < nbytes or off < 0 or off + nbytes > plan.size:
                raise PlanError(f"{what} of {n.name} [{off}, {off + nbytes}) outside arena of "
                                f"{plan.size} B")
            if off % max(align, 8):
                raise PlanError(f"{what} of {n.name} at offset {off} not {max(align, 8)}-aligned")
            spans.append((key, step, step, off, off + nbytes))
    for i in range(len(spans)):
        for j in range(i + 1, len(spans)):
            r1, a1, b1, lo1, hi1 = spans[i]
            r2, a2, b2, lo2, hi2 = spans[j]
            if a1 <= b2 and a2 <= b1 and lo1 < hi2 and lo2 < hi1:
                if b1 == a2 and _inplace_allowed(g, root, r1, r2, b1, lo1, hi1, lo2, hi2):
                    continue
                if b2 == a1 and _inplace_allowed(g, root, r2, r1, b2, lo2, hi2, lo1, hi1):
                    continue
                if b1 == a2 and _slice_allowed(g, root, r1, r2, b1, lo1, hi1, lo2):
                    continue
                if b2 == a1 and _slice_allowed(g, root, r2, r1, b2, lo2, hi2, lo1):
                    continue
                raise PlanError(f"tensors {r1} (steps {a1}-{b1}) and {r2} (steps {a2}-{b2}) "
                                f"overlap in the arena")
    return True
