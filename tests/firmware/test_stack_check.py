"""Every firmware build bounds its worst-case stack and checks it against the
board (codegen/driver/stack.py, called by codegen/driver/firmware.py:build_generated):
the normal boards pass, a board whose stack reservation or RAM is too small
fails with a one-line "does not fit" error before anything runs."""
from __future__ import annotations

import re

import pytest

from codegen.compiler import compile_model
from codegen.driver import firmware as tbuild
from codegen.driver import verify as tverify
from codegen.driver.report import measure_stack
from codegen.errors import TinyAotError
from codegen.driver.stack import check_stack
from codegen.driver.verify import load_golden, run_model

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, require_arm_toolchain

pytestmark = pytest.mark.qemu


@pytest.fixture(autouse=True)
def _toolchain():
    require_arm_toolchain()


def _bytes(text):
    n, unit = text.split()
    return int(n) * (1024 if unit == "KiB" else 1)


SIZE = r"(\d+ (?:B|KiB))"
_REAL_BOARD = tbuild.board_or_error


def _fake_board(monkeypatch, **overrides):
    """qemu-m4 with some board.toml values replaced, for every lookup."""
    def fake(name):
        b = dict(_REAL_BOARD(name))
        if name == "qemu-m4":
            b.update(overrides)
        return b

    monkeypatch.setattr(tbuild, "board_or_error", fake)
    monkeypatch.setattr(tverify, "board_or_error", fake)


@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m3"])
def test_normal_boards_pass_and_bound_matches_the_painted_stack(board, tmp_path):
    x, _ = load_golden(DEFAULT_GOLDEN)
    c = compile_model(DEFAULT_MODEL, numerics="tflite")
    _, info = run_model(DEFAULT_MODEL, x[:2], board=board, compiled=c, build_dir=tmp_path)
    st = info["stack"]
    b = tbuild.board_or_error(board)
    # arena I/O (the default): the firmware times <name>_invoke, the inference alone
    assert st["path"][:2] == ["Reset_Handler", "main"] and f"{c.module.name}_invoke" in st["path"]
    assert 0 < st["model_run_bytes"] < st["worst_case_bytes"] <= st["reserved_bytes"]
    assert st["reserved_bytes"] == b["stack_size"]
    assert st["arena_bytes"] == c.plan.size
    assert st["ram_needed_bytes"] == c.plan.size + st["worst_case_bytes"] + st["static_other_bytes"]
    assert st["ram_needed_bytes"] <= b["ram_size"] == st["ram_limit_bytes"]
    assert not st["notes"], st["notes"]
    # Independent check: the stack the model really uses in QEMU (painted).
    if board == "qemu-m4":
        m = measure_stack(c, b)
        assert not m["overflowed_paint"]
        assert m["measured_bytes"] <= st["model_run_bytes"], (m, st)


