"""Sub-commands report, validate, profile, quantize (registered by codegen/cli.py).

Exit codes as for the other commands: 0 ok; 1 validate found a divergent
layer; 2 a problem with the input (one line on stderr, nothing written);
70 internal error.
"""
from __future__ import annotations

import argparse
import json

RAW = argparse.RawDescriptionHelpFormatter

EXIT_CODES = """exit codes: 0 ok; 1 a check failed (verify, bench: outputs differ;
validate: a layer diverges; verify-signature: invalid); 2 bad input (one line on
stderr naming model, node and tensor; nothing written); 70 internal error; 130
interrupted."""


def examples(*lines, note=""):
    """--help epilog: examples, an optional note, the exit codes."""
    return ("examples:\n" + "\n".join(f"  {x}" for x in lines) + "\n\n"
            + (note.strip() + "\n\n" if note else "") + EXIT_CODES)

REPORT_EX = """examples:
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

VALIDATE_EX = """examples:
  tinyaot validate models/digits_cnn_int8.onnx --inputs models/digits_cnn_int8_golden.npz
  tinyaot validate M.onnx --inputs in.npz --board qemu-m4 --numerics tflite --json

Compares the output of every layer of the generated C (host: through a
debug hook and cffi; QEMU: printed over semihosting) with its reference and
marks the first layer that diverges. --numerics ort: onnxruntime's own
tensors, taken from the graph the plain session runs (column ref = ort); a
layer ORT has no tensor for is compared with the numpy oracle and says why
(ref = oracle). --numerics tflite: the numpy oracle of TFLite Micro's
kernels. With ort the final output is also compared with the plain onnxruntime
session; exit 1 if a layer or that final output differs.
""" + EXIT_CODES

PROFILE_EX = """examples:
  tinyaot profile models/digits_cnn_int8.onnx --board qemu-m4
  tinyaot profile models/digits_cnn_int8.onnx --board qemu-m4 --json --png profile.png
  tinyaot profile models/digits_cnn_int8.onnx --board qemu-m4 --cycles --part stm32l4r5

Instructions per layer from the board timer read after every layer under
QEMU -icount (deterministic; resolution one timer tick, instructions_per_tick
in board.toml).
""" + EXIT_CODES

QUANTIZE_EX = """examples:
  tinyaot quantize model_f32.onnx --calib calib.npz -o model_int8.onnx
  tinyaot quantize model_f32.onnx --calib calib_dir/ --method percentile -o m_int8.onnx \\
      --eval test.npz

