"""LUT activations (Sigmoid, Tanh, HardSwish, HardSigmoid, LeakyRelu; under ort also Elu,
Selu, Celu, Softplus, Softsign, ThresholdedRelu, Mish): one `lut`
IR op and one kernel (tinyaot_lut_s8). Generated C on the host, bit-exact with
onnxruntime (ort) and with the numpy TFLM reference (tflite)."""
import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.errors import TinyAotError
from codegen.reference import run_graph
from codegen.numerics import lut_tables as lt
from codegen.driver.verify import run_model

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, run_ort, save

ATTRS = {"Sigmoid": {}, "Tanh": {}, "HardSwish": {}, "HardSigmoid": {"alpha": 0.25, "beta": 0.4},
         "LeakyRelu": {"alpha": 0.1},
         # onnxruntime only
         "Elu": {"alpha": 0.7}, "Selu": {"alpha": 1.5, "gamma": 1.1}, "Celu": {"alpha": 2.0},
         "Softplus": {}, "Softsign": {}, "ThresholdedRelu": {"alpha": 0.3}}
# output quantization: ort takes anything; TFLM fixes Sigmoid's and Tanh's
OUT_Q = {"Sigmoid": (1 / 256, -128), "Tanh": (1 / 128, 0), "HardSwish": (0.031, -100),
         "HardSigmoid": (1 / 255, -128), "LeakyRelu": (0.045, 17),
         "Elu": (0.04, 20), "Selu": (0.05, 0), "Celu": (0.04, 30), "Softplus": (0.03, -128),
         "Softsign": (1 / 128, 0), "ThresholdedRelu": (0.045, -10)}


def unary_model(op, shape, in_q, out_q, relu=False, attrs=None):
    b = QdqBuilder(f"lut_{op.lower()}")
    f = b.op(op, [b.dq("x", *in_q)], **(ATTRS[op] if attrs is None else attrs))
    if relu:
        f = b.op("Relu", [f])
    b.q(f, *out_q, out="y")
    return b.model("x", shape, "y", shape)


def host_run(path, x, numerics, tmp_path):
    c = compile_model(path, numerics=numerics)
    outs, info = run_model(path, x, board="host", numerics=numerics, build_dir=tmp_path / "gen",
                           compiled=c)
    assert info["status"] == [0] * len(x)
    assert "tinyaot_lut_s8" in c.report["kernels"]
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)  # C == numpy reference
    return outs, c


@pytest.mark.parametrize("op", sorted(ATTRS))
@pytest.mark.parametrize("shape,in_q", [((1, 7, 5, 9), (0.043, 5)), ((1, 3, 4, 4), (0.11, -20)),
                                        ((1, 1, 2, 3), (0.02, 0)), ((1, 5, 64), (0.07, -128))])
