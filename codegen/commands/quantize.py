"""`tinyaot quantize`: float ONNX -> int8 QDQ ONNX with onnxruntime."""
from __future__ import annotations

from .input_shapes import add_input_shape
from .options import EXIT_CODES, print_json

HELP = "float ONNX -> int8 QDQ ONNX with onnxruntime"
EPILOG = """examples:
  tinyaot quantize model_f32.onnx --calib calib.npz -o model_int8.onnx
  tinyaot quantize model_f32.onnx --calib calib_dir/ --method percentile -o m_int8.onnx \\
      --eval test.npz

DATA: an .npz (array 'inputs', or its only array) or a folder of .npy files
(one sample or a batch each). --eval wants an .npz with 'inputs' (float)
and 'labels'; it prints float and int8 top-1 accuracy.
Inference-mode BatchNormalization is first folded into the Conv / Gemm /
MatMul before it where that is exact (the count is printed); others stay.
""" + EXIT_CODES


def add_arguments(p):
    p.add_argument("model", help="float32 ONNX model")
    add_input_shape(p)
    p.add_argument("--calib", required=True, help="calibration inputs: .npz or folder of .npy")
    p.add_argument("-o", "--output", required=True, help="quantized model to write")
    p.add_argument("--method", default="minmax", choices=["minmax", "entropy", "percentile"],
                   help="calibration method (default %(default)s)")
    p.add_argument("--eval", metavar="DATA", help=".npz with 'inputs' and 'labels': print accuracy")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def run(a):
    from ..driver.console import progress, stdout_to_stderr
    from ..driver.quantize import quantize_files
    with stdout_to_stderr():  # onnxruntime's calibration prints: stdout is the result's
        r = quantize_files(a.model, a.calib, a.output, method=a.method, eval_data=a.eval,
                           progress=progress)
    if a.json:
        print_json(r)
        return 0
    if "upgraded_from_opset" in r:
        print(f"upgraded opset {r['upgraded_from_opset']} to 13 (onnx version converter) for "
              "per-channel weights")
    print(f"folded {r['batchnorm_folded']} BatchNormalization into the Conv/Gemm/MatMul "
          "before it")
    print(f"wrote {a.output} (QDQ int8, per-channel weights, {a.method} calibration on "
          f"{r['calibration_samples']} samples)")
    if "eval_samples" in r:
        print(f"accuracy on {r['eval_samples']} samples: float {100 * r['float_accuracy']:.2f} %, "
              f"int8 {100 * r['int8_accuracy']:.2f} %")
    return 0
