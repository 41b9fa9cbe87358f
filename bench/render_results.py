#!/usr/bin/env python3
"""Write docs/results.md from the bench's own output, never by hand.

    python3 bench/render_results.py           # rewrite docs/results.md
    python3 bench/render_results.py --check   # exit 1 if docs/results.md is stale

Reads bench/results.json (`tinyaot bench`) and, when it exists,
bench/size/results.json (`tinyaot bench --optimize size`). Standalone on
purpose: the standard library only, no import of the compiler, so the page
depends on the measured rows alone (tests/driver/test_docs.py checks that the
committed page is what this script makes of them).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEED_JSON = REPO / "bench" / "results.json"
SIZE_JSON = REPO / "bench" / "size" / "results.json"
PAGE = REPO / "docs" / "results.md"
# at most half of TFLite Micro + CMSIS-NN's instructions (tests/firmware/test_instruction_counts.py)
TARGET = 0.5


def n(v):
    """An integer with thousands separators, a float as written, None as '-'."""
    if v is None:
        return "-"
    return f"{v:,}" if isinstance(v, int) else str(v)


def ratio(a, b, digits=2):
    return "-" if a is None or not b else f"{a / b:.{digits}f}"


def exact(r):
    return (f"{r['vectors']} (all bit-exact)" if r["mismatches"] == 0
            else f"{r['vectors']} ({r['mismatches']:,} elements differ)")


def flash(r):
    """The linked image's flash (the one figure: driver/linkmap.py) and its split."""
    if r.get("flash_bytes") is None:
        return "-"
    return (f"{r['flash_bytes']:,} ({r['flash_code']:,} / {r['flash_weights']:,} / "
            f"{r['flash_tables']:,})")


def compared(rows):
    """Rows that have a TFLite Micro + CMSIS-NN measurement to compare with."""
    return [r for r in rows if r.get("tflm_cmsis_nn_instructions") and r.get("instructions")]


def label(r):
    return f"{r['model']} `{r['numerics']}`"


def tflm_ranges(rows):
    """'ort 0.43x (kws01) to 0.50x (ad01); tflite ...': the ratio's range per numerics."""
    parts = []
    for num in sorted({r["numerics"] for r in rows}):
        rs = sorted((r for r in rows if r["numerics"] == num),
                    key=lambda r: r["instructions"] / r["tflm_cmsis_nn_instructions"])
        lo, hi = rs[0], rs[-1]
        parts.append(f"`{num}` {ratio(lo['instructions'], lo['tflm_cmsis_nn_instructions'], 3)}x "
                     f"({lo['model']}) to "
                     f"{ratio(hi['instructions'], hi['tflm_cmsis_nn_instructions'], 3)}x ({hi['model']})")
    return "; ".join(parts)


def speed_summary(rows):
    out = []
    bad = [r for r in rows if r["mismatches"]]
    vec = sum(r["vectors"] for r in rows)
    if bad:
        out.append(f"* Golden vectors: {len(bad)} of {len(rows)} runs differ: "
                   + ", ".join(f"{label(r)} ({r['mismatches']:,} elements)" for r in bad) + ".")
    else:
        out.append(f"* Golden vectors: all {vec:,} vectors of the {len(rows)} runs bit-exact.")
    cmp = compared(rows)
    if cmp:
        over = [r for r in cmp if r["instructions"] / r["tflm_cmsis_nn_instructions"] > TARGET]
        out.append(
            f"* Instructions against TFLite Micro + CMSIS-NN ({len(cmp)} runs of "
            f"{len({r['model'] for r in cmp})} models): {tflm_ranges(cmp)}; "
            + (f"every run is at or below the {TARGET}x target." if not over else
               f"above the {TARGET}x target: " + ", ".join(label(r) for r in over) + "."))
        arena = [r for r in cmp if r.get("tflm_arena_bytes")]
        larger = [r for r in arena if r["arena_bytes"] > r["tflm_arena_bytes"]]
        if arena:
            out.append(
                f"* Arena against TFLite Micro's `arena_used_bytes`: smaller or equal in "
                f"{len(arena) - len(larger)} of {len(arena)} runs"
                + ("." if not larger else "; larger in " + ", ".join(
                    f"{label(r)} ({r['arena_bytes']:,} B against {r['tflm_arena_bytes']:,} B)"
                    for r in larger) + "."))
    above = [r for r in rows if r["arena_lower_bound"] is not None
             and r["arena_bytes"] > r["arena_lower_bound"]]
    out.append("* Arena against its lower bound: "
               + ("equal in every run." if not above else
                  f"equal in {len(rows) - len(above)} of {len(rows)} runs; above it in "
                  + ", ".join(f"{label(r)} ({r['arena_bytes']:,} B, bound "
                              f"{r['arena_lower_bound']:,} B)" for r in above) + "."))
    return out


