"""Float and several ends in firmware on qemu-m4: the shared float-ended models against their
goldens, a model with several inputs and outputs (both --io-buffers), and an output over the
old 4 KB harness cap. Oracles: the goldens (TFLite Micro, onnxruntime) and onnxruntime.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from codegen.driver.verify import verify_model
from tests.helpers import ends_builders as E
from tests.helpers import ends_oracle as H
from tests.helpers.env import require_arm_toolchain

F32 = np.float32


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    p = tmp_path_factory.mktemp("several") / "several_ends.onnx"
    onnx.save(E.several_ends(), str(p))
    return p


@pytest.mark.shared
@pytest.mark.qemu
@pytest.mark.parametrize("key", sorted(H.FLOAT_MODELS))
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_shared_float_models_verify_on_qemu_m4(key, numerics):
    require_arm_toolchain()
    model, golden = H.shared_float_model(key)
    gkey = H.ORT_KEY[key] if numerics == "ort" else "outputs_tflm"
    r = H.verify_cli(model, golden, "qemu-m4", numerics, gkey)
    assert r["mismatches"] == 0 and r["vectors_passed"] == 8, r
    assert r["instructions_same_for_all_inputs"] is not None


@pytest.mark.qemu
def test_several_ends_on_qemu_m4(model, tmp_path):
    require_arm_toolchain()
    xs, zs = H.several_inputs()
    want = H.onnxruntime_outputs(model, xs, zs)
    g = H.write_golden(tmp_path / "g.npz", xs, zs, want, [0, 1, 2, 3])
    for io_buffers in ("arena", "user"):
        r = verify_model(model, g, board="qemu-m4", key="outputs_onnxruntime",
                         io_buffers=io_buffers, build_dir=tmp_path / io_buffers)
        assert r["mismatches"] == 0 and r["vectors_passed"] == 4, r
        assert r["status"] == [0] * 4

@pytest.mark.qemu
def test_outputs_over_4k_verify_on_qemu_m4(tmp_path):
    """No output-size cap on the firmware harness: 1500 int8 + 1500 float32 outputs
    (7500 bytes per input, the old harness stopped at 4096)."""
    require_arm_toolchain()
    n, s, zp = 1500, F32(0.05), -3
    p = tmp_path / "qdq.onnx"
    onnx.save(E.quantize_dequantize(n, s, zp), str(p))
    xs = np.random.default_rng(2).normal(0, 3, (2, 1, n)).astype(F32)
    want = H.ort_runs(p, [{"x": x} for x in xs])
    g = tmp_path / "g.npz"
    np.savez(g, inputs=xs.reshape(2, -1), outputs=np.stack([w[0] for w in want]),
             outputs1=np.stack([w[1] for w in want]))
    r = verify_model(p, g, board="qemu-m4", key="outputs", build_dir=tmp_path / "fw")
    assert r["mismatches"] == 0 and r["elements"] == 2 * 2 * n, r
