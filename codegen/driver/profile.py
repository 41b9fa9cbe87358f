"""Per-layer instruction counts on a QEMU board (`tinyaot profile`).

The model is emitted with TINYAOT_PROFILE(i) after every layer; the hook
stores the board timer (tinyaot_timer_read) and codegen/driver/c/profile_main.c
prints the stamps after one inference. Under QEMU with -icount shift=0 the
timer counts virtual nanoseconds = instructions, so the counts are
deterministic; the resolution is one timer tick (board.toml
instructions_per_tick). Each hook (one timer read and a store) costs a few
instructions, charged to the next layer; tests/driver/test_budgets_and_tool_commands.py
checks the per-layer sum against the hook-free firmware's whole-inference count.
"""
from __future__ import annotations

import re
import shutil

import numpy as np

from ..compiler import compile_model
from ..errors import TinyAotError
from ..targets.boards import board_or_error
from .firmware import (DEBUG_C_DIR, Variant, build_compiled, harness_layout_of, private_dir,
                       zero_point_records)
from .validate import with_hooks

_PROF_RE = re.compile(r"^PROF (\d+) (\d+) (\d+)$")
_STAMP_RE = re.compile(r"^STAMP (\d+) (\d+)$")


def _default_input(c):
    """Every graph input at its zero point (one record, firmware.zero_point_records)."""
    return zero_point_records(c)


def profile_model(model, board="qemu-m4", numerics="ort", inputs=None, compiled=None,
                  cycles=False, parts=None):
    """Instructions per layer; with cycles=True also the cycle model's cycles per
    layer and per inference for the board's parts (codegen/cycles; `parts`:
    names, default all of the board's)."""
    b = board_or_error(board)
    if b["kind"] == "part":  # build-only: its flags on the QEMU board with its core, its part's cycles
        from ..targets.parts import timing_board
        parts, cycles, b = parts or [b["part"]], True, timing_board(b)
    elif b["kind"] != "firmware":
        raise TinyAotError(f"profile needs a QEMU board (timer and -icount), not '{board}'")
    from .toolchain import require_tools
    require_tools(b)
    c = with_hooks(compiled or compile_model(model, numerics=numerics))
    g = c.graph
    x = _default_input(c) if inputs is None else np.asarray(inputs, dtype=np.int8)[:1].reshape(1, -1)
    need = harness_layout_of(c).input_size  # every graph input, quantized, in one record
    if x.shape[1] != need:
        raise TinyAotError(f"input must have {need} values", model=str(model))
    n = len(g.nodes)
    selected = None
    if cycles:
        from ..cycles import select_parts
        selected = select_parts(b, parts)  # a bad --part fails before any build
    out_dir = private_dir(c, f"profile-{board}")
    try:
        from ..targets.qemu import QemuError, run_firmware
        from ..targets.parts import build_overrides
        elf = build_compiled(c, b, out_dir, x, Variant(
            "profile", main=str(DEBUG_C_DIR / "profile_main.c"),
            defines=('TINYAOT_HOOKS_HEADER="tinyaot_hooks_fw.h"', "TINYAOT_WANT_PROFILE",
                     f"TINYAOT_PROFILE_LAYERS={n}"),
            include_dirs=(str(DEBUG_C_DIR),), board=build_overrides(b))).elf
        if cycles:
            from ..cycles import run_cycles
            crun = run_cycles(elf, b, selected, call="tinyaot_harness_run",
                              mark="tinyaot_profile_stamps", marks=n)
            output = crun.output
        else:
            try:
                output = run_firmware(elf, b, timeout=600).output
            except QemuError as e:
                raise TinyAotError(f"firmware run failed on {board}: {e}") from None
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    prof, stamps = None, {}
    for line in output.splitlines():
        line = line.strip()
        if m := _PROF_RE.match(line):
            prof = tuple(int(v) for v in m.groups())
        elif m := _STAMP_RE.match(line):
            stamps[int(m.group(1))] = int(m.group(2))
    if prof is None or len(stamps) != n:
        raise TinyAotError(f"profiling firmware printed no complete profile on {board}")
    _, t0, t1 = prof
    ipt = int(b["instructions_per_tick"])
    layers_info = {li["index"]: li for li in c.module.layers}
    rows, prev = [], t0
    for i, node in enumerate(g.nodes):
        ticks = (stamps[i] - prev) & 0xFFFFFFFF
        prev = stamps[i]
        li = layers_info.get(i, {})
        rows.append({"index": i, "op": node.op, "name": node.name, "kernel": li.get("kernel"),
                     "ticks": ticks, "instructions": ticks * ipt, "macs": int(li.get("macs", 0))})
    total_ticks = (t1 - t0) & 0xFFFFFFFF
    total = total_ticks * ipt
    for r in rows:
        r["mac_per_instruction"] = round(r["macs"] / r["instructions"], 4) if r["instructions"] else None
        r["share"] = round(r["instructions"] / total, 6) if total else 0.0
    out = {"model": str(model), "name": c.module.name, "board": board, "numerics": c.numerics,
           "optimize": c.report.get("optimize", "speed"), "instructions_per_tick": ipt, "resolution_instructions": ipt,
           "total_ticks": total_ticks, "total_instructions": total,
           "layers_instructions": sum(r["instructions"] for r in rows),
           "macs": sum(r["macs"] for r in rows), "layers": rows}
    if b.get("timed_part"):
        out["timed_on"] = b["name"]
    if cycles:
        from ..cycles.layers import attach_cycles
        attach_cycles(out, crun)
    return out


