"""tinyaot's own regression models (models/make_regression_models.py):
a MobileNetV2-style block, a 1-D conv model, a ConvTranspose decoder, a Slice / Split / Resize model
and a model of the remaining operators (misc_ops). ort numerics: the generated C
equals onnxruntime's golden outputs; tflite numerics: it equals the numpy TFLM
reference; on the host and on the Cortex-M4 in QEMU."""
import numpy as np
import onnx
import pytest

from codegen.compiler import compile_model
from codegen.reference import run_graph
from codegen.driver.verify import run_model

from tests.helpers.env import REPO, require_arm_toolchain
from tests.helpers.regression_models import tflite_variant

MODELS = {
    "mbv2_block": {"HardSwish", "Sigmoid", "LeakyRelu", "Mul", "Pad", "Add", "GlobalAveragePool",
                   "MaxPool", "Gemm", "Conv"},
    "conv1d": {"Conv", "Pad", "Tanh", "Gemm"},
    "decoder": {"ConvTranspose"},
}
MODELS["data_ops"] = {"Slice", "Split", "Resize", "Add", "Conv", "Gemm"}
MODELS["misc_ops"] = {"HardSigmoid", "AveragePool", "Concat", "ReduceMean", "Transpose", "Reshape",
                      "MatMul", "Softmax", "Gemm", "Conv"}
# Every operator of issue #4; between them the committed models/*_int8.onnx must use all.
ISSUE4_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul", "Concat", "Pad", "MaxPool",
              "AveragePool", "GlobalAveragePool", "ReduceMean", "Softmax", "Sigmoid", "Tanh",
              "HardSwish", "HardSigmoid", "LeakyRelu", "Clip", "Relu", "Resize", "Transpose",
              "Slice", "Split"}
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
    from tests.helpers.qdq_builder import run_ort
    np.testing.assert_array_equal(run_ort(model, g["inputs"]).reshape(g["outputs"].shape),
                                  g["outputs"])


def _conv_kinds(model):
    """'depthwise' / 'grouped' / 'dense' for each Conv of a model."""
    g = model.graph
    w = {i.name: list(i.dims) for i in g.initializer}
    src = {n.output[0]: n.input[0] for n in g.node if n.op_type == "DequantizeLinear"}
    kinds = set()
    for n in g.node:
        if n.op_type != "Conv":
            continue
        group = next((a.i for a in n.attribute if a.name == "group"), 1)
        c_out = w[src.get(n.input[1], n.input[1])][0]
        kinds.add("dense" if group == 1 else "depthwise" if group == c_out else "grouped")
    return kinds


def test_regression_models_cover_every_issue4_operator():
    ops, convs, matmul_acts = set(), set(), 0
    files = sorted((REPO / "models").glob("*_int8.onnx"))
    for f in files:
        m = onnx.load(str(f))
        ops |= {n.op_type for n in m.graph.node}
        convs |= _conv_kinds(m)
        consts = {i.name for i in m.graph.initializer}
        dq_of = {n.output[0]: n.input[0] for n in m.graph.node if n.op_type == "DequantizeLinear"}
        matmul_acts += sum(n.op_type == "MatMul" and not any(dq_of.get(i, i) in consts
                                                              for i in n.input)
                           for n in m.graph.node)
    assert ISSUE4_OPS <= ops, sorted(ISSUE4_OPS - ops)
    assert ops & {"Reshape", "Flatten"}
    assert convs >= {"dense", "depthwise"}, convs
    assert matmul_acts, "no MatMul of two activations"
    # grouped (1 < group < C_out): kept as its own check, see the report if it fails
    assert "grouped" in convs, f"no grouped Conv in {[f.name for f in files]}"


def test_misc_ops_tflite_rejects_hardsigmoid_and_count_include_pad(tmp_path):
    from codegen.errors import TinyAotError
    with pytest.raises(TinyAotError, match="'/HardSigmoid'.*no TFLite Micro int8 kernel for HardSigmoid"):
        compile_model(paths("misc_ops")[0], numerics="tflite")
    m = onnx.load(str(tflite_variant(paths("misc_ops")[0], tmp_path)))
    for n in m.graph.node:
        if n.name == "/AveragePool":
            next(a for a in n.attribute if a.name == "count_include_pad").i = 1
    onnx.save(m, str(tmp_path / "cip1.onnx"))
    with pytest.raises(TinyAotError, match="'/AveragePool'.*count_include_pad=1"):
        compile_model(tmp_path / "cip1.onnx", numerics="tflite")


def _check(key, numerics, board, tmp_path):
    model, golden = paths(key)
    g = np.load(golden)
    x = g["inputs"]
    if board != "host":
        require_arm_toolchain()
    if key == "misc_ops" and numerics == "tflite":
        model = tflite_variant(model, tmp_path)
        from tests.helpers.qdq_builder import run_ort
        g = {"outputs": run_ort(model, x).reshape(g["outputs"][:len(x)].shape)}
    c = compile_model(model, numerics=numerics)
    if board == "host":
        outs, info = run_model(model, x, board=board, numerics=numerics,
                               build_dir=tmp_path / "gen", compiled=c)
    else:  # every golden input: the run firmware/test_models_on_qemu_m4.py's count test
        # also checks, done once
        from tests.helpers import run_cache
        outs, info = run_cache.run_model_once(model, x, board, numerics, tmp_path / "gen")
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
                        else "tinyaot_transpose_conv_s8"},
            "misc_ops": {"tinyaot_matmul_s8", "tinyaot_transpose_s8", "tinyaot_concat_s8",
                         "tinyaot_avgpool_s8", "tinyaot_softmax_s8", "tinyaot_lut_s8"},
            **KERNELS}[key]
    assert want <= kernels, want - kernels


@pytest.mark.qemu
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
@pytest.mark.parametrize("key", sorted(MODELS))
def test_regression_model_qemu_m4(key, numerics, tmp_path):
    _check(key, numerics, "qemu-m4", tmp_path)
