"""Integer 3x3 stride-1 convs on tinyaot_convolve_winograd_s8, where its scratch costs no arena.

The Winograd kernel's scratch (one pair of 2x2 tiles' transformed input: 64 bytes per input
channel) is larger than the fast conv's two im2col columns (36 bytes per input channel), so
for each candidate (ops/conv2d.py: "winograd_candidate") plan again with it and keep it when
the arena stays as small; otherwise the layer keeps the fast conv. Cycles are bought with
flash, never with RAM. The decision is the node's attr "winograd", which its Op.select reads.
"""
from __future__ import annotations

from .arena_free import first_arena_free


def plan_winograd(g, plan, replan, reselect):
    """`plan` of `g`, with the candidate layers on the Winograd kernel wherever it keeps the
    arena as small. reselect(n): the node's Op.select."""
    for n in g.nodes:
        if n.attrs.get("winograd_candidate"):
            plan = first_arena_free(g, n, plan, replan, reselect, "winograd", [True])
    return plan
