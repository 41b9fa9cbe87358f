"""One model, many boards: `scons board=all` and codegen/driver/fleet.py.

* the default model through `scons board=all -j2`: one table row per board,
  every board PASS with all golden vectors, exit status 0;
* a wrong golden makes the fleet exit non-zero and name the failing boards;
* "does not fit" (a model too big for a board) is reported, not a failure;
* (shared) every MLPerf Tiny model on every board, tflite on qemu-m3,
  qemu-m55, qemu-m0 and nrf51822, ort elsewhere, all golden vectors.
"""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from codegen.driver import fleet
from codegen.compiler import compile_model
from codegen.paths import REPO_ROOT
from codegen.targets.qemu import load_board

from tests.helpers.env import (DEFAULT_GOLDEN, DEFAULT_MODEL, SHARED_MODELS, require_arm_toolchain,
                               shared_model)


def _scons(*args):
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=str(REPO_ROOT),
                          capture_output=True, text=True, timeout=600)


def _table(stdout):
    """Parse the fleet table: {board: {column: value}}."""
    lines = stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("board ") and "result" in ln)
    head = re.split(r"\s{2,}", lines[start].strip())
    rows = {}
    for ln in lines[start + 2:]:
        if re.match(r"^\d+/\d+ ok", ln):
            break
        cells = re.split(r"\s{2,}", ln.strip(), maxsplit=len(head) - 1)
        rows[cells[0]] = dict(zip(head, cells))
    return rows, ln


def _n(cell):
    return None if cell == "-" else int(cell.replace(",", ""))


@pytest.mark.qemu
def test_scons_fleet_default_model():
    require_arm_toolchain()
    proc = _scons("board=all", "-j2")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows, summary = _table(proc.stdout)
    boards = fleet.all_boards()
    assert {"host", "qemu-m3", "qemu-m4", "qemu-m7", "qemu-m33", "qemu-m55"} <= set(boards)
    assert sorted(rows) == boards
    assert summary == f"{len(boards)}/{len(boards)} ok"
    arena = compile_model(DEFAULT_MODEL, numerics="ort").report["arena_bytes"]
    vectors = len(np.load(DEFAULT_GOLDEN)["inputs"])
    for b, r in rows.items():
        assert r["result"] == "PASS" and r["vectors"] == f"{vectors}/{vectors}", r
        assert r["model"] == "digits_cnn_int8" and r["numerics"] == "ort"
        assert _n(r["arena B"]) == arena
        if load_board(b)["kind"] == "shared-library":
            assert r["flash B"] == "-" and r["instr/inference"] == "-"
        else:
            assert 0 < _n(r["flash B"]) < load_board(b)["flash_size"]
            assert _n(r["instr/inference"]) > 100_000


@pytest.mark.qemu
def test_scons_fleet_fails_on_a_wrong_golden(tmp_path):
    require_arm_toolchain()
    g = dict(np.load(DEFAULT_GOLDEN))
    g["outputs"] = g["outputs"].copy()
    g["outputs"][3, 0] += 1                      # one element of vector 3
    bad = tmp_path / "bad_golden.npz"
    np.savez(bad, **g)
    proc = _scons("board=host,qemu-m3", "-j2", f"model={DEFAULT_MODEL}", f"golden={bad}")
    assert proc.returncode != 0
    rows, summary = _table(proc.stdout)
    assert sorted(rows) == ["host", "qemu-m3"]
    for r in rows.values():
        assert r["result"].startswith("FAIL") and r["vectors"] == "63/64", r
    assert "FAILED" in summary and "qemu-m3" in summary and "host" in summary


def test_scons_fleet_user_errors():
    proc = _scons("board=qemu-m4,nosuch")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        proc.stderr.strip()] and "unknown board 'nosuch'" in proc.stderr
    proc = _scons("board=all", "key=nosuchkey")
    assert proc.returncode == 2 and "no 'nosuchkey' array" in proc.stderr
    assert "board " not in proc.stdout                # no table, nothing run


def test_does_not_fit_is_not_a_failure():
    c = compile_model(DEFAULT_MODEL, numerics="ort")
    small = dict(load_board("qemu-m55"))
    ok, _, per_run = fleet.fit(c, small)
    assert ok and per_run >= 64
    tiny = dict(small, flash_size=c.report["weights_bytes"] + 1024)
    ok, reason, _ = fleet.fit(c, tiny)
    assert not ok and "flash" in reason
    tiny = dict(small, ram_size=small["stack_size"] + 1024)
    ok, reason, _ = fleet.fit(c, tiny)
    assert not ok and "RAM" in reason
    # Room for the model but not for all golden inputs: several runs, not "does not fit".
    x = c.graph.tensors[c.graph.inputs[0]].size
    snug = dict(small, flash_size=c.report["weights_bytes"] + fleet.CODE_RESERVE + 3 * x)
    assert fleet.fit(c, snug) == (True, "", 3)
    rows = [dict(board="a", model="m", numerics="ort", result=fleet.PASS, arena=1, flash=2,
                 instructions=3, vectors=1, passed=1, detail=""),
            dict(board="b", model="m", numerics="ort", result=fleet.NOFIT, arena=1, flash=None,
                 instructions=None, vectors=1, passed=0, detail="weights > flash")]
    assert fleet.failed(rows) == []
    assert fleet.format_table(rows).splitlines()[-1] == "2/2 ok (1 do not fit)"
    rows.append(dict(rows[0], board="c", result=fleet.FAIL, passed=0))
    assert fleet.failed(rows) == [rows[2]]


