"""`tinyaot quantize`: float ONNX -> int8 QDQ ONNX with onnxruntime.

A model below opset 13 is first upgraded to opset 13 with onnx's version converter
(per-channel DequantizeLinear, the `axis` quantize_static writes, exists from opset 13;
onnx.checker and onnxruntime reject it below), or refused in one line when the converter
cannot. BatchNormalization folded into the Conv / Gemm / MatMul before it
(codegen/passes/fold_batchnorm.py), then onnxruntime's pre-processing (quant_pre_process: shape inference and
graph clean-up) then quantize_static: QDQ format, per-channel int8 weights,
int8 activations, calibration by MinMax (default), Entropy or Percentile.
models/make_digits_cnn.py calls quantize_qdq() for the default model.
"""
from __future__ import annotations

import contextlib
import os
import tempfile

import numpy as np

from ..errors import TinyAotError

METHODS = ("minmax", "entropy", "percentile")
MIN_OPSET = 13  # per-channel DequantizeLinear (axis)


def upgrade_opset(model, path):
    """The float model at opset >= MIN_OPSET: itself, or onnx's version converter's
    upgrade of it; -> (model, the opset it had, or None when unchanged)."""
    import onnx
    from onnx import version_converter

    opset = next((i.version for i in model.opset_import if i.domain in ("", "ai.onnx")), None)
    if opset is None or opset >= MIN_OPSET:
        return model, None
    try:
        up = version_converter.convert_version(model, MIN_OPSET)
        onnx.checker.check_model(up)
    except Exception as e:
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        why = why.split(" failed: ", 1)[-1]  # the converter's source position, an assertion
        raise TinyAotError(f"opset {opset} cannot be upgraded to opset {MIN_OPSET} for "
                           f"per-channel quantization (onnx version converter: {why}); "
                           f"export the float model at opset {MIN_OPSET} or newer",
                           model=str(path)) from None
    return up, opset


class CalibReader:
    """onnxruntime CalibrationDataReader: one sample per get_next(), batch of 1."""

    def __init__(self, inputs, input_name, tick=None):
        self._samples = list(inputs)
        self._name = input_name
        self._tick = tick or (lambda n=1: None)  # console.progress's advance()
        self.rewind()

    def get_next(self):
        s = next(self._it, None)
        if s is None:
            return None
        self._tick()
        return {self._name: s[None].astype(np.float32)}

    def rewind(self):
        self._it = iter(self._samples)
        self._n = 0


def quantize_qdq(f32_path, calib_inputs, out_path, method="minmax",
                 keep_removable_activations=False, tick=None, extra_op_types=(), info=None):
    """Float ONNX -> QDQ int8 ONNX (float I/O); calib_inputs: (N, ...) samples
    without the batch axis. extra_op_types: ops onnxruntime does not quantize
    by default (e.g. HardSigmoid, ReduceMean) to put inside DQ -> op -> Q too.
    Writes out_path atomically; returns it. info (a dict, optional) gets
    "batchnorm_folded": how many BatchNormalization were folded."""
    import onnx
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry
    from onnxruntime.quantization.shape_inference import quant_pre_process

    if method not in METHODS:
        raise TinyAotError(f"unknown calibration method '{method}' (choose from {', '.join(METHODS)})")
    cm = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
          "percentile": CalibrationMethod.Percentile}[method]
    input_name = onnx.load(str(f32_path)).graph.input[0].name
    out_path = str(out_path)
    from ..passes.fold_batchnorm import fold_batchnorm

    with tempfile.TemporaryDirectory() as tmp:
        f32, upgraded_from = upgrade_opset(onnx.load(str(f32_path)), f32_path)
        folded = fold_batchnorm(f32)
        if info is not None:
            info["batchnorm_folded"] = folded
            info["upgraded_from_opset"] = upgraded_from
        src = str(f32_path)
        if folded or upgraded_from:  # else the original file, byte for byte (make_digits_cnn.py)
            src = os.path.join(tmp, "folded.onnx")
            onnx.save(f32, src)
        pre = os.path.join(tmp, "pre.onnx")
        quant_pre_process(src, pre, skip_symbolic_shape=True)
        tmp_out = os.path.join(tmp, "out.onnx")
        quantize_static(
            pre, tmp_out, CalibReader(calib_inputs, input_name, tick),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            weight_type=QuantType.QInt8,
            activation_type=QuantType.QInt8,
            calibrate_method=cm,
            op_types_to_quantize=(sorted(set(QLinearOpsRegistry) | set(QDQRegistry)
                                         | set(extra_op_types)) if extra_op_types else None),
            extra_options=({"QDQKeepRemovableActivations": True}
                           if keep_removable_activations else None),
        )
        try:  # a model onnxruntime and tinyaot read, or nothing written
            onnx.checker.check_model(tmp_out)
        except Exception as e:
            raise TinyAotError("onnxruntime wrote an invalid quantized model (onnx.checker: "
                               f"{str(e).strip().splitlines()[0]})", model=str(f32_path)) from None
        os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
        staged = out_path + ".tmp"
        with open(tmp_out, "rb") as src, open(staged, "wb") as dst:
            dst.write(src.read())
        os.replace(staged, out_path)
    return out_path


