"""Integer convs with few output pixels (ops/conv2d.py: W8_PIXELS): the fast GEMM on their
int8 weights, where its columns cost no arena.

Under --optimize speed such a layer keeps its weights as int8 bytes in flash and runs the
size kernel (tinyaot_convolve_w8_s8: two pixels' columns, each weight widened again for
every pixel pair). tinyaot_convolve_fast_w8_s8 widens each weight once and runs the fast
kernel's GEMM, so it costs about what the int16 fast kernel does, but it needs every
pixel's column in its scratch. For each such layer, plan again with that kernel (the
node's attr "w8_fast_columns", which its Op.select reads) and keep it only when the arena
does not grow: cycles are bought with flash already saved, never with RAM.
"""
from __future__ import annotations


def plan_w8_columns(g, plan, replan, reselect):
    """`plan` of `g`, with the layers marked "w8_columns" on tinyaot_convolve_fast_w8_s8
    wherever the arena stays as small. reselect(n): the node's Op.select again."""
    for n in g.nodes:
        if not n.attrs.get("w8_columns") or n.attrs.get("int_w8") != "conv":
            continue
        n.attrs["w8_fast_columns"] = True
        reselect(n)
        trial = replan(g)
        if trial.size <= plan.size:
            plan = trial
        else:
            n.attrs.pop("w8_fast_columns")
            reselect(n)
    return plan
