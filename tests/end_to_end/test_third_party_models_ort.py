"""The third-party models of ../shared/models (MORE_MODELS.md) under `--numerics ort`, ONNX
form, against onnxruntime's default session (`outputs_onnxruntime`, every output of the
model), on the host and, for the small ones, on qemu-m4.

The models whose golden onnxruntime outputs saturate (x86 without VNNI) are verified in
tests/driver/test_verify_reference_saturation.py; the `tflite` numerics of every .tflite
and its ONNX form in tests/frontend/test_tflite_frontend.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.env import SHARED, _missing, require_arm_toolchain

from codegen.driver.verify import verify_model

EXACT_UNDER_ORT = {  # the golden's outputs_onnxruntime are exact integer results
    "mnist_dw": "digit_classification_mnist_dw/mnist_dw_q",
    "fingerprint": "fingerprint_embedding_signature_generator/fingerprint_signature_generator",
    "gesture": "gesture_classification_rock_paper_scissors/rock_paper_scissors",
    "on_off_v3": "keyword_spotting_on_off_v3/keyword_spotting_on_off_v3",
}
ON_QEMU = ["mnist_dw", "fingerprint", "gesture"]


def _model(key):
    stem = SHARED / EXACT_UNDER_ORT[key]
    model, golden = Path(f"{stem}.onnx"), Path(f"{stem}_golden.npz")
    if not model.exists() or not golden.exists():
        _missing(f"shared model {model}")
    return model, golden


def _check(r):
    assert r["vectors"] == 8 and r["vectors_passed"] == 8, r["outputs_compared"]
    assert r["mismatches"] == 0 and r["golden_mismatches"] == 0
    assert r["reference_saturates"] is None  # exact against onnxruntime itself, no note
    assert all(o["key"].startswith("outputs_onnxruntime") for o in r["outputs_compared"])


@pytest.mark.parametrize("key", sorted(EXACT_UNDER_ORT))
def test_ort_numerics_equal_onnxruntime_on_host(key):
    model, golden = _model(key)
    _check(verify_model(model, golden, board="host", numerics="ort", key="outputs_onnxruntime"))


@pytest.mark.parametrize("key", ON_QEMU)
def test_ort_numerics_equal_onnxruntime_on_qemu_m4(key):
    require_arm_toolchain()
    model, golden = _model(key)
    r = verify_model(model, golden, board="qemu-m4", numerics="ort", key="outputs_onnxruntime")
    _check(r)
    # the same cost for every input, to the timer's resolution: a run's count is whole ticks,
    # so a constant count can read one tick apart when the runs start at another phase of
    # the tick (the exact counts: firmware/test_instruction_counts.py, `tinyaot profile`)
    from codegen.targets.boards import board_or_error
    tick = board_or_error("qemu-m4")["instructions_per_tick"]
    assert r["instructions_per_inference"] - r["instructions_min"] <= tick