def _model_input(path):
    import onnx
    if not os.path.exists(str(path)):
        raise TinyAotError("no such model", model=str(path))
    try:
        m = onnx.load(str(path))
    except Exception:
        raise TinyAotError("not an ONNX model", model=str(path)) from None
    if not m.graph.input:
        raise TinyAotError("model has no input", model=str(path))
    inp = m.graph.input[0]
    if inp.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        raise TinyAotError("quantize wants a float32 model (input is not float)", model=str(path),
                           tensor=inp.name)
    if any(n.op_type in ("QuantizeLinear", "DequantizeLinear", "QLinearConv") for n in m.graph.node):
        raise TinyAotError("model is already quantized", model=str(path))
    dims = [d.dim_value if d.HasField("dim_value") else None
            for d in inp.type.tensor_type.shape.dim]
    return inp.name, dims


def load_samples(path, rank, key="inputs"):
    """(N, ...) float32 samples without the batch axis from an .npz or a folder of .npy."""
    path = str(path)
    if os.path.isdir(path):
        files = sorted(f for f in os.listdir(path) if f.endswith(".npy"))
        if not files:
            raise TinyAotError("folder has no .npy files", model=path)
        arrays = [np.load(os.path.join(path, f), allow_pickle=False) for f in files]
    elif os.path.isfile(path):
        try:
            data = np.load(path, allow_pickle=False)
            files = list(data.files)
        except Exception:
            raise TinyAotError("not an .npz file", model=path) from None
        if key in files:
            arrays = [data[key]]
        elif len(files) == 1:
            arrays = [data[files[0]]]
        else:
            raise TinyAotError(f"no '{key}' array (has: {', '.join(sorted(files))})", model=path)
    else:
        raise TinyAotError("no such calibration data", model=path)
    out = []
    for a in arrays:
        a = np.asarray(a)
        if a.ndim == rank - 1:
            a = a[None]
        if a.ndim != rank:
            raise TinyAotError(f"samples must have {rank - 1} dims (or {rank} for a batch), "
                               f"got shape {list(a.shape)}", model=path)
        out.append(a.astype(np.float32))
    return np.concatenate(out) if len(out) > 1 else out[0]


def accuracy(model_path, inputs, labels):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(model_path), so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    pred = [int(np.argmax(sess.run(None, {name: x[None]})[0])) for x in inputs]
    return float(np.mean(np.asarray(pred) == np.asarray(labels).reshape(-1)))


def quantize_files(model, calib, output, method="minmax", eval_data=None, progress=None):
    """`tinyaot quantize`: the float model at `model` calibrated on the samples at
    `calib` -> the QDQ model at `output`; with eval_data (an .npz with 'inputs'
    and 'labels') also float and int8 top-1 accuracy. progress(description,
    total) -> context yielding advance() (console.progress on a terminal)."""
    name, dims = _model_input(model)
    rank = len(dims)
    calib_x = load_samples(calib, rank)
    ev = None
    if eval_data:
        if not os.path.isfile(eval_data):
            raise TinyAotError("no such evaluation file", model=eval_data)
        data = np.load(eval_data, allow_pickle=False)
        if "labels" not in data.files:
            raise TinyAotError("evaluation .npz needs 'inputs' and 'labels'", model=eval_data)
        ev = (load_samples(eval_data, rank), np.asarray(data["labels"]))
        if len(ev[0]) != len(ev[1].reshape(-1)):
            raise TinyAotError(f"{len(ev[0])} inputs but {ev[1].size} labels", model=eval_data)
    info = {}
    try:
        with (progress or _no_progress)(f"calibrating ({method})", len(calib_x)) as tick:
            quantize_qdq(model, calib_x, output, method=method, tick=tick, info=info)
    except TinyAotError:
        raise
    except Exception as e:
        raise TinyAotError(f"onnxruntime quantization failed: {type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''}", model=model) from None
    r = {"model": model, "output": output, "method": method, "calibration_samples": len(calib_x),
         "batchnorm_folded": info.get("batchnorm_folded", 0)}
    if info.get("upgraded_from_opset"):
        r["upgraded_from_opset"] = info["upgraded_from_opset"]
    if ev is not None:
        r["float_accuracy"] = accuracy(model, *ev)
        r["int8_accuracy"] = accuracy(output, *ev)
        r["eval_samples"] = len(ev[0])
    return r


@contextlib.contextmanager
def _no_progress(description, total):
    yield lambda n=1: None
