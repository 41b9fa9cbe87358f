"""Board qemu-m4 (QEMU mps2-an386): startup, semihosting, timer, harness.

The firmware tests (marker ``qemu``) need arm-none-eabi-gcc and
qemu-system-arm and are skipped when either is missing.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap

import pytest

from codegen.targets import qemu

_have_tools = bool(shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm"))


def needs_qemu(f):
    """Marks a test that builds firmware and runs it in QEMU."""
    skip = pytest.mark.skipif(not _have_tools, reason="needs arm-none-eabi-gcc and qemu-system-arm")
    return pytest.mark.qemu(skip(f))

# Mirror of boards/common/harness_selftest_data.c.
SELFTEST_INPUTS = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [-1, -2, -3, -4, -5, -6, -7, -8, 127, 126, 85, 84, -86, -85, 0, 0x55],
    [-128, 127, -128, 127, 1, -1, 1, -1, 16, 32, 48, 64, 80, 96, 112, -16],
]


def selftest_expected():
    out = []
    for inp in SELFTEST_INPUTS:
        data = bytes(((x ^ 0x55) & 0xFF) for x in inp)
        out.append((-1 if inp[0] == -128 else 0, data))
    return out


@pytest.fixture(scope="module")
def board():
    return qemu.load_board("qemu-m4")


def build_harness(board, data_source, out_elf, defines=()):
    return qemu.build_firmware(
        [board["harness_main"], data_source], [], board, out_elf, defines=defines
    )


@pytest.fixture(scope="module")
def selftest_elf(board, tmp_path_factory):
    return build_harness(board, qemu.selftest_data_source(),
                         tmp_path_factory.mktemp("fw") / "selftest.elf")


def test_load_boards(board):
    assert board["qemu_machine"] == "mps2-an386"
    assert board["cpu"] == "cortex-m4"
    assert board["flash_size"] == board["ram_size"] == 4 * 1024 * 1024
    assert board["has_dsp"] and board["has_fpu"]
    assert board["instructions_per_tick"] == 40
    assert all(p.is_file() for p in qemu.harness_sources(board))
    assert board["linker_script"].is_file()
    host = qemu.load_board("host")
    assert host["kind"] == "shared-library" and "-fPIC" in host["cflags"]
    with pytest.raises(FileNotFoundError):
        qemu.load_board("no-such-board")


@needs_qemu
def test_selftest_outputs(board, selftest_elf):
    res = qemu.run_firmware(selftest_elf, board, timeout=30)
    assert res.exit_code == 0
    assert "BOOT" in res.output.splitlines()
    got = [(r.status, r.data) for r in res.outputs]
    assert got == selftest_expected()
    # 1000 spin iterations * 6 instructions = 150 ticks, plus the xor loop.
    for r in res.outputs:
        assert 150 <= r.ticks <= 160


@needs_qemu
def test_no_stdio_linked(board, selftest_elf):
    syms = subprocess.run(["arm-none-eabi-nm", str(selftest_elf)], capture_output=True,
                          text=True, check=True).stdout.split()
    for bad in ("printf", "_printf_r", "_vfprintf_r", "puts", "_write", "malloc", "_sbrk"):
        assert bad not in syms, bad
    size = qemu.firmware_size(selftest_elf, board)
    assert 0 < size["text"] < 16 * 1024 and size["data"] < 1024
    assert size["bss"] >= 4096            # the static output buffer


@needs_qemu
def test_timer_calibration(board, tmp_path):
    """tinyaot_timer_spin(n) runs 6n instructions: 1e6 iterations = 150000 ticks."""
    elf = build_harness(board, qemu.calibration_data_source(), tmp_path / "calib.elf")
    counts = [0, 1_000_000, 1_000_000, 100_000]   # harness_calib_data.c default
    runs = [qemu.run_firmware(elf, board, timeout=30) for _ in range(2)]
    ipt = board["instructions_per_tick"]
    for res in runs:
        assert [int.from_bytes(r.data, "little") for r in res.outputs] == counts
        for n, r in zip(counts, res.outputs):
            assert abs(r.ticks - 6 * n / ipt) <= 1, (n, r.ticks)
    # -icount makes runs bit-for-bit deterministic.
    assert [r.ticks for r in runs[0].outputs] == [r.ticks for r in runs[1].outputs]


@needs_qemu
def test_timer_long_run(board, tmp_path):
    """More ticks than a 24-bit SysTick could count: 120e6 iterations = 18e6 ticks."""
    elf = build_harness(board, qemu.calibration_data_source(), tmp_path / "long.elf",
                        defines=["TINYAOT_CALIB_COUNTS=120000000"])
    (rec,) = qemu.run_firmware(elf, board, timeout=60).outputs
    assert rec.ticks > 1 << 24
    assert abs(rec.ticks - 6 * 120_000_000 // board["instructions_per_tick"]) <= 1


@needs_qemu
def test_hardfault_raises(board, tmp_path):
    elf = build_harness(board, qemu.selftest_data_source(), tmp_path / "fault.elf",
                        defines=["TINYAOT_SELFTEST_FAULT"])
    with pytest.raises(qemu.QemuError, match="HardFault") as ei:
        qemu.run_firmware(elf, board, timeout=30)
    assert ei.value.exit_code == 3
    assert "OUT 0 " in ei.value.output          # first input ran before the fault
    assert "HARDFAULT pc=" in str(ei.value)


@needs_qemu
def test_output_too_large_raises(board, tmp_path):
    elf = build_harness(board, qemu.selftest_data_source(), tmp_path / "small.elf",
                        defines=["TINYAOT_HARNESS_MAX_OUTPUT=8"])
    with pytest.raises(qemu.QemuError, match="exit status 2") as ei:
        qemu.run_firmware(elf, board, timeout=30)
    assert ei.value.exit_code == 2
    assert "ERROR output_size 16" in ei.value.output


@needs_qemu
def test_startup_and_exit_code(board, tmp_path):
    """.data copied, .bss zeroed, FPU usable, main()'s value is QEMU's exit status."""
    src = tmp_path / "exit_main.c"
    src.write_text(textwrap.dedent("""\
        #include <stdint.h>
        #include "semihost.h"
        static volatile uint32_t init_data = 0x12345678u;
        static volatile uint32_t zeroed[64];
        static volatile float fa = 1.5f, fb = 2.25f;
        int main(void)
        {
            for (int i = 0; i < 64; i++)
                if (zeroed[i]) return 10;
            if (init_data != 0x12345678u) return 11;
            if (fa * fb != 3.375f) return 12;      /* VFP instructions */
            tinyaot_sh_puts("unterminated");        /* flushed by exit */
            return 42;
        }
        """))
    elf = qemu.build_firmware([src], [], board, tmp_path / "exit.elf")
    with pytest.raises(qemu.QemuError, match="exit status 42") as ei:
        qemu.run_firmware(elf, board, timeout=30)
    assert ei.value.exit_code == 42
    assert "unterminated" in ei.value.output


@needs_qemu
def test_timeout_raises(board, tmp_path):
    src = tmp_path / "hang.c"
    src.write_text("int main(void)\n{\n    for (;;)\n        __asm__ volatile(\"\");\n}\n")
    elf = qemu.build_firmware([src], [], board, tmp_path / "hang.elf")
    with pytest.raises(qemu.QemuError, match="timed out"):
        qemu.run_firmware(elf, board, timeout=1)


def test_parse_harness_output():
    recs, done = qemu.parse_harness_output("BOOT\nOUT 0 -3 7 00ff\nnoise\nDONE 1\n")
    assert recs == [qemu.OutRecord(-3, 7, b"\x00\xff")] and done == 1
    with pytest.raises(ValueError):
        qemu.parse_harness_output("OUT 1 0 0 00\n")
    with pytest.raises(ValueError):
        qemu.parse_harness_output("OUT 0 0 0 0\n")
