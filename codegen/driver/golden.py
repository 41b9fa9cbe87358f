"""`tinyaot golden`: a golden file for one's own model.

Inputs come from an .npz ('inputs', or its only array) or an .npy: float
inputs are quantized with the model's input scale and zero point (as the
numerics' runtime does: onnxruntime's QuantizeLinear rounds half to even,
TFLite's Quantize half away from zero), integer inputs are taken as they are
(they must be the model's input type). The chosen reference
(driver/references.py) computes the outputs. The file has every array
`verify` and `scons` read:

    inputs               (N, ...) the model's integer inputs
    outputs              (N, ...) the reference's integer outputs (scons' default key)
    outputs_onnxruntime  the same, with --reference ort (verify's default for --numerics ort)
    outputs_tflm         the same, with --reference tflite-micro (... for --numerics tflite)
    input_scale, input_zero_point, output_scale, output_zero_point
    reference, numerics  which reference and numerics made it (strings)

Rows keep the model's shape without its leading batch 1, as the
repository's golden files do.
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import TinyAotError
from .golden_check import check_inputs, check_rows
from .references import pick_reference


def load_array(path, key="inputs"):
    """The array `key` of an .npz (or its only array), or an .npy."""
    path = str(path)
    if not os.path.exists(path):
        raise TinyAotError("no such inputs file", model=path)
    try:
        data = np.load(path, allow_pickle=False)
    except Exception:
        raise TinyAotError("not an .npz or .npy file", model=path) from None
    if isinstance(data, np.ndarray):
        return data
    files = list(data.files)
    if key in files:
        return np.asarray(data[key])
    if len(files) == 1:
        return np.asarray(data[files[0]])
    raise TinyAotError(f"no '{key}' array (has: {', '.join(sorted(files))})", model=path)


def quantize(x, io, numerics):
    """Float inputs on the model's input grid: round(x / scale) + zero point,
    saturated; half to even (ort) or away from zero (tflite)."""
    v = np.asarray(x, dtype=np.float32) / np.float32(io["scale"])
    r = np.rint(v) if numerics == "ort" else np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))
    info = np.iinfo(np.dtype(io["dtype"]))
    return np.clip(r + io["zero_point"], info.min, info.max).astype(io["dtype"])


def _rows_shape(n, shape):
    shape = list(shape)
    return tuple([n] + (shape[1:] if shape and shape[0] == 1 else shape))


def make_golden(model, inputs_path, out_path, reference=None, numerics=None, ort_threads=1,
                key="inputs"):
    """Write the golden file out_path; returns a summary dict."""
    ref, numerics = pick_reference(reference, numerics, model)
    if not os.path.exists(str(model)):
        raise TinyAotError("no such file", model=str(model))
    x = load_array(inputs_path, key)
    io = ref.model_io(model, numerics, ort_threads)
    xin, xout = io.input, io.output
    if x.dtype.kind == "f":
        check_rows(x, xin, inputs_path, key)
        q = quantize(x, xin, numerics)
        quantized = True
    else:
        check_inputs(x, xin, inputs_path, key)
        q, quantized = x, False
    n = len(q) if q.ndim > 1 else 1
    q = np.asarray(q).reshape(_rows_shape(n, xin["shape"]))
    y = np.asarray(ref.run(model, io, q, numerics, ort_threads))
    y = y.astype(xout["dtype"]).reshape(_rows_shape(n, xout["shape"]))
    arrays = {"inputs": q, "outputs": y,
              "input_scale": np.float32(xin["scale"]),
              "input_zero_point": np.int32(xin["zero_point"]),
              "output_scale": np.float32(xout["scale"]),
              "output_zero_point": np.int32(xout["zero_point"]),
              "reference": np.array(ref.name), "numerics": np.array(numerics)}
    if ref.key:
        arrays[ref.key] = y
    out_path = str(out_path)
    if not out_path.endswith(".npz"):
        raise TinyAotError("the golden file must end in .npz", model=out_path)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    tmp = out_path[:-len(".npz")] + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, out_path)  # all or nothing
    return {"model": str(model), "golden": out_path, "reference": ref.name,
            "numerics": numerics, "vectors": n, "inputs_quantized": quantized,
            "keys": sorted(arrays), "input_shape": list(q.shape), "output_shape": list(y.shape)}
