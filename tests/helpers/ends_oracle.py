"""The oracles, golden files and commands the float-end and several-end tests share
(tests/{kernels,end_to_end,driver,firmware}/...ends...): onnxruntime on the model, the numpy
oracle of a whole model with float ends, bit-for-bit comparison, the several-ends model's
inputs and golden files, the shared float-ended models of ../shared/models.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort

from codegen.numerics.quant import dequantize_end, quantize_end
from codegen.reference import run_graph
from tests.helpers import ends_builders as E
from tests.helpers.env import REPO, SHARED, _missing

F32 = np.float32


def ort_session(path):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

def ort_runs(path, feeds_per_vector):
    """onnxruntime's outputs per vector, in the model's output order."""
    sess = ort_session(path)
    return [sess.run(None, f) for f in feeds_per_vector]

def oracle(c, inputs, quantized=False):
    """The numpy oracle of the whole model: the float inputs quantized as the numerics
    does, the integer graph, the float outputs dequantized (quantized: the integer graph
    alone). inputs: one array per graph input (N, ...). Returns one array per output
    (N, size)."""
    g = c.graph
    din, dout = g.declared_ends()
    if quantized:
        din = [type(d)(d.name, "int8") for d in g.declared_ends()[0]]
        dout = [type(d)(d.name, "int8") for d in g.declared_ends()[1]]
    qin = []
    for name, d, x in zip(g.inputs, din, inputs):
        t = g.tensors[name]
        qin.append(quantize_end(c.numerics, x, *t.q.scalar(), t.dtype) if d.is_float else x)
    outs = [[] for _ in g.outputs]
    for xs in zip(*qin):
        env = run_graph(g, c.numerics, {n: x.reshape(g.tensors[n].shape)
                                        for n, x in zip(g.inputs, xs)}, c.params)
        for k, (name, d) in enumerate(zip(g.outputs, dout)):
            y = env[name].reshape(-1)
            outs[k].append(dequantize_end(y, *g.tensors[name].q.scalar()) if d.is_float else y)
    return [np.stack(o) for o in outs]

def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and np.array_equal(a.reshape(-1).view(np.uint8),
                                                 b.reshape(-1).view(np.uint8))


# ---- the several-ends model (ends_builders.several_ends)

X_NAME, Z_NAME = "serving_default_x:0", "serving_default_z:0"

# the model's outputs, in its order (several_ends): float, float, int8, int8
OUT_NAMES = ["StatefulPartitionedCall:2", "StatefulPartitionedCall:0",
             "StatefulPartitionedCall:1", "StatefulPartitionedCall:3"]


def several_inputs(n=4):
    xs = E.float_inputs(*E.X_Q, 16)[:n]
    zs = np.random.default_rng(7).integers(-128, 128, (n, 1, 8)).astype(np.int8)
    zs[0, 0, :] = [-128, 127, 0, 2, -1, 1, 64, -64]
    return xs, zs


def onnxruntime_outputs(path, xs, zs):
    runs = ort_runs(path, [{X_NAME: x, Z_NAME: z} for x, z in zip(xs, zs)])
    return [np.stack([r[k] for r in runs]) for k in range(len(OUT_NAMES))]


def write_golden(path, xs, zs, outs, order, key="outputs_onnxruntime"):
    """A golden file in the format of ../shared/models (MORE_MODELS.md): output j of the
    file is the model's output named output_names[j]."""
    arrays = {"inputs": xs.reshape(len(xs), -1), "inputs1": zs.reshape(len(zs), -1),
              "output_names": np.array([OUT_NAMES[k] for k in order])}
    for j, k in enumerate(order):
        arrays[key if j == 0 else f"{key}{j}"] = outs[k].reshape(len(xs), -1)
    np.savez(path, **arrays)
    return path


def run_cli(*args, tmp_path):
    env = {**os.environ, "TINYAOT_BUILD_DIR": str(tmp_path / "build")}
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, env=env)


# ---- the shared float-ended models

FLOAT_MODELS = {
    "gesture": "gesture_classification_rock_paper_scissors/rock_paper_scissors",
    "ecg": "anomaly_detection_ecg_autoencoder/autoencoder_example",
}

# onnxruntime's default session on the machine that made the goldens sums the ECG
# autoencoder's u8 x s8 products with int16 saturation (QGemm without VNNI): its
# `outputs_onnxruntime` differs from the exact integer result in 303 of 1120 values
# (MORE_MODELS.md), which `outputs_onnxruntime_noopt` and a VNNI machine's session give.
ORT_KEY = {"gesture": "outputs_onnxruntime", "ecg": "outputs_onnxruntime_noopt"}


def shared_float_model(key, form=".onnx"):
    stem = SHARED / FLOAT_MODELS[key]
    model, golden = stem.with_suffix(form), stem.parent / (stem.name + "_golden.npz")
    if not model.exists() or not golden.exists():
        _missing(f"shared model {model}")
    return model, golden


def verify_cli(model, golden, board, numerics, key):
    # in the worker's own build tree (tests/conftest.py), not a fresh one per call: its
    # runtime objects are built once per board, not once per call (~5 s each)
    r = subprocess.run([sys.executable, "-m", "codegen.cli", "verify", str(model), "--golden",
                        str(golden), "--board", board, "--numerics", numerics, "--key", key,
                        "--json"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)