DATA: an .npz (array 'inputs', or its only array) or a folder of .npy files
(one sample or a batch each). --eval wants an .npz with 'inputs' (float)
and 'labels'; it prints float and int8 top-1 accuracy.
Inference-mode BatchNormalization is first folded into the Conv / Gemm /
MatMul before it where that is exact (the count is printed); others stay.
""" + EXIT_CODES


def add_optimize(p):
    """--optimize speed|size (codegen/passes/optimize.py) on a command that compiles."""
    p.add_argument("--optimize", default="speed", choices=["speed", "size"],
                   help="speed (default): fast kernels, float weights for onnxruntime's float "
                        "layers; size: int8 weights in flash and portable kernels (less flash, "
                        "more instructions, the same outputs)")


def _dump(obj):
    from ..compiler import _jsonable
    print(json.dumps(obj, indent=2, default=_jsonable))


def cmd_report(a):
    from ..compiler import compile_model
    from .report import print_report_table, report_model
    c = compile_model(a.model, numerics=a.numerics, ort_threads=a.ort_threads,
                      optimize=a.optimize)
    r = report_model(a.model, board=a.board, numerics=a.numerics, compiled=c,
                     measure=a.measure_stack)
    if r["totals"].get("part_fit") is not None or a.cycles or a.part:
        # a build-only part is always timed: the cycle model at its clock (profile_model)
        from .profile import profile_model
        from ..cycles.layers import merge_into_report
        merge_into_report(r, profile_model(a.model, board=a.board, numerics=a.numerics, compiled=c,
                                           cycles=True, parts=a.part))
    if a.plot:
        from ..planner.plot import plot_memory  # the arena picture of compile --plot-memory
        plot_memory(c.plan, c.graph, a.plot)
        r["plot"] = a.plot
    if a.json:
        _dump(r)
    else:
        print_report_table(r)
        if a.plot:
            print(f"wrote {a.plot}")
    return 0


def cmd_validate(a):
    from .console import progress
    from .validate import load_inputs, print_validate, validate_model
    x = load_inputs(a.inputs, a.key)
    if a.limit:
        x = x[:a.limit]
    from ..compiler import compile_model
    c = compile_model(a.model, numerics=a.numerics, ort_threads=a.ort_threads,
                      optimize=a.optimize)
    r = validate_model(a.model, x, board=a.board, numerics=a.numerics, compiled=c,
                       progress=progress)
    if a.json:
        _dump(r)
    else:
        print_validate(r)
    return 0 if r["first_divergent_layer"] is None and not r.get("final_output_vs_onnxruntime") \
        else 1


def cmd_profile(a):
    from .profile import plot_profile, print_profile, profile_model
    x = None
    if a.inputs:
        from .validate import load_inputs
        x = load_inputs(a.inputs)
    from ..compiler import compile_model
    c = compile_model(a.model, numerics=a.numerics, ort_threads=a.ort_threads,
                      optimize=a.optimize)
    r = profile_model(a.model, board=a.board, numerics=a.numerics, inputs=x, compiled=c,
                      cycles=a.cycles or bool(a.part), parts=a.part)
    if a.png:
        plot_profile(r, a.png)
        r["png"] = a.png
    if a.json:
        _dump(r)
    else:
        print_profile(r)
        if a.png:
            print(f"wrote {a.png}")
    return 0


def cmd_quantize(a):
    from .quantize import cli_quantize
    r = cli_quantize(a)
    if a.json:
        _dump(r)
    return 0


def add_cycles(p):
    p.add_argument("--cycles", action="store_true",
                   help="also model cycles per layer and per inference (codegen/cycles: an estimate "
                   "from Arm's documented timings and the part's flash wait states)")
    p.add_argument("--part", action="append", metavar="P",
                   help="price for part P (repeatable; implies --cycles; default: all parts of the "
                   "board, e.g. ideal, stm32l4r5, nrf52840 on qemu-m4)")


def add_tool_commands(sub):
    def common(p, board_default):
        p.add_argument("model", help="quantized ONNX model (QDQ)")
        p.add_argument("--board", default=board_default, help="(default %(default)s)")
        p.add_argument("--numerics", default="ort", choices=["ort", "tflite"],
                       help="bit-exact reference: onnxruntime or TFLite Micro (default %(default)s)")
        p.add_argument("--ort-threads", type=int, default=1, metavar="N", help="--numerics ort: the intra-op thread count of the onnxruntime session to match (MLAS sums float convs in an order that depends on it; default %(default)s)")
        add_optimize(p)
        p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")

    p = sub.add_parser("report", help="per-layer table, arena, flash split and worst-case stack",
                       description="Per layer: op, kernel, shapes, MACs, weight bytes, arena offset "
                       "and lifetime; totals from a real firmware build.",
                       epilog=REPORT_EX, formatter_class=RAW)
    common(p, "qemu-m4")
    p.add_argument("--plot", metavar="PNG", help="also draw the arena plan (codegen/planner/plot.py)")
    p.add_argument("--measure-stack", action="store_true",
                   help="also run the model once in QEMU with a painted stack and report the use")
    add_cycles(p)
    p.set_defaults(fn=cmd_report)

    p = sub.add_parser("validate", help="compare every layer's output with the reference",
                       epilog=VALIDATE_EX, formatter_class=RAW)
    common(p, "host")
    p.add_argument("--inputs", required=True, help=".npz with int8 'inputs' (N, ...)")
    p.add_argument("--key", default="inputs", help="array to read (default %(default)s)")
    p.add_argument("--limit", type=int, default=0, help="only the first N inputs")
    p.set_defaults(fn=cmd_validate)

    p = sub.add_parser("profile", help="instructions per layer on a QEMU board",
                       epilog=PROFILE_EX, formatter_class=RAW)
    common(p, "qemu-m4")
    p.add_argument("--inputs", help=".npz with int8 'inputs' (the first is run; default: zero point)")
    p.add_argument("--png", help="write a bar chart of instructions per layer")
    add_cycles(p)
    p.set_defaults(fn=cmd_profile)

    p = sub.add_parser("quantize", help="float ONNX -> int8 QDQ ONNX with onnxruntime",
                       epilog=QUANTIZE_EX, formatter_class=RAW)
    p.add_argument("model", help="float32 ONNX model")
    p.add_argument("--calib", required=True, help="calibration inputs: .npz or folder of .npy")
    p.add_argument("-o", "--output", required=True, help="quantized model to write")
    p.add_argument("--method", default="minmax", choices=["minmax", "entropy", "percentile"],
                   help="calibration method (default %(default)s)")
    p.add_argument("--eval", metavar="DATA", help=".npz with 'inputs' and 'labels': print accuracy")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(fn=cmd_quantize)
