"""The default build (--optimize speed) of the MLPerf Tiny models whose weights allow it fits
in 0.8x the flash image of TFLite Micro + CMSIS-NN (../shared/anchors, sized as `bench`
sizes it), bit-exact on qemu-m4, with the arena the planner had before int8 weights entered
the speed build (the live-set bound; ic01's is now its activations' own, smaller).

How: few-pixel convs keep int8 weights (tinyaot_convolve_fast_w8_s8, ops/conv2d.py:
W8_PIXELS; under tflite the pointwise ones, and the other pointwise layers of 10 quads or
more, two channels to an int16 lane: tinyaot_convolve_1x1_w8_s8), mostly-zero pointwise
convs keep only their nonzero weights
(tinyaot_convolve_sparse_s8: vww01), and ic01 stays under it with Winograd on its 3x3
layers (tinyaot_convolve_winograd_s8: 16/9 of their int16 weights, where its scratch costs
no arena). ad01 cannot: its int8 weights alone are 0.79x TFLite Micro's image (docs/results.md); ic01 under `ort` keeps its float convs' float weights."""
from __future__ import annotations

import pytest

from tests.helpers.env import _missing, require_arm_toolchain, shared_model

pytestmark = [pytest.mark.qemu, pytest.mark.shared]

# model, numerics, the kernels the default build must use, the arena before (B)
CASES = [("vww01", "tflite", {"tinyaot_convolve_sparse_s8", "tinyaot_convolve_1x1_w8_s8"}, 55328),
         ("vww01", "ort", {"tinyaot_convolve_sparse_s8", "tinyaot_convolve_fast_w8_s8"}, 55328),
         # ic01: 49,728 B before its peak layer ran Winograd with no scratch (planner/winograd.py)
         ("ic01", "tflite", {"tinyaot_convolve_fast_w8_s8", "tinyaot_convolve_winograd_s8"}, 49152),
         ("kws01", "tflite", set(), 16256),
         ("sww01", "ort", {"tinyaot_convolve_fast_w8_s8"}, 6656)]


@pytest.mark.parametrize("key,numerics,kernels,arena", CASES)
def test_default_image_under_0_8_tflm(key, numerics, kernels, arena):
    require_arm_toolchain()
    from codegen.cycles.compare import image_sizes, tflm_elf
    from codegen.driver.verify import verify_model
    from codegen.targets.boards import board_or_error
    model, golden = shared_model(key)
    if numerics == "tflite":
        model = model.with_suffix(".tflite")
    elf = tflm_elf(key)
    if elf is None:
        _missing(f"../shared/anchors/tflm_cmsisnn_m4/{key}.elf")
    limit = 0.8 * image_sizes(elf, board_or_error("qemu-m4"), ("g_inputs",))["flash"]
    gkey = "outputs_tflm" if numerics == "tflite" else "outputs_onnxruntime"
    r = verify_model(model, golden, board="qemu-m4", numerics=numerics, key=gkey)
    assert r["mismatches"] == 0 and r["vectors"] > 0
    assert r["flash_bytes"] <= limit, (r["flash_bytes"], limit)
    assert r["arena_bytes"] == arena
    assert kernels <= set(r["kernels"]), (kernels, r["kernels"])
