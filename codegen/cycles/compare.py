"""Side by side with TFLite Micro + CMSIS-NN: the same QEMU, the same cycle model.

`../shared/anchors/tflm_cmsisnn_m4/<model>.elf` (outside the repo, never copied
in) run the five MLPerf Tiny models on qemu-m4; each Invoke() is bracketed by
calls of tflm_invoke_begin / tflm_invoke_end. tinyaot's verification firmware
is bracketed by its call of tinyaot_harness_run. Both are priced by one plugin
run each, for the same parts, and sized the same way from their ELFs.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ..paths import REPO_ROOT
from .run import run_cycles
from .tables import select_parts

ANCHORS = (REPO_ROOT / ".." / "shared" / "anchors" / "tflm_cmsisnn_m4").resolve()
BENCH_PARTS = ("ideal", "stm32l4r5")
TFLM_BOARD = "qemu-m4"
_SECTION_RE = re.compile(r"^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)"
                         r"\s+[0-9a-f]+\s+([A-Z]*)")


def image_sizes(elf, board, exclude_symbols=()):
    """Flash image and static RAM of a linked ELF, in bytes.

    flash: every allocated section in the board's flash region plus the load
    image of initialised RAM data (.data), less the named symbols (the
    harness's embedded golden inputs); ram: allocated sections in RAM (.data,
    .bss; the stack is not a section here).
    """
    prefix = board.get("toolchain_prefix", "arm-none-eabi-")
    text = subprocess.run([prefix + "readelf", "-S", "-W", str(elf)], capture_output=True,
                          text=True, check=True).stdout
    lo, size = int(board["flash_origin"]), int(board["flash_size"])
    rlo, rsize = int(board["ram_origin"]), int(board["ram_size"])
    flash = ram = 0
    for line in text.splitlines():
        m = _SECTION_RE.match(line)
        if not m or "A" not in m.group(5):
            continue
        typ, addr, n = m.group(2), int(m.group(3), 16), int(m.group(4), 16)
        if lo <= addr < lo + size:
            flash += n
        elif rlo <= addr < rlo + rsize:
            ram += n
            if typ != "NOBITS":
                flash += n  # its initial values are stored in flash
    if exclude_symbols:
        syms = subprocess.run([prefix + "nm", "-S", str(elf)], capture_output=True, text=True,
                              check=True).stdout
        for line in syms.splitlines():
            f = line.split()
            if len(f) == 4 and f[3] in exclude_symbols:
                flash -= int(f[1], 16)
    return {"flash": flash, "ram": ram}


def tflm_elf(model_key):
    p = ANCHORS / f"{model_key}.elf"
    return p if p.is_file() else None


def _summary(run, parts):
    ins, _ = run.mean()
    cycles = {p.name: run.mean(p.name)[1] for p in parts}
    return {"instructions": ins, "cycles": cycles,
            "ms": {p.name: round(p.ms(cycles[p.name]), 3) for p in parts},
            "inferences": len(run.inferences)}


def price_tinyaot(elf, board, part_names=BENCH_PARTS):
    """Cycle model of tinyaot's verification firmware (every embedded input)."""
    parts = select_parts(board, [n for n in part_names if n in
                                 {p.name for p in select_parts(board)}])
    run = run_cycles(elf, board, parts, call="tinyaot_harness_run")
    out = _summary(run, parts)
    out.update(image_sizes(elf, board, ("tinyaot_harness_inputs",)))
    return out


_ARENA_RE = re.compile(r"ARENA_SIZE (\d+) ARENA_USED (\d+)")


def price_tflm(model_key, board, part_names=BENCH_PARTS):
    """The TFLite Micro anchor of `model_key` under the same QEMU and model, or None."""
    elf = tflm_elf(model_key)
    if elf is None or board["name"] != TFLM_BOARD:
        return None
    parts = select_parts(board, list(part_names))
    run = run_cycles(elf, board, parts, begin="tflm_invoke_begin", end="tflm_invoke_end")
    out = _summary(run, parts)
    out.update(image_sizes(elf, board, ("g_inputs",)))
    m = _ARENA_RE.search(run.output)
    out["arena_bytes"] = int(m.group(1)) if m else None
    out["outputs"] = len(re.findall(r"^OUT \d+ ", run.output, re.M))
    return out


def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def anchors_dir() -> Path:
    return ANCHORS