def speed_table(rows):
    head = ["model", "numerics", "vectors", "instructions", "MACs", "MAC/instr",
            "TFLM+CMSIS-NN instr", "ratio", "arena B (lower bound)", "TFLM arena B",
            "flash B (code / weights / tables)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join([
            r["model"], r["numerics"], exact(r), n(r["instructions"]), n(r["macs"]),
            n(r["mac_per_instruction"]), n(r["tflm_cmsis_nn_instructions"]),
            n(r["ratio_to_tflm"]), f"{n(r['arena_bytes'])} ({n(r['arena_lower_bound'])})",
            n(r["tflm_arena_bytes"]), flash(r)]) + " |")
    return lines


def size_section(speed, size):
    by = {(r["model"], r["numerics"], r["board"]): r for r in speed}
    pairs = [(by.get((r["model"], r["numerics"], r["board"])), r) for r in size]
    head = ["model", "numerics", "vectors", "speed flash B (code / weights / tables)",
            "size flash B (code / weights / tables)", "size/speed flash", "speed instructions",
            "size instructions", "size/speed instr", "size ratio to TFLM+CMSIS-NN",
            "arena B speed / size"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for sp, sz in pairs:
        def tot(r):
            return None if r is None else r.get("flash_bytes")
        lines.append("| " + " | ".join([
            sz["model"], sz["numerics"], exact(sz), flash(sp) if sp else "-", flash(sz),
            ratio(tot(sz), tot(sp)), n(sp["instructions"]) if sp else "-", n(sz["instructions"]),
            ratio(sz["instructions"], sp["instructions"] if sp else None, 1),
            n(sz["ratio_to_tflm"]),
            f"{n(sp['arena_bytes']) if sp else '-'} / {n(sz['arena_bytes'])}"]) + " |")
    summary = []
    bad = [r for r in size if r["mismatches"]]
    summary.append("* Golden vectors: " + (
        f"all {sum(r['vectors'] for r in size):,} vectors of the {len(size)} runs bit-exact." if not bad else
        f"{len(bad)} runs differ: " + ", ".join(label(r) for r in bad) + "."))
    cmp = compared(size)
    if cmp:
        summary.append(f"* Instructions against TFLite Micro + CMSIS-NN: {tflm_ranges(cmp)}.")
    return summary, lines


def side_by_side(rows):
    """TFLite Micro + CMSIS-NN priced by the same cycle model in the same bench run
    (rows with `cycle_model` and `tflm`, written by codegen/cycles/compare.py)."""
    both = [r for r in rows if r.get("cycle_model") and r.get("tflm")]
    if not both:
        return []
    head = ["model", "numerics", "instructions", "x TFLM", "cycles ideal", "x TFLM",
            "cycles STM32L4R5", "ms @120 MHz", "x TFLM", "flash image B", "x TFLM",
            "static RAM B", "x TFLM"]
    lines = ["## Side by side with TFLite Micro (cycle model)", "",
             "The same QEMU run prices tinyaot's firmware and TFLite Micro + CMSIS-NN's "
             "(`../shared/anchors/tflm_cmsisnn_m4`) with the cycle model: modelled cycles, an "
             "estimate from Arm's documented timings and the part's flash wait states, not a "
             "measurement (see [cycle-model.md](cycle-model.md)). Instructions here are the "
             "plugin's exact counts, the mean over the golden vectors.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in both:
        o, t = r["cycle_model"], r["tflm"]
        lines.append("| " + " | ".join([
            r["model"], r["numerics"], n(o["instructions"]), ratio(o["instructions"], t["instructions"]),
            n(o["cycles"].get("ideal")), ratio(o["cycles"].get("ideal"), t["cycles"].get("ideal")),
            n(o["cycles"].get("stm32l4r5")), n(o["ms"].get("stm32l4r5")),
            ratio(o["cycles"].get("stm32l4r5"), t["cycles"].get("stm32l4r5")),
            n(o["flash"]), ratio(o["flash"], t["flash"]), n(o["ram"]), ratio(o["ram"], t["ram"])])
            + " |")
    lines += ["", "TFLite Micro's own figures: " + "; ".join(
        f"{r['model']} {n(r['tflm']['instructions'])} instructions, "
        f"{n(r['tflm']['cycles'].get('ideal'))} / {n(r['tflm']['cycles'].get('stm32l4r5'))} cycles "
        f"(ideal / STM32L4R5), flash {n(r['tflm']['flash'])} B, static RAM {n(r['tflm']['ram'])} B"
        for r in both if r["numerics"] == both[0]["numerics"]) + ".", ""]
    return lines


COLUMNS = """\
Columns:

* **vectors**: golden vectors run, and whether every output element equals
  the golden file's (`outputs_onnxruntime` for `ort`, `outputs_tflm` for
  `tflite`; the repo's own models: `outputs`, which is onnxruntime's).
* **instructions**: one inference (`<name>_invoke`), counted by QEMU with
  `-icount shift=0` through the board timer, so the resolution is one timer
  tick (`instructions_per_tick` in the board's `board.toml`, 40 on qemu-m4);
  the largest over the vectors. The exact counts, to one instruction, are
  pinned in `tests/firmware/test_instruction_counts.py`.
* **MACs**: multiply-accumulates of the conv and fully connected layers.
* **TFLM+CMSIS-NN instr**, **TFLM arena B**: TFLite Micro with CMSIS-NN
  kernels on the same QEMU board (`arm-none-eabi-gcc -O2`, mps2-an386,
  `-icount shift=0`) and its minimal working arena, as the firmware prints it
  (`ARENA_SIZE`); the firmware is `../shared/anchors/tflm_cmsisnn_m4`, run in
  the same bench (the instructions are the cycle-model plugin's exact count,
  the mean over the vectors). **ratio**: instructions / TFLM+CMSIS-NN instructions.
* **arena B (lower bound)**: the static arena, input and output inside, and
  the largest sum of buffers live at one step (see [memory-plan.md](memory-plan.md)).
* **flash B (code / weights / tables)**: the linked image's flash from the
  linker map, the figure `verify`, `report` and `export` give: every section
  the image puts in flash (vector table, code of the model, kernels, board
  support and libc/libgcc, constants, the .data load image), the harness's
  embedded golden inputs left out; weights are the model's `l<i>_w*` arrays,
  tables every other constant.
"""


def render(speed, size=None):
    boards = sorted({r["board"] for r in speed}) or ["-"]
    out = [
        "# Results",
        "",
        "<!-- Generated by bench/render_results.py from bench/results.json"
        + (" and bench/size/results.json" if size else "")
        + ". Do not edit by hand. -->",
        "",
        f"Every model of the bench on {', '.join(boards)}, as measured by `tinyaot bench` "
        "(see [cli.md](cli.md#bench)). To refresh this page:",
        "",
        "```sh",
        "tinyaot bench                        # bench/results.json (+ bench/results.md)",
        "tinyaot bench --optimize size        # bench/size/results.json",
        "python3 bench/render_results.py      # this page",
        "```",
        "",
        "## Speed (`--optimize speed`, the default)",
        "",
        *speed_summary(speed),
        "",
        *speed_table(speed),
        "",
        *side_by_side(speed),
    ]
    if size:
        summary, table = size_section(speed, size)
        out += [
            "## Size (`--optimize size`)",
            "",
            "The same models with int8 weights in flash and portable kernels "
            "(see [kernels.md](kernels.md#speed-or-size)).",
            "",
            *summary,
            "",
            *table,
            "",
        ]
    out.append(COLUMNS)
    return "\n".join(out)


def load(path):
    return json.loads(Path(path).read_text())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("--check", action="store_true", help="exit 1 if the page is not up to date")
    ap.add_argument("-o", "--output", default=str(PAGE))
    a = ap.parse_args(argv)
    text = render(load(SPEED_JSON), load(SIZE_JSON) if SIZE_JSON.exists() else None)
    out = Path(a.output)
    if a.check:
        if not out.exists() or out.read_text() != text:
            print(f"{out} is not what bench/render_results.py makes of the bench results: "
                  "run python3 bench/render_results.py", file=sys.stderr)
            return 1
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
