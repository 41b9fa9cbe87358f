"""The QEMU Cortex-M board family: qemu-m0, qemu-m3, qemu-m7, qemu-m33, qemu-m55 and
the real-part boards stm32f405 (netduinoplus2) and nrf51822 (microbit).

For each board: timer calibration (instructions_per_tick), the default model
verified bit-exact against the onnxruntime golden (--numerics ort), and with
--numerics tflite the board agreeing with the host build.

A board's tests are skipped only when its QEMU machine (or the toolchain) is
missing; with the environment variable CI set they fail instead.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess

import numpy as np
import pytest

from codegen.paths import DEFAULT_GOLDEN, DEFAULT_MODEL
from codegen.targets import qemu
from codegen.driver.verify import load_golden, run_model, verify_model

BOARDS = {
    # board: (machine, cpu, has_fpu, has_dsp, instructions_per_tick)
    "qemu-m3": ("mps2-an385", "cortex-m3", False, False, 40),
    "qemu-m7": ("mps2-an500", "cortex-m7", True, True, 40),
    "qemu-m33": ("mps2-an505", "cortex-m33", True, True, 50),
    "qemu-m55": ("mps3-an547", "cortex-m55", True, True, 125),
    "qemu-m0": ("microbit", "cortex-m0", False, False, 125),
    "stm32f405": ("netduinoplus2", "cortex-m4", True, True, 125),
    "nrf51822": ("microbit", "cortex-m0", False, False, 125),
}


@functools.lru_cache(maxsize=None)
def _qemu_machines() -> frozenset:
    if not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")):
        return frozenset()
    out = subprocess.run(["qemu-system-arm", "-machine", "help"], capture_output=True,
                         text=True).stdout
    return frozenset(line.split()[0] for line in out.splitlines()[1:] if line.strip())


@pytest.fixture(params=sorted(BOARDS), scope="module")
def board(request):
    name = request.param
    machine = BOARDS[name][0]
    if machine not in _qemu_machines():
        msg = f"{name}: QEMU machine {machine} (or arm-none-eabi-gcc/qemu-system-arm) missing"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return qemu.load_board(name)


def test_board_toml(board):
    machine, cpu, has_fpu, has_dsp, ipt = BOARDS[board["name"]]
    assert board["qemu_machine"] == machine and board["cpu"] == cpu
    assert f"-mcpu={cpu}" in board["cflags"]
    assert ("-mfloat-abi=soft" in board["cflags"]) == (not has_fpu)
    assert board["has_fpu"] is has_fpu and board["has_dsp"] is has_dsp
    assert board["instructions_per_tick"] == ipt
    for key in ("flash_size", "ram_size", "stack_size", "flash_origin", "ram_origin"):
        assert isinstance(board[key], int)
    assert board["stack_size"] < board["ram_size"]
    assert board["linker_script"].is_file()
    assert all(p.is_file() for p in qemu.harness_sources(board))


@pytest.mark.qemu
def test_timer_calibration(board, tmp_path):
    """tinyaot_timer_spin(n) is 6n instructions: ticks * instructions_per_tick == 6n."""
    elf = qemu.build_firmware([board["harness_main"], qemu.calibration_data_source()], [],
                              board, tmp_path / "calib.elf")
    res = qemu.run_firmware(elf, board, timeout=30)
    counts = [int.from_bytes(r.data, "little") for r in res.outputs]
    assert counts == [0, 1_000_000, 1_000_000, 100_000]
    ipt = board["instructions_per_tick"]
    for n, r in zip(counts, res.outputs):
        assert abs(r.ticks - 6 * n / ipt) <= 1, (n, r.ticks)


@pytest.mark.qemu
def test_verify_ort(board):
    rep = verify_model(DEFAULT_MODEL, DEFAULT_GOLDEN, board=board["name"], numerics="ort",
                       key="outputs")
    assert rep["mismatches"] == 0, rep.get("first_mismatches")
    assert rep["vectors_passed"] == rep["vectors"] > 0
    assert rep["firmware_size"]["text"] + rep["firmware_size"]["data"] <= board["flash_size"]
    if board["has_fpu"]:
        # one timer read per inference has a phase jitter of a few instructions, so a
        # count near a tick edge can read as either tick: counted exactly instead (each
        # input run instructions_per_tick times between two reads)
        inputs, _ = load_golden(DEFAULT_GOLDEN)
        counts = _exact_counts(board, inputs[:8], "ort")
        assert len(set(counts)) == 1, counts
    else:
        # Soft float: libgcc's IEEE routines take data-dependent paths (zero
        # operands, normalisation), so the count varies a little by input.
        assert rep["instructions_per_inference"] <= 1.05 * rep["instructions_min"]


@pytest.mark.qemu
def test_tflite_matches_host(board):
    inputs, _ = load_golden(DEFAULT_GOLDEN)
    got, info = run_model(DEFAULT_MODEL, inputs, board=board["name"], numerics="tflite")
    host, _ = run_model(DEFAULT_MODEL, inputs, board="host", numerics="tflite")
    assert got.shape == host.shape
    assert np.array_equal(got, host)
    assert all(s == 0 for s in info["status"])
    # Integer-only numerics: the same count for every input on every board
    # (soft-float qemu-m3 included), exact to one instruction: one timer read
    # has a phase jitter of a few instructions (the polling loop in
    # tinyaot_timer_sync), so a count within that of a tick edge can read as
    # either tick; running each input instructions_per_tick times between two
    # reads makes one instruction one tick (tests/helpers/c/harness_repeat_main.c).
    counts = _exact_counts(board, inputs[:8])
    if "-mcpu=cortex-m0" in board["cflags"]:
        # Armv6-M has no divide and no count-leading-zeros instruction: libgcc's
        # routines for them (e.g. __divsi3, called by the depthwise kernel's
        # fixed-point path) take data-dependent paths, so the count moves by a few
        # hundredths of a percent from input to input (measured: 0.02 %).
        assert max(counts) <= 1.001 * min(counts), counts
    else:
        assert len(set(counts)) == 1


def _exact_counts(board, inputs, numerics="tflite"):
    from codegen.compiler import compile_model
    from codegen.paths import REPO_ROOT
    from codegen.driver.firmware import Variant, build_compiled, private_dir

    rep = int(board["instructions_per_tick"])
    c = compile_model(DEFAULT_MODEL, numerics=numerics)
    per = np.asarray(inputs).reshape(len(inputs), -1).view(np.int8)
    out_dir = private_dir(c, f"exact-{board['name']}")
    try:
        elf = build_compiled(c, board, out_dir, per, Variant(
            "repeat", main=str(REPO_ROOT / "tests" / "helpers" / "c" / "harness_repeat_main.c"),
            defines=(f"TINYAOT_REPEAT={rep}u",
                     f"TINYAOT_HARNESS_MAX_INPUT={per.shape[1]}"))).elf
        res = qemu.run_firmware(elf, board, timeout=600)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    assert [r.status for r in res.outputs] == [0] * len(per)
    return [r.ticks for r in res.outputs]
