"""Float conv (onnxruntime numerics): keep its fast input copy only where it
costs no arena.

tinyaot_convolve_f32_s8 reads its input fastest from a dequantized float copy
(the zero-padded input, or a band of rows) in its scratch; without one it
gathers through the int8 table into small pixel columns. The copy is up to
4x the input tensor, so on a small model it can set the arena's peak. For
each layer with a copy, plan again with the compact scratch and keep that
whenever the arena shrinks (speed is traded only for memory actually saved).
"""
from __future__ import annotations

from ..kernels.conv_f32_pack import input_mode, scratch_bytes


def _copying(g):
    for n in g.nodes:
        # a layer on its size kernel (f32_w8: a per-layer variant of `tinyaot tune`) keeps
        # that kernel's scratch
        if n.op == "conv2d" and n.attrs.get("ort_float") and not n.attrs.get("f32_compact_input") \
                and not n.attrs.get("f32_w8"):
            x, w, y = (g.tensors[t].shape for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
            if input_mode(x, y, w, n.attrs) != 0:
                yield n, (x, w, y)


def _set_compact(n, shapes, on):
    if on:
        n.attrs["f32_compact_input"] = True
    else:
        n.attrs.pop("f32_compact_input", None)
    x, w, y = shapes
    n.attrs["scratch_bytes"] = scratch_bytes(x, w, y, n.attrs)


def plan_float_conv_scratch(g, plan, replan):
    """`plan` of `g`, or a smaller one with some float convs on compact scratch."""
    for n, shapes in list(_copying(g)):
        _set_compact(n, shapes, True)
        smaller = replan(g)
        if smaller.size < plan.size:
            plan = smaller
        else:
            _set_compact(n, shapes, False)
    return plan
