"""`tinyaot golden`: a golden file (inputs + reference outputs) for one's own model."""
from __future__ import annotations

from .input_shapes import add_input_shape
from .options import ORT_THREADS_HELP, examples, print_or_json

HELP = "make a golden file for a model: its inputs and a reference's outputs"
EPILOG = examples(
    "tinyaot golden my.onnx --inputs samples.npz -o my_golden.npz",
    "tinyaot golden my.onnx --inputs samples.npz -o my_golden.npz --reference oracle "
    "--numerics tflite",
    "tinyaot golden my.tflite --inputs samples.npz -o my_golden.npz --reference tflite-micro",
    note="Float inputs are quantized with the model's input scale and zero point; integer\n"
         "inputs are taken as they are. The file has what verify and scons read:\n"
         "inputs, outputs (and outputs_onnxruntime / outputs_tflm after the reference),\n"
         "input/output scale and zero point. Then: tinyaot verify my.onnx --golden "
         "my_golden.npz\n--board qemu-m4, or scons board=qemu-m4 model=my.onnx "
         "golden=my_golden.npz.")


def add_arguments(p):
    p.add_argument("model", help="the model (ONNX; .tflite for --reference tflite-micro)")
    add_input_shape(p)
    p.add_argument("--inputs", required=True, metavar="IN",
                   help=".npz ('inputs' or its only array) or .npy: (N, ...) float or integer")
    p.add_argument("-o", "--output", required=True, metavar="G.npz", help="golden file to write")
    p.add_argument("--reference", choices=["ort", "tflite-micro", "oracle"],
                   help="what computes the outputs: onnxruntime, TFLite Micro's interpreter "
                        "(a .tflite), or tinyaot's numpy reference (default: ort for "
                        "--numerics ort; tflite-micro on a .tflite, else oracle, for tflite)")
    p.add_argument("--numerics", choices=["ort", "tflite"],
                   help="the numerics the outputs are for (default: ort; tflite for a .tflite)")
    p.add_argument("--ort-threads", type=int, default=1, metavar="N", help=ORT_THREADS_HELP)
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")


def run(a):
    from ..driver.golden import make_golden
    r = make_golden(a.model, a.inputs, a.output, reference=a.reference, numerics=a.numerics,
                    ort_threads=a.ort_threads)
    print_or_json(a, f"{r['model']}: wrote {r['golden']} ({r['vectors']} vector(s), "
                     f"{'float inputs quantized, ' if r['inputs_quantized'] else ''}outputs from "
                     f"{r['reference']}, numerics {r['numerics']}; keys {', '.join(r['keys'])})",
                  r)
    return 0
