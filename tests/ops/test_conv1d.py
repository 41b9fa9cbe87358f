"""1-D Conv ([N, C, L] as a conv2d with H = 1): generated C on the host,
bit-exact with onnxruntime (ort) and with the numpy reference (tflite)."""
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
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)  # C == numpy reference
    return outs.reshape(ref.shape), c


def conv1d_model(cin, cout, length, k, stride=1, dil=1, pads=(0, 0), group=1, relu=False,
                 two=False, seed=0):
    rng = np.random.default_rng(seed)
    b = QdqBuilder("conv1d")
    x = b.dq("x", 0.04, 3)
    w, ws = b.weight(rng.normal(size=(cout, cin // group, k)).astype(np.float32) * 0.3)
    bias = b.bias(rng.normal(size=cout) * 0.2, (np.float32(0.04) * ws).astype(np.float32))
    y = b.op("Conv", [x, w, bias], kernel_shape=[k], strides=[stride], dilations=[dil],
             pads=list(pads), group=group)
    if relu:
        y = b.op("Relu", [y])
    lout = (length + pads[0] + pads[1] - dil * (k - 1) - 1) // stride + 1
    if two:  # a second, depthwise 1-D conv
        q = (0.05, -20 if relu else 0)
        y = b.dq(b.q(y, *q), *q)
        w2, ws2 = b.weight(rng.normal(size=(cout, 1, 3)).astype(np.float32) * 0.5)
        y = b.op("Conv", [y, w2], kernel_shape=[3], pads=[1, 1], group=cout)
    b.q(y, 0.06, -4, out="y")
    return b.model("x", (1, cin, length), "y", (1, cout, lout)), (1, cin, length)


CASES = [
    dict(cin=1, cout=3, length=16, k=3, pads=(1, 1)),
    dict(cin=3, cout=5, length=20, k=5, stride=2, pads=(2, 1), relu=True),
    dict(cin=5, cout=7, length=13, k=3, dil=2, two=True),
    dict(cin=7, cout=7, length=11, k=3, group=7, pads=(1, 1), relu=True, two=True),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"c{c['cin']}k{c['k']}")
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_conv1d_host(case, numerics, tmp_path):
    m, shape = conv1d_model(**case)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, c = host_run(path, x, numerics, tmp_path)
    want = run_ort(path, x).reshape(outs.shape)
    if numerics == "ort":
        np.testing.assert_array_equal(outs, want)
    else:  # TFLM rounding: close to onnxruntime
        assert np.abs(outs.astype(int) - want).max() <= 2
