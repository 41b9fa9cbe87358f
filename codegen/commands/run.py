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
    note="Inputs 'inputs', 'inputs1', ... (one array per model input); outputs 'outputs',\n"
         "'outputs1', ... with 'output_names' (the golden-file keys). Each as the model\n"
         "declares it (float32 at a float input / output), or --io int8: the quantized\n"
         "tensors. On QEMU, out.npz also has 'instructions' per input.")


def add_arguments(p):
    add_build_options(p)
    add_depthwise_inplace(p)
    p.add_argument("--inputs", required=True,
                   help=".npz with 'inputs' (N, ...), and 'inputs1', ... for more model inputs")
    p.add_argument("-o", "--output", required=True, help="output .npz ('outputs', 'outputs1', ...)")
    p.add_argument("--io", default="model", choices=["model", "int8"],
                   help="model (default): each input and output as the model declares it "
                        "(a float end as float32; quantized values at a float input are "
                        "dequantized first, exactly); int8: the quantized tensors")
    p.add_argument("--json", action="store_true", help="print a summary as JSON on stdout")


def run(a):
    import numpy as np

    from ..compiler import compile_model
    from ..driver.golden_keys import golden_inputs, open_golden, suffixed
    from ..driver.verify import require_board_runs, run_ends
    from ..targets.boards import board_or_error

    data = open_golden(a.inputs)
    b = board_or_error(a.board)
    require_board_runs(b)
    c = compile_model(a.model, numerics=a.numerics, io_buffers=a.io_buffers,
                      depthwise_inplace=a.depthwise_inplace, ort_threads=a.ort_threads,
                      optimize=a.optimize, float_fallback=a.float_fallback, tuning=a.tuning)
    inputs = golden_inputs(data, a.inputs, len(c.graph.inputs))
    outs, info = run_ends(a.model, inputs, board=a.board, numerics=a.numerics, compiled=c,
                          ram_limit=a.ram_limit, flash_limit=a.flash_limit,
                          entry="quantized" if a.io == "int8" else "model", inputs_file=a.inputs)
    out = a.output
    tmp = out + ".tmp.npz"
    extra = {suffixed("outputs", k): o for k, o in enumerate(outs)}
    extra["output_names"] = np.array([d.name for d in c.graph.declared_ends()[1]])
    if info.get("instructions"):
        extra["instructions"] = np.array(info["instructions"], dtype=np.int64)
    np.savez(tmp, **extra)
    os.replace(tmp, out if out.endswith(".npz") else out)
    if a.json:
        print(json.dumps({"model": a.model, "board": a.board, "numerics": a.numerics,
                          "inputs": len(outs[0]), "output_file": out,
                          "instructions": [int(x) for x in info.get("instructions") or []]},
                         indent=2))
    else:
        print(f"{len(outs[0])} input(s) run on {a.board}: {len(outs)} output(s) written to {out}")
    return 0
