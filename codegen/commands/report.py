"""`tinyaot report`: per-layer table, arena, flash split and worst-case stack."""
from __future__ import annotations

from .options import EXIT_CODES, add_analysis_options, add_cycles, print_json

HELP = "per-layer table, arena, flash split and worst-case stack"
DESCRIPTION = ("Per layer: op, kernel, shapes, MACs, weight bytes, arena offset and lifetime; "
               "totals from a real firmware build.")
EPILOG = """examples:
  tinyaot report models/digits_cnn_int8.onnx --board qemu-m4
  tinyaot report models/digits_cnn_int8.onnx --board nrf52840
  tinyaot report models/digits_cnn_int8.onnx --board qemu-m4 --json > report.json
  tinyaot report models/digits_cnn_int8.onnx --board qemu-m4 --plot arena.png

Builds the firmware once (with -fstack-usage and a map file) to measure flash
(code / weights / tables) and the worst-case stack of <name>_run. On a
build-only part (`tinyaot boards`) the image is linked with the part's startup
and linker script and checked against its real flash and RAM, and the time per
inference comes from the cycle model at the part's clock.
""" + EXIT_CODES


def add_arguments(p):
    add_analysis_options(p, "qemu-m4")
    p.add_argument("--plot", metavar="PNG", help="also draw the arena plan (codegen/driver/plots.py)")
    p.add_argument("--measure-stack", action="store_true",
                   help="also run the model once in QEMU with a painted stack and report the use")
    add_cycles(p)


def run(a):
    from ..compiler import compile_model
    from ..driver.report import print_report_table, report_model
    c = compile_model(a.model, numerics=a.numerics, ort_threads=a.ort_threads,
                      optimize=a.optimize, float_fallback=a.float_fallback, tuning=a.tuning)
    r = report_model(a.model, board=a.board, numerics=a.numerics, compiled=c,
                     measure=a.measure_stack)
    if r["totals"].get("part_fit") is not None or a.cycles or a.part:
        # a build-only part is always timed: the cycle model at its clock (profile_model)
        from ..cycles.layers import merge_into_report
        from ..driver.profile import profile_model
        merge_into_report(r, profile_model(a.model, board=a.board, numerics=a.numerics, compiled=c,
                                           cycles=True, parts=a.part))
    if a.tuning:  # each layer's variant and why, from the record (codegen/tuning)
        from ..tuning.record import tuned_layers
        tl = tuned_layers(a.tuning)
        by = {x["node"]: x for x in tl}
        for row in r["layers"]:
            x = by.get(row["name"])
            if x:
                row["variant"], row["why"] = x["choice"], x["why"]
        r["tuning"] = {"record": a.tuning, "layers": tl}
    if a.plot:
        from ..driver.plots import memory_title, plot_memory  # compile --plot-memory's chart
        plot_memory(c.plan, c.graph, a.plot, title=memory_title(c))
        r["plot"] = a.plot
    if a.json:
        print_json(r)
    else:
        print_report_table(r)
        if a.plot:
            print(f"wrote {a.plot}")
    return 0
