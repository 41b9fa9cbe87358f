"""The runtimes a golden file's outputs can come from (`tinyaot golden
--reference`): each takes the model's integer inputs and gives its integer
outputs, as the generated C takes and gives them.

    ort           onnxruntime, the plain session on the ONNX file (numerics ort)
    tflite-micro  TFLite Micro's own interpreter (the tflite-micro package) on a
                  .tflite file (numerics tflite)
    oracle        tinyaot's numpy reference of the chosen numerics
                  (codegen/reference/), run on the model's integer IR

A new reference is one more Reference in REFERENCES.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import TinyAotError


@dataclass(frozen=True)
class ModelIO:
    """A model's input and output as a reference sees them ({name, dtype,
    shape, scale, zero_point}, driver/golden_check.py), and what it loaded
    (the compiled model, the interpreter) to run it."""
    input: dict
    output: dict
    loaded: object


@dataclass(frozen=True)
class Reference:
    name: str
    numerics: tuple          # the numerics whose bits it gives
    key: str | None          # the golden array named after it (verify's default for them)
    model_io: Callable       # (model, numerics, ort_threads) -> ModelIO
    run: Callable            # (model, ModelIO, inputs (N, ...), numerics, ort_threads) -> (N, ...)
    wants: str = ""          # what model file it runs, for the error when it cannot
    suffixes: tuple = ()     # the model files it runs (none: any)


def _compiled_io(model, numerics, ort_threads):
    """The model's input and output as tinyaot compiles them."""
    from ..compiler import compile_model
    from .golden_check import model_io
    c = compile_model(model, numerics=numerics, ort_threads=ort_threads)
    return ModelIO(*model_io(c), c)


def _ort_run(model, io, x, numerics, ort_threads):
    return _ort_run_ends(model, io, [x], numerics, ort_threads)[0]


def _oracle_run(model, io, x, numerics, ort_threads):
    return _oracle_run_ends(model, io, [x], numerics, ort_threads)[0]


def _tflm_interpreter(model):
    try:
        from tflite_micro import runtime as rt
    except ImportError:
        raise TinyAotError("--reference tflite-micro needs the tflite-micro package "
                           "(pip install tflite-micro; part of tinyaot's [test] extra)") from None
    try:
        return rt.Interpreter.from_file(str(model), arena_size=64 << 20)
    except Exception as e:  # noqa: BLE001 - the interpreter raises RuntimeError / ValueError
        raise TinyAotError(f"TFLite Micro cannot load it: {str(e).splitlines()[0]}",
                           model=str(model)) from None


def _tflm_io(model, numerics, ort_threads):
    it = _tflm_interpreter(model)
    ins, outs = _tflm_ends(it, model)
    return ModelIO(ins[0], outs[0], it)


def _tflm_run(model, io, x, numerics, ort_threads):
    return _tflm_run_ends(model, io, [x], numerics, ort_threads)[0]


# ---- several inputs or outputs: every end, in the model's order ------------------------------

def ends_of(io):
    """([input dicts], [output dicts]) of a ModelIO: every end the model has."""
    c = io.loaded
    if hasattr(c, "graph"):  # a compiled model (ort, oracle)
        from .golden_check import model_ends
        return model_ends(c)
    return _tflm_ends(c)


def run_ends(ref, model, io, xs, numerics, ort_threads):
    """Per output, the (N, ...) integer outputs for the per-input (N, ...) arrays xs."""
    return {"ort": _ort_run_ends, "oracle": _oracle_run_ends,
            "tflite-micro": _tflm_run_ends}[ref.name](model, io, xs, numerics, ort_threads)


def _ort_run_ends(model, io, xs, numerics, ort_threads):
    import onnxruntime as ort

    from .ort_taps import ir_output, ort_input
    g = io.loaded.graph
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = ort_threads
    sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    ins_e, outs_e = ends_of(io)
    types = {i.name: i.type for i in sess.get_inputs()}
    outs = [[] for _ in outs_e]
    for v in range(len(xs[0])):
        feed = {e["name"]: ort_input(g.tensors[t], x[v], types[e["name"]])
                for e, t, x in zip(ins_e, g.inputs, xs)}
        ys = sess.run([e["name"] for e in outs_e], feed)
        for k, (t, y) in enumerate(zip(g.outputs, ys)):
            outs[k].append(np.asarray(ir_output(g.tensors[t], y)).reshape(-1))
    return [np.stack(o) for o in outs]