def test_lut_ort_host_bit_exact_with_onnxruntime(op, shape, in_q, tmp_path):
    path = save(unary_model(op, shape, in_q, OUT_Q[op]), tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, _ = host_run(path, x, "ort", tmp_path)
    want = run_ort(path, x)
    np.testing.assert_array_equal(outs.reshape(want.shape), want)


@pytest.mark.parametrize("op", ["LeakyRelu", "Tanh", "HardSwish"])
def test_lut_fused_relu_and_after_conv_ort(op, tmp_path):
    """Conv (NHWC) -> op -> Relu -> Q: the table follows the conv's layout and folds the Relu."""
    rng = np.random.default_rng(1)
    shape = (1, 3, 6, 5)
    b = QdqBuilder("conv_lut")
    w, ws = b.weight(rng.normal(size=(5, 3, 3, 3)).astype(np.float32) * 0.3)
    bias = b.bias(rng.normal(size=5) * 0.1, (np.float32(0.05) * ws).astype(np.float32))
    c = b.op("Conv", [b.dq("x", 0.05, 3), w, bias], pads=[1, 1, 1, 1])
    h = b.dq(b.q(c, 0.08, -7), 0.08, -7)
    f = b.op("Relu", [b.op(op, [h], **ATTRS[op])])
    b.q(f, 0.03, -90, out="y")
    path = save(b.model("x", shape, "y", (1, 5, 6, 5)), tmp_path)
    x = all_int8_inputs(shape, 4)
    outs, c = host_run(path, x, "ort", tmp_path)
    want = run_ort(path, x)
    np.testing.assert_array_equal(outs.reshape(want.shape), want)
    assert outs.min() >= -90  # the Relu is in the table


@pytest.mark.parametrize("op", ["Sigmoid", "Tanh", "HardSwish", "LeakyRelu"])
@pytest.mark.parametrize("shape,in_q", [((1, 7, 3, 5), (0.043, 5)), ((1, 1, 9), (0.2, -3)),
                                        ((1, 5, 2, 2), (0.011, 100))])
def test_lut_tflite_host_equals_reference(op, shape, in_q, tmp_path):
    path = save(unary_model(op, shape, in_q, OUT_Q[op]), tmp_path)
    x = all_int8_inputs(shape, 2)
    outs, c = host_run(path, x, "tflite", tmp_path)
    # the table is TFLM's kernel on every input
    s, z = in_q
    want = {"Sigmoid": lambda: lt.tfp.logistic_int8_table(s, z, *OUT_Q[op]),
            "Tanh": lambda: lt.tfp.tanh_int8_table(s, z, *OUT_Q[op]),
            "HardSwish": lambda: lt.hard_swish_int8_table(s, z, *OUT_Q[op]),
            "LeakyRelu": lambda: lt.leaky_relu_int8_table(s, z, *OUT_Q[op], 0.1)}[op]()
    np.testing.assert_array_equal(outs.reshape(x.shape), want[x.astype(np.int32) + 128])
    # and close to the float function (TFLM's own tests allow about one step)
    xf = (x.astype(np.float64) - z) * np.float32(s)
    f = {"Sigmoid": lambda v: 1 / (1 + np.exp(-v)), "Tanh": np.tanh,
         "HardSwish": lambda v: v * np.clip(v + 3, 0, 6) / 6,
         "LeakyRelu": lambda v: np.where(v >= 0, v, 0.1 * v)}[op](xf)
    so, zo = OUT_Q[op]
    exp = np.clip(np.rint(f / so) + zo, -128, 127)
    assert np.abs(outs.reshape(x.shape).astype(int) - exp).max() <= 1


@pytest.mark.parametrize("si,zi,so,zo", [(0.05, 3, 0.03, -100), (0.1, 0, 0.05, -20),
                                         (0.02, -10, 0.01, -128), (0.5, 0, 0.3, -10),
                                         (0.004, 0, 0.002, 0), (1.5, 10, 0.05, -128)])
def test_tflite_hard_swish_and_leaky_relu_tables_track_float(si, zi, so, zo):
    x = (lt.ALL_INT8 - zi) * np.float64(np.float32(si))
    hs = x * np.clip(x + 3, 0, 6) / 6
    t = lt.hard_swish_int8_table(si, zi, so, zo).astype(int)
    assert np.abs(t - np.clip(np.rint(hs / so) + zo, -128, 127)).max() <= 1
    for alpha in (0.01, 0.2, 0.5):
        lr = np.where(x >= 0, x, alpha * x)
        t = lt.leaky_relu_int8_table(si, zi, so, zo, alpha).astype(int)
        assert np.abs(t - np.clip(np.rint(lr / so) + zo, -128, 127)).max() <= 1


def test_tflite_leaky_relu_exact_multipliers():
    # s_in == s_out: identity multiplier is exactly 1; alpha 0.5 is an exact power of two
    t = lt.leaky_relu_int8_table(0.1, 0, 0.1, 0, 0.5).astype(int)
    v = lt.ALL_INT8
    # gemmlowp's SaturatingRoundingDoublingHighMul rounds a negative half toward zero
    want = np.where(v >= 0, v, -((-v) // 2))
    np.testing.assert_array_equal(t, want)


def test_tflite_rejects_what_tflm_cannot_run(tmp_path):
    with pytest.raises(TinyAotError, match="HardSigmoid"):
        compile_model(save(unary_model("HardSigmoid", (1, 3, 2, 2), (0.05, 0), (1 / 255, -128)),
                           tmp_path, "hs.onnx"), numerics="tflite")
    with pytest.raises(TinyAotError, match="1/256"):
        compile_model(save(unary_model("Sigmoid", (1, 3, 2, 2), (0.05, 0), (1 / 255, -128)),
                           tmp_path, "sg.onnx"), numerics="tflite")


def test_lut_mish_opset_18_ort(tmp_path):
    """Mish (ONNX opset 18) between DequantizeLinear and QuantizeLinear."""
    b = QdqBuilder("lut_mish")
    b.q(b.op("Mish", [b.dq("x", 0.05, -3)]), 0.04, -10, out="y")
    path = save(b.model("x", (1, 4, 8, 8), "y", (1, 4, 8, 8), opset=18), tmp_path)
    x = all_int8_inputs((1, 4, 8, 8), 3)
    outs, _ = host_run(path, x, "ort", tmp_path)
    want = run_ort(path, x)
    np.testing.assert_array_equal(outs.reshape(want.shape), want)


def test_lut_onnxruntime_only_functions_refused_under_tflite(tmp_path):
    path = save(unary_model("Elu", (1, 4), (0.05, 0), OUT_Q["Elu"]), tmp_path)
    with pytest.raises(TinyAotError, match="no TFLite Micro int8 kernel for Elu is reproduced"):
        compile_model(path, numerics="tflite")
