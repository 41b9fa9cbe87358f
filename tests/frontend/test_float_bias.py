"""A float32 bias initializer on a quantized Conv / Gemm, as PyTorch's QDQ export writes it
(weights and activations behind DequantizeLinear, the bias left float).

onnxruntime's BiasQuantization transformer quantizes such a bias before anything else: scale
s_x * s_w (float32), int32 of round-half-even(b / scale); the layer is then an ordinary QDQ
group. tinyaot quantizes it the same way at load, so `ort` is bit-exact with onnxruntime's
default session, and `tflite` equals the numpy reference with that int32 bias.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save


def float_bias_model(kind, seed, cout=16):
    rng = np.random.default_rng(seed)
    b = QdqBuilder(f"float_bias_{kind}")
    if kind == "conv":
        x = b.dq("x", 0.05, -3)
        w, _ = b.weight(rng.normal(size=(cout, 4, 3, 3)))
        bias = b.const_int(rng.normal(size=cout).astype(np.float32), np.float32)
        y = b.op("Conv", [x, w, bias], pads=[1, 1, 1, 1])
        shape_in, shape_out = (1, 4, 6, 6), (1, cout, 6, 6)
    else:  # a Linear layer: Gemm(x, W [N, K], b) with transB = 1
        x = b.dq("x", 0.05, -3)
        w, _ = b.weight(rng.normal(size=(cout, 24)), axis=0)
        bias = b.const_int(rng.normal(size=cout).astype(np.float32), np.float32)
        y = b.op("Gemm", [x, w, bias], transB=1)
        shape_in, shape_out = (1, 24), (1, cout)
    b.q(y, 0.1, -5, out="y")
    return b.model("x", shape_in, "y", shape_out), shape_in


@pytest.mark.parametrize("kind", ["conv", "gemm"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_float_bias_ort_bit_exact_with_onnxruntime(kind, seed, tmp_path):
    model, shape = float_bias_model(kind, seed)
    path = save(model, tmp_path)
    x = all_int8_inputs(shape, 6, seed=seed)
    outs, c = host_run_checked(path, x, "ort", tmp_path, None)
    want = run_ort(path, x)
    np.testing.assert_array_equal(np.asarray(outs).reshape(want.shape), want)
    bias = [t for t in c.graph.tensors.values() if t.name.endswith("@int32")]
    assert len(bias) == 1 and bias[0].dtype == "int32"


@pytest.mark.parametrize("kind", ["conv", "gemm"])
def test_float_bias_tflite_equals_its_reference(kind, tmp_path):
    model, shape = float_bias_model(kind, 3)
    path = save(model, tmp_path)
    x = all_int8_inputs(shape, 4, seed=3)
    outs, _ = host_run_checked(path, x, "tflite", tmp_path, None)
    want = run_ort(path, x)  # TFLite's rounding differs from onnxruntime's by at most one step
    assert np.abs(np.asarray(outs).reshape(want.shape).astype(int) - want).max() <= 1


def test_float_bias_is_what_onnxruntime_quantizes(tmp_path):
    """The int32 bias equals round-half-even(b / float32(s_x * s_w)) computed in float32, the
    formula of onnxruntime's BiasQuantization, written out here from the spec."""
    from codegen.compiler import compile_model
    import onnx
    from onnx import numpy_helper
    model, _ = float_bias_model("conv", 4)
    path = save(model, tmp_path)
    m = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    conv = [n for n in m.graph.node if n.op_type == "Conv"][0]
    bf = inits[conv.input[2]]
    dq_w = [n for n in m.graph.node if n.output[0] == conv.input[1]][0]
    sw = inits[dq_w.input[1]].astype(np.float32)
    want = np.rint(bf / (np.float32(0.05) * sw).astype(np.float32)).astype(np.int32)
    c = compile_model(path, numerics="ort")
    got = [t for t in c.graph.tensors.values() if t.name.endswith("@int32")][0]
    np.testing.assert_array_equal(got.data.reshape(-1), want)
