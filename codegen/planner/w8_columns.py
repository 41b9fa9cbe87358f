"""Integer convs with few output pixels (ops/conv2d.py: W8_PIXELS): int8 weights in flash
on tinyaot_convolve_fast_w8_s8, where its columns cost no arena.

The kernel widens each channel pair's int8 weights once per block of pixel pairs and runs
the fast kernel's GEMM on them, so it costs what the int16 fast kernel does plus one
widening per weight and block; its scratch holds the block's columns. For each candidate
layer, plan again with the largest block (all the layer's pixel pairs), then the pairs in
two, three, ... equal blocks down to MIN_BLOCK pairs (below that the widening costs a
quarter of the GEMM and more), and keep the first that leaves the arena as small as it
was; if none does, the layer keeps the fast kernel's int16 copy. Cycles are bought with flash, never with RAM. The decision is the
node's attr "w8_block_pairs", which its Op.select reads.
"""
from __future__ import annotations

from ..kernels.fast_pack import conv_pixel_pairs
from .arena_free import first_arena_free

MIN_BLOCK = 4


def block_sizes(pairs):
    """The blocks tried, largest first (the fewer blocks, the fewer times each weight is
    widened): all pairs, then the pairs in 2, 3, ... blocks of equal size, down to
    MIN_BLOCK."""
    out, k = [], 1
    while True:
        b = min(pairs, max(MIN_BLOCK, -(-pairs // k)))
        if not out or b < out[-1]:
            out.append(b)
        if b <= MIN_BLOCK:
            return out
        k += 1


def plan_w8_columns(g, plan, replan, reselect):
    """`plan` of `g`, with the layers marked "w8_columns" on tinyaot_convolve_fast_w8_s8
    wherever some block keeps the arena as small. reselect(n): the node's Op.select."""
    for n in g.nodes:
        if n.attrs.get("w8_columns"):
            blocks = block_sizes(conv_pixel_pairs(g.tensors[n.outputs[0]].shape))
            plan = first_arena_free(g, n, plan, replan, reselect, "w8_block_pairs", blocks)
    return plan
