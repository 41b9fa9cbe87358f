"""Float convs (onnxruntime numerics): int8 weights in flash on tinyaot_convolve_f32_b8_s8,
where a block of their dequantized weights costs no arena.

tinyaot_convolve_f32_s8 reads float32 weights from flash, 4 bytes each: on ResNet-8 under
`ort` they are half the image. tinyaot_convolve_f32_b8_s8 keeps the int8 bytes and, per
block of output-channel tiles (4 channels each), dequantizes them into its scratch and
runs the same tiles on them: the same sums, so the same bits. It costs one conversion per
weight and inference, and the pixel columns gathered once per block instead of once. For
each candidate layer (ops/conv2d.py) the planner tries, in order, and keeps the first that
leaves the arena as small as it was:
  1. all its tiles in one block;
  2. all in one block, the input gathered from the int8 tensor instead of a float copy
     (f32_compact_input, as planner/float_conv_scratch.py sets it): the copy's arena can
     hold the weights, and a slower gather once costs less than a second pass of columns
     (ResNet-8's first 16-channel 3x3 conv: +0.16M cycles, against +0.81M in 2 blocks);
  3. the tiles in 2, 3, ... MAX_BLOCKS equal blocks.
If none fits, the layer keeps its float weights. Flash is bought with cycles, never with
RAM. The decision is the node's attr "f32_block_tiles" (and "f32_compact_input").
"""
from __future__ import annotations

from ..kernels.conv_f32_pack import TILE, input_mode

# Each block gathers the layer's pixel columns again: measured on a Cortex-M4 (ideal part),
# 3 blocks cost ResNet-8's 64-channel 3x3 conv 9 % and the KWS DS-CNN's first conv 7 % of
# the layer's cycles. At most this many blocks.
MAX_BLOCKS = 4


def block_sizes(tiles, most=MAX_BLOCKS):
    """Tiles per block, largest first: all, then the tiles in 2, 3, ... `most` blocks of
    equal size (the last block no larger than the others); each size the smallest that
    gives its number of blocks."""
    out = []
    for k in range(1, most + 1):
        b = -(-tiles // k)
        while b > 1 and -(-tiles // (b - 1)) == -(-tiles // b):
            b -= 1
        if -(-tiles // b) == k and (not out or b < out[-1]):
            out.append(b)
    return out


def _options(g, n, tiles):
    """(tiles per block, gather from the int8 input?) in the order tried."""
    sizes = block_sizes(tiles)
    x, w, y = (g.tensors[t].shape for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
    compact = bool(n.attrs.get("f32_compact_input"))
    yield sizes[0], compact
    if not compact and input_mode(x, y, w, n.attrs) != 0:
        yield sizes[0], True
    for b in sizes[1:]:
        yield b, compact


def _set(n, block, compact):
    if block is None:
        n.attrs.pop("f32_block_tiles", None)
    else:
        n.attrs["f32_block_tiles"] = block
    if compact:
        n.attrs["f32_compact_input"] = True
    else:
        n.attrs.pop("f32_compact_input", None)


def plan_float_conv_blocks(g, plan, replan, reselect):
    """`plan` of `g`, with the layers marked "f32_blocks_candidate" on
    tinyaot_convolve_f32_b8_s8 wherever some block keeps the arena as small.
    reselect(n): the node's Op.select."""
    for n in g.nodes:
        if not n.attrs.get("f32_blocks_candidate"):
            continue
        was = bool(n.attrs.get("f32_compact_input"))
        for block, compact in _options(g, n, -(-int(g.tensors[n.inputs[1]].shape[0]) // TILE)):
            _set(n, block, compact)
            reselect(n)
            trial = replan(g)
            if trial.size <= plan.size:
                plan = trial
                break
        else:
            _set(n, None, was)
            reselect(n)
    return plan
