"""`tinyaot tune` on kws01 (MLPerf Tiny keyword spotting) under a flash limit of 0.8x the
TFLite Micro + CMSIS-NN image (../shared/anchors): the tuned build fits, is bit-exact
against onnxruntime's golden, and is no slower in modelled cycles than the faster of the
fixed builds (--optimize speed, size) that fit the same limit."""
from __future__ import annotations

import pytest

from tests.helpers.env import _missing, require_arm_toolchain, shared_model

pytestmark = [pytest.mark.qemu, pytest.mark.slow, pytest.mark.shared]


def test_kws01_tuned_under_0_8_tflm(tmp_path):
    require_arm_toolchain()
    model, golden = shared_model("kws01")
    from codegen.cycles.compare import image_sizes, tflm_elf
    from codegen.driver.verify import verify_model
    from codegen.targets.boards import board_or_error
    from codegen.tuning.tune import tune_model
    elf = tflm_elf("kws01")
    if elf is None:
        _missing("../shared/anchors/tflm_cmsisnn_m4/kws01.elf")
    b = board_or_error("qemu-m4")
    # sized as bench sizes it: the image's flash less the anchor's embedded inputs
    limit = int(0.8 * image_sizes(elf, b, ("g_inputs",))["flash"])
    out = tmp_path / "kws01.tuning.json"
    r = tune_model(str(model), board="qemu-m4", flash_limit=limit, out=str(out))
    t = r["record"]["tuned"]
    m, fixed = t["measured"], t["fixed"]
    assert m["flash"] <= limit and m["bit_exact"]
    fits = {k: f for k, f in fixed.items() if f["flash"] <= limit}
    assert fits, "the size build fits 0.8x TFLM's image"
    assert m["cycles"] <= min(f["cycles"] for f in fits.values())
    # the tuned build again, through verify --tuning: bit-exact, under the limit
    v = verify_model(model, golden, board="qemu-m4", tuning=str(out), flash_limit=limit)
    assert v["mismatches"] == 0 and v["flash"]["total"] <= limit
