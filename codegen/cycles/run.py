"""Run a firmware ELF under the board's QEMU with the cycle-model plugin.

One run prices every requested part (they share the instruction stream). The
inference is cut out of the run by addresses: `call=SYMBOL` counts from the
entry of that function to its return, `begin=`/`end=` between executions of two
addresses (TFLite Micro's tflm_invoke_begin / tflm_invoke_end). `mark=SYMBOL`
with `marks=N` stamps the counts at each store into that array of N words
(tinyaot's per-layer profile stamps).
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass

from ..errors import TinyAotError
from ..paths import build_root
from .plugin_build import plugin_path
from .tables import board_core, load_core, plugin_config, select_parts


@dataclass
class Inference:
    instructions: int
    cycles: dict              # part -> modelled cycles
    ifetch_stall: dict        # part -> cycles waiting on instruction fetches from flash
    data_stall: dict          # part -> cycles waiting on data reads (flash, unaligned)


@dataclass
class CycleRun:
    board: str
    core: str
    parts: list               # [Part]
    inferences: list          # [Inference]
    marks: list               # per inference: {layer: (instructions, {part: cycles})}
    classes: dict             # class -> (executed count, core cycles), over all inferences
    output: str = ""          # what the firmware printed
    exit_code: int = 0
    instructions_total: int = 0

    def mean(self, part=None):
        """(instructions, cycles) averaged over the inferences, rounded."""
        n = len(self.inferences)
        ins = sum(i.instructions for i in self.inferences) / n
        if part is None:
            return round(ins), None
        return round(ins), round(sum(i.cycles[part] for i in self.inferences) / n)


def symbol_address(elf, name, board=None) -> int:
    nm = (board or {}).get("toolchain_prefix", "arm-none-eabi-") + "nm"
    out = subprocess.run([nm, str(elf)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16) & ~1  # Thumb bit
    raise TinyAotError(f"symbol '{name}' not found in the firmware", model=str(elf))


def _parse(text, part_names):
    infer, marks, classes, total = {}, {}, {}, 0
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "INFER":
            k = int(f[1])
            rec = infer.setdefault(k, Inference(int(f[3]), {}, {}, {}))
            rec.cycles[f[2]] = int(f[4])
            rec.ifetch_stall[f[2]] = int(f[5])
            rec.data_stall[f[2]] = int(f[6])
        elif f[0] == "MARK":
            k, layer, ins = int(f[1]), int(f[2]), int(f[3])
            marks.setdefault(k, {})[layer] = (ins, dict(zip(part_names, map(int, f[4:]))))
        elif f[0] == "CLASS":
            classes[f[1]] = (int(f[2]), int(f[3]))
        elif f[0] == "EXIT":
            total = int(f[1])
    ks = sorted(infer)
    return [infer[k] for k in ks], [marks.get(k, {}) for k in ks], classes, total


def run_cycles(elf, board: dict, parts=None, *, call=None, begin=None, end=None, mark=None,
               marks=0, timeout=900.0) -> CycleRun:
    """Run `elf` on `board` under the cycle model; symbols name the bracket."""
    from ..targets.qemu import qemu_command
    parts = list(parts) if parts else select_parts(board)
    core = load_core(board_core(board))
    addr = {k: symbol_address(elf, v, board) if v else None
            for k, v in (("call", call), ("begin", begin), ("end", end), ("mark", mark))}
    if addr["call"] is None and (addr["begin"] is None or addr["end"] is None):
        raise TinyAotError("the cycle model needs call=SYMBOL or begin= and end= symbols")
    so = plugin_path()
    base = build_root()
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cycles-", dir=base) as tmp:
        out_path = os.path.join(tmp, "cycles.txt")
        cfg = os.path.join(tmp, "cycles.cfg")
        with open(cfg, "w") as f:
            f.write(plugin_config(core, parts, board, out_path, begin=addr["begin"], end=addr["end"],
                                  call=addr["call"], mark=addr["mark"], marks=marks))
        cmd = qemu_command(elf, board)
        k = cmd.index("-kernel")
        cmd[k:k] = ["-plugin", f"{so},cfg={cfg}"]
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TinyAotError(f"QEMU with the cycle model timed out after {timeout:.0f}s",
                               model=str(elf)) from None
        text = proc.stdout.decode("utf-8", "replace")
        if proc.returncode != 0 or "HARDFAULT" in text:
            tail = "\n".join(text.splitlines()[-15:])
            raise TinyAotError(f"firmware run under the cycle model failed (exit {proc.returncode}):"
                               f"\n{tail}", model=str(elf))
        result = open(out_path).read() if os.path.exists(out_path) else ""
    inferences, mk, classes, total = _parse(result, [p.name for p in parts])
    if not inferences:
        raise TinyAotError("the cycle model saw no complete inference (bracket never closed)",
                           model=str(elf))
    return CycleRun(board["name"], core.name, parts, inferences, mk, classes, text,
                    proc.returncode, total)
