"""MatMul of two int8 activations: generated C on the host, bit-exact with
onnxruntime (ort: QLinearMatMul or float MatMul, as ORT's optimizer decides)
and with the numpy TFLM reference (tflite)."""
import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.reference import run_graph
from codegen.driver.verify import run_model

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, run_ort, save


def mm_model(shape, direct_a, out_q=(0.2, 2)):
    """x [..., M, M]: (x or Relu(x)) @ Transpose(LeakyRelu(x)), each operand with its own scale."""
    b = QdqBuilder("matmul")
    x = b.dq("x", 0.04, 3)
    a = b.dq("x", 0.04, 3) if direct_a else b.dq(b.q(b.op("Relu", [x]), 0.03, -100), 0.03, -100)
    perm = list(range(len(shape)))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    t = b.op("Transpose", [b.dq(b.q(b.op("LeakyRelu", [x], alpha=0.1), 0.05, 2), 0.05, 2)],
             perm=perm)
    bq = b.dq(b.q(t, 0.05, 2), 0.05, 2)
    b.q(b.op("MatMul", [a, bq]), *out_q, out="y")
    return b.model("x", shape, "y", shape)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (5, 5), (2, 7, 7), (1, 16, 16)])
@pytest.mark.parametrize("direct_a", [False, True])
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_matmul_two_activations_host(shape, direct_a, numerics, tmp_path):
    path = save(mm_model(shape, direct_a), tmp_path)
    c = _check_host_run(path, all_int8_inputs(shape, 3), numerics, tmp_path)
    assert "tinyaot_matmul_s8" in c.report["kernels"]


def _check_host_run(path, x, numerics, tmp_path):
    """The generated C on the host equals the numpy reference, and onnxruntime under ort (a
    sanity bound under tflite: TFLM's rounding differs from onnxruntime's); -> Compiled."""
    c = compile_model(path, numerics=numerics)
    outs, info = run_model(path, x, board="host", numerics=numerics, build_dir=tmp_path / "gen",
                           compiled=c)
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    outs = outs.reshape(ref.shape)
    np.testing.assert_array_equal(outs, ref)
    want = run_ort(path, x).reshape(outs.shape)
    if numerics == "ort":
        np.testing.assert_array_equal(outs, want)
    else:
        assert np.abs(outs.astype(int) - want).max() <= 3
    return c


def nd_const_model(shape, n_out, per_channel, seed=0):
    """x [..., K] @ W [K, N] (a constant): the leading dims are rows, as PyTorch exports a
    Linear layer on a sequence; per-channel weights along N."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("matmul_nd")
    x = b.dq("x", 0.04, 3)
    k = shape[-1]
    wf = rng.normal(size=(k, n_out))
    if per_channel:
        w, _ = b.weight(wf, axis=1)
    else:
        s = np.float32(np.abs(wf).max() / 127)
        w = b.dq(b.const_int(np.clip(np.rint(wf / s), -127, 127), np.int8), s, 0)
    b.q(b.op("MatMul", [x, w]), 0.3, -5, out="y")
    return b.model("x", shape, "y", tuple(shape[:-1]) + (n_out,))


@pytest.mark.parametrize("shape,n_out", [((1, 5, 8), 6), ((2, 3, 4, 16), 7), ((1, 1, 9), 3)])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_matmul_nd_activation_times_constant(shape, n_out, per_channel, numerics, tmp_path):
    """One fully connected layer over the rows, zero-copy reshapes either side: bit-exact
    with onnxruntime (ort), and with the numpy reference (tflite)."""
    path = save(nd_const_model(shape, n_out, per_channel), tmp_path)
    c = _check_host_run(path, all_int8_inputs(shape, 3), numerics, tmp_path)
    assert any("fully_connected" in k for k in c.report["kernels"])
    assert [n.op for n in c.graph.nodes].count("fully_connected") == 1
