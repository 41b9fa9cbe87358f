"""`tinyaot report`: per-layer table and memory totals from a real build.

Per layer: op, kernel, shapes, MACs, weight bytes (what the emitter wrote),
flash of its constants (from the link), arena offset and lifetime (the plan).
Totals: arena; flash split into code / weights / tables from the map file of
a real firmware link (driver/linkmap.py); worst-case stack from -fstack-usage
over the call graph of the linked ELF (driver/stack.py).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

from ..compiler import compile_model
from ..errors import TinyAotError
from ..targets.boards import board_or_error
from .budget import budget_of
from .firmware import DEBUG_C_DIR, Variant, build_compiled, private_dir, zero_point_records
from .linkmap import flash_image
from .toolchain import require_tools
from .stack import call_graph, model_entry, su_table, worst_stack


def _zero_records(c):
    """One input record of zero bytes (every graph input, quantized)."""
    return np.zeros_like(zero_point_records(c))


def measure_stack(c, board, paint=16384):
    """Stack bytes <name>_run really used (through tinyaot_harness_run) on
    QEMU, by painting the stack (codegen/driver/c/stack_main.c)."""
    from ..targets.qemu import QemuError, run_firmware
    if paint + 1024 > int(board.get("stack_size", 0)):
        paint = max(1024, int(board.get("stack_size", 0)) - 1024)
    out_dir = private_dir(c, f"stack-{board['name']}")
    try:
        elf = build_compiled(c, board, out_dir, _zero_records(c), Variant(
            "stack", main=str(DEBUG_C_DIR / "stack_main.c"),
            defines=(f"TINYAOT_STACK_PAINT={paint}u",), include_dirs=(str(DEBUG_C_DIR),))).elf
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
    require_tools(b, run=measure)
    c = compiled or compile_model(model, numerics=numerics)
    g = c.graph
    out_dir = keep_dir or private_dir(c, f"report-{board}")
    fit = None
    try:
        zeros = _zero_records(c)
        if part:  # the part's startup, linker script and part_main.c (the model once)
            fw, flash_span = _part_firmware(c, b, out_dir, zeros)
        else:
            # the verification firmware (one zero input), without its stack check:
            # the report shows the stack whether it fits or not
            fw = build_compiled(c, b, out_dir, zeros, Variant("report"))
            flash_span = int(b["flash_size"])
        elf, map_path, obj_dir = fw.elf, fw.map, fw.obj_dir
        from ..targets.qemu import firmware_size
        flash = flash_image(Path(map_path).read_text(), c.module.name, int(b["flash_origin"]),
                            flash_span)
        su = su_table(obj_dir)
        funcs = call_graph(elf, b)
        stack, path, notes = worst_stack(model_entry(c.module.name, funcs), funcs, su)
        fw_stack, fw_path, fw_notes = worst_stack("main", funcs, su)
        size = firmware_size(elf, b)
        if part:
            from ..targets.parts import fit_verdict, static_ram
            fit = fit_verdict(b, flash["total"], static_ram(elf, b), fw_stack)
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
            # weights and tables copied into free arena bytes before the layer runs
            # (planner/staged_weights.py): read from RAM, not flash
            "staged_bytes": li.get("staged_bytes", 0),
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
        "float_fallback": c.report.get("float_fallback", []),
        "totals": {
            "macs": sum(x["macs"] for x in layers),
            "arena_bytes": c.plan.size, "arena_lower_bound_bytes": c.plan.lower_bound,
            "staged_bytes": sum(x["staged_bytes"] for x in layers),
            "staged_layers": sum(1 for x in layers if x["staged_bytes"]),
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


def _part_firmware(c, b, out_dir, zeros):
    """A build-only part's image: linked with its own linker script; when the
    model does not fit, linked again in roomier regions (the same layout) so that
    the report can say by how much. Returns (Firmware, the flash span to count)."""
    from ..targets.parts import (MEASURING_BYTES, link_overflowed, measuring_board,
                                 part_main_defines)
    defines = tuple(part_main_defines(c.module.name))
    try:
        return build_compiled(c, b, out_dir, zeros, Variant("part", defines=defines)), \
            int(b["flash_size"])
    except TinyAotError as e:
        if not link_overflowed(str(e)):
            raise
    roomy = measuring_board(b, out_dir)["linker_script"]
    return build_compiled(c, b, out_dir, zeros, Variant(
        "part", defines=defines, board=(("linker_script", str(roomy)),))), MEASURING_BYTES


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
    cs = f["code_split"]
    st = t["stack"]
    lines = [
        f"arena        {t['arena_bytes']:,} B (lower bound {t['arena_lower_bound_bytes']:,} B)"
        + (f"; {t['staged_layers']} layers read {t['staged_bytes']:,} B of weights and tables "
           "from copies in its free bytes" if t.get("staged_bytes") else ""),
        f"flash        {f['total']:,} B = code {f['code']:,} B (run {f['model_run_code']:,} + "
        + (f"unrolled layers {f['unrolled_code']:,} + " if f.get("unrolled_code") else "")
        + f"kernels {cs['kernels']:,} + support {cs['support']:,} + libc/libgcc "
        f"{cs['libraries']:,}) + weights {f['weights']:,} B + tables {f['tables']:,} B",
        f"             (the linked image's flash; the harness's input data, "
        f"{f['harness_inputs']:,} B, left out)",
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
                     f"({100 * f['total'] / lim['flash_size']:.1f} %); RAM "
                     f"{ram_need:,} of {lim['ram_size']:,} B ({100 * ram_need / lim['ram_size']:.1f} %, "
                     f"arena + reserved stack)")
    for p in (t.get("cycles") or {}).get("parts", []):  # report --cycles (codegen/cycles)
        lines.append(f"cycles       {p['cycles']:,} on {p['name']} ({p['ms']:.3f} ms at "
                     f"{p['clock_hz'] / 1e6:g} MHz; modelled from documented timings)")
    tu = r.get("tuning")
    if tu:  # report --tuning FILE: each layer with a choice, its variant and why
        lines.append(f"tuning       {tu['record']}: the variant of each layer with a choice")
        for x in tu["layers"]:
            if len(x["candidates"]) > 1:
                lines.append(f"  #{x['index']:<3} {x['choice']:<5} {x['why']}")
    ff = r.get("float_fallback") or []
    if ff:  # frontend/float_fallback.py
        lines.append(f"float        {len(ff)} layer(s) run in float32 (float fallback): "
                     + ", ".join(f"#{x['index']} {x['onnx_op']} '{x['node']}'" for x in ff))
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
