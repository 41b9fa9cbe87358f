"""The Cortex-M4 firmware in QEMU: same bits as the host, same cost for every input."""
import json
import subprocess
import sys

import numpy as np
import pytest

from codegen.targets.boards import board_or_error
from codegen.compiler import compile_model
from codegen.driver.verify import load_golden, run_model, verify_model

from tests.helpers import run_cache
from tests.helpers.env import REPO, SHARED_MODELS, require_arm_toolchain, shared_model
from tests.helpers.exact_counts import EXACT_SHARED, exact_counts, with_adversarial
from tests.helpers.regression_models import tflite_variant

pytestmark = pytest.mark.qemu


@pytest.fixture(autouse=True)
def _toolchain():
    require_arm_toolchain()


def test_default_model_qemu_equals_host_and_count_is_input_independent(default_model, default_golden, tmp_path):
    model, _ = default_model
    inputs = default_golden["inputs"]
    c = compile_model(model, numerics="ort")
    host, _ = run_model(model, inputs, board="host", build_dir=tmp_path / "host", compiled=c)
    fw, info = run_model(model, inputs, board="qemu-m4", build_dir=tmp_path / "m4", compiled=c)
    np.testing.assert_array_equal(fw, host)
    assert info["status"] == [0] * 64
    assert len(set(info["instructions"])) == 1, sorted(set(info["instructions"]))
    assert info["instructions"][0] > 31904  # at least one instruction per MAC


