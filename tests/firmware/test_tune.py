"""`tinyaot tune` on qemu-m4: the tuned build fits its flash limit and is bit-exact, the
record is reused without measuring again, and the Ray path gives the same record as the
local process pool (trials measured afresh: the record is deterministic)."""
from __future__ import annotations

import json

import pytest

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, REPO, _missing, require_arm_toolchain

pytestmark = [pytest.mark.qemu, pytest.mark.slow, pytest.mark.xdist_group("tune")]

# between the size build (~15 KB) and the speed build (~100 KB) of the digits model
LIMIT = 30_000  # between the size build (~15 KB) and the speed build (~42 KB) of digits


@pytest.fixture(scope="module")
def pool_record(tmp_path_factory):
    require_arm_toolchain()
    from codegen.tuning.tune import tune_model
    out = tmp_path_factory.mktemp("tune") / "digits.tuning.json"
    r = tune_model(str(DEFAULT_MODEL), board="qemu-m4", flash_limit=LIMIT, out=str(out), jobs=2)
    assert r["trials"] == 2 and not r["reused"]  # the speed and the size build
    return out


def test_tuned_build_fits_and_is_bit_exact(pool_record):
    from codegen.driver.verify import verify_model
    rec = json.loads(pool_record.read_text())
    t = rec["tuned"]
    assert t["measured"]["flash"] <= LIMIT and t["measured"]["bit_exact"]
    assert t["fixed"]["speed"]["flash"] > LIMIT  # the limit makes a choice necessary
    # verify's own build from the record: bit-exact against onnxruntime's golden, and its
    # linked image (driver/linkmap.py) under the limit
    r = verify_model(DEFAULT_MODEL, DEFAULT_GOLDEN, board="qemu-m4", tuning=str(pool_record),
                     flash_limit=LIMIT)
    assert r["mismatches"] == 0 and r["vectors"] > 0
    assert r["flash"]["total"] <= LIMIT
    # no slower than the fixed builds that fit
    fits = [f["cycles"] for f in t["fixed"].values() if f["flash"] <= LIMIT]
    assert t["measured"]["cycles"] <= min(fits)
    # every layer with a choice is recorded with its candidates' figures and a reason
    chosen = [x for x in t["layers"] if len(x["candidates"]) > 1]
    assert chosen and all(x["why"] for x in chosen)
    for x in chosen:
        cands = rec["measurements"][x["signature"]]["candidates"]
        assert set(x["candidates"]) <= set(cands)
        assert all(c["cycles"] > 0 and c["bit_exact"] for c in cands.values())


def test_second_run_reuses_the_record(pool_record, monkeypatch):
    from codegen.tuning import trials, tune
    before = pool_record.read_bytes()

    def no_trials(*a, **k):
        raise AssertionError("measured again")
    monkeypatch.setattr(tune, "run_trials", no_trials)
    monkeypatch.setattr(trials, "run_trial", no_trials)
    r = tune.tune_model(str(DEFAULT_MODEL), board="qemu-m4", flash_limit=LIMIT,
                        out=str(pool_record))
    assert r["trials"] == 0 and r["reused"]
    assert pool_record.read_bytes() == before


def test_report_shows_each_tuned_layers_variant(pool_record, capsys):
    from codegen.cli import main
    assert main(["report", str(DEFAULT_MODEL), "--board", "qemu-m4", "--tuning",
                 str(pool_record), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    rec = json.loads(pool_record.read_text())
    want = {x["node"]: x["choice"] for x in rec["tuned"]["layers"]}
    assert {x["name"]: x["variant"] for x in r["layers"]} == want
    assert r["totals"]["flash"]["total"] <= LIMIT


def test_ray_path_gives_the_same_record(pool_record, tmp_path):
    try:
        import ray  # the extra tinyaot[cluster]: bootstrap.sh installs it, CI must run this
    except ImportError:
        _missing("ray (pip install 'tinyaot[cluster]')")
    from codegen.tuning.tune import tune_model
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        out = tmp_path / "ray.tuning.json"
        r = tune_model(str(DEFAULT_MODEL), board="qemu-m4", flash_limit=LIMIT, out=str(out),
                       cluster="auto")
    finally:
        ray.shutdown()
    assert r["trials"] == 2
    assert out.read_bytes() == pool_record.read_bytes()


def test_another_model_with_the_same_layers_reuses_the_measurements(pool_record, tmp_path):
    import shutil

    import onnx

    from codegen.tuning.tune import tune_model
    m = onnx.load(str(DEFAULT_MODEL))
    m.doc_string = "the same layers in another file"
    other = tmp_path / "other.onnx"
    onnx.save(m, str(other))
    shutil.copy(DEFAULT_GOLDEN, tmp_path / "other_golden.npz")
    out = tmp_path / "rec.json"
    shutil.copy(pool_record, out)
    first = json.loads(pool_record.read_text())
    r = tune_model(str(other), board="qemu-m4", flash_limit=LIMIT, out=str(out))
    assert r["trials"] == 1  # the image's other bytes: one build, no layer measured again
    rec = r["record"]
    assert rec["measurements"] == first["measurements"] and len(rec["models"]) == 2
    assert [x["choice"] for x in rec["tuned"]["layers"]] == \
        [x["choice"] for x in first["tuned"]["layers"]]
    assert rec["tuned"]["measured"]["flash"] <= LIMIT and rec["tuned"]["measured"]["bit_exact"]
