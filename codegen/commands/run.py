"""`tinyaot run`: compile, build and run inputs on a board; outputs to an .npz."""
from __future__ import annotations

import json
import os

from .options import add_build_options, add_depthwise_inplace, examples

HELP = "compile, build and run inputs on a board"
EPILOG = examples(
    "tinyaot run models/digits_cnn_int8.onnx --board host "
    "--inputs models/digits_cnn_int8_golden.npz -o out.npz",
    "tinyaot run M.onnx --board qemu-m4 --inputs in.npz -o out.npz --json",
    note="On QEMU, out.npz also has 'instructions' per input.")


def add_arguments(p):
    add_build_options(p)
    add_depthwise_inplace(p)
    p.add_argument("--inputs", required=True, help=".npz with an 'inputs' array (N, ...) int8")
    p.add_argument("-o", "--output", required=True, help="output .npz ('outputs')")
    p.add_argument("--json", action="store_true", help="print a summary as JSON on stdout")


def run(a):
    import numpy as np

    from ..driver.verify import load_golden, run_model

    inputs, _ = load_golden(a.inputs, "inputs")
    outs, info = run_model(a.model, inputs, board=a.board, numerics=a.numerics,
                           ram_limit=a.ram_limit, flash_limit=a.flash_limit,
                           io_buffers=a.io_buffers, depthwise_inplace=a.depthwise_inplace,
                           ort_threads=a.ort_threads, optimize=a.optimize, inputs_file=a.inputs,
                           float_fallback=a.float_fallback)
    out = a.output
    tmp = out + ".tmp.npz"
    extra = {}
    if info.get("instructions"):
        extra["instructions"] = np.array(info["instructions"], dtype=np.int64)
    np.savez(tmp, outputs=outs, **extra)
    os.replace(tmp, out if out.endswith(".npz") else out)
    if a.json:
        print(json.dumps({"model": a.model, "board": a.board, "numerics": a.numerics,
                          "inputs": len(outs), "output_file": out,
                          "instructions": [int(x) for x in info.get("instructions") or []]},
                         indent=2))
    else:
        print(f"{len(outs)} input(s) run on {a.board}: outputs written to {out}")
    return 0