def test_verify_cli_json_on_qemu(default_model):
    model, golden = default_model
    proc = subprocess.run([sys.executable, "-m", "codegen.cli", "verify", str(model), "--golden",
                           str(golden), "--board", "qemu-m4", "--json"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    for key in ("arena_bytes", "flash_bytes", "instructions_per_inference", "vectors", "mismatches"):
        assert key in rep
    assert rep["vectors"] == 64 and rep["vectors_passed"] == 64 and rep["mismatches"] == 0
    assert rep["arena_bytes"] == rep["plan"]["arena_bytes"] > 0
    # the model's constants (weights_bytes: every array the emitter wrote) are in the
    # image as its l<i>_* symbols: the weights proper plus each layer's tables and records
    model_data = sum(p["weights"] + p["tables"] for p in rep["flash"]["per_layer"].values())
    assert rep["flash"]["weights"] > 0
    assert model_data >= rep["weights_bytes"]


def test_scons_default_job_reports_and_fails_on_mismatch(tmp_path, default_model, default_golden):
    proc = subprocess.run(["scons", "-Q", "board=qemu-m4"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "64/64 vectors bit-exact" in proc.stdout
    # A golden file with one flipped output must make the job fail.
    bad = dict(default_golden)
    bad["outputs"] = bad["outputs"].copy()
    bad["outputs"][3, 2] ^= 1
    path = tmp_path / "bad_golden.npz"
    np.savez(path, **bad)
    model, _ = default_model
    proc = subprocess.run(["scons", "-Q", "board=qemu-m4", f"model={model}", f"golden={path}"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode != 0
    assert "63/64 vectors bit-exact" in proc.stdout


@pytest.mark.shared
@pytest.mark.parametrize("numerics,golden_key", [("ort", "outputs_onnxruntime"),
                                                 ("tflite", "outputs_tflm")])
@pytest.mark.parametrize("key", sorted(SHARED_MODELS))
def test_shared_model_qemu(key, numerics, golden_key):
    onnx_path, golden = shared_model(key)
    rep = verify_model(onnx_path, golden, board="qemu-m4", numerics=numerics, key=golden_key)
    assert rep["mismatches"] == 0, rep.get("first_mismatches")
    # Data-independent control flow in both numerics (the fixed-point helpers
    # and kernels are branch-free on data). One timer read per inference: at
    # most one tick apart (see test_own_model_count_is_input_independent);
    # equality to one instruction: test_shared_model_cost_is_exact_to_one_instruction.
    tick = board_or_error("qemu-m4")["instructions_per_tick"]
    assert rep["instructions_per_inference"] - rep["instructions_min"] <= tick, (
        rep["instructions_min"], rep["instructions_per_inference"])


OWN_MODELS = sorted(p.stem for p in (REPO / "models").glob("*_int8.onnx"))


def _own_model(stem, numerics, tmp_path):
    model = REPO / "models" / f"{stem}.onnx"
    if stem == "misc_ops_int8" and numerics == "tflite":  # without what tflite rejects
        model = tflite_variant(model, tmp_path)
    return model


def _own_model_counts(stem, numerics, board, tmp_path):
    """Per-vector counts of one of models/ on a board, its outputs checked
    against the golden (ort) or the host build (tflite: no TFLM golden)."""
    model = _own_model(stem, numerics, tmp_path)
    inputs, expected = load_golden(REPO / "models" / f"{stem}_golden.npz")
    # the same run as end_to_end/test_regression_models.py's qemu-m4 test: once per session
    fw, info = run_cache.run_model_once(model, inputs, board, numerics, tmp_path / board)
    if numerics == "ort":
        np.testing.assert_array_equal(fw.reshape(expected.shape), expected)
    else:
        host, _ = run_model(model, inputs, board="host", numerics=numerics,
                            build_dir=tmp_path / "host")
        np.testing.assert_array_equal(fw, host)
    assert info["status"] == [0] * len(inputs)
    return info["instructions"]


@pytest.mark.parametrize("numerics", ["ort", "tflite"])
@pytest.mark.parametrize("stem", OWN_MODELS)
def test_own_model_count_is_input_independent(stem, numerics, tmp_path):
    # The user's firmware reads the timer once per inference: its tick (40
    # instructions on qemu-m4) is synced by a polling loop whose exit phase can
    # move a count that sits within a few instructions of a tick edge to the
    # next tick. So here: at most one tick apart; exact equality, to one
    # instruction, is test_own_model_cost_is_exact_to_one_instruction's.
    counts = _own_model_counts(stem, numerics, "qemu-m4", tmp_path)
    tick = board_or_error("qemu-m4")["instructions_per_tick"]
    assert len(counts) >= 16 and max(counts) - min(counts) <= tick, sorted(set(counts))


@pytest.mark.parametrize("stem", OWN_MODELS)
def test_own_model_tflite_count_is_input_independent_on_soft_float_m3(stem, tmp_path):
    # qemu-m3 has no FPU: with --numerics ort libgcc's soft-float routines take
    # data-dependent paths (a board property, ~2 %, see tests/firmware/test_qemu_boards.py);
    # the integer-only tflite numerics must still be exact: equal to one
    # instruction (the repeat harness), and the outputs the host build's.
    model = _own_model(stem, "tflite", tmp_path)
    inputs, _ = load_golden(REPO / "models" / f"{stem}_golden.npz")
    exact, outs = exact_counts(model, inputs, "tflite", board="qemu-m3")
    assert len(set(exact)) == 1, sorted(set(exact))
    host, _ = run_model(model, inputs, board="host", numerics="tflite", build_dir=tmp_path)
    np.testing.assert_array_equal(outs, host.reshape(outs.shape))


@pytest.mark.shared
@pytest.mark.parametrize("key", ["kws01", "sww01"])
def test_shared_model_tflite_count_is_input_independent_on_m3(key):
    onnx_path, golden = shared_model(key)
    rep = verify_model(onnx_path, golden, board="qemu-m3", numerics="tflite", key="outputs_tflm")
    assert rep["mismatches"] == 0, rep.get("first_mismatches")
    assert rep["instructions_same_for_all_inputs"], (rep["instructions_min"],
                                                     rep["instructions_per_inference"])


@pytest.mark.parametrize("numerics", ["ort", "tflite"])
@pytest.mark.parametrize("stem", OWN_MODELS)
def test_own_model_cost_is_exact_to_one_instruction(stem, numerics, tmp_path):
    model = _own_model(stem, numerics, tmp_path)
    inputs, expected = load_golden(REPO / "models" / f"{stem}_golden.npz")
    allin = with_adversarial(inputs)
    counts, outs = exact_counts(model, allin, numerics)
    assert len(set(counts)) == 1, sorted(set(counts))
    host, _ = run_model(model, allin, board="host", numerics=numerics, build_dir=tmp_path)
    np.testing.assert_array_equal(outs, host.reshape(outs.shape))
    if numerics == "ort":
        np.testing.assert_array_equal(outs[:len(inputs)].reshape(expected.shape), expected)


@pytest.mark.shared
@pytest.mark.parametrize("numerics,golden_key", [("tflite", "outputs_tflm"),
                                                 ("ort", "outputs_onnxruntime")])
@pytest.mark.parametrize("key", EXACT_SHARED)
def test_shared_model_cost_is_exact_to_one_instruction(key, numerics, golden_key, tmp_path):
    onnx_path, golden = shared_model(key)
    inputs, expected = load_golden(golden, golden_key)
    allin = with_adversarial(inputs)
    counts, outs = exact_counts(onnx_path, allin, numerics)
    np.testing.assert_array_equal(outs[:len(inputs)].reshape(expected.shape), expected)
    host, _ = run_model(onnx_path, allin, board="host", numerics=numerics, build_dir=tmp_path)
    np.testing.assert_array_equal(outs, host.reshape(outs.shape))
    assert len(set(counts)) == 1, sorted(set(counts))
