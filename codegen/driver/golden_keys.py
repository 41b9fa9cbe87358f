"""The golden-file format (.npz, no pickle): which array holds which input and output.

    inputs, inputs1, inputs2, ...    graph input k (k >= 1 suffixed): N vectors, batch-less
                                     shape; float32 at a float end of the model, int8 / uint8
                                     at a quantized one
    <key>, <key>1, <key>2, ...       the expected output k for one reference: `outputs`,
                                     `outputs_tflm`, `outputs_onnxruntime`, `outputs_q` (the
                                     int8 tensor before a final DequantizeLinear), ...
    output_names                     optional: the model's name of golden output k (the
                                     order of the golden file may differ from the model's)
    input_scale, input_zero_point,   optional, informative: the quantization of input 0 /
    output_scale[k], output_zero_point[k]   output k (of the tensor behind a float end)

An expected output is compared as what it is: a float32 array bit for bit as float32, an
integer array as integers (see verify.py for an integer key at a float end).
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import TinyAotError

# The golden arrays each numerics reproduces bit for bit (MLPerf Tiny goldens carry
# both; `outputs` is LiteRT's reference kernels, which neither numerics promises).
NUMERICS_GOLDEN_KEY = {"ort": "outputs_onnxruntime", "tflite": "outputs_tflm"}
VALUE_TYPES = (np.float32, np.int8, np.uint8)


def suffixed(key, k):
    """The array of end k for key: key itself for k = 0, key + str(k) after."""
    return key if k == 0 else f"{key}{k}"


def open_golden(path) -> dict:
    """Every array of a golden .npz (a user error names the file)."""
    path = str(path)
    if not os.path.exists(path):
        raise TinyAotError("no such golden file", model=path)
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: np.asarray(data[k]) for k in data.files}
    except Exception:
        raise TinyAotError("not a golden .npz file", model=path) from None


def default_key(data: dict, numerics) -> str:
    """The expected outputs to compare with when the user names none."""
    key = NUMERICS_GOLDEN_KEY.get(numerics)
    return key if key in data else "outputs"


def _array(data, name, path, what):
    if name not in data:
        raise TinyAotError(f"golden file has no '{name}' array ({what}; has: "
                           f"{', '.join(sorted(data))})", model=str(path))
    a = data[name]
    if a.dtype.type not in VALUE_TYPES:
        raise TinyAotError(f"'{name}' is {a.dtype}: golden values are float32, int8 or uint8",
                           model=str(path))
    return a


def golden_inputs(data: dict, path, n_inputs, key="inputs") -> list:
    """One array per graph input: key, key1, ... (the model's input order)."""
    arrays = [_array(data, suffixed(key, k), path, f"input {k} of {n_inputs}")
              for k in range(n_inputs)]
    if len({len(a) for a in arrays}) > 1:
        raise TinyAotError("the golden inputs hold different numbers of vectors: "
                           + ", ".join(f"{suffixed(key, k)} {len(a)}" for k, a in enumerate(arrays)),
                           model=str(path))
    return arrays


def golden_outputs(data: dict, path, key, output_names) -> list:
    """(array name, expected array) per model output, in the model's order. Golden output
    j is key + j; with `output_names` in the file, golden output j belongs to the model
    output of that name."""
    n = len(output_names)
    arrays = [(suffixed(key, j), _array(data, suffixed(key, j), path, f"output {j} of {n}"))
              for j in range(n)]
    names = data.get("output_names")
    if names is None or n == 1:
        return arrays
    names = [str(x) for x in np.asarray(names).reshape(-1)]
    if sorted(names) != sorted(output_names):
        raise TinyAotError(f"golden output_names {names} are not the model's outputs "
                           f"{list(output_names)}", model=str(path))
    return [arrays[names.index(name)] for name in output_names]
