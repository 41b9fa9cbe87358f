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
from .references import ends_of, pick_reference


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
    io = ref.model_io(model, numerics, ort_threads)
    ins_e, outs_e = ends_of(io)
    if len(ins_e) > 1 or len(outs_e) > 1:
        return _golden_of_ends(model, inputs_path, out_path, ref, numerics, ort_threads, key,
                               io, ins_e, outs_e)
    x = load_array(inputs_path, key)
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
    out_path = _write(out_path, arrays)
    return {"model": str(model), "golden": out_path, "reference": ref.name,
            "numerics": numerics, "vectors": n, "inputs_quantized": quantized,
            "keys": sorted(arrays), "input_shape": list(q.shape), "output_shape": list(y.shape)}


def _write(out_path, arrays):
    out_path = str(out_path)
    if not out_path.endswith(".npz"):
        raise TinyAotError("the golden file must end in .npz", model=out_path)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    tmp = out_path[:-len(".npz")] + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, out_path)  # all or nothing
    return out_path


def _golden_of_ends(model, inputs_path, out_path, ref, numerics, ort_threads, key, io,
                    ins_e, outs_e):
    """make_golden for a model of several inputs or outputs: end k's arrays carry the
    suffix k (inputs, inputs1, ...; outputs, outputs1, ...; their scales and zero points;
    driver/golden_keys.py), output_names lists the outputs in order."""
    from .golden_keys import suffixed
    from .references import run_ends
    xs, quantized = [], False
    for k, e in enumerate(ins_e):
        kk = suffixed(key, k)
        x = load_array(inputs_path, kk) if len(ins_e) == 1 else _array_of(inputs_path, kk)
        if x.dtype.kind == "f":
            check_rows(x, e, inputs_path, kk)
            x, quantized = quantize(x, e, numerics), True
        else:
            check_inputs(x, e, inputs_path, kk)
        n = len(x) if x.ndim > 1 else 1
        xs.append(np.asarray(x).reshape(_rows_shape(n, e["shape"])))
    if len({len(x) for x in xs}) > 1:
        raise TinyAotError("the inputs hold different numbers of vectors",
                           model=str(inputs_path))
    n = len(xs[0])
    ys = run_ends(ref, model, io, xs, numerics, ort_threads)
    arrays = {"reference": np.array(ref.name), "numerics": np.array(numerics),
              "output_names": np.array([e["name"] for e in outs_e])}
    for k, (e, x) in enumerate(zip(ins_e, xs)):
        arrays[suffixed("inputs", k)] = x
        arrays[suffixed("input_scale", k)] = np.float32(e["scale"])
        arrays[suffixed("input_zero_point", k)] = np.int32(e["zero_point"])
    for k, (e, y) in enumerate(zip(outs_e, ys)):
        y = np.asarray(y).astype(e["dtype"]).reshape(_rows_shape(n, e["shape"]))
        arrays[suffixed("outputs", k)] = y
        if ref.key:
            arrays[suffixed(ref.key, k)] = y
        if e["dtype"] != "float32":
            arrays[suffixed("output_scale", k)] = np.float32(e["scale"])
            arrays[suffixed("output_zero_point", k)] = np.int32(e["zero_point"])
    out_path = _write(out_path, arrays)
    return {"model": str(model), "golden": out_path, "reference": ref.name,
            "numerics": numerics, "vectors": n, "inputs_quantized": quantized,
            "keys": sorted(arrays), "input_shape": list(xs[0].shape),
            "output_shape": list(np.asarray(ys[0]).shape)}


def _array_of(path, key):
    """Array `key` of an .npz (several inputs: no single-array fallback)."""
    path = str(path)
    try:
        data = np.load(path, allow_pickle=False)
    except Exception:
        raise TinyAotError("not an .npz file (a model of several inputs needs one array "
                           "per input: inputs, inputs1, ...)", model=path) from None
    if isinstance(data, np.ndarray) or key not in data.files:
        raise TinyAotError(f"no '{key}' array: a model of several inputs needs one array per "
                           "input (inputs, inputs1, ...)", model=path)
    return np.asarray(data[key])
