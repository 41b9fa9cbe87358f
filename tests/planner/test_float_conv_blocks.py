"""planner/float_conv_blocks.py: onnxruntime's float convs keep int8 weights in flash
(tinyaot_convolve_f32_b8_s8) where a block of their dequantized weights costs no arena."""
from math import ceil

import pytest

import codegen.compiler as compiler
from codegen.compiler import compile_model
from codegen.ops.conv2d import F32_B8_MIN_WEIGHTS
from codegen.planner.float_conv_blocks import MAX_BLOCKS, block_sizes

from tests.helpers.env import DEFAULT_MODEL, shared_model


def test_block_sizes_are_the_smallest_for_each_number_of_blocks():
    for tiles in range(1, 80):
        # by brute force: for each number of blocks up to MAX_BLOCKS some block size gives,
        # the smallest such size (no scratch beyond what that number of blocks needs)
        smallest = {}
        for b in range(1, tiles + 1):
            n = ceil(tiles / b)
            if n <= MAX_BLOCKS:
                smallest[n] = min(smallest.get(n, b), b)
        assert block_sizes(tiles) == [smallest[n] for n in sorted(smallest)], tiles


def _float_convs(cc):
    return [la for la in cc.module.layers if la["kernel"].startswith("tinyaot_convolve_f32")]


@pytest.mark.shared
def test_ic01_float_convs_take_int8_weights_at_the_same_arena(monkeypatch):
    """ResNet-8 under ort: its six float convs' weights as int8 (a quarter of the float
    bytes), the arena at the size it has without them, and the 16-channel 3x3 conv, whose
    band of float rows left no room for its weights, gathers from the int8 input instead."""
    path, _ = shared_model("ic01")
    cc = compile_model(path, numerics="ort")
    monkeypatch.setattr(compiler, "plan_float_conv_blocks", lambda g, plan, *a: plan)
    before = compile_model(path, numerics="ort")
    assert cc.plan.size == before.plan.size == 49152
    now, was = _float_convs(cc), _float_convs(before)
    assert [la["kernel"] for la in was] == ["tinyaot_convolve_f32_s8"] * 6
    assert [la["kernel"] for la in now] == ["tinyaot_convolve_f32_b8_s8"] * 6
    sizes = {n.name: cc.graph.tensors[n.inputs[1]].size for n in cc.graph.nodes
             if n.op == "conv2d"}
    for a, b in zip(now, was):  # 1 byte a weight instead of 4 (channels multiples of 4; the
        # layer that gathers from the int8 input also has one row of tap offsets, not 3)
        assert b["weight_bytes"] - a["weight_bytes"] >= 3 * sizes[a["name"]], (a, b)
    blocks = {n.name: (n.attrs["f32_block_tiles"], bool(n.attrs.get("f32_compact_input")))
              for n in cc.graph.nodes if n.attrs.get("f32_block_tiles")}
    w = {n.name: cc.graph.tensors[n.inputs[1]].shape for n in cc.graph.nodes if n.name in blocks}
    # the 16 -> 16 3x3 conv: one block of its 4 tiles, the int8 input gathered
    assert [blocks[k] for k in blocks if tuple(w[k]) == (16, 16, 3, 3)] == [(4, True)]
    # the 32 -> 64 3x3 conv (16 tiles, 4.6 KB a tile) in 3 blocks of 6
    assert [blocks[k][0] for k in blocks if tuple(w[k]) == (64, 32, 3, 3)] == [6]
    assert cc.report["weights_bytes"] < before.report["weights_bytes"] - 80000
    assert cc.report["macs"] == before.report["macs"]


@pytest.mark.shared
def test_only_ort_speed_builds_have_the_block_kernel():
    """The pass is for onnxruntime's float layers under --optimize speed only."""
    path, _ = shared_model("ic01")
    size = {la["kernel"] for la in compile_model(path, numerics="ort", optimize="size")
            .module.layers}
    assert "tinyaot_convolve_f32_w8_s8" in size and "tinyaot_convolve_f32_b8_s8" not in size
    tfl = {la["kernel"] for la in compile_model(path, numerics="tflite").module.layers}
    assert not any("f32" in k for k in tfl)


def test_a_float_conv_with_few_weights_keeps_them_float():
    """Below F32_B8_MIN_WEIGHTS the block kernel's code would cost more flash than the
    int8 weights save: the default model's first conv (72 weights) stays on float weights."""
    cc = compile_model(DEFAULT_MODEL, numerics="ort")
    first = next(n for n in cc.graph.nodes if n.op == "conv2d")
    assert cc.graph.tensors[first.inputs[1]].size < F32_B8_MIN_WEIGHTS
    assert cc.module.layers[cc.graph.nodes.index(first)]["kernel"] == "tinyaot_convolve_f32_s8"
    assert "tinyaot_convolve_f32_b8_s8" not in cc.module.kernels
