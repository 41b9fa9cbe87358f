"""TFLite Micro's own Python interpreter (the `tflite-micro` package) as the
oracle for .tflite models: every intermediate tensor (kPreserveAllTensors),
and a layer-by-layer comparison with tinyaot's numpy reference of the IR.

The IR of a .tflite maps its tensors to TFLite tensor indices
(`graph.tflite_tensors`: IR name -> (index, layout)); the IR of an ONNX form
is matched by tensor name (tf2onnx keeps TFLite's names for most tensors).
"""
from __future__ import annotations

import numpy as np


def fdlibm_glibc():
    """Is the host's libm a glibc whose tanhf / expm1f are the fdlibm float port (glibc <=
    2.40), the ones TFLite Micro's host build then calls and tinyaot reproduces?"""
    import platform
    lib, ver = platform.libc_ver()
    if lib != "glibc":
        return False
    major, minor = (int(v) for v in ver.split(".")[:2])
    return (major, minor) <= (2, 40)


def tflm_interpreter(path):
    from tflite_micro import runtime as rt
    return rt.Interpreter.from_file(str(path), arena_size=64 << 20,
                                    intrepreter_config=rt.InterpreterConfig.kPreserveAllTensors)


def tflm_run(path, x, interp=None):
    """One input (batch-less or with batch) -> (outputs list, {tensor index: array})."""
    from codegen.frontend.tflite.reader import read_tflite
    m = read_tflite(path)
    it = interp or tflm_interpreter(path)
    it.reset()
    shape = tuple(m.tensors[m.inputs[0]].shape)
    it.set_input(np.asarray(x).reshape(shape), 0)
    it.invoke()
    outs = [np.asarray(it.get_output(k)) for k in range(len(m.outputs))]
    tensors = {}
    for t in m.tensors:
        if t.is_const:
            continue
        try:
            d = it.GetTensor(t.index, 0)
        except Exception:  # noqa: BLE001 - tensors TFLM did not allocate (folded shapes)
            continue
        if d is None or d.get("tensor_data") is None:
            continue
        tensors[t.index] = np.asarray(d["tensor_data"]).reshape(t.shape) if t.shape else \
            np.asarray(d["tensor_data"])
    return outs, tensors


def int8_input(path, golden_x):
    """The integer input tinyaot's IR takes: float goldens quantized with the model's
    first QUANTIZE (they lie on its grid), int8 ones as they are."""
    from codegen.frontend.tflite.reader import read_tflite
    x = np.asarray(golden_x)
    if x.dtype == np.int8 or x.dtype == np.uint8:
        return x
    m = read_tflite(path)
    q = next(op for op in m.operators if op.builtin == "QUANTIZE"
             and op.inputs[0] == m.inputs[0])
    t = m.tensors[q.outputs[0]]
    s, zp = np.float32(t.scale[0]), int(t.zero_point[0])
    return np.clip(np.round(x.astype(np.float32) / s) + zp, -128, 127).astype(np.int8)


def _as_tflite_layout(arr, layout):
    return np.transpose(arr, (0, 2, 3, 1)) if layout == "nchw" else arr


def compare_layers(g, env, tflm_tensors, tfl_model):
    """[(IR node, IR tensor, differing, total, max |diff|)] for every IR node output
    that is a TFLite tensor, in graph order."""
    by_name = {t.name: t.index for t in tfl_model.tensors}
    mapping = getattr(g, "tflite_tensors", None)
    rows = []
    for n in g.nodes:
        name = n.outputs[0]
        if mapping is not None:
            if name not in mapping:
                continue
            idx, layout = mapping[name]
        else:  # ONNX form: same tensor name, NCHW when the shapes say so
            idx = by_name.get(name)
            if idx is None:
                continue
            tshape = tuple(tfl_model.tensors[idx].shape)
            ishape = tuple(g.tensors[name].shape)
            if ishape == tshape:
                layout = "plain"
            elif len(tshape) == 4 and ishape == (tshape[0], tshape[3], tshape[1], tshape[2]):
                layout = "nchw"
            else:
                continue
        if idx not in tflm_tensors or name not in env:
            continue
        ours = _as_tflite_layout(np.asarray(env[name]), layout).astype(np.int32)
        ref = np.asarray(tflm_tensors[idx]).astype(np.int32)
        if ours.shape != ref.shape:
            ours = ours.reshape(ref.shape)
        d = np.abs(ours - ref)
        rows.append((n.name, name, int((d != 0).sum()), int(d.size), int(d.max()) if d.size else 0))
    return rows


def layers_equal_tflm(path, x):
    """Runs the .tflite model on TFLite Micro and its IR's numpy reference on input x
    (int8); asserts that layers were compared and that every one equals TFLM's tensor.
    Returns (graph, reference tensors, TFLM outputs, TFLM tensors)."""
    from codegen.frontend import load_model
    from codegen.frontend.tflite.reader import read_tflite
    from codegen.reference.run import run_graph
    m = read_tflite(path)
    g = load_model(path)
    outs, tensors = tflm_run(path, x)
    env = run_graph(g, "tflite", {g.inputs[0]: np.asarray(x)})
    rows = compare_layers(g, env, tensors, m)
    assert rows, "no layer was compared"
    bad = [r for r in rows if r[2]]
    assert not bad, bad
    return g, env, outs, tensors
