"""Pinned qemu-m4 instruction counts (tflite numerics) of the shared models.

QEMU runs with -icount shift=0, so the count is deterministic: any change
fails this test, a slowdown as well as a speedup. Update the numbers on
purpose (and bench/results.md with `tinyaot bench`) when a kernel changes.
"""
from __future__ import annotations

import pytest

from codegen.verify import verify_model

from conftest import require_arm_toolchain, shared_model

# instructions per inference (harness maximum over the golden inputs), measured
# with the input and output in the arena (the default: the harness copies them
# outside the timed call to <name>_invoke; the same counts as --io-buffers user)
PINNED = {
    "ad01": 268320,
    "kws01": 3779960,
    "ic01": 13597920,
    "vww01": 11488480,
    "sww01": 1013000,
}
TFLM_CMSIS_NN = {"ad01": 582880, "kws01": 7697360, "ic01": 29863240, "vww01": 24101880,
                 "sww01": 2227520}


@pytest.mark.shared
@pytest.mark.qemu
@pytest.mark.parametrize("key", sorted(PINNED))
def test_qemu_m4_instruction_count_is_pinned(key):
    require_arm_toolchain()
    model, golden = shared_model(key)
    rep = verify_model(model, golden, board="qemu-m4", numerics="tflite", key="outputs_tflm")
    assert rep["mismatches"] == 0
    ins = rep["instructions_per_inference"]
    assert ins == PINNED[key], (
        f"{key}: {ins} instructions per inference, pinned {PINNED[key]} "
        f"({ins / TFLM_CMSIS_NN[key]:.3f}x TFLM+CMSIS-NN); update PINNED if intended")
