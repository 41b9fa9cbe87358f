"""The flash of a linked firmware image, read from the linker's map file.

One figure for every command (verify, report, export, bench, fleet, the
`scons` report and --flash-limit): every byte the image puts into the
board's flash region. That is each allocated output section placed in flash
(vector table, code, read-only data, unwind tables) plus the load image of
.data, which the startup code copies to RAM; alignment padding included, as
the linker lays it out. Left out: the verification harness's embedded input
vectors (`tinyaot_harness_inputs`, harness_data.c), which a product image
does not carry, with the alignment fill after them (whose size depends on how
many vectors the firmware embeds): a firmware with one input and one with 64
give the same figure.

The map file (-Wl,-Map, written by every firmware build, driver/firmware.py)
lists each output section with its address and size (and its load address
when that differs), then the input sections in it with their object file.
Kernels come from the build's static library and show as
libtinyaot.a(<kernel>.o). The figure is split into

  code     model     <name>.o's code (<name>_run/_invoke, unrolled layers)
           kernels   runtime_c kernels' code
           support   board startup, semihosting, timer, harness main and
                     data, and alignment padding between sections
           libraries libc / libgcc / libm (code and their constants)
  weights  the model's l<i>_w* constants (int8 as in the model, packed,
           unrolled nonzeros, in fewer bits)
  tables   every other constant of the model and the kernels' constant data

so code + weights + tables == total. tests/firmware/test_flash_image.py checks the
total against `arm-none-eabi-size -A` and the weights against `nm`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..kernels.fc_float_unrolled import FUNCTION_RE

KERNEL_LIBRARY = "libtinyaot.a"  # driver/firmware.py archives the runtime kernels
HARNESS_INPUTS = "tinyaot_harness_inputs"  # backend's emit_harness_data: the golden inputs

_OUT_RE = re.compile(r"^([.\w$]+)(?:\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)(?:\s+load address 0x([0-9a-f]+))?)?\s*$")
_OUT_CONT_RE = re.compile(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)(?:\s+load address 0x([0-9a-f]+))?\s*$")
_IN_RE = re.compile(r"^ ([.\w$]+|COMMON)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
_IN_NAME_RE = re.compile(r"^ ([.\w$]+|COMMON)$")
_REGION_RE = re.compile(r"^(\S+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)")
_LAYER_SYM_RE = re.compile(r"^l(\d+)_(\w+)$")

# Output sections that never occupy target memory (no ALLOC flag).
_NOT_ALLOCATED = (".comment", ".debug", ".ARM.attributes", ".stab", ".gnu.attributes",
                  ".gnu_debuglink", ".note.GNU-stack")
# Input sections that occupy no bytes of the image (NOBITS).
_NOBITS = (".bss", "COMMON", ".noinit")


@dataclass
class InputSection:
    name: str
    address: int
    size: int
    obj: str


@dataclass
class OutputSection:
    name: str
    address: int
    size: int
    load_address: int | None = None
    inputs: list = field(default_factory=list)


@dataclass
class LinkMap:
    regions: dict  # name -> (origin, length), from "Memory Configuration"
    sections: list  # OutputSection, in map order


def parse_map(text):
    """The map file of a GNU ld link -> LinkMap (regions and output sections
    with their non-empty input sections)."""
    regions = {}
    mem = text.find("Memory Configuration")
    script = text.find("Linker script and memory map")
    if mem >= 0:
        for line in text[mem:script if script > mem else None].splitlines()[1:]:
            m = _REGION_RE.match(line)
            if m and m.group(1) not in ("Name", "*default*"):
                regions[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16))
    sections, cur, pending_out, pending_in = [], None, None, None
    for line in (text[script:] if script >= 0 else "").splitlines()[1:]:
        if pending_out is not None:  # a long output section name: numbers on the next line
            m = _OUT_CONT_RE.match(line)
            if m:
                cur = OutputSection(pending_out, int(m.group(1), 16), int(m.group(2), 16),
                                    int(m.group(3), 16) if m.group(3) else None)
                sections.append(cur)
            pending_out = None
            continue
        if pending_in is not None:  # a long input section name: numbers on the next line
            line = pending_in + " " + line.strip()
            pending_in = None
        if line[:1] not in ("", " ", "*") and not line.startswith(("LOAD ", "START GROUP",
                                                                    "END GROUP", "OUTPUT(")):
            m = _OUT_RE.match(line)
            if m:
                if m.group(2) is None:
                    pending_out = m.group(1)
                else:
                    cur = OutputSection(m.group(1), int(m.group(2), 16), int(m.group(3), 16),
                                        int(m.group(4), 16) if m.group(4) else None)
                    sections.append(cur)
                continue
        if _IN_NAME_RE.match(line):
            pending_in = line.rstrip()
            continue
        m = _IN_RE.match(line)
        if m and cur is not None and int(m.group(3), 16):
            cur.inputs.append(InputSection(m.group(1), int(m.group(2), 16), int(m.group(3), 16),
                                           m.group(4).strip()))
    return LinkMap(regions, sections)


def _in(addr, origin, length):
    return addr is not None and origin <= addr < origin + length


def flash_sections(lm, origin, length):
    """The output sections that put bytes into flash [origin, origin + length):
    allocated ones placed there, and the load image of those that only load
    from there (.data)."""
    out = []
    for s in lm.sections:
        if s.size == 0 or s.name.startswith(_NOT_ALLOCATED):
            continue
        if _in(s.address, origin, length):
            out.append(s)
        elif _in(s.load_address, origin, length) and not all(
                i.name.startswith(_NOBITS) for i in s.inputs):
            out.append(s)  # .data: runs from RAM, stored in flash
    return out


def _is_weight(suffix):
    """l<i>_w (int8 weights as in the model), l<i>_wp (packed for the fast kernels),
    l<i>_wu (an unrolled float FC's nonzero weights, kernels/fc_float_unrolled.py) and
    l<i>_wb, l<i>_wo (a size build's weights in fewer bits and their outliers,
    kernels/bits_pack.py)."""
    return suffix in ("w", "wp", "wu", "wb", "wo") or suffix.startswith("w_")


def _is_code(section):
    return section.startswith((".text", ".glue_7", ".vfp11_veneer", ".v4_bx"))


def flash_image(map_text, model_name, flash_origin, flash_size):
    """The image's flash, split as the module docstring says: a dict with
    total, code, weights, tables, code_split {model, kernels, support,
    libraries}, model_run_code, unrolled_code, per_layer {i: {weights,
    tables}}, per_kernel {kernel: code bytes}, harness_inputs (left out)."""
    lm = parse_map(map_text)
    split = {"model": 0, "kernels": 0, "support": 0, "libraries": 0}
    res = {"weights": 0, "tables": 0, "model_run_code": 0, "unrolled_code": 0,
           "per_layer": {}, "per_kernel": {}, "harness_inputs": 0}
    total = 0
    model_obj = f"{model_name}.o"
    for s in flash_sections(lm, flash_origin, flash_size):
        total += s.size
        split["support"] += s.size - sum(i.size for i in s.inputs)  # alignment padding
        ends = [j.address for j in s.inputs[1:]] + [s.address + s.size]
        for i, end in zip(s.inputs, ends):
            archive, _, member = i.obj.partition("(")
            sym = i.name.split(".")[-1]
            if not member and Path(archive).name == model_obj:
                if _is_code(i.name):
                    split["model"] += i.size
                    # weight-specialized layers (l<i>_fc_unrolled) apart from <name>_run
                    res["unrolled_code" if FUNCTION_RE.search(i.name) else "model_run_code"] += i.size
                    continue
                m = _LAYER_SYM_RE.match(sym)
                kind = "weights" if m and _is_weight(m.group(2)) else "tables"
                res[kind] += i.size
                if m:
                    per = res["per_layer"].setdefault(int(m.group(1)), {"weights": 0, "tables": 0})
                    per[kind] += i.size
            elif member and Path(archive).name == KERNEL_LIBRARY:
                if _is_code(i.name):
                    split["kernels"] += i.size
                    k = Path(member.rstrip(")")).stem
                    res["per_kernel"][k] = res["per_kernel"].get(k, 0) + i.size
                else:
                    res["tables"] += i.size
            elif member or archive.endswith(".a"):
                split["libraries"] += i.size
            elif sym == HARNESS_INPUTS:
                fill = max(end - (i.address + i.size), 0)
                res["harness_inputs"] += i.size + fill
                total -= i.size + fill
                split["support"] -= fill
            else:
                split["support"] += i.size
    res["code"] = sum(split.values())
    res["code_split"] = split
    res["total"] = total
    assert res["code"] + res["weights"] + res["tables"] == total, res
    return res


def board_flash_image(map_path, board, model_name):
    """flash_image of a firmware's map file on `board` (its flash_origin / flash_size)."""
    return flash_image(Path(map_path).read_text(), model_name, int(board["flash_origin"]),
                       int(board["flash_size"]))


def describe(f):
    """'101988 B  (code 90252 B: model 368, kernels 87788, support 1624, libc/libgcc 472;
    weights 3872 B, tables 7864 B)'."""
    s = f["code_split"]
    return (f"{f['total']} B  (code {f['code']} B: model {s['model']}, kernels {s['kernels']}, "
            f"support {s['support']}, libc/libgcc {s['libraries']}; weights {f['weights']} B, "
            f"tables {f['tables']} B)")
