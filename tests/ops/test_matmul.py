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
    x = all_int8_inputs(shape, 3)
    c = compile_model(path, numerics=numerics)
    outs, info = run_model(path, x, board="host", numerics=numerics, build_dir=tmp_path / "gen",
                           compiled=c)
    assert "tinyaot_matmul_s8" in c.report["kernels"]
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    outs = outs.reshape(ref.shape)
    np.testing.assert_array_equal(outs, ref)
    want = run_ort(path, x).reshape(outs.shape)
    if numerics == "ort":
        np.testing.assert_array_equal(outs, want)
    else:
        assert np.abs(outs.astype(int) - want).max() <= 3  # TFLM rounding vs ORT: a sanity bound