def test_stack_reservation_smaller_than_worst_case_fails(monkeypatch, tmp_path):
    _fake_board(monkeypatch, stack_size=64)
    x, _ = load_golden(DEFAULT_GOLDEN)
    with pytest.raises(TinyAotError) as e:
        run_model(DEFAULT_MODEL, x[:1], board="qemu-m4", numerics="tflite", build_dir=tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    assert re.search(rf"stack does not fit: worst case {SIZE} \(Reset_Handler -> main -> .*_run.*\) "
                     r"but qemu-m4 reserves 64 B \(stack_size in boards/qemu-m4/board.toml, \d+ B short\)",
                     msg), msg


def test_ram_smaller_than_arena_plus_stack_plus_static_fails(monkeypatch, tmp_path):
    c = compile_model(DEFAULT_MODEL, numerics="tflite")
    # Passes the compile-time budget (arena + reserved stack) but not the
    # link-time one: the harness output buffer and board state also need RAM.
    # (The reservation is just above this model's worst case, 528 B since the fast kernels
    # compile only the model's specializations: the harness's static data, the output
    # record at the model's size, is small.)
    ram = c.plan.size + 544 + 16
    _fake_board(monkeypatch, stack_size=544, ram_size=ram)
    x, _ = load_golden(DEFAULT_GOLDEN)
    with pytest.raises(TinyAotError) as e:
        run_model(DEFAULT_MODEL, x[:1], board="qemu-m4", compiled=c, build_dir=tmp_path)
    msg = str(e.value)
    assert "\n" not in msg
    m = re.search(rf"does not fit: needs {SIZE} RAM \(arena {SIZE} \+ stack {SIZE} worst case \+ "
                  rf"other static data {SIZE}\), qemu-m4 has {SIZE} \((\d+) B over\)", msg)
    assert m, msg
    need, arena, stack, other, have = map(_bytes, m.groups()[:5])
    over = int(m.group(6))
    assert arena == c.plan.size and need == arena + stack + other and have == ram
    assert over == need - ram > 0 and 0 < stack <= 544
    # The same build fits a board with the real RAM.
    _fake_board(monkeypatch, stack_size=2048)
    out, info = run_model(DEFAULT_MODEL, x[:1], board="qemu-m4", compiled=c, build_dir=tmp_path)
    assert info["stack"]["worst_case_bytes"] == stack and info["status"] == [0]


def test_ram_limit_option_is_the_limit(tmp_path):
    # Built once for real, then checked against a --ram-limit (same numbers).
    x, _ = load_golden(DEFAULT_GOLDEN)
    c = compile_model(DEFAULT_MODEL, numerics="tflite")
    _, info = run_model(DEFAULT_MODEL, x[:1], board="qemu-m4", compiled=c, build_dir=tmp_path)
    b = tbuild.board_or_error("qemu-m4")
    elf, obj = info["elf"], tmp_path / "obj-qemu-m4"
    need = info["stack"]["ram_needed_bytes"]
    ok = check_stack(elf, obj, b, c.module.name, c.plan.size, ram_limit=need)
    assert ok["ram_needed_bytes"] == need
    with pytest.raises(TinyAotError, match=r"does not fit: needs .* RAM .*--ram-limit has .* "
                                           r"\(1 B over\)"):
        check_stack(elf, obj, b, c.module.name, c.plan.size, ram_limit=need - 1)
    empty = tmp_path / "no_su"
    empty.mkdir()
    with pytest.raises(TinyAotError, match="no -fstack-usage output"):
        check_stack(elf, empty, b, c.module.name, c.plan.size)


def test_direct_scons_firmware_build_checks_the_stack(tmp_path):
    """`scons board=B gen=DIR` (no build_generated) runs the check after the link."""
    import json
    import subprocess
    import sys

    from codegen.backend import emit_harness_data
    from codegen.compiler import write_outputs
    from codegen.paths import REPO_ROOT, SCONSTRUCT

    c = compile_model(DEFAULT_MODEL, numerics="tflite")
    gen = tmp_path / "gen"
    write_outputs(c, gen)
    x, _ = load_golden(DEFAULT_GOLDEN)
    xin, xout = c.graph.tensors[c.graph.inputs[0]], c.graph.tensors[c.graph.outputs[0]]
    (gen / "harness_data.c").write_text(emit_harness_data(c.module.name, x[:1].reshape(1, -1),
                                                          xin.size, xout.size))
    cmd = [sys.executable, "-m", "SCons", "-f", str(SCONSTRUCT), "-Q", "board=qemu-m4", f"gen={gen}"]
    ok = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert re.search(r"^stack \d+ B worst case, qemu-m4 reserves 65536 B", ok.stdout, re.M), ok.stdout
    # An arena the board cannot hold (report.json is what the check reads).
    rep = json.loads((gen / "report.json").read_text())
    rep["arena_bytes"] = 8 << 20
    (gen / "report.json").write_text(json.dumps(rep))
    (gen / f"{c.module.name}-qemu-m4.elf").unlink()
    bad = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    assert bad.returncode != 0
    assert re.search(r"tinyaot: error: .*does not fit: needs \d+ B RAM \(arena 8192 KiB \+ stack "
                     r"\d+ B worst case", bad.stderr), bad.stderr
