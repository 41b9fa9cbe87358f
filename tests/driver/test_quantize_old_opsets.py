"""`tinyaot quantize` of float models exported at an old opset (10, 11, 12): upgraded to
opset 13 first (per-channel DequantizeLinear needs its `axis`), so the result is a model
onnx.checker and onnxruntime accept; that model compiles, and tinyaot's integers equal
onnxruntime's. A model the converter cannot upgrade is refused in one line, nothing written.

Oracles: onnx.checker, onnxruntime's session on the written file.
"""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from codegen.compiler import compile_model
from codegen.driver.verify import run_model
from codegen.numerics.ort_float import dequantize, quantize
from codegen.reference.onnxruntime_oracle import run_onnxruntime

from tests.helpers.cli import assert_clean_error, run_cli


def float_cnn(opset, seed=0):
    """Conv -> BatchNormalization -> Relu -> MaxPool -> Flatten -> Gemm, float, written
    at `opset` the way an old exporter writes it (onnx.helper, the opset's own ops)."""
    r = np.random.default_rng(seed)
    c = lambda a, n: numpy_helper.from_array(np.asarray(a, np.float32), n)  # noqa: E731
    inits = [c(r.standard_normal((6, 3, 3, 3)) * 0.3, "w"), c(r.standard_normal(6) * 0.1, "b"),
             c(r.uniform(0.5, 1.5, 6), "g"), c(r.standard_normal(6) * 0.1, "be"),
             c(r.standard_normal(6) * 0.1, "mu"), c(r.uniform(0.5, 1.5, 6), "var"),
             c(r.standard_normal((10, 6 * 4 * 4)) * 0.2, "wf"), c(r.standard_normal(10) * 0.1, "bf")]
    h = helper.make_node
    nodes = [h("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             h("BatchNormalization", ["c", "g", "be", "mu", "var"], ["n"], name="bn"),
             h("Relu", ["n"], ["r"], name="relu"),
             h("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             h("Flatten", ["p"], ["f"], name="flat"),
             h("Gemm", ["f", "wf", "bf"], ["y"], transB=1, name="fc")]
    g = helper.make_graph(nodes, "old_cnn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 6
    onnx.checker.check_model(m)
    return m


def _samples(n, seed):
    return (np.random.default_rng(seed).standard_normal((n, 3, 8, 8)) * 1.5).astype(np.float32)


@pytest.mark.parametrize("opset", [10, 11, 12])
def test_old_opset_is_upgraded_and_exact(opset, tmp_path):
    f32 = tmp_path / "f32.onnx"
    onnx.save(float_cnn(opset), str(f32))
    calib = tmp_path / "calib.npz"
    np.savez(calib, inputs=_samples(16, 1))
    out = tmp_path / "q.onnx"
    p = run_cli("quantize", f32, "--calib", calib, "-o", out)
    assert p.returncode == 0, p.stderr
    assert f"upgraded opset {opset} to 13" in p.stdout
    q = onnx.load(str(out))
    onnx.checker.check_model(q, full_check=True)
    assert [i.version for i in q.opset_import if i.domain in ("", "ai.onnx")] == [13]
    assert any(a.name == "axis" for n in q.graph.node if n.op_type == "DequantizeLinear"
               for a in n.attribute)  # per-channel weights, valid from opset 13
    c = compile_model(out, numerics="ort")
    g = c.graph
    xt = g.tensors[g.inputs[0]]
    s, zp = xt.q.scalar()
    xs = _samples(8, 5)
    qx = np.stack([quantize(x[None], s, zp, -128, 127).astype(np.int8) for x in xs])
    outs, info = run_model(out, qx, board="host", numerics="ort", compiled=c,
                           build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(xs)
    ys, yzp = g.tensors[g.outputs[0]].q.scalar()
    want = np.stack([run_onnxruntime(out, {"x": x[None]})["y"] for x in xs])
    got = dequantize(outs, ys, yzp).reshape(want.shape)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_model_the_converter_cannot_upgrade_is_refused(tmp_path):
    """The converter's failure (here on an operator it does not know) is one line naming
    the opset and the fix; no output file."""
    f32 = tmp_path / "f32.onnx"
    m = float_cnn(11)
    m.graph.node.insert(0, helper.make_node("Identity", ["x"], ["x_id"], name="id"))
    m.graph.node[1].input[0] = "x_id"
    m.graph.node[0].op_type = "NoSuchOp"
    onnx.save(m, str(f32))
    calib = tmp_path / "calib.npz"
    np.savez(calib, inputs=_samples(4, 1))
    out = tmp_path / "q.onnx"
    p = run_cli("quantize", f32, "--calib", calib, "-o", out)
    assert_clean_error(p, "opset 11 cannot be upgraded to opset 13",
                       "export the float model at opset 13 or newer")
    assert not out.exists()
