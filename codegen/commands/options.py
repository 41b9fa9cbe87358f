"""What the subcommands share: --help layout, exit codes, common options, JSON output."""
from __future__ import annotations

import argparse
import json

from .input_shapes import add_input_shape

RAW = argparse.RawDescriptionHelpFormatter

EXIT_CODES = """exit codes: 0 ok; 1 a check failed (verify, bench: outputs differ;
validate: a layer diverges; verify-signature: invalid); 2 bad input (one line on
stderr naming model, node and tensor; nothing written); 70 internal error; 130
interrupted."""

ORT_THREADS_HELP = ("--numerics ort: the intra-op thread count of the onnxruntime session to "
                    "match (MLAS sums float convs in an order that depends on it; default "
                    "%(default)s)")
NUMERICS_HELP = ("bit-exact reference: onnxruntime or TFLite Micro (default: tflite for a "
                 ".tflite model, else ort)")


def examples(*lines, note=""):
    """--help epilog: examples, an optional note, the exit codes."""
    return ("examples:\n" + "\n".join(f"  {x}" for x in lines) + "\n\n"
            + (note.strip() + "\n\n" if note else "") + EXIT_CODES)


def add_optimize(p):
    """--optimize speed|size (codegen/passes/kernel_select.py) on a command that compiles."""
    p.add_argument("--optimize", default="speed", choices=["speed", "size"],
                   help="speed (default): fast kernels, float weights for onnxruntime's float "
                        "layers (int8 for its convs where the arena has room for a block "
                        "of them); size: int8 weights in flash and portable kernels (less flash, "
                        "more instructions, the same outputs)")


def add_tuning(p):
    """--tuning FILE: `tinyaot tune`'s record, each layer's kernel variant (over --optimize)."""
    p.add_argument("--tuning", metavar="FILE",
                   help="a tuning record written by tinyaot tune: each layer runs the kernel "
                        "variant chosen there (speed, size or loop), other layers --optimize's")


def add_numerics(p):
    """--numerics (by the model's file type when left out: resolve_numerics), --ort-threads,
    --optimize and --no-float-fallback."""
    p.add_argument("--numerics", default=None, choices=["ort", "tflite"], help=NUMERICS_HELP)
    p.set_defaults(numerics_by_model=True)
    p.add_argument("--ort-threads", type=int, default=1, metavar="N", help=ORT_THREADS_HELP)
    add_optimize(p)
    add_tuning(p)
    p.add_argument("--no-float-fallback", dest="float_fallback", action="store_false",
                   help="refuse a node no integer kernel covers instead of running it in float32 "
                        "between its DequantizeLinear and QuantizeLinear (the float fallback: "
                        "one warning line lists those nodes, `report` shows them)")


def resolve_numerics(a):
    """--numerics left out: tflite when a model is a .tflite file (TFLite Micro is what
    computes it; onnxruntime cannot run it), else ort."""
    if getattr(a, "numerics_by_model", False) and a.numerics is None:
        from ..frontend import is_tflite
        models = a.model if isinstance(a.model, list) else [a.model]
        a.numerics = "tflite" if any(is_tflite(m) for m in models) else "ort"


def add_build_options(p, board_default="host"):
    """compile, run, verify: the model, the board, numerics and memory limits."""
    p.add_argument("model", help="quantized ONNX model (QDQ) or int8 .tflite")
    p.add_argument("--board", default=board_default, help="host, qemu-m4, ... (default %(default)s)")
    add_numerics(p)
    p.add_argument("--ram-limit", metavar="SIZE", help="RAM for arena + stack, e.g. 64K "
                   "(default: the board's ram_size); too much fails before any C is written")
    p.add_argument("--flash-limit", metavar="SIZE", help="flash limit, e.g. 256K "
                   "(default: the board's flash_size)")
    add_input_shape(p)
    p.add_argument("--io-buffers", choices=["arena", "user"], default="arena",
                   help="arena (default): input/output inside the arena, reached through "
                        "<name>_input() / <name>_output() (smallest total RAM); user: in the "
                        "caller's buffers passed to <name>_run(in, out)")


def add_depthwise_inplace(p):
    p.add_argument("--depthwise-inplace", action="store_true",
                   help="run depthwise convolutions in place (one channel plane of scratch) "
                        "where that makes the arena smaller; slower portable kernel")


def add_analysis_options(p, board_default):
    """report, validate, profile: the model, the board, numerics and --json."""
    p.add_argument("model", help="quantized ONNX model (QDQ) or int8 .tflite")
    p.add_argument("--board", default=board_default, help="(default %(default)s)")
    add_numerics(p)
    add_input_shape(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def add_cycles(p):
    """report, profile: --cycles / --part (codegen/cycles)."""
    p.add_argument("--cycles", action="store_true",
                   help="also model cycles per layer and per inference (codegen/cycles: an estimate "
                   "from Arm's documented timings and the part's flash wait states)")
    p.add_argument("--part", action="append", metavar="P",
                   help="price for part P (repeatable; implies --cycles; default: all parts of the "
                   "board, e.g. ideal, stm32l4r5, nrf52840 on qemu-m4)")


def print_json(obj):
    """A result dict as JSON on stdout (numpy values and paths included)."""
    from ..compiler import _jsonable
    print(json.dumps(obj, indent=2, default=_jsonable))


def print_or_json(a, text, obj):
    """`obj` as JSON with --json, else the line `text`."""
    print(json.dumps(obj, indent=2, default=str) if a.json else text)
