"""What the tests need from the machine: the repository, its default model, the shared
models in ../shared/models, the Arm toolchain.

When CI is set, a test that needs the shared models or the Arm toolchain
fails instead of skipping: CI must never pass by running nothing.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = (REPO / ".." / "shared" / "models").resolve()
DEFAULT_MODEL = REPO / "models" / "digits_cnn_int8.onnx"
DEFAULT_GOLDEN = REPO / "models" / "digits_cnn_int8_golden.npz"
C_DIR = REPO / "tests" / "helpers" / "c"  # the C shims and harness mains of the tests

SHARED_MODELS = {
    "ad01": "anomaly_detection_ad01/ad01_int8",
    "kws01": "keyword_spotting_kws01/kws_ref_model",
    "ic01": "image_classification_ic01/pretrainedResnet_quant",
    "vww01": "visual_wake_words_vww01/vww_96_int8",
    "sww01": "streaming_wakeword_sww01/str_ww_ref_model",
}


def _missing(what):
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing (CI is set: this must not be skipped)")
    pytest.skip(f"{what} is missing")


def shared_model(key):
    stem = SHARED / SHARED_MODELS[key]
    onnx_path = Path(str(stem) + ".onnx")
    golden = Path(str(stem) + "_golden.npz")
    if not onnx_path.exists() or not golden.exists():
        _missing(f"shared model {onnx_path}")
    return onnx_path, golden


def require_arm_toolchain():
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if shutil.which(tool) is None:
            _missing(tool)


def build_every_kernel(cpu_flags, out_dir):
    """Compile every runtime_c kernel with arm-none-eabi-gcc, -Wall -Wextra -Werror and
    `cpu_flags` (CPU, float ABI, optimization level): {file name: the compiler's last
    words} for those that fail; the objects land in out_dir."""
    import subprocess

    from codegen.paths import RUNTIME_INCLUDE, RUNTIME_SRC

    srcs = sorted(RUNTIME_SRC.rglob("*.c"))
    assert len(srcs) > 30
    bad = {}
    for src in srcs:
        proc = subprocess.run(["arm-none-eabi-gcc", "-mthumb", *cpu_flags, "-std=c99",
                               "-ffp-contract=off", "-Wall", "-Wextra", "-Werror",
                               f"-I{RUNTIME_INCLUDE}", "-c", str(src), "-o",
                               str(Path(out_dir) / (src.stem + ".o"))],
                              capture_output=True, text=True)
        if proc.returncode:
            bad[src.name] = proc.stderr[-500:]
    return bad
