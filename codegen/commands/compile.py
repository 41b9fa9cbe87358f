"""`tinyaot compile`: <name>.c, <name>.h and report.json, after the memory budget check."""
from __future__ import annotations

import json
import os

from ..errors import TinyAotError
from .input_shapes import shape_arg
from .options import add_build_options, add_depthwise_inplace, examples

HELP = "write <name>.c, <name>.h and report.json"
EPILOG = examples(
    "tinyaot compile models/digits_cnn_int8.onnx -o build/digits",
    "tinyaot compile M.onnx --board qemu-m4 --ram-limit 64K --numerics tflite",
    "tinyaot compile M.onnx --io float --plot-memory mem.png --json",
    note="Writes <name>.c, <name>.h and report.json (all or nothing).")


def add_arguments(p):
    add_build_options(p)
    add_depthwise_inplace(p)
    p.add_argument("-o", "--output", help="output directory (default build/<name>)")
    p.add_argument("--dump-ir", action="store_true", help="print the IR after each pass")
    p.add_argument("--io", default="model", choices=["model", "int8", "float"],
                   help="model (default): <name>_run takes and returns each input and output "
                        "as the model declares it (a float end is quantized / dequantized "
                        "inside, and <name>_run_quantized is the same on the quantized "
                        "tensors); int8: every end quantized (the int8 / uint8 tensors); "
                        "float: as model, plus <name>_run_f32 with every end float")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--plot-memory", metavar="PNG", help="draw the arena plan over time")
    p.add_argument("--integrity", choices=["crc32", "sha256"],
                   help="emit <name>_verify(): checks a digest of the weights at boot")


def run(a):
    from ..compiler import compile_model, model_name, write_outputs
    from ..driver.budget import check_budget
    from ..targets.boards import board_or_error

    dumps = []

    def dump(title, g):
        dumps.append(f"== after {title} ==\n{g.dump()}")

    c = compile_model(a.model, numerics=a.numerics, input_shapes=shape_arg(a.input_shape),
                      dump=dump if a.dump_ir else None, io_buffers=a.io_buffers,
                      integrity=a.integrity, io=a.io, depthwise_inplace=a.depthwise_inplace,
                      ort_threads=a.ort_threads, optimize=a.optimize,
                      float_fallback=a.float_fallback, tuning=a.tuning)
    out = a.output or os.path.join("build", model_name(a.model))
    c.report["budget"] = check_budget(c, board_or_error(a.board), a.ram_limit, a.flash_limit,
                                      model=a.model)
    write_outputs(c, out)
    if a.plot_memory:  # driver/plots.py: one rectangle per arena block over the steps
        from ..driver.plots import memory_title, plot_memory
        plot_memory(c.plan, c.graph, a.plot_memory, title=memory_title(c))
    if a.dump_ir:
        print("\n".join(dumps))
    if a.json:
        print(json.dumps(c.report, indent=2, default=str))
    else:
        r = c.report
        print(f"{r['model']}: wrote {out}/{r['name']}.c, {r['name']}.h, report.json "
              f"(arena {r['arena_bytes']} B, weights {r['weights_bytes']} B, {r['macs']} MACs)")
    return 0
