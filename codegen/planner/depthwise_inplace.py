"""Depthwise convolution in place (MCUNet / TinyEngine style), a planner option.

`compile_model(..., depthwise_inplace=True)`: an integer depthwise
convolution (channel multiplier 1, NHWC) whose input dies at it writes its
output over its input. The kernel, runtime_c/src/conv/tinyaot_depthwise_conv_inplace_s8.c,
works one channel at a time: it first copies channel c of the input (in_h *
in_w bytes, the node's scratch block) and then writes channel c of the
output. Output element (p, c) sits at byte p * C + c, a byte of input
channel c (already copied) because input and output have the same channel
count and the output has no more pixels than the input; the bytes of the
other channels are not touched. So input and output need not both be live:
the layer needs max(in, out) + in_h * in_w bytes instead of in + out.

It pays only where a depthwise layer is the peak; on the shared models it
never is (README, Memory plan), so it is off by default. It also replaces the
fast (SXTAB16) depthwise kernel by this portable one for the layers it takes,
and a merged block keeps the input's size for the output's whole life (a
stride-2 layer's smaller output then holds more bytes than it needs), so
`plan_with_depthwise_inplace` keeps it only when the arena gets smaller.

The decision is recorded on the node (`attrs["inplace_depthwise"]`, plus
the scratch size) before planning; `inplace.py` then merges the output into
the input's block like the other in-place ops, and the independent checker
allows that overlap for exactly such a node (same offset, output not larger).
"""
from __future__ import annotations

from .. import ops


def is_inplace_depthwise_candidate(g, n):
    """An integer depthwise conv the in-place kernel computes exactly."""
    if n.op != "conv2d" or n.attrs.get("ort_float") or len(n.inputs) < 2:
        return False
    x, w, y = g.tensors[n.inputs[0]], g.tensors[n.inputs[1]], g.tensors[n.outputs[0]]
    cin, cout = x.shape[1], y.shape[1]
    return (n.attrs["group"] == cin == cout and w.shape[1] == 1 and x.dtype == y.dtype == "int8"
            and w.dtype == "int8"  # the in-place kernel reads int8 weights
            and x.physical_perm == y.physical_perm and y.nbytes <= x.nbytes)


def mark_depthwise_inplace(g, io_buffers):
    """Flag each candidate whose input is last read at it (in g's current order)."""
    root = {}
    for n in g.nodes:
        if ops.traits(n.op).alias:
            root[n.outputs[0]] = root.get(n.inputs[0], n.inputs[0])
    last = {}
    for step, n in enumerate(g.nodes):
        for t in n.inputs:
            if t and not g.tensors[t].is_const:
                last[root.get(t, t)] = step
    external = set() if io_buffers == "arena" else {root.get(t, t) for t in g.inputs + g.outputs}
    for t in g.outputs:
        last[root.get(t, t)] = len(g.nodes)
    marked = []
    for step, n in enumerate(g.nodes):
        if not is_inplace_depthwise_candidate(g, n):
            continue
        r = root.get(n.inputs[0], n.inputs[0])
        if last.get(r) != step or r in external or root.get(n.outputs[0], n.outputs[0]) in external:
            continue
        _, _, h, w = g.tensors[n.inputs[0]].shape
        n.attrs["inplace_depthwise"] = True
        n.attrs["scratch_bytes"] = int(h * w)  # one input channel plane
        n.attrs.pop("fast_kernel", None)
        marked.append(n.name)
    return marked


def plan_with_depthwise_inplace(g, io_buffers, plan_fn):
    """plan_fn(g) -> plan, with the in-place depthwise layers if that is smaller;
    otherwise the node attributes are restored and the plain plan returned."""
    plain = plan_fn(g)
    saved = {id(n): dict(n.attrs) for n in g.nodes}
    if not mark_depthwise_inplace(g, io_buffers):
        return plain
    plan = plan_fn(g)
    if plan.size < plain.size:
        return plan
    for n in g.nodes:
        n.attrs.clear()
        n.attrs.update(saved[id(n)])
    return plain
