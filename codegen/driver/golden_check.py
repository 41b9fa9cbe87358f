"""Inputs and expected outputs checked against the compiled model before any
build: dtype, shape and layout, one line that says what is wrong and how to
fix it (a golden file that does not fit is never run).

An input or output array holds one row per vector, (N, ...). Each row may
have the model's shape ([1, 3, 32, 32]), that shape without its leading
batch 1 ([3, 32, 32]), the same dimensions with other 1s (the memory order
is then the same), or be flat ([3072]). Anything else, in particular the
same dimensions in another order (NHWC for an NCHW model), is refused.
"""
from __future__ import annotations

import numpy as np

from ..errors import TinyAotError


def _squeeze(shape):
    return tuple(int(d) for d in shape if d != 1)


def row_fits(row, shape):
    """Does one row of shape `row` hold the model tensor of shape `shape`
    in its own memory order?"""
    row, shape = tuple(int(d) for d in row), tuple(int(d) for d in shape)
    size = int(np.prod(shape)) if shape else 1
    return row == (size,) or _squeeze(row) == _squeeze(shape)


def layout_hint(row, shape):
    """How to reorder a row given as NHWC for an NCHW model (or the reverse)."""
    row, shape = _squeeze(row), tuple(int(d) for d in shape)
    if len(shape) != 4 or shape[0] != 1:
        return ""
    _, a, b, c = shape
    if row == _squeeze((b, c, a)):   # channels last given to a channels-first model
        return (": the rows look channels-last (NHWC) and the model takes NCHW; "
                "reorder them with x.transpose(0, 3, 1, 2)")
    if row == _squeeze((c, a, b)):   # channels first given to a channels-last model
        return (": the rows look channels-first (NCHW) and the model takes NHWC; "
                "reorder them with x.transpose(0, 2, 3, 1)")
    return ""


def _rows(arr):
    """(N, row shape) of an array of vectors; a 1-D array is one vector."""
    return (1, arr.shape) if arr.ndim == 1 else (arr.shape[0], arr.shape[1:])


def _fmt(shape):
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def model_io(c):
    """(input, output) of a compiled model as the generated C takes and gives
    them: {name, dtype, shape, scale, zero_point}."""
    g = c.graph
    out = []
    for name, io in ((g.inputs[0], c.report["io"]["input"]),
                     (g.outputs[0], c.report["io"]["output"])):
        t = g.tensors[name]
        # float32: an output the float fallback computes (frontend/float_fallback.py)
        dtype = str(t.dtype) if str(t.dtype) in ("int8", "uint8", "float32") else "int8"
        out.append({"name": io.get("onnx_name") or name, "dtype": dtype,
                    "shape": [int(d) for d in t.shape], "scale": io.get("scale"),
                    "zero_point": io.get("zero_point")})
    return out


def model_ends(c):
    """([inputs], [outputs]) of a compiled model, every end in the model's order, each as
    model_io gives one."""
    g = c.graph
    rep = c.report["io"]
    sides = []
    for names, ends in ((g.inputs, rep.get("inputs")), (g.outputs, rep.get("outputs"))):
        side = []
        for k, name in enumerate(names):
            t = g.tensors[name]
            e = (ends or [{}])[k] if ends else {}
            dtype = str(t.dtype) if str(t.dtype) in ("int8", "uint8", "float32") else "int8"
            side.append({"name": e.get("onnx_name") or name, "dtype": dtype,
                         "shape": [int(d) for d in t.shape], "scale": e.get("scale"),
                         "zero_point": e.get("zero_point")})
        sides.append(side)
    return sides[0], sides[1]


def check_inputs(x, io, where, what="inputs"):
    """x: the vectors for the model's input `io` (model_io); where: the file
    (or model) the error names."""
    x = np.asarray(x)
    want = np.dtype(io["dtype"])
    if x.dtype != want:
        if x.dtype.kind == "f":
            fix = (f"the model's input '{io['name']}' is {want} (quantized: scale "
                   f"{io['scale']:.9g}, zero point {io['zero_point']}); `tinyaot golden MODEL "
                   f"--inputs FILE -o G.npz` quantizes float inputs and writes a golden file")
        else:
            fix = f"the model's input '{io['name']}' is {want}: store them as {want}"
        raise TinyAotError(f"'{what}' is {x.dtype}: {fix}", model=str(where))
    check_rows(x, io, where, what)


