"""Concat along channels (copy when an input has the output's quantization,
requantize otherwise; NCHW and NHWC-after-conv layouts): generated C on the host,
bit-exact with onnxruntime (ort) and with the numpy reference (tflite)."""

import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.reference import run_graph
from codegen.driver.verify import run_model

from tests.helpers.op_models import OUT_Q, concat_model
from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, run_ort, save
from tests.helpers.tflite_int_reference import mbqm, quantize_multiplier


def host_run(path, x, numerics, tmp_path):
    c = compile_model(path, numerics=numerics)
    outs, info = run_model(path, x, board="host", numerics=numerics, build_dir=tmp_path / "gen",
                           compiled=c)
    assert info["status"] == [0] * len(x)
    layer = [la for la in c.module.layers if la["op"] == "concat"][0]
    if layer.get("zero_copy_inputs") == list(range(layer_inputs(c))):
        assert layer["kernel"] == "none (zero-copy)"  # every producer wrote its slice
    else:
        assert "tinyaot_concat_s8" in c.report["kernels"]
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)  # C == numpy reference
    return outs.reshape(ref.shape), c


def layer_inputs(c):
    return len([n for n in c.graph.nodes if n.op == "concat"][0].inputs)


@pytest.mark.parametrize("chans,qs,conv", [
    ((1, 1), ((0.03, -100), (0.05, 2)), False),
    ((3, 3), ((0.05, 2), (0.07, -9)), False),
    ((5, 5, 5), ((0.02, -128), OUT_Q, (0.11, 40)), False),
    ((7, 7), (OUT_Q, OUT_Q), False),
    ((3, 5, 1), ((0.03, 1), (0.08, -4), OUT_Q), True),
    ((7, 2), (OUT_Q, (0.09, 0)), True),
])
def test_concat_ort_host_bit_exact_with_onnxruntime(chans, qs, conv, tmp_path):
    m, shape = concat_model(chans, qs, conv=conv)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, c = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    p = [c.params[n.name] for n in c.graph.nodes if n.op == "concat"][0]
    assert [t is None for t in p.tables] == [q == OUT_Q for q in qs]


@pytest.mark.parametrize("chans,conv", [((3, 3), False), ((1, 1, 1), False), ((5, 7, 3), True)])
def test_concat_tflite_host_equals_reference(chans, conv, tmp_path):
    m, shape = concat_model(chans, [OUT_Q] * len(chans), conv=conv)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 2)
    outs, _ = host_run(path, x, "tflite", tmp_path)
    if not conv:  # Relu / LeakyRelu branches of the same input: the halves are related
        assert np.all(outs[:, :, :chans[0]] >= OUT_Q[1])


# ---- tflite: inputs whose params differ get TFLite's int8 QUANTIZE (Requantize) ----

def tflite_requantize(x, sx, zx, sy, zy):
    m, sh = quantize_multiplier(float(np.float32(sx)) / float(np.float32(sy)))
    return np.array([min(127, max(-128, mbqm(int(v) - zx, m, sh) + zy))
                     for v in np.asarray(x).reshape(-1)]).reshape(np.shape(x))


def reread_concat_model(qs, shape=(1, 3, 2, 2), xq=(0.04, 3)):
    """The input x read with other parameters qs[j] (DequantizeLinear of the same
    bytes), concatenated along channels and quantized with OUT_Q: the concat
    input j holds exactly x's integers with parameters qs[j]."""
    b = QdqBuilder("concat_reread")
    parts = [b.dq("x", *q) for q in qs]
    b.q(b.op("Concat", parts, axis=1), *OUT_Q, out="y")
    return b.model("x", shape, "y", (1, shape[1] * len(qs)) + shape[2:]), shape


REREAD = [((0.03, -100), (0.05, 2)), ((0.05, 2), (0.11, 40), (0.02, -128)),
          ((0.0123, 7), OUT_Q, (0.5, -3)), ((0.05, 1), (0.049, 2)), ((0.025, 0), (0.1, -1))]


@pytest.mark.parametrize("qs", REREAD)
def test_concat_tflite_requantizes_like_tflite_quantize(qs, tmp_path):
    m, shape = reread_concat_model(qs)
    x = all_int8_inputs(shape, 3)
    outs, c = host_run(save(m, tmp_path), x, "tflite", tmp_path)
    want = np.concatenate([tflite_requantize(x, s, z, *OUT_Q) for s, z in qs], axis=2)
    np.testing.assert_array_equal(outs, want)
    p = [c.params[n.name] for n in c.graph.nodes if n.op == "concat"][0]
    assert [t is None for t in p.tables] == [q == OUT_Q for q in qs]  # equal params: a copy


@pytest.mark.parametrize("qs", REREAD)
def test_concat_reread_ort_bit_exact_with_onnxruntime(qs, tmp_path):
    m, shape = reread_concat_model(qs)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, _ = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))


def test_concat_tflite_and_ort_differ_where_rounding_differs():
    """The two numerics really are different formulas: a tie x/s = k + 0.5 rounds
    half to even in ort and away from zero in tflite."""
    x = np.arange(-128, 128)
    t = tflite_requantize(x, 0.5, 0, 1.0, 0)
    assert t[128 + 1] == 1 and t[128 + 5] == 3  # 0.5 -> 1, 2.5 -> 3
    assert np.rint(0.5) == 0.0 and np.rint(2.5) == 2.0


def test_concat_tflite_conv_branches_with_other_scales(tmp_path):
    """Conv branches with their own output scales: C == numpy reference (tflite)."""
    m, shape = concat_model((3, 5, 1), ((0.03, 1), (0.08, -4), OUT_Q), conv=True)
    host_run(save(m, tmp_path), all_int8_inputs(shape, 2), "tflite", tmp_path)
