"""ReduceMean over H, W (keepdims) as a global average pool: generated C on the
host, bit-exact with onnxruntime (ort) and the numpy reference (tflite MEAN)."""
import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.reference import run_graph
from codegen.driver.verify import run_model

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, run_ort, save


def rm_model(c, hw, out_q, opset):
    b = QdqBuilder("reduce_mean")
    x = b.dq("x", 0.04, 3)
    if opset >= 18:
        y = b.op("ReduceMean", [x, b.const_int(np.array([2, 3]), np.int64)], keepdims=1)
    else:
        y = b.op("ReduceMean", [x], axes=[-2, -1], keepdims=1)
    b.q(y, *out_q, out="y")
    return b.model("x", (1, c) + hw, "y", (1, c, 1, 1), opset=opset), (1, c) + hw


@pytest.mark.parametrize("c,hw,out_q,opset", [(1, (4, 4), (0.04, 3), 17), (3, (5, 7), (0.02, -9), 18),
                                               (5, (8, 8), (0.01, 0), 13), (7, (3, 9), (0.03, 5), 18),
                                               (3, (7, 9), (0.04, 3), 17), (5, (1, 3), (0.04, 3), 17),
                                               (2, (6, 6), (0.04, 3), 18)])
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_reduce_mean_host(c, hw, out_q, opset, numerics, tmp_path):
    m, shape = rm_model(c, hw, out_q, opset)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 12, seed=c)
    comp = compile_model(path, numerics=numerics)
    outs, info = run_model(path, x, board="host", numerics=numerics, build_dir=tmp_path / "gen",
                           compiled=comp)
    g = comp.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, comp.params)[g.outputs[0]] for v in x])
    outs = outs.reshape(ref.shape)
    np.testing.assert_array_equal(outs, ref)
    want = run_ort(path, x).reshape(outs.shape)
    if numerics == "ort":
        np.testing.assert_array_equal(outs, want)
    else:
        assert np.abs(outs.astype(int) - want).max() <= 1