PROFILE_HEADER = ["#", "op", "kernel", "instructions", "MACs", "MAC/instr", "share"]


def profile_header(r):
    return PROFILE_HEADER + [f"cycles {p['name']}" for p in (r.get("cycles") or {}).get("parts", [])]


def profile_title(r):
    on = f"{r['board']}, timed on {r['timed_on']}" if r.get("timed_on") else r["board"]
    return (f"profile {r['name']} on {on} (numerics {r['numerics']}, optimize "
            f"{r.get('optimize', 'speed')}; resolution "
            f"{r['resolution_instructions']} instructions = 1 timer tick)")


def profile_rows(r):
    rows = []
    for x in r["layers"]:
        mpi = f"{x['mac_per_instruction']:.3f}" if x["mac_per_instruction"] is not None else "-"
        rows.append([str(x["index"]), x["op"], str(x["kernel"])[:32], f"{x['instructions']:,}",
                     f"{x['macs']:,}", mpi, f"{100 * x['share']:.1f}%"]
                    + [f"{x['cycles'][p['name']]:,}" for p in cyc_parts(r)])
    tot = r["total_instructions"]
    rows.append(["", "total", "", f"{tot:,}", f"{r['macs']:,}",
                 f"{r['macs'] / tot if tot else 0:.3f}", "100.0%"]
                + [f"{p['cycles']:,}" for p in cyc_parts(r)])
    return rows


def cyc_parts(r):
    return (r.get("cycles") or {}).get("parts", [])


def cycles_footer(r):
    """Per-inference cycles and milliseconds of each part, and what they are."""
    if not r.get("cycles"):
        return []
    lines = [f"cycles per inference ({r['cycles']['instructions']:,} instructions, core "
             f"{r['cycles']['core']}; an estimate from documented timings, not a measurement):"]
    for p in cyc_parts(r):
        lines.append(f"  {p['name']:<10} {p['cycles']:>12,} cycles  {p['ms']:10.3f} ms at "
                     f"{p['clock_hz'] / 1e6:g} MHz  (flash stalls: fetch {p['ifetch_stall']:,}, "
                     f"data {p['data_stall']:,})")
    return lines


def format_profile(r):
    rows = profile_rows(r)
    extra = "".join(f" {h:>16}" for h in profile_header(r)[len(PROFILE_HEADER):])
    lines = [profile_title(r),
             f"{'#':>3}  {'op':<16} {'kernel':<32} {'instructions':>12} {'MACs':>10} {'MAC/instr':>9} {'share':>7}"
             + extra]
    for c in rows[:-1]:
        lines.append(f"{c[0]:>3}  {c[1]:<16} {c[2]:<32} {c[3]:>12} {c[4]:>10} {c[5]:>9} {c[6]:>7}"
                     + "".join(f" {v:>16}" for v in c[7:]))
    c = rows[-1]
    lines.append(f"     {c[1]:<16} {c[2]:<32} {c[3]:>12} {c[4]:>10} {c[5]:>9}  {c[6]}"
                 + "".join(f" {v:>16}" for v in c[7:]))
    return "\n".join(lines + cycles_footer(r))


def print_profile(r):
    from .console import print_table
    hdr = profile_header(r)
    print_table(format_profile(r), profile_title(r), hdr, profile_rows(r),
                right=(0, 3, 4, 5, 6) + tuple(range(7, len(hdr))), total_row=True,
                **({"footer": cycles_footer(r)} if r.get("cycles") else {}))
