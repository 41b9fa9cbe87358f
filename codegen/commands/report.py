"""`tinyaot report`: per-layer table, arena, flash split and worst-case stack."""
from __future__ import annotations

from .options import EXIT_CODES, add_analysis_options, add_cycles, print_json

HELP = "per-layer table, arena, flash split and worst-case stack"
DESCRIPTION = ("Per layer: op, kernel, shapes, MACs, weight bytes, arena offset and lifetime; "
               "totals from a real firmware build.")
EPILOG = """examples:
  tinyaot report models/digits_cnn_int8.onnx --board qemu-m4
  tinyaot report models/digits_cnn_int8.onnx --board qemu-m4 --json > report.json
  tinyaot report models/digits_cnn_int8.onnx --board qemu-m4 --plot arena.png

Builds the firmware once (with -fstack-usage and a map file) to measure flash
(code / weights / tables) and the worst-case stack of <name>_run.
""" + EXIT_CODES


def add_arguments(p):
    add_analysis_options(p, "qemu-m4")
    p.add_argument("--plot", metavar="PNG", help="also draw the arena plan (codegen/planner/plot.py)")
    p.add_argument("--measure-stack", action="store_true",
                   help="also run the model once in QEMU with a painted stack and report the use")
    add_cycles(p)


def run(a):
    from ..compiler import compile_model
    from ..driver.report import print_report_table, report_model
    c = compile_model(a.model, numerics=a.numerics, ort_threads=a.ort_threads,
                      optimize=a.optimize, float_fallback=a.float_fallback)
    r = report_model(a.model, board=a.board, numerics=a.numerics, compiled=c,
                     measure=a.measure_stack)
    if a.cycles or a.part:
        from ..cycles.layers import merge_into_report
        from ..driver.profile import profile_model
        merge_into_report(r, profile_model(a.model, board=a.board, numerics=a.numerics, compiled=c,
                                           cycles=True, parts=a.part))
    if a.plot:
        from ..planner.plot import plot_memory  # the arena picture of compile --plot-memory
        plot_memory(c.plan, c.graph, a.plot)
        r["plot"] = a.plot
    if a.json:
        print_json(r)
    else:
        print_report_table(r)
        if a.plot:
            print(f"wrote {a.plot}")
    return 0
