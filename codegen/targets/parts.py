"""Boards and parts: the catalogue `tinyaot boards` prints, and the boards a
build-only part is measured and timed on.

Every folder boards/<name>/ with a board.toml is a board. Its `kind`:

  shared-library  the host (a library the test suite loads through cffi)
  firmware        a Cortex-M machine QEMU runs (semihosting console, a timer)
  part            a real part tinyaot does not run: its memory map, startup and
                  linker script, for `report --board` (does the model fit? how
                  many ms?) and `export --board` (flags, startup, linker script)

A board may name its silicon (`part`: an entry of codegen/cycles/parts.toml with
the clock and flash wait states). A part names `runs_on`, the QEMU board with the
same instruction set: the cycle model times the model there, built with the
part's own flags, priced with the part's core table (`cycle_core`, default its
`cpu`) at the part's clock.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import TinyAotError
from ..paths import BOARDS_DIR
from .qemu import load_board

KINDS = ("shared-library", "firmware", "part")

# The measuring link's memory regions: large enough for any model, so that a
# model too big for the part still links and the report says by how much.
MEASURING_LENGTH = "64M"
MEASURING_BYTES = 64 << 20
_REGION_RE = r"(^\s*{region}\s*\([^)]*\)\s*:\s*ORIGIN\s*=\s*[^,]+,\s*LENGTH\s*=\s*)([^\s/]+)"


@dataclass(frozen=True)
class BoardInfo:
    """One line of `tinyaot boards`."""
    name: str
    kind: str
    core: str            # the -mcpu, or "host"
    fpu: str             # "FPv4-SP", "FPv5-DP", ... or "-"
    dsp: bool
    flash_bytes: int | None
    ram_bytes: int | None
    clock_hz: int | None  # the part's clock (codegen/cycles/parts.toml); None: an FPGA image or the host
    qemu_machine: str | None
    runs_on: str | None   # a part: the QEMU board that times it
    part: str | None      # the parts.toml entry

    @property
    def runs_in_qemu(self) -> bool:
        return self.kind == "firmware"

    def as_dict(self):
        return {"name": self.name, "kind": self.kind, "core": self.core, "fpu": self.fpu,
                "dsp": self.dsp, "flash_bytes": self.flash_bytes, "ram_bytes": self.ram_bytes,
                "clock_hz": self.clock_hz, "runs_in_qemu": self.runs_in_qemu,
                "qemu_machine": self.qemu_machine, "runs_on": self.runs_on, "part": self.part}


def board_names(kinds=KINDS):
    """Boards with a boards/<name>/board.toml of one of `kinds`, sorted."""
    out = []
    for p in sorted(BOARDS_DIR.glob("*/board.toml")):
        if load_board(p.parent.name)["kind"] in kinds:
            out.append(p.parent.name)
    return out


def _flag(cflags, prefix):
    return next((f[len(prefix):] for f in cflags if f.startswith(prefix)), None)


def fpu_name(board: dict) -> str:
    """The floating-point unit the build uses, from the board's flags."""
    if not board.get("has_fpu") or _flag(board.get("cflags", []), "-mfloat-abi=") == "soft":
        return "-"
    fpu = _flag(board.get("cflags", []), "-mfpu=")
    if fpu is None:   # -mcpu implies it (cortex-m55: FPv5 double + MVE)
        return "FPv5-DP+MVE" if "cortex-m55" in board.get("cpu", "") else "yes"
    return {"fpv4-sp-d16": "FPv4-SP", "fpv5-sp-d16": "FPv5-SP", "fpv5-d16": "FPv5-DP"}.get(fpu, fpu)


def board_info(name: str) -> BoardInfo:
    b = load_board(name)
    kind = b.get("kind")
    if kind not in KINDS:
        raise TinyAotError(f"boards/{name}/board.toml: kind = {kind!r}, expected one of {KINDS}")
    part = b.get("part")
    clock = None
    if part:
        from ..cycles.tables import load_parts
        parts = load_parts()
        if part not in parts:
            raise TinyAotError(f"boards/{name}/board.toml: part '{part}' is not in "
                               "codegen/cycles/parts.toml")
        clock = parts[part].clock_hz
    core = _flag(b.get("cflags", []), "-mcpu=") or ("host" if kind == "shared-library" else "?")
    return BoardInfo(name=name, kind=kind, core=core, fpu=fpu_name(b) if kind != "shared-library"
                     else "yes", dsp=bool(b.get("has_dsp")), flash_bytes=b.get("flash_size"),
                     ram_bytes=b.get("ram_size"), clock_hz=clock,
                     qemu_machine=b.get("qemu_machine") if kind == "firmware" else None,
                     runs_on=b.get("runs_on"), part=part)


def catalogue():
    """Every board, QEMU boards and the host first, then the build-only parts."""
    infos = [board_info(n) for n in board_names()]
    order = {"shared-library": 0, "firmware": 1, "part": 2}
    return sorted(infos, key=lambda i: (order[i.kind], i.name))


def _size(n):
    if n is None:
        return "-"
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n // 1024} KiB" \
        if n % 1024 == 0 else f"{n} B"


BOARDS_HEADER = ["board", "runs in QEMU", "core", "FPU", "DSP", "flash", "RAM", "clock"]


def boards_rows(infos):
    rows = []
    for i in infos:
        if i.kind == "shared-library":
            where = "- (host library)"
        elif i.kind == "firmware":
            where = f"yes: {i.qemu_machine}"
        else:
            where = f"no: timed on {i.runs_on}"
        rows.append([i.name, where, i.core, i.fpu, "yes" if i.dsp else "-", _size(i.flash_bytes),
                     _size(i.ram_bytes), f"{i.clock_hz / 1e6:g} MHz" if i.clock_hz else "-"])
    return rows


