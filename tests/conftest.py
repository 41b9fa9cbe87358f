"""Shared fixtures: the repo's models, ../shared/models, toolchains.

When CI is set, a test that needs the shared models or the Arm toolchain
fails instead of skipping: CI must never pass by running nothing.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared" / "models").resolve()
DEFAULT_MODEL = REPO / "models" / "digits_cnn_int8.onnx"
DEFAULT_GOLDEN = REPO / "models" / "digits_cnn_int8_golden.npz"

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


@pytest.fixture(scope="session")
def default_model():
    return DEFAULT_MODEL, DEFAULT_GOLDEN


@pytest.fixture(scope="session")
def default_golden():
    g = np.load(DEFAULT_GOLDEN)
    return {k: g[k] for k in g.files}


@pytest.fixture(scope="session")
def asan_runtime_objs(tmp_path_factory):
    """The runtime kernels compiled once with ASan/UBSan, for every sanitizer test."""
    from test_sanitizers import asan_runtime_objects
    return asan_runtime_objects(tmp_path_factory.mktemp("asan_rt"))


@pytest.fixture(scope="session", autouse=True)
def _run_cache_dir(tmp_path_factory):
    """tests/run_cache.py: one folder per session, shared by the xdist workers."""
    import run_cache
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # <basetemp>/popen-gwN: the parent is the session's
    run_cache.set_dir(base / "run_cache")


def pytest_configure(config):
    # pytest-xdist: each worker builds in its own tree (host kernel objects and
    # SCons database are otherwise shared by concurrent SCons runs).
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and not os.environ.get("TINYAOT_BUILD_DIR"):
        os.environ["TINYAOT_BUILD_DIR"] = str(REPO / "build" / f"pytest-{worker}")


_FUZZ_FROM_WORKERS = {"stats": {}, "findings": []}


def _fuzz_results():
    import sys
    fuzz = sys.modules.get("test_fuzz_frontend")
    if fuzz is None:
        return {}, []
    return dict(fuzz.STATS), list(fuzz.FINDINGS)


def pytest_sessionfinish(session):
    """An xdist worker hands its fuzz statistics to the controller."""
    if hasattr(session.config, "workeroutput"):
        stats, findings = _fuzz_results()
        session.config.workeroutput["tinyaot_fuzz"] = {"stats": stats, "findings": findings}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    got = getattr(node, "workeroutput", {}).get("tinyaot_fuzz")
    if got:
        for k, v in got["stats"].items():
            _FUZZ_FROM_WORKERS["stats"][k] = _FUZZ_FROM_WORKERS["stats"].get(k, 0) + v
        _FUZZ_FROM_WORKERS["findings"] += [tuple(f) for f in got["findings"]]


def pytest_terminal_summary(terminalreporter):
    """test_fuzz_frontend.py: how many hostile models were tried, and what they gave
    (in this process, or summed over the xdist workers)."""
    import collections
    stats, findings = _fuzz_results()
    s = collections.Counter(stats)
    s.update(_FUZZ_FROM_WORKERS["stats"])
    findings += _FUZZ_FROM_WORKERS["findings"]
    if not s.get("cases"):
        return
    terminalreporter.write_sep("-", "tinyaot fuzz summary")
    terminalreporter.write_line(
        f"fuzz: {s['cases']} cases: {s['ok']} compiled, {s['error']} clean TinyAotError, "
        f"{s['bug']} other exceptions, {s['timeout']} time-outs, {s['memory']} memory-guard hits")
    for kind, mutation, msg in findings:
        terminalreporter.write_line(f"  {kind}: {mutation}: {msg}")
