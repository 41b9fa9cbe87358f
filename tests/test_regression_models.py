"""tinyaot's own regression models (models/make_regression_models.py):
a MobileNetV2-style block, a 1-D conv model, a ConvTranspose decoder and a Slice / Split / Resize model. ort numerics: the generated C
equals onnxruntime's golden outputs; tflite numerics: it equals the numpy TFLM
reference; on the host and on the Cortex-M4 in QEMU."""
import numpy as np
import onnx
import pytest

from codegen.compiler import compile_model
from codegen.reference import run_graph
from codegen.verify import run_model

from conftest import REPO, require_arm_toolchain

MODELS = {
    "mbv2_block": {"HardSwish", "Sigmoid", "LeakyRelu", "Mul", "Pad", "Add", "GlobalAveragePool",
                   "MaxPool", "Gemm", "Conv"},
    "conv1d": {"Conv", "Pad", "Tanh", "Gemm"},
    "decoder": {"ConvTranspose"},
}
MODELS["data_ops"] = {"Slice", "Split", "Resize", "Add", "Conv", "Gemm"}
KERNELS = {"data_ops": {"tinyaot_slice_s8", "tinyaot_resize_nearest_s8",
                        "tinyaot_resize_bilinear_s8"}}


def paths(key):
    return REPO / "models" / f"{key}_int8.onnx", REPO / "models" / f"{key}_int8_golden.npz"


@pytest.mark.parametrize("key", sorted(MODELS))
def test_regression_model_files(key):
    model, golden = paths(key)
    ops = {n.op_type for n in onnx.load(str(model)).graph.node}
    assert MODELS[key] <= ops, MODELS[key] - ops
    g = np.load(golden)
    assert g["inputs"].dtype == np.int8 and g["outputs"].dtype == np.int8
    assert len(g["inputs"]) == 16
    # the golden outputs are onnxruntime's, today
    from qdq_builders import run_ort
    np.testing.assert_array_equal(run_ort(model, g["inputs"]).reshape(g["outputs"].shape),
                                  g["outputs"])


def _check(key, numerics, board, tmp_path):
    model, golden = paths(key)
    g = np.load(golden)
    x = g["inputs"]
    if board != "host":
        require_arm_toolchain()
        x = x[:4]
    c = compile_model(model, numerics=numerics)
    outs, info = run_model(model, x, board=board, numerics=numerics, build_dir=tmp_path / "gen",
                           compiled=c)
    assert info["status"] == [0] * len(x)
    gr = c.graph
    ref = np.stack([run_graph(gr, numerics, {gr.inputs[0]: v}, c.params)[gr.outputs[0]] for v in x])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)
    if numerics == "ort":
        np.testing.assert_array_equal(outs.reshape(g["outputs"][:len(x)].shape), g["outputs"][:len(x)])
    else:  # same network, TFLM rounding: near onnxruntime
        diff = np.abs(outs.reshape(ref.shape).astype(int) - g["outputs"][:len(x)].reshape(ref.shape))
        assert diff.max() <= 12
    return c


@pytest.mark.parametrize("numerics", ["ort", "tflite"])
@pytest.mark.parametrize("key", sorted(MODELS))
def test_regression_model_host(key, numerics, tmp_path):
    c = _check(key, numerics, "host", tmp_path)
    kernels = set(c.report["kernels"])
    want = {"mbv2_block": {"tinyaot_lut_s8", "tinyaot_mul_s8", "tinyaot_pad_s8"},
            "conv1d": {"tinyaot_lut_s8", "tinyaot_pad_s8"},
            "decoder": {"tinyaot_transpose_conv_f32_s8" if numerics == "ort"
                        else "tinyaot_transpose_conv_s8"}, **KERNELS}[key]
    assert want <= kernels, want - kernels


@pytest.mark.qemu
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
@pytest.mark.parametrize("key", sorted(MODELS))
def test_regression_model_qemu_m4(key, numerics, tmp_path):
    _check(key, numerics, "qemu-m4", tmp_path)