def check_rows(x, io, where, what="inputs"):
    """The shape and layout of x's rows against the model's input `io`."""
    x = np.asarray(x)
    if x.ndim == 0 or x.size == 0:
        raise TinyAotError(f"'{what}' is empty", model=str(where))
    n, row = _rows(x)
    if not row_fits(row, io["shape"]):
        raise TinyAotError(
            f"'{what}' is {_fmt(x.shape)}, {n} row(s) of {_fmt(row)}; the model's input "
            f"'{io['name']}' is {io['dtype']} {_fmt(io['shape'])}"
            f"{layout_hint(row, io['shape'])}", model=str(where))


def check_outputs(y, n, io, where, key="outputs"):
    """y: the expected outputs for n input vectors, for the model's output `io`."""
    y = np.asarray(y)
    want = np.dtype(io["dtype"])
    if want == np.float32:  # the float fallback's output: onnxruntime's float32 values
        if y.dtype != np.float32:
            raise TinyAotError(f"'{key}' is {y.dtype} but the model's output '{io['name']}' is "
                               "float32 (computed by the float fallback): store onnxruntime's "
                               "float32 outputs", model=str(where))
    elif y.dtype.kind not in "iu":
        raise TinyAotError(
            f"'{key}' is {y.dtype} but the model's output '{io['name']}' is {want}: a golden "
            f"file holds the stored integers (round(y / {io['scale']:.9g}) + "
            f"{io['zero_point']}); `tinyaot golden` writes them", model=str(where))
    info = np.iinfo(want) if want != np.float32 else None
    if info and y.size and (int(y.min()) < info.min or int(y.max()) > info.max):
        raise TinyAotError(f"'{key}' has values outside {want} ({int(y.min())} .. "
                           f"{int(y.max())}) for the model's {want} output '{io['name']}'",
                           model=str(where))
    m, row = _rows(y) if y.ndim else (0, ())
    if m != n or not row_fits(row, io["shape"]):
        raise TinyAotError(
            f"'{key}' is {_fmt(y.shape)}; for {n} input(s) the model gives {n} row(s) of "
            f"{want} {_fmt(io['shape'])} (output '{io['name']}')"
            f"{layout_hint(row, io['shape']) if m == n else ''}", model=str(where))


def check_golden(c, inputs, expected, golden, key):
    """A golden file's inputs and expected outputs against compiled model c."""
    xin, xout = model_io(c)
    check_inputs(inputs, xin, golden)
    check_outputs(expected, _rows(np.asarray(inputs))[0], xout, golden, key)


def end_io(e):
    """One end of the generated API (backend/io_api.End) as the checks above take it:
    dtype is what the API takes or gives (float32 at a float end), qtype the tensor's."""
    return {"name": e.name, "dtype": e.declared, "qtype": e.qtype,
            "shape": [int(d) for d in e.shape], "scale": float(e.scale),
            "zero_point": int(e.zero_point)}


def check_end_inputs(x, io, where, what="inputs"):
    """x: the vectors for one end (end_io). A float end also takes its quantized values."""
    x = np.asarray(x)
    if io["dtype"] != "float32":
        return check_inputs(x, io, where, what)
    if x.dtype not in (np.dtype(np.float32), np.dtype(io["qtype"])):
        raise TinyAotError(f"'{what}' is {x.dtype}: the model's input '{io['name']}' is float32 "
                           f"(or its quantized {io['qtype']} values): store them as float32",
                           model=str(where))
    check_rows(x, io, where, what)


def check_end_outputs(y, n, io, where, key="outputs"):
    """y: the expected values of one output end for n input vectors. At a float end a
    float32 array is compared as bits, an integer one as the values behind the floats."""
    y = np.asarray(y)
    if io["dtype"] != "float32":
        return check_outputs(y, n, io, where, key)
    if y.dtype != np.float32:
        check_outputs(y, n, dict(io, dtype=io["qtype"]), where, key)
        return
    m, row = _rows(y) if y.ndim else (0, ())
    if m != n or not row_fits(row, io["shape"]):
        raise TinyAotError(
            f"'{key}' is {_fmt(y.shape)}; for {n} input(s) the model gives {n} row(s) of "
            f"float32 {_fmt(io['shape'])} (output '{io['name']}')"
            f"{layout_hint(row, io['shape']) if m == n else ''}", model=str(where))