def format_boards(infos):
    rows = [BOARDS_HEADER] + boards_rows(infos)
    widths = [max(len(r[k]) for r in rows) for k in range(len(BOARDS_HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.append("clock: the part's (codegen/cycles/parts.toml); the qemu-m* boards are FPGA "
                 "images or emulators without one.")
    lines.append("A part QEMU does not run is linked for its own memory (report --board) and "
                 "timed by the cycle model on the board named.")
    return "\n".join(lines)


# ------------------------------------------------------------- a part's builds

def require_runnable(board: dict, what: str):
    """One clear error when a command that runs the model gets a build-only part."""
    if board.get("kind") == "part":
        raise TinyAotError(f"{what} runs the model, and board {board['name']} is a build-only part "
                           f"(no QEMU machine runs it): run it on {board.get('runs_on')}, the QEMU "
                           f"board with its core; tinyaot report --board {board['name']} gives its "
                           "fit and time")


def require_part(board: dict):
    if board.get("kind") != "part":
        raise TinyAotError(f"board {board.get('name')} is not a build-only part")
    for key in ("runs_on", "part", "linker_script", "flash_size", "ram_size", "stack_size"):
        if key not in board:
            raise TinyAotError(f"boards/{board['name']}/board.toml has no '{key}'")


def timing_board(board: dict) -> dict:
    """The QEMU board that times part `board`: `runs_on`'s machine, memory and
    startup, the part's compiler flags and core table. Its name stays the QEMU
    board's (the cycle model's parts list it there); `timed_part` says for whom."""
    require_part(board)
    host = load_board(board["runs_on"])
    if host["kind"] != "firmware":
        raise TinyAotError(f"boards/{board['name']}/board.toml: runs_on = '{board['runs_on']}' "
                           "is not a QEMU board")
    t = dict(host)
    t["cflags"] = list(board["cflags"])
    t["cycle_core"] = board.get("cycle_core") or board.get("cpu")
    t["timed_part"] = board["name"]
    return t


def link_overflowed(message: str) -> bool:
    """A link that failed because the image does not fit the memory regions."""
    return any(s in message for s in ("overflowed", "will not fit in region", "RAM overflow"))


def build_overrides(board: dict) -> tuple:
    """What a build must take from `board` besides its name (driver/firmware.py's
    Variant.board): a timing board's cflags are the part's, not its QEMU board's."""
    return (("cflags", tuple(board["cflags"])),) if board.get("timed_part") else ()


def measuring_board(board: dict, out_dir) -> dict:
    """Part `board` with a copy of its linker script whose FLASH and RAM are
    MEASURING_LENGTH long: the same layout (only the stack top moves up), so a
    model too big for the part still links and the report can say by how much
    it misses."""
    require_part(board)
    text = Path(board["linker_script"]).read_text()
    for region in ("FLASH", "RAM"):
        text, n = re.subn(_REGION_RE.format(region=region), r"\g<1>" + MEASURING_LENGTH, text,
                          count=1, flags=re.M)
        if n != 1:
            raise TinyAotError(f"{board['linker_script']}: no MEMORY region {region} "
                               "(ORIGIN = ..., LENGTH = ...)")
    out = Path(out_dir) / f"measure-{board['name']}.ld"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    m = dict(board)
    m["linker_script"] = out
    return m


def part_main_defines(model_name: str) -> list:
    """What boards/common/part_main.c needs to call the model."""
    return [f"TINYAOT_PART_MODEL={model_name}", f"TINYAOT_PART_MODEL_UPPER={model_name.upper()}",
            f'TINYAOT_PART_MODEL_HEADER="{model_name}.h"']


_SECTION_RE = re.compile(r"^\s*\d+\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+\S+\s*$")


def static_ram(elf, board: dict) -> int:
    """Bytes from ram_origin to the end of .data + .bss (the arena included) in the
    linked `elf`, from its section headers (`objdump -h`)."""
    import subprocess
    tool = board.get("toolchain_prefix", "arm-none-eabi-") + "objdump"
    text = subprocess.run([tool, "-h", str(elf)], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    lo = int(board["ram_origin"])
    end = lo
    for line, flags in zip(text, text[1:] + [""]):
        m = _SECTION_RE.match(line)
        if m and "ALLOC" in flags:
            size, vma = int(m.group(2), 16), int(m.group(3), 16)
            if lo <= vma < lo + MEASURING_BYTES:      # a region never spans more
                end = max(end, vma + size)
    return end - lo


def fit_verdict(board: dict, flash_image: int, static_ram: int, stack_worst: int) -> dict:
    """Does the image fit the part? flash: the image against flash_size; RAM:
    .data + .bss (the arena included) + the reserved stack against ram_size; the
    worst-case stack against the reservation."""
    flash, ram, stack = int(board["flash_size"]), int(board["ram_size"]), int(board["stack_size"])
    ram_need = int(static_ram) + stack
    problems = []
    if flash_image > flash:
        problems.append(f"flash {flash_image - flash:,} B over")
    if ram_need > ram:
        problems.append(f"RAM {ram_need - ram:,} B over")
    if stack_worst > stack:
        problems.append(f"worst-case stack {stack_worst:,} B > the {stack:,} B reserved "
                        "(stack_size)")
    return {"fits": not problems, "problems": problems,
            "flash_bytes": int(flash_image), "flash_size": flash,
            "ram_bytes": ram_need, "ram_size": ram, "static_ram_bytes": int(static_ram),
            "stack_reserved_bytes": stack, "stack_worst_case_bytes": int(stack_worst)}
