"""What a firmware link put where: the input sections of the linker's map file.

The map file (-Wl,-Map, written by every firmware build, driver/firmware.py)
lists every input section kept in the image with its address, size and
object file; kernels come from the build's static library and show as
libtinyaot.a(<kernel>.o). `flash_breakdown` sorts the model's bytes into code
/ weights / tables: weights are the `l<i>_w*` sections, tables every other
constant of the model and the kernels' read-only data.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..backend.fc_float_unrolled import FUNCTION_RE

_SEC_RE = re.compile(r"^ (\.[\w.$]+|COMMON)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
_LAYER_SYM_RE = re.compile(r"^l(\d+)_(\w+)$")
KERNEL_LIBRARY = "libtinyaot.a"  # driver/firmware.py archives the runtime kernels

def parse_map(text):
    """Input sections of the final link: [(section, address, size, object)]."""
    start = text.find("Linker script and memory map")
    lines = text[start:].splitlines() if start >= 0 else []
    out, pending = [], None
    for line in lines:
        if pending is not None:
            line = pending + " " + line.strip()
            pending = None
        elif re.match(r"^ (\.[\w.$]+|COMMON)$", line):
            pending = line.rstrip()
            continue
        m = _SEC_RE.match(line)
        if m and int(m.group(3), 16):
            out.append((m.group(1), int(m.group(2), 16), int(m.group(3), 16), m.group(4).strip()))
    return out


def _kind(section):
    if section.startswith(".text") or section in (".glue_7", ".glue_7t", ".vfp11_veneer"):
        return "text"
    if section.startswith(".rodata") or section.startswith(".ARM") or section == ".isr_vector":
        return "rodata"
    if section.startswith(".data"):
        return "data"
    if section.startswith(".bss") or section == "COMMON":
        return "bss"
    return None


def _is_weight(suffix):
    """l<i>_w (int8 weights as in the model), l<i>_wp (packed for the fast kernels)
    and l<i>_wu (an unrolled float FC's nonzero weights, backend/fc_float_unrolled.py)."""
    return suffix in ("w", "wp", "wu") or suffix.startswith("w_")


def flash_breakdown(map_text, model_obj, kernel_objs):
    """code / weights / tables of the model; board and library bytes apart."""
    res = {"code": 0, "weights": 0, "tables": 0, "model_run_code": 0, "kernel_code": 0,
           "unrolled_code": 0,
           "board_and_harness": 0, "libraries": 0, "per_layer": {}, "per_kernel": {}}
    for sec, _addr, size, obj in parse_map(map_text):
        kind = _kind(sec)
        if kind in (None, "bss"):
            continue
        # kernels come from the build's static library: .../libtinyaot.a(tinyaot_x.o)
        archive, _, member = obj.partition("(")
        name = member.rstrip(")") if Path(archive).name == KERNEL_LIBRARY else Path(archive).name
        if obj.endswith(model_obj):
            if kind == "text":
                res["code"] += size
                # weight-specialized layers (l<i>_fc_unrolled) apart from <name>_run
                unrolled = FUNCTION_RE.search(sec)
                res["unrolled_code" if unrolled else "model_run_code"] += size
                continue
            sym = sec.split(".")[-1]
            m = _LAYER_SYM_RE.match(sym)
            if m:
                idx = int(m.group(1))
                per = res["per_layer"].setdefault(idx, {"weights": 0, "tables": 0})
                if _is_weight(m.group(2)):
                    res["weights"] += size
                    per["weights"] += size
                else:
                    res["tables"] += size
                    per["tables"] += size
            else:
                res["tables"] += size
        elif name in kernel_objs:
            if kind == "text":
                res["code"] += size
                res["kernel_code"] += size
                k = Path(name).stem
                res["per_kernel"][k] = res["per_kernel"].get(k, 0) + size
            else:
                res["tables"] += size
        elif member or obj.endswith(".a"):
            res["libraries"] += size
        else:
            res["board_and_harness"] += size
    res["total"] = res["code"] + res["weights"] + res["tables"]
    return res
