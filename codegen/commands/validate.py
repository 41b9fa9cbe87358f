"""`tinyaot validate`: every layer's output against its reference; marks the first divergence."""
from __future__ import annotations

from .options import EXIT_CODES, add_analysis_options, print_json

HELP = "compare every layer's output with the reference"
EPILOG = """examples:
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


def add_arguments(p):
    add_analysis_options(p, "host")
    p.add_argument("--inputs", required=True,
                   help=".npz with 'inputs' (N, ...): int8 / uint8, or float32 at a float input "
                        "(quantized as the numerics does); 'inputs1', ... for more inputs")
    p.add_argument("--key", default="inputs", help="array to read (default %(default)s)")
    p.add_argument("--limit", type=int, default=0, help="only the first N inputs")


def run(a):
    from ..compiler import compile_model
    from ..driver.console import progress
    from ..driver.validate import load_input_arrays, print_validate, validate_model
    c = compile_model(a.model, numerics=a.numerics, ort_threads=a.ort_threads,
                      optimize=a.optimize, float_fallback=a.float_fallback, tuning=a.tuning)
    x = load_input_arrays(a.inputs, len(c.graph.inputs), a.key)
    if a.limit:
        x = [v[:a.limit] for v in x]
    r = validate_model(a.model, x, board=a.board, numerics=a.numerics, compiled=c,
                       progress=progress)
    if a.json:
        print_json(r)
    else:
        print_validate(r)
    return 0 if r["first_divergent_layer"] is None and not r.get("final_output_vs_onnxruntime") \
        else 1
