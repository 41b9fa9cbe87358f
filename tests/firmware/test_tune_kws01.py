"""`tinyaot tune` on kws01 (MLPerf Tiny keyword spotting) under a flash limit of 0.8x the
TFLite Micro + CMSIS-NN image (../shared/anchors), through `bench --tuned`'s rows: the
tuned build fits, is bit-exact against onnxruntime's golden, and is no slower in modelled
cycles than the faster of the fixed builds (--optimize speed, size) that fit the limit."""
from __future__ import annotations

import json

import pytest

from tests.helpers.env import _missing, require_arm_toolchain, shared_model

pytestmark = [pytest.mark.qemu, pytest.mark.slow, pytest.mark.shared]


def test_kws01_tuned_under_0_8_tflm(tmp_path):
    require_arm_toolchain()
    model, golden = shared_model("kws01")
    from codegen.cycles.compare import image_sizes, tflm_elf
    from codegen.driver.bench import KEYS, tuned_rows
    from codegen.targets.boards import board_or_error
    elf = tflm_elf("kws01")
    if elf is None:
        _missing("../shared/anchors/tflm_cmsisnn_m4/kws01.elf")
    b = board_or_error("qemu-m4")
    # sized as bench sizes it: the image's flash less the anchor's embedded inputs
    limit = int(0.8 * image_sizes(elf, b, ("g_inputs",))["flash"])
    rows = tuned_rows("kws01", "ort", model, golden, KEYS["ort"], "qemu-m4", {},
                      tmp_path / "records", log=lambda s: None)
    assert [r["flash_limit"] for r in rows] == [None, limit]
    free, limited = rows
    assert free["tuning_trials"] == 2 and limited["tuning_trials"] == 0  # measured once
    for r in rows:  # each benched build: every golden vector bit-exact
        assert r["mismatches"] == 0 and r["vectors"] > 0
    # since the fast kernels compile only the model's specializations (issue 20) kws01's
    # speed build fits this limit by itself; the tuned build must then be as fast as it
    assert limited["flash_bytes"] <= limit
    rec = json.loads((tmp_path / "records" / f"kws01-ort-{limit}.json").read_text())
    t = rec["tuned"]
    assert t["limits"]["flash"] == limit and t["measured"]["bit_exact"]
    assert t["measured"]["flash"] == limited["flash_bytes"]
    fits = [f["cycles"] for f in t["fixed"].values() if f["flash"] <= limit]
    assert fits, "the size build fits 0.8x TFLM's image"
    assert t["measured"]["cycles"] <= min(fits)
    # with no limit the tuned build is the speed build's speed
    assert free["cycle_model"]["cycles"]["ideal"] <= limited["cycle_model"]["cycles"]["ideal"]
