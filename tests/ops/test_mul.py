"""Mul (broadcasting: per-channel [1,C,1,1] and scalar constants, two activations
with different scales): generated C on the host, bit-exact with onnxruntime
(ort: QLinearMul or float Mul, as ORT's optimizer decides) and with the numpy
TFLM reference (tflite)."""
import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.reference import run_graph
from codegen.driver.verify import run_model

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, run_ort, save


def host_run(path, x, numerics, tmp_path):
    c = compile_model(path, numerics=numerics)
    outs, info = run_model(path, x, board="host", numerics=numerics, build_dir=tmp_path / "gen",
                           compiled=c)
    assert info["status"] == [0] * len(x)
    assert "tinyaot_mul_s8" in c.report["kernels"]
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)  # C == numpy reference
    return outs.reshape(ref.shape), c


def const_q(b, arr, scale, zp):
    q = np.clip(np.rint(np.asarray(arr) / scale) + zp, -128, 127).astype(np.int8)
    return b.dq(b.const_int(q, np.int8), scale, zp)


def mul_model(kind, c, hw=(4, 5), relu=False, after_conv=False, seed=0):
    rng = np.random.default_rng(seed)
    shape = (1, c) + hw
    b = QdqBuilder(f"mul_{kind}")
    x = b.dq("x", 0.04, 3)
    if after_conv:
        w, ws = b.weight(rng.normal(size=(c, c, 1, 1)).astype(np.float32) * 0.5)
        x = b.dq(b.q(b.op("Conv", [x, w]), 0.06, -5), 0.06, -5)
    if kind == "per_channel":
        other = const_q(b, rng.uniform(-2, 2, size=(1, c, 1, 1)), 0.017, -3)
    elif kind == "scalar":
        other = const_q(b, np.float32(-1.37), 0.012, 9)
    elif kind == "same_shape":  # a second activation of the same shape, other scale
        other = b.dq(b.q(b.op("Relu", [x]), 0.09, -100), 0.09, -100)
    elif kind == "two_acts":  # two activations, each with its own single-use DequantizeLinear
        other = b.dq(b.q(b.op("Relu", [x]), 0.09, -100), 0.09, -100)
        x = b.dq(b.q(b.op("LeakyRelu", [x], alpha=0.2), 0.033, 4), 0.033, 4)
    elif kind == "squeeze_excite":  # x * GlobalAveragePool(x): [1,C,H,W] * [1,C,1,1]
        other = b.dq(b.q(b.op("GlobalAveragePool", [x]), 0.021, 7), 0.021, 7)
    else:
        raise ValueError(kind)
    y = b.op("Mul", [x, other])
    if relu:
        y = b.op("Relu", [y])
    b.q(y, 0.05, -11, out="y")
    return b.model("x", shape, "y", shape), shape


CASES = [(k, c) for k in ("per_channel", "scalar", "same_shape", "squeeze_excite")
         for c in (1, 3, 5, 7)] + [("two_acts", 3), ("two_acts", 7)]


@pytest.mark.parametrize("kind,c", CASES)
def test_mul_ort_host_bit_exact_with_onnxruntime(kind, c, tmp_path):
    m, shape = mul_model(kind, c, after_conv=(c == 5))
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3, seed=c)
    outs, comp = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    if kind in ("per_channel", "scalar") and c != 5:  # ORT fuses these: QLinearMul
        assert [comp.params[n.name].mode for n in comp.graph.nodes if n.op == "mul"] == [1]


@pytest.mark.parametrize("kind", ["per_channel", "same_shape"])
def test_mul_relu_ort_host_bit_exact_with_onnxruntime(kind, tmp_path):
    m, shape = mul_model(kind, 3, hw=(3, 7), relu=True)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, c = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    assert outs.min() >= -11


@pytest.mark.parametrize("kind,c", [(k, c) for k in ("per_channel", "scalar", "same_shape",
                                                      "squeeze_excite") for c in (1, 3, 7)])
def test_mul_tflite_host_equals_reference(kind, c, tmp_path):
    m, shape = mul_model(kind, c, after_conv=(c == 7))
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 2, seed=c)
    outs, comp = host_run(path, x, "tflite", tmp_path)
    # TFLM's rounding differs from ORT's by at most one step on the Mul itself
    if kind in ("per_channel", "scalar"):
        want = run_ort(path, x).reshape(outs.shape)
        assert np.abs(outs.astype(int) - want).max() <= 1
