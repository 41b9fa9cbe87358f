"""`tinyaot verify`: bit-exactness against golden vectors on a board, with the memory report."""
from __future__ import annotations

import json

from .options import add_build_options, add_depthwise_inplace, examples

HELP = "check bit-exactness against golden vectors"
EPILOG = examples(
    "tinyaot verify models/digits_cnn_int8.onnx "
    "--golden models/digits_cnn_int8_golden.npz --board qemu-m4",
    "tinyaot verify M.onnx --golden M_golden.npz --board qemu-m4 "
    "--numerics tflite --key outputs_tflm --json")


def add_arguments(p):
    add_build_options(p)
    add_depthwise_inplace(p)
    p.add_argument("--golden", required=True, help="golden .npz (inputs + outputs)")
    p.add_argument("--key", help="array of expected outputs (default: outputs_onnxruntime for "
                                 "--numerics ort, outputs_tflm for tflite, when the file has it; "
                                 "else outputs)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")


def run(a):
    from ..driver.verify import default_golden_key, print_verify, verify_model

    r = verify_model(a.model, a.golden, board=a.board, numerics=a.numerics,
                     key=a.key or default_golden_key(a.golden, a.numerics),
                     ram_limit=a.ram_limit, flash_limit=a.flash_limit, io_buffers=a.io_buffers,
                     depthwise_inplace=a.depthwise_inplace, ort_threads=a.ort_threads,
                     optimize=a.optimize, float_fallback=a.float_fallback, tuning=a.tuning)
    if a.json:
        print(json.dumps(r, indent=2, default=str))
    else:
        print_verify(r)
    return 0 if r["mismatches"] == 0 else 1
