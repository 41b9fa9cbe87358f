"""Pad (constant = zero point or a given value, reflect, edge; NCHW and
NHWC-after-conv; requantizing when the output's quantization differs):
generated C on the host, bit-exact with onnxruntime (ort) and the numpy
reference (tflite)."""
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
    assert "tinyaot_pad_s8" in c.report["kernels"]
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)  # C == numpy reference
    return outs.reshape(ref.shape), c


def pad_model(c, hw, pads, mode, out_q=(0.04, 3), value=None, conv=False, seed=0):
    rng = np.random.default_rng(seed)
    b = QdqBuilder("pad")
    x = b.dq("x", 0.04, 3)
    q = (0.04, 3)
    if conv:
        w, _ = b.weight(rng.normal(size=(c, c, 1, 1)).astype(np.float32) * 0.4)
        q = (0.06, -5)
        x = b.dq(b.q(b.op("Conv", [x, w]), *q), *q)
        if out_q == (0.04, 3):
            out_q = q
    ins = [x, b.const_int(np.asarray(pads, dtype=np.int64), np.int64)]
    if value is not None:
        ins.append(b.dq(b.const_int(np.int8(value), np.int8), *q))
    y = b.op("Pad", ins, mode=mode)
    b.q(y, *out_q, out="y")
    r = len(pads) // 2
    shape = (1, c) + tuple(hw)
    oshape = tuple(s + pads[i] + pads[i + r] for i, s in enumerate(shape))
    return b.model("x", shape, "y", oshape), shape


CASES = [
    (1, (4, 5), [0, 0, 1, 1, 0, 0, 1, 1], "constant", None, False),
    (3, (4, 4), [0, 0, 2, 0, 0, 0, 1, 3], "constant", None, True),
    (5, (3, 6), [0, 1, 1, 1, 0, 2, 1, 1], "constant", 17, False),
    (7, (5, 3), [0, 0, 1, 2, 0, 0, 2, 1], "reflect", None, False),
    (3, (4, 6), [0, 0, 3, 2, 0, 0, 1, 5], "reflect", None, True),
    (5, (4, 4), [0, 0, 2, 2, 0, 0, 1, 0], "edge", None, True),
    (1, (9,), [0, 0, 2, 0, 0, 3], "reflect", None, False),
]


@pytest.mark.parametrize("c,hw,pads,mode,value,conv", CASES)
def test_pad_ort_host_bit_exact_with_onnxruntime(c, hw, pads, mode, value, conv, tmp_path):
    m, shape = pad_model(c, hw, pads, mode, value=value, conv=conv)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, _ = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_requantize_ort(mode, tmp_path):
    m, shape = pad_model(3, (4, 5), [0, 0, 1, 2, 0, 0, 2, 1], mode, out_q=(0.07, -20))
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, _ = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))


@pytest.mark.parametrize("c,hw,pads,mode,value,conv", CASES)
def test_pad_tflite_host_equals_reference(c, hw, pads, mode, value, conv, tmp_path):
    m, shape = pad_model(c, hw, pads, mode, value=value, conv=conv)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 2)
    outs, comp = host_run(path, x, "tflite", tmp_path)
    if not conv:  # pure data movement: the interior is the input
        inner = tuple(slice(pads[i], pads[i] + s) for i, s in enumerate(shape))
        np.testing.assert_array_equal(outs[(slice(None),) + inner], x)
