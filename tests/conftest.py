"""Fixtures and hooks of the whole suite; the helpers themselves are in tests/helpers/.

pytest-xdist: each worker builds in its own tree; the fuzz statistics of the
workers are summed into one line of the terminal summary.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

# assertions inside the helpers get pytest's detailed messages too
pytest.register_assert_rewrite("tests.helpers")

from tests.helpers import fuzz_stats, run_cache  # noqa: E402
from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, REPO  # noqa: E402


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
    from tests.helpers.sanitizers import asan_runtime_objects
    return asan_runtime_objects(tmp_path_factory.mktemp("asan_rt"))


@pytest.fixture(scope="session", autouse=True)
def _run_cache_dir(tmp_path_factory):
    """tests/helpers/run_cache.py: one folder per session, shared by the xdist workers."""
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
    return dict(fuzz_stats.STATS), list(fuzz_stats.FINDINGS)


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
    """frontend/test_fuzz_hostile_models.py: how many hostile models were tried, and what they gave
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
