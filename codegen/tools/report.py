"""`tinyaot report`: per-layer table and memory totals from a real build.

Per layer: op, kernel, shapes, MACs, weight bytes (what the emitter wrote),
flash of its constants (from the link), arena offset and lifetime (the plan).
Totals: arena; flash split into code / weights / tables from the map file of
a real firmware link (input sections by object file; weights are the
`l<i>_w` sections, tables every other constant of the model and the kernels'
read-only data); worst-case stack from -fstack-usage (.su, exact per
function as GCC allocated it) and the call graph of the linked ELF (every
direct call and tail call in the disassembly, so implicit libgcc calls count
too). Functions without a .su entry (libc, libgcc) are measured from their
prologue (push / vpush / sub sp), which is exact for the leaf routines they
are; indirect calls or recursion make the bound "unbounded".
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from ..backend.fc_float_unrolled import FUNCTION_RE
from ..build import board_or_error
from ..compiler import compile_model
from ..errors import TinyAotError
from .budget import budget_of
from .fwbuild import build_firmware, private_dir

_SEC_RE = re.compile(r"^ (\.[\w.$]+|COMMON)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
_LAYER_SYM_RE = re.compile(r"^l(\d+)_(\w+)$")


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
        name = Path(obj.split("(")[0]).name
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
        elif ".a(" in obj or obj.endswith(".a"):
            res["libraries"] += size
        else:
            res["board_and_harness"] += size
    res["total"] = res["code"] + res["weights"] + res["tables"]
    return res


def _su_table(obj_dir):
    su = {}
    for f in Path(obj_dir).glob("*.su"):
        for line in f.read_text().splitlines():
            parts = line.split("\t")
            if len(parts) >= 3:
                fn = parts[0].rsplit(":", 1)[-1]
                size = int(parts[1])
                # static functions of the same name in several files: keep the largest
                if fn not in su or su[fn][0] < size:
                    su[fn] = (size, parts[2])
    return su


_FN_RE = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
_CALL_RE = re.compile(r"\t(bl|blx|b|b\.w|b\.n)\t[0-9a-f]+ <([^>+]+)>")
_PUSH_RE = re.compile(r"\t(push|stmdb)(?:\.w)?\t(?:sp!, )?\{([^}]*)\}")
_VPUSH_RE = re.compile(r"\tvpush\t\{([^}]*)\}")
_SUB_RE = re.compile(r"\tsub(?:\.w|w)?\tsp, (?:sp, )?#(\d+)")
_INDIRECT_RE = re.compile(r"\tblx\t(r\d+|ip|lr)\b")


def _reg_count(lst):
    n = 0
    for part in lst.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-")
            n += int(re.sub(r"\D", "", b)) - int(re.sub(r"\D", "", a)) + 1
        elif part:
            n += 1
    return n


def call_graph(elf, board):
    """{function: {"callees": set, "frame": bytes from the prologue, "indirect": bool}}."""
    tool = board.get("toolchain_prefix", "") + "objdump"
    text = subprocess.run([tool, "-d", "--no-show-raw-insn", str(elf)], capture_output=True,
                          text=True, check=True).stdout
    funcs, cur = {}, None
    for line in text.splitlines():
        m = _FN_RE.match(line)
        if m:
            cur = funcs.setdefault(m.group(1), {"callees": set(), "frame": 0, "indirect": False,
                                                "prologue": True})
            continue
        if cur is None or not line.strip():
            continue
        if (m := _CALL_RE.search(line)) and m.group(2) != _name_of(cur, funcs):
            cur["callees"].add(m.group(2))
        if _INDIRECT_RE.search(line):
            cur["indirect"] = True
        if cur["prologue"]:
            if m := _PUSH_RE.search(line):
                cur["frame"] += 4 * _reg_count(m.group(2))
            elif m := _VPUSH_RE.search(line):
                regs = m.group(1)
                cur["frame"] += (8 if "d" in regs else 4) * _reg_count(regs)
            elif m := _SUB_RE.search(line):
                cur["frame"] += int(m.group(1))
                cur["prologue"] = False
    return funcs


def _name_of(entry, funcs):
    for k, v in funcs.items():
        if v is entry:
            return k
    return None


def worst_stack(root, funcs, su):
    """(bytes, path, notes): the deepest call chain from root."""
    notes = set()
    memo = {}

    def frame(fn):
        key = fn if fn in su else re.sub(r"\.\d+$", "", fn)  # objdump: f.constprop.0, .su: f.constprop
        if key in su:
            size, qual = su[key]
            if "dynamic" in qual and "bounded" not in qual:
                notes.add(f"{fn}: dynamic stack (not bounded)")
            return size
        return funcs.get(fn, {}).get("frame", 0)

    def visit(fn, stack):
        if fn in stack:
            notes.add(f"recursion through {fn}: unbounded")
            return 0, [fn]
        if fn in memo:
            return memo[fn]
        info = funcs.get(fn, {"callees": set(), "indirect": False})
        if info.get("indirect"):
            notes.add(f"{fn}: indirect call (its targets are not counted)")
        best, best_path = 0, []
        for callee in sorted(info["callees"]):
            s, p = visit(callee, stack | {fn})
            if s > best:
                best, best_path = s, p
        memo[fn] = (frame(fn) + best, [fn] + best_path)
        return memo[fn]

    total, path = visit(root, frozenset())
    return total, path, sorted(notes)


def measure_stack(c, board, paint=16384):
    """Stack bytes <name>_run really used (through tinyaot_harness_run) on
    QEMU, by painting the stack (codegen/tools/c/stack_main.c)."""
    from ..targets.qemu import QemuError, run_firmware
    from .fwbuild import C_DIR
    if paint + 1024 > int(board.get("stack_size", 0)):
        paint = max(1024, int(board.get("stack_size", 0)) - 1024)
    g = c.graph
    xin = g.tensors[g.inputs[0]]
    out_dir = private_dir(c, f"stack-{board['name']}")
    try:
        elf, _, _ = build_firmware(c, board, out_dir, np.zeros((1, xin.size), np.int8),
                                   C_DIR / "stack_main.c", defines=[f"TINYAOT_STACK_PAINT={paint}u"])
        try:
            res = run_firmware(elf, board, timeout=600)
        except QemuError as e:
            raise TinyAotError(f"firmware run failed on {board['name']}: {e}") from None
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    m = re.search(r"^STACK (\d+)$", res.output, re.M)
    if not m:
        raise TinyAotError("stack-measuring firmware printed no STACK line")
    used = int(m.group(1))
    return {"measured_bytes": used, "painted_bytes": paint, "overflowed_paint": used >= paint}


def report_model(model, board="qemu-m4", numerics="ort", compiled=None, keep_dir=None,
                 measure=False):
    b = board_or_error(board)
    if b["kind"] not in ("firmware", "part"):
        raise TinyAotError(f"report needs a firmware board or a part for flash and stack (e.g. "
                           f"qemu-m4, nrf52840), not '{board}'")
    part = b["kind"] == "part"
    if part and measure:
        raise TinyAotError(f"--measure-stack runs the model in QEMU: {board} is a build-only part "
                           f"(measure on {b.get('runs_on')}, the QEMU board with its core)")
    c = compiled or compile_model(model, numerics=numerics)
    g = c.graph
    xin = g.tensors[g.inputs[0]]
    out_dir = keep_dir or private_dir(c, f"report-{board}")
    try:
        zeros = np.zeros((1, xin.size), np.int8)
        if part:  # the part's startup and linker script, a main() that runs the model once
            from ..targets.parts import link_overflowed, measuring_board, part_main_defines
            defines = part_main_defines(c.module.name)
            try:
                elf, map_path, obj_dir = build_firmware(c, b, out_dir, zeros, b["harness_main"],
                                                        defines=defines, analysis=True)
            except TinyAotError as e:
                if not link_overflowed(str(e)):
                    raise
                # too big for the part: link it again in roomier regions to say by how much
                elf, map_path, obj_dir = build_firmware(c, measuring_board(b, out_dir), out_dir,
                                                        zeros, b["harness_main"], defines=defines,
                                                        analysis=True)
        else:
            elf, map_path, obj_dir = build_firmware(c, b, out_dir, zeros, b["harness_main"],
                                                    analysis=True)
        from ..paths import runtime_sources
        from ..targets.qemu import firmware_size
        kernel_objs = {p.stem + ".o" for p in runtime_sources()}
        flash = flash_breakdown(Path(map_path).read_text(), f"/{c.module.name}.o", kernel_objs)
        su = _su_table(obj_dir)
        funcs = call_graph(elf, b)
        from .stack_check import model_entry
        stack, path, notes = worst_stack(model_entry(c.module.name, funcs), funcs, su)
        fw_stack, fw_path, fw_notes = worst_stack("main", funcs, su)
        size = firmware_size(elf, b)
        fit = None
        if part:
            from ..targets.parts import fit_verdict, image_extent
            ext = image_extent(elf, b)
            fit = fit_verdict(b, ext["flash"], ext["ram"], fw_stack)
    finally:
        if not keep_dir:
            shutil.rmtree(out_dir, ignore_errors=True)
    layers = []
    for li in c.module.layers:
        n = g.nodes[li["index"]]
        blk = c.plan.where.get(n.outputs[0])
        per = flash["per_layer"].get(li["index"], {"weights": 0, "tables": 0})
        layers.append({
            "index": li["index"], "op": li["op"], "name": li["name"], "kernel": li["kernel"],
            "inputs": [list(g.tensors[i].shape) for i in n.inputs if i and not g.tensors[i].is_const],
            "output": list(g.tensors[n.outputs[0]].shape),
            "macs": li["macs"], "weight_bytes": li["weight_bytes"],
            "flash_weights": per["weights"], "flash_tables": per["tables"],
            "arena_offset": (blk.offset if blk is not None and not blk.external else None),
            "buffer": (blk.external if blk is not None and blk.external else "arena"),
            "bytes": g.tensors[n.outputs[0]].nbytes,
            "lifetime": [blk.first, blk.last] if blk is not None else None,
        })
    need = budget_of(c, b)
    ram_total = c.plan.size + stack
    measured = measure_stack(c, b) if measure else None
    return {
        "model": str(model), "name": c.module.name, "board": board, "numerics": c.numerics,
        "optimize": c.report.get("optimize", "speed"), "layers": layers,
        "totals": {
            "macs": sum(x["macs"] for x in layers),
            "arena_bytes": c.plan.size, "arena_lower_bound_bytes": c.plan.lower_bound,
            "flash": {k: v for k, v in flash.items() if k not in ("per_layer",)},
            "stack": {"worst_case_bytes": stack, "path": path, "notes": notes,
                      "firmware_worst_case_bytes": fw_stack, "firmware_path": fw_path,
                      "reserved_bytes": need["ram"]["stack"], "measured": measured},
            "ram_model_bytes": ram_total,
            "firmware": size,
            "board_limits": {"flash_size": b.get("flash_size"), "ram_size": b.get("ram_size"),
                             "stack_size": b.get("stack_size")},
            **({"part_fit": fit} if fit else {}),
        },
    }


REPORT_HEADER = ["#", "op", "kernel", "output", "MACs", "weights", "arena off", "bytes", "life"]


def report_rows(r):
    rows = []
    for x in r["layers"]:
        off = str(x["arena_offset"]) if x["arena_offset"] is not None else x["buffer"]
        life = f"{x['lifetime'][0]}-{x['lifetime'][1]}" if x["lifetime"] else "-"
        rows.append([str(x["index"]), x["op"], str(x["kernel"])[:31], "x".join(map(str, x["output"])),
                     f"{x['macs']:,}", f"{x['weight_bytes']:,}", off, str(x["bytes"]), life])
    return rows


def report_title(r):
    return (f"report {r['name']} for {r['board']} (numerics {r['numerics']}, "
            f"optimize {r.get('optimize', 'speed')})")


def format_report(r):
    return "\n".join(_report_table_lines(r) + report_totals(r))


def print_report_table(r):
    from .console import print_table
    print_table(format_report(r), report_title(r), REPORT_HEADER, report_rows(r),
                right=(0, 4, 5, 6, 7, 8), footer=report_totals(r))


def _report_table_lines(r):
    lines = [report_title(r),
             f"{'#':>3}  {'op':<15} {'kernel':<31} {'output':<12} {'MACs':>9} {'weights':>8} "
             f"{'arena off':>9} {'bytes':>6} {'life':>7}"]
    for c in report_rows(r):
        lines.append(f"{c[0]:>3}  {c[1]:<15} {c[2]:<31} {c[3]:<12} {c[4]:>9} {c[5]:>8} "
                     f"{c[6]:>9} {c[7]:>6} {c[8]:>7}")
    return lines


def report_totals(r):
    """The lines under the per-layer table."""
    t = r["totals"]
    f = t["flash"]
    st = t["stack"]
    lines = [
        f"arena        {t['arena_bytes']:,} B (lower bound {t['arena_lower_bound_bytes']:,} B)",
        f"flash        {f['total']:,} B = code {f['code']:,} B (run {f['model_run_code']:,} + "
        + (f"unrolled layers {f['unrolled_code']:,} + " if f.get("unrolled_code") else "")
        + f"kernels {f['kernel_code']:,}) + weights {f['weights']:,} B + tables {f['tables']:,} B",
        f"             (firmware also has board/harness {f['board_and_harness']:,} B, "
        f"libc/libgcc {f['libraries']:,} B)",
        f"stack        {st['worst_case_bytes']:,} B worst case for {r['name']}_run: "
        f"{' -> '.join(st['path'])}",
        *([f"             measured on {r['board']} by stack painting: "
           f"{st['measured']['measured_bytes']:,} B"] if st.get("measured") else []),
        f"RAM          {t['ram_model_bytes']:,} B (arena + worst-case stack); board reserves "
        f"{st['reserved_bytes']:,} B of stack",
        f"MACs         {t['macs']:,}",
    ]
    lim = t["board_limits"]
    if t.get("part_fit"):  # a build-only part: the whole linked image against its memory
        lines += part_fit_lines(r["board"], t["part_fit"])
    elif lim.get("flash_size") and lim.get("ram_size"):
        ram_need = t["arena_bytes"] + st["reserved_bytes"]
        lines.append(f"board        flash {f['total']:,} of {lim['flash_size']:,} B "
                     f"({100 * f['total'] / lim['flash_size']:.1f} %, model only); RAM "
                     f"{ram_need:,} of {lim['ram_size']:,} B ({100 * ram_need / lim['ram_size']:.1f} %, "
                     f"arena + reserved stack)")
    for p in (t.get("cycles") or {}).get("parts", []):  # report --cycles (codegen/cycles)
        lines.append(f"cycles       {p['cycles']:,} on {p['name']} ({p['ms']:.3f} ms at "
                     f"{p['clock_hz'] / 1e6:g} MHz; modelled from documented timings)")
    for n in st["notes"]:
        lines.append(f"  note: {n}")
    return lines


def part_fit_lines(board, fit):
    """`report --board PART`: fits or not, against the part's real flash and RAM."""
    f = fit
    verdict = "fits" if f["fits"] else "does NOT fit (" + "; ".join(f["problems"]) + ")"
    return [f"{board:<12} {verdict}: image flash {f['flash_bytes']:,} of {f['flash_size']:,} B "
            f"({100 * f['flash_bytes'] / f['flash_size']:.1f} %), RAM {f['ram_bytes']:,} of "
            f"{f['ram_size']:,} B ({100 * f['ram_bytes'] / f['ram_size']:.1f} %: .data + .bss "
            f"{f['static_ram_bytes']:,} B with the arena, stack {f['stack_reserved_bytes']:,} B "
            "reserved)"]
