"""Boards, firmware builds and QEMU runs for the Cortex-M targets.

A board is described by ``boards/<name>/board.toml``; :func:`load_board`
returns it as a dict with paths resolved. The flag lists live in board.toml
so that other build drivers (SCons) can reuse them through
:func:`firmware_compile_flags` / :func:`firmware_link_flags` /
:func:`board_sources`.

The verification firmware (``boards/common/harness_main.c``) prints::

    BOOT
    OUT <i> <status> <ticks> <hex output bytes>
    ...
    DONE <n>

over ARM semihosting and exits through SYS_EXIT_EXTENDED, so the QEMU
process exit status is main()'s return value (3 after a HardFault).
:func:`run_firmware` parses that into a :class:`QemuResult` or raises
:class:`QemuError`.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (pyproject allows it): same API
    import tomli as tomllib

REPO_ROOT = Path(__file__).resolve().parents[2]
BOARDS_DIR = REPO_ROOT / "boards"

# How much of the output a QemuError message quotes.
_ERROR_TAIL_LINES = 20


class QemuError(RuntimeError):
    """The firmware did not run to a clean ``DONE`` with exit status 0."""

    def __init__(self, message: str, output: str = "", exit_code: int | None = None):
        self.output = output
        self.exit_code = exit_code
        tail = "\n".join(output.splitlines()[-_ERROR_TAIL_LINES:])
        super().__init__(f"{message}\n--- last output lines ---\n{tail}" if tail else message)


class OutRecord(NamedTuple):
    status: int
    ticks: int
    data: bytes


@dataclass
class QemuResult:
    outputs: list[OutRecord]
    exit_code: int
    output: str = ""                     # everything the run printed
    command: list[str] = field(default_factory=list)

    def instructions(self, board: dict, index: int) -> int:
        """Approximate guest instructions spent in run ``index``."""
        return self.outputs[index].ticks * int(board["instructions_per_tick"])


# --------------------------------------------------------------------- boards

_PATH_LIST_KEYS = ("sources", "include_dirs")
_PATH_KEYS = ("linker_script", "harness_main")


def load_board(name: str) -> dict:
    """Read ``boards/<name>/board.toml``.

    Relative paths (sources, include_dirs, linker_script, harness_main) are
    resolved against the board directory and returned as absolute Paths;
    ``board["dir"]`` is the board directory.
    """
    board_dir = BOARDS_DIR / name
    path = board_dir / "board.toml"
    if not path.is_file():
        known = sorted(p.parent.name for p in BOARDS_DIR.glob("*/board.toml"))
        raise FileNotFoundError(f"unknown board {name!r} (no {path}); known boards: {known}")
    with path.open("rb") as f:
        board = tomllib.load(f)
    if board.get("name") != name:
        raise ValueError(f"{path}: name = {board.get('name')!r}, expected {name!r}")
    board["dir"] = board_dir
    for key in _PATH_LIST_KEYS:
        board[key] = [(board_dir / p).resolve() for p in board.get(key, [])]
    for key in _PATH_KEYS:
        if key in board:
            board[key] = (board_dir / board[key]).resolve()
    return board


def board_sources(board: dict) -> list[Path]:
    """Board support C sources (startup, semihosting, timer)."""
    return list(board["sources"])


def harness_sources(board: dict) -> list[Path]:
    """Board sources plus the model-independent verification main()."""
    return board_sources(board) + [board["harness_main"]]


def selftest_data_source() -> Path:
    return BOARDS_DIR / "common" / "harness_selftest_data.c"


def calibration_data_source() -> Path:
    return BOARDS_DIR / "common" / "harness_calib_data.c"


def firmware_compile_flags(board: dict, defines: Iterable[str] = ()) -> list[str]:
    """Compiler flags (arch, optimisation, warnings, -D, -I) for firmware objects."""
    flags = list(board["cflags"]) + list(board.get("opt_cflags", []))
    flags += list(board.get("warn_cflags", []))
    flags += [f"-D{d}" for d in list(board.get("defines", [])) + list(defines)]
    flags += [f"-I{d}" for d in board.get("include_dirs", [])]
    return flags


def firmware_link_flags(board: dict) -> list[str]:
    """Link flags: arch flags (multilib selection), linker script, stack size."""
    flags = list(board["cflags"]) + list(board.get("ldflags", []))
    flags += [f"-T{board['linker_script']}", f"-Wl,--defsym=__stack_size={int(board['stack_size'])}"]
    return flags


def firmware_libs(board: dict) -> list[str]:
    """Libraries, to go after all objects on the link line."""
    return list(board.get("libs", []))


def _tool(board: dict, tool: str) -> str:
    return board.get("toolchain_prefix", "") + tool


def build_firmware(
    sources: Sequence[Path | str],
    include_dirs: Sequence[Path | str],
    board: dict,
    out_elf: Path | str,
    defines: Iterable[str] = (),
) -> Path:
    """Compile and link ``sources`` (plus the board's own sources) into an ELF.

    ``sources`` are the model/harness files; the board support sources from
    board.toml are added here. One compiler invocation; fine for small
    builds and tests (SCons takes over for real builds).
    """
    out_elf = Path(out_elf)
    out_elf.parent.mkdir(parents=True, exist_ok=True)
    all_sources = board_sources(board) + [Path(s) for s in sources]
    cmd = [board["compiler"]]
    cmd += firmware_compile_flags(board, defines)
    cmd += [f"-I{Path(d)}" for d in include_dirs]
    cmd += [str(s) for s in all_sources]
    cmd += firmware_link_flags(board)
    cmd += [f"-Wl,-Map={out_elf.with_suffix('.map')}", "-o", str(out_elf)]
    cmd += firmware_libs(board)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"firmware build failed ({proc.returncode}):\n{' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
        )
    return out_elf


def firmware_size(elf: Path | str, board: dict | None = None) -> dict:
    """``{"text", "data", "bss"}`` in bytes, from arm-none-eabi-size (Berkeley format).

    Flash use is text + data, RAM use data + bss (+ the stack).
    """
    tool = _tool(board, "size") if board else "arm-none-eabi-size"
    out = subprocess.run([tool, str(elf)], capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    if len(lines) < 2:
        raise RuntimeError(f"unexpected {tool} output:\n{out}")
    text, data, bss = (int(x) for x in lines[1].split()[:3])
    return {"text": text, "data": data, "bss": bss}


# ----------------------------------------------------------------------- QEMU

def qemu_command(elf: Path | str, board: dict) -> list[str]:
    """The QEMU command line for running ``elf`` on ``board``.

    -nographic with monitor and serial disabled: no window, no console
    multiplexing on stdio. -nic none: the board always instantiates its
    LAN9118, this leaves it unconnected (QEMU warns "has no peer").
    Semihosting output goes to QEMU's stderr (7.2, no chardev given).
    -icount shift=0 makes virtual time advance 1 ns per instruction, which
    makes the timer both deterministic and an instruction counter.
    """
    cmd = [board.get("qemu", "qemu-system-arm"), "-machine", board["qemu_machine"]]
    if board.get("cpu"):
        cmd += ["-cpu", board["cpu"]]
    cmd += ["-nographic", "-monitor", "none", "-serial", "none", "-nic", "none"]
    cmd += ["-semihosting-config", "enable=on,target=native"]
    cmd += list(board.get("qemu_args", []))
    cmd += ["-kernel", str(elf)]
    return cmd


_OUT_RE = re.compile(r"^OUT (\d+) (-?\d+) (\d+) ([0-9a-f]*)$")
_DONE_RE = re.compile(r"^DONE (\d+)$")


def parse_harness_output(text: str) -> tuple[list[OutRecord], int | None]:
    """Parse OUT/DONE lines; other lines (BOOT, QEMU warnings) are ignored.

    Returns (records, done_count or None). Raises ValueError on malformed
    or out-of-order OUT lines.
    """
    records: list[OutRecord] = []
    done = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("OUT"):
            m = _OUT_RE.match(line)
            if not m or len(m.group(4)) % 2:
                raise ValueError(f"malformed line: {line!r}")
            if int(m.group(1)) != len(records):
                raise ValueError(f"expected OUT {len(records)}, got: {line!r}")
            records.append(OutRecord(int(m.group(2)), int(m.group(3)), bytes.fromhex(m.group(4))))
        elif m := _DONE_RE.match(line):
            done = int(m.group(1))
    return records, done


def run_firmware(elf_path: Path | str, board: dict, timeout: float = 60.0) -> QemuResult:
    """Run a harness firmware to completion under QEMU.

    Raises QemuError on timeout, HardFault, non-zero exit status, malformed
    output, or a missing/inconsistent DONE line.
    """
    cmd = qemu_command(elf_path, board)
    try:
        # Semihosting writes to stderr: merge so lines keep their order.
        proc = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as e:
        partial = (e.stdout or b"").decode("utf-8", "replace")
        raise QemuError(f"QEMU timed out after {timeout}s: {' '.join(cmd)}", partial) from None
    text = proc.stdout.decode("utf-8", "replace")
    code = proc.returncode
    if "HARDFAULT" in text:
        raise QemuError(f"firmware HardFault (exit status {code})", text, code)
    if code != 0:
        raise QemuError(f"firmware exit status {code}: {' '.join(cmd)}", text, code)
    try:
        records, done = parse_harness_output(text)
    except ValueError as e:
        raise QemuError(str(e), text, code) from None
    if done is None:
        raise QemuError("firmware output has no DONE line", text, code)
    if done != len(records):
        raise QemuError(f"DONE {done} but {len(records)} OUT lines", text, code)
    return QemuResult(outputs=records, exit_code=code, output=text, command=cmd)
