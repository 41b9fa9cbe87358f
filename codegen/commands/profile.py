"""`tinyaot profile`: instructions per layer on a QEMU board."""
from __future__ import annotations

from .options import EXIT_CODES, add_analysis_options, add_cycles, print_json

HELP = "instructions per layer on a QEMU board"
EPILOG = """examples:
  tinyaot profile models/digits_cnn_int8.onnx --board qemu-m4
  tinyaot profile models/digits_cnn_int8.onnx --board qemu-m4 --json --png profile.png
  tinyaot profile models/digits_cnn_int8.onnx --board qemu-m4 --cycles --part stm32l4r5

Instructions per layer from the board timer read after every layer under
QEMU -icount (deterministic; resolution one timer tick, instructions_per_tick
in board.toml).
""" + EXIT_CODES


def add_arguments(p):
    add_analysis_options(p, "qemu-m4")
    p.add_argument("--inputs", help=".npz with int8 'inputs' (the first is run; default: zero point)")
    p.add_argument("--png", help="write a bar chart of instructions per layer")
    add_cycles(p)


def run(a):
    from ..compiler import compile_model
    from ..driver.plots import plot_profile
    from ..driver.profile import print_profile, profile_model
    x = None
    if a.inputs:
        from ..driver.validate import load_inputs
        x = load_inputs(a.inputs)
    c = compile_model(a.model, numerics=a.numerics, ort_threads=a.ort_threads,
                      optimize=a.optimize, float_fallback=a.float_fallback, tuning=a.tuning)
    r = profile_model(a.model, board=a.board, numerics=a.numerics, inputs=x, compiled=c,
                      cycles=a.cycles or bool(a.part), parts=a.part)
    if a.png:
        plot_profile(r, a.png)
        r["png"] = a.png
    if a.json:
        print_json(r)
    else:
        print_profile(r)
        if a.png:
            print(f"wrote {a.png}")
    return 0
