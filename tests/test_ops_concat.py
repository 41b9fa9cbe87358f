"""Concat along channels (copy when an input has the output's quantization,
requantize otherwise; NCHW and NHWC-after-conv layouts): generated C on the host,
bit-exact with onnxruntime (ort) and with the numpy reference (tflite)."""
import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.errors import TinyAotError
from codegen.reference import run_graph
from codegen.verify import run_model

from qdq_builders import QdqBuilder, all_int8_inputs, run_ort, save

OUT_Q = (0.05, 2)


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


def concat_model(chans, qs, hw=(3, 4), conv=False, seed=0):
    """x [1, C0, H, W]; branch j: (1x1 conv to chans[j] | Relu) quantized with qs[j]."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("concat")
    x = b.dq("x", 0.04, 3)
    parts = []
    for j, (c, q) in enumerate(zip(chans, qs)):
        if conv:
            w, _ = b.weight(rng.normal(size=(c, chans[0], 1, 1)).astype(np.float32) * 0.4)
            f = b.op("Conv", [x, w])
        else:
            f = b.op("Relu", [x]) if j % 2 == 0 else b.op("LeakyRelu", [x], alpha=0.3)
        parts.append(b.dq(b.q(f, *q), *q))
    b.q(b.op("Concat", parts, axis=1), *OUT_Q, out="y")
    shape = (1, chans[0]) + hw
    return b.model("x", shape, "y", (1, sum(chans)) + hw), shape


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
    assert [t is None for t in p["tables"]] == [q == OUT_Q for q in qs]


@pytest.mark.parametrize("chans,conv", [((3, 3), False), ((1, 1, 1), False), ((5, 7, 3), True)])
def test_concat_tflite_host_equals_reference(chans, conv, tmp_path):
    m, shape = concat_model(chans, [OUT_Q] * len(chans), conv=conv)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 2)
    outs, _ = host_run(path, x, "tflite", tmp_path)
    if not conv:  # Relu / LeakyRelu branches of the same input: the halves are related
        assert np.all(outs[:, :, :chans[0]] >= OUT_Q[1])


def test_concat_tflite_rejects_requantization(tmp_path):
    m, _ = concat_model((3, 3), ((0.05, 2), (0.07, -9)))
    with pytest.raises(TinyAotError, match="CONCATENATION"):
        compile_model(save(m, tmp_path), numerics="tflite")