def _oracle_run_ends(model, io, xs, numerics, ort_threads):
    from .validate import reference_tensors
    g = io.loaded.graph
    per = [np.asarray(x).reshape(len(x), -1) for x in xs]
    envs = reference_tensors(model, numerics, list(zip(*per)))
    return [np.stack([np.asarray(e[t]).reshape(-1) for e in envs]) for t in g.outputs]


def _tflm_ends(it, model=None):
    ends = []
    for details, what in ((it.get_input_details, "input"), (it.get_output_details, "output")):
        side, k = [], 0
        while True:
            try:
                d = details(k)
            except Exception:  # noqa: BLE001 - past the last end
                break
            q = d.get("quantization_parameters") or {}
            scales, zps = q.get("scales"), q.get("zero_points")
            dtype = np.dtype(d["dtype"]).name
            if dtype not in ("int8", "uint8") or scales is None or len(scales) != 1:
                raise TinyAotError(f"the .tflite {what} {k} is {dtype}, not a per-tensor "
                                   "quantized int8/uint8 tensor",
                                   model=None if model is None else str(model))
            side.append({"name": d.get("name", f"{what}{k}"), "dtype": dtype,
                         "shape": [int(v) for v in d["shape"]], "scale": float(scales[0]),
                         "zero_point": int(zps[0])})
            k += 1
        ends.append(side)
    return ends[0], ends[1]


def _tflm_run_ends(model, io, xs, numerics, ort_threads):
    it = io.loaded
    ins_e, outs_e = _tflm_ends(it)
    outs = [[] for _ in outs_e]
    for v in range(len(xs[0])):
        it.reset()
        for k, (e, x) in enumerate(zip(ins_e, xs)):
            it.set_input(np.asarray(x[v], dtype=e["dtype"]).reshape(e["shape"]), k)
        it.invoke()
        for k, e in enumerate(outs_e):
            outs[k].append(np.asarray(it.get_output(k)).reshape(-1).astype(e["dtype"]))
    return [np.stack(o) for o in outs]


REFERENCES = {
    "ort": Reference("ort", ("ort",), "outputs_onnxruntime", _compiled_io, _ort_run,
                     wants="an ONNX model", suffixes=(".onnx",)),
    "tflite-micro": Reference("tflite-micro", ("tflite",), "outputs_tflm", _tflm_io, _tflm_run,
                              wants="a .tflite model (the one your ONNX file was converted "
                                    "from, or your own)", suffixes=(".tflite",)),
    "oracle": Reference("oracle", ("ort", "tflite"), None, _compiled_io, _oracle_run),
}


def is_tflite(model):
    return str(model).lower().endswith(".tflite")


def pick_reference(reference, numerics, model):
    """(Reference, numerics) for the options given; the defaults: numerics
    tflite for a .tflite file, else ort; the reference of that numerics
    (tflite-micro on a .tflite, the oracle for tflite numerics on an ONNX file)."""
    if numerics is None:
        numerics = (REFERENCES[reference].numerics[0] if reference
                    else "tflite" if is_tflite(model) else "ort")
    if reference is None:
        reference = "ort" if numerics == "ort" else \
            "tflite-micro" if is_tflite(model) else "oracle"
    ref = REFERENCES[reference]
    if numerics not in ref.numerics:
        raise TinyAotError(f"--reference {reference} gives {' or '.join(ref.numerics)} numerics, "
                           f"not {numerics} (use --reference oracle for tinyaot's numpy "
                           f"reference of {numerics})")
    if ref.suffixes and not str(model).lower().endswith(ref.suffixes):
        raise TinyAotError(f"--reference {reference} runs {ref.wants}", model=str(model))
    return ref, numerics