@pytest.mark.qemu
def test_chunked_runs_match_one_run():
    """A board too small for all golden inputs at once runs them in several firmwares."""
    require_arm_toolchain()
    c = compile_model(DEFAULT_MODEL, numerics="ort")
    board = load_board("qemu-m4")
    x = c.graph.tensors[c.graph.inputs[0]].size
    saved = fleet.CODE_RESERVE
    fleet.CODE_RESERVE = board["flash_size"] - c.report["weights_bytes"] - 10 * x
    try:
        assert fleet.fit(c, board) == (True, "", 10)
        r = fleet.verify_on_board(DEFAULT_MODEL, DEFAULT_GOLDEN, "qemu-m4", max_vectors=24)
    finally:
        fleet.CODE_RESERVE = saved
    assert r["result"] == fleet.PASS and r["passed"] == r["vectors"] == 24, r
    assert r["runs"] == 3


@pytest.mark.qemu
@pytest.mark.shared
def test_shared_models_on_every_board():
    require_arm_toolchain()
    jobs = []
    for key in SHARED_MODELS:
        onnx_path, golden = shared_model(key)
        for b in fleet.all_boards():
            # no FPU (qemu-m3, the Armv6-M boards) or slow soft float: integer numerics
            numerics = "tflite" if b in ("qemu-m3", "qemu-m55", "qemu-m0", "nrf51822") else "ort"
            gkey = "outputs_tflm" if numerics == "tflite" else "outputs_onnxruntime"
            jobs.append((onnx_path, golden, b, numerics, gkey))
    rows = fleet.run_fleet(jobs, workers=2)
    table = fleet.format_table(rows)
    print(table)
    assert not fleet.failed(rows), table
    for (onnx_path, _, b, numerics, _), r in zip(jobs, rows):
        board = load_board(b)
        if r["result"] == fleet.NOFIT:
            ok, _, _ = fleet.fit(compile_model(onnx_path, numerics=numerics), board)
            assert not ok or "overflowed" in r["detail"], r
            assert board["kind"] != "shared-library" and board["flash_size"] < 4 * 1024 * 1024, r
        else:
            assert r["result"] == fleet.PASS and r["passed"] == r["vectors"] == 8, r
            if board["kind"] != "shared-library":
                assert r["instructions"] > 0 and 0 < r["flash"] < board["flash_size"]


def test_parallel_firmware_builds_keep_their_own_scons_database(tmp_path):
    """Fleet boards build at once (`scons board=all -j2`). Each firmware's
    SCons database lives in its own build directory: with one shared database
    two builds raced on its temporary file ('.sconsign.tmp' -> '.sconsign.dblite'
    not found, one board ERROR)."""
    require_arm_toolchain()
    from concurrent.futures import ThreadPoolExecutor

    from codegen.driver.verify import load_golden, run_model

    x, expected = load_golden(DEFAULT_GOLDEN, "outputs_onnxruntime")
    c = compile_model(DEFAULT_MODEL, numerics="ort")
    boards = ["qemu-m4", "qemu-m33"]

    def build_and_run(board):
        return run_model(DEFAULT_MODEL, x[:2], board=board, numerics="ort", compiled=c,
                         build_dir=tmp_path / board)

    with ThreadPoolExecutor(len(boards)) as ex:
        results = list(ex.map(build_and_run, boards))
    for board, (out, _) in zip(boards, results):
        assert (out.reshape(2, -1) == expected[:2].reshape(2, -1)).all(), board
        assert (tmp_path / board / f".sconsign-{board}.dblite").is_file(), board


def test_fleet_row_of_a_model_with_several_ends(tmp_path):
    """Two inputs, four outputs: each board's row compares every output with its golden
    array (made by onnxruntime, `tinyaot golden`); a changed value in the third output
    alone fails the row."""
    require_arm_toolchain()
    from tests.helpers.golden_files import one_value_changed, several_ends_golden
    model, golden = several_ends_golden(tmp_path)
    r = fleet.verify_on_board(model, golden, "qemu-m4", key="outputs_onnxruntime")
    assert r["result"] == fleet.PASS and r["passed"] == r["vectors"] == 3, r
    bad = one_value_changed(golden, "outputs_onnxruntime2", 1, tmp_path / "bad.npz")
    r = fleet.verify_on_board(model, bad, "qemu-m4", key="outputs_onnxruntime")
    assert r["result"] == fleet.FAIL and r["passed"] == 2, r
