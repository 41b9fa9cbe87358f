"""codegen/passes/fold_batchnorm.py: BatchNormalization folded into the Conv /
Gemm / MatMul before it on float models (float rewrite: compared with
onnxruntime on the original model, rtol 1e-5), left alone where folding would
change the function, and `tinyaot quantize` running it before quantization."""
import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from codegen.passes.fold_batchnorm import fold_batchnorm

from tests.helpers.env import REPO

RNG = np.random.default_rng(0)


def _init(name, arr):
    return numpy_helper.from_array(np.asarray(arr, np.float32), name)


def _bn_params(prefix, c, rng=RNG):
    return [_init(f"{prefix}_gamma", rng.uniform(0.5, 2.0, c) * rng.choice([-1, 1], c)),
            _init(f"{prefix}_beta", rng.normal(0, 1, c)),
            _init(f"{prefix}_mean", rng.normal(0, 1, c)),
            _init(f"{prefix}_var", rng.uniform(0.1, 3.0, c))]


def _bn(x, y, prefix="bn", **attrs):
    return helper.make_node("BatchNormalization",
                            [x, f"{prefix}_gamma", f"{prefix}_beta", f"{prefix}_mean",
                             f"{prefix}_var"], [y], name=prefix, epsilon=1e-3, **attrs)


def _model(nodes, inits, in_shape, out_shape, outputs=("y",), opset=17, inputs=()):
    g = helper.make_graph(nodes, "bn", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, in_shape)] + list(inputs),
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, out_shape if o == "y" else None)
         for o in outputs], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def conv_bn(group=1, bias=True, c_in=4, c_out=6):
    w = _init("w", RNG.normal(0, 0.5, (c_out, c_in // group, 3, 3)))
    ins = ["x", "w"] + (["b"] if bias else [])
    inits = [w] + ([_init("b", RNG.normal(0, 1, c_out))] if bias else []) + _bn_params("bn", c_out)
    nodes = [helper.make_node("Conv", ins, ["c"], name="conv", pads=[1, 1, 1, 1], group=group),
             _bn("c", "y")]
    return _model(nodes, inits, [1, c_in, 5, 5], [1, c_out, 5, 5])


def gemm_bn(trans_b, bias_shape=(5,), beta=0.5, alpha=1.5):
    w = RNG.normal(0, 0.5, (5, 8) if trans_b else (8, 5))
    ins = ["x", "w"] + (["b"] if bias_shape else [])
    inits = [_init("w", w)] + ([_init("b", RNG.normal(0, 1, bias_shape))] if bias_shape else [])
    nodes = [helper.make_node("Gemm", ins, ["c"], name="gemm", transB=trans_b, alpha=alpha,
                              beta=beta), _bn("c", "y")]
    return _model(nodes, inits + _bn_params("bn", 5), [3, 8], [3, 5])


def matmul_bn(x_shape=(3, 8)):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["c"], name="mm"), _bn("c", "y")]
    return _model(nodes, [_init("w", RNG.normal(0, 0.5, (8, 5)))] + _bn_params("bn", 5),
                  list(x_shape), list(x_shape[:-1]) + [5])


def run(model, x):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})


def fold_and_compare(model, x_shape, expect):
    before = onnx.ModelProto()
    before.CopyFrom(model)
    n = fold_batchnorm(model)
    assert n == expect
    onnx.checker.check_model(model, full_check=True)
    x = RNG.normal(0, 1, x_shape).astype(np.float32)
    for want, got in zip(run(before, x), run(model, x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return model


@pytest.mark.parametrize("group,c_out", [(1, 6), (2, 6), (4, 4)])  # dense, grouped, depthwise
@pytest.mark.parametrize("bias", [True, False])
def test_conv_bn_is_folded(group, c_out, bias):
    m = fold_and_compare(conv_bn(group, bias, c_out=c_out), (1, 4, 5, 5), 1)
    ops = [n.op_type for n in m.graph.node]
    assert ops == ["Conv"], ops
    names = {i.name for i in m.graph.initializer}
    assert not names & {"bn_gamma", "bn_beta", "bn_mean", "bn_var", "w", "b"}, names


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("bias_shape", [(5,), (1, 5), None])
def test_gemm_bn_is_folded_both_transb(trans_b, bias_shape):
    m = fold_and_compare(gemm_bn(trans_b, bias_shape), (3, 8), 1)
    assert [n.op_type for n in m.graph.node] == ["Gemm"]
    gemm = m.graph.node[0]
    assert {a.name: a.i for a in gemm.attribute} == {"transB": trans_b}  # alpha, beta folded


def test_matmul_bn_becomes_matmul_plus_bias():
    m = fold_and_compare(matmul_bn(), (3, 8), 1)
    assert [n.op_type for n in m.graph.node] == ["MatMul", "Add"]


def test_fold_matches_the_formula_in_float64():
    """W' = W * gamma / sqrt(var + eps), b' = (b - mean) * gamma / sqrt(var + eps) + beta."""
    m = conv_bn()
    i = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    s = i["bn_gamma"] / np.sqrt(i["bn_var"] + 1e-3)
    fold_batchnorm(m)
    conv = m.graph.node[0]
    f = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    assert f[conv.input[1]].dtype == np.float32
    np.testing.assert_array_equal(f[conv.input[1]],
                                  (i["w"] * s[:, None, None, None]).astype(np.float32))
    np.testing.assert_array_equal(f[conv.input[2]],
                                  ((i["b"] - i["bn_mean"]) * s + i["bn_beta"]).astype(np.float32))


def test_shared_weights_are_not_changed_for_the_other_reader():
    """Two Convs read the same W; only one feeds a BN: the other keeps the old W."""
    m = conv_bn()
    g = m.graph
    g.node.append(helper.make_node("Conv", ["x", "w", "b"], ["z"], name="conv2", pads=[1, 1, 1, 1]))
    g.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 6, 5, 5]))
    m = fold_and_compare(m, (1, 4, 5, 5), 1)
    assert "w" in {i.name for i in m.graph.initializer}


def _unchanged(model):
    before = model.SerializeToString()
    assert fold_batchnorm(model) == 0
    assert model.SerializeToString() == before
    assert "BatchNormalization" in [n.op_type for n in model.graph.node]


def test_conv_output_used_twice_is_not_folded():
    m = conv_bn()
    m.graph.node.append(helper.make_node("Relu", ["c"], ["r"], name="relu"))
    m.graph.output.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, None))
    _unchanged(m)


def test_conv_output_that_is_a_graph_output_is_not_folded():
    m = conv_bn()
    m.graph.output.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, None))
    _unchanged(m)


def test_bn_after_an_add_is_not_folded():
    nodes = [helper.make_node("Add", ["x", "x"], ["c"], name="add"), _bn("c", "y")]
    _unchanged(_model(nodes, _bn_params("bn", 4), [1, 4, 5, 5], [1, 4, 5, 5]))


def test_non_constant_bn_params_are_not_folded():
    """gamma is a graph input (also when it has an initializer as its default)."""
    m = conv_bn()
    m.graph.input.append(helper.make_tensor_value_info("bn_gamma", TensorProto.FLOAT, [6]))
    _unchanged(m)
    m = conv_bn()
    gamma = [i for i in m.graph.initializer if i.name == "bn_gamma"][0]
    m.graph.initializer.remove(gamma)
    m.graph.input.append(helper.make_tensor_value_info("bn_gamma", TensorProto.FLOAT, [6]))
    _unchanged(m)


@pytest.mark.parametrize("attr,outputs", [(1, []), (1, ["running_mean", "running_var"]),
                                          (0, ["running_mean", "running_var"])])
def test_training_mode_bn_is_not_folded(attr, outputs):
    m = conv_bn()
    bn = m.graph.node[1]
    if attr:
        bn.attribute.append(helper.make_attribute("training_mode", 1))
    bn.output.extend(outputs)
    _unchanged(m)


def test_non_constant_conv_weight_is_not_folded():
    m = conv_bn()
    m.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [6, 4, 3, 3]))
    _unchanged(m)


def test_matmul_bn_on_a_3d_product_is_not_folded():
    """[1, 3, 8] @ [8, 5]: BN's channel axis 1 is the 3 rows, not the 5 outputs."""
    m = matmul_bn((1, 3, 8))
    for p in m.graph.initializer:
        if p.name.startswith("bn_"):
            p.CopyFrom(_init(p.name, RNG.uniform(0.5, 1.5, 3)))
    _unchanged(m)


# ------------------------------------------------------------------ tinyaot quantize

def test_quantize_cli_folds_bn_and_the_result_is_bit_exact_on_host(tmp_path):
    from codegen.compiler import compile_model
    from codegen.reference.onnxruntime_oracle import run_onnxruntime
    from codegen.numerics.ort_float import dequantize, quantize
    from codegen.driver.verify import run_model

    rng = np.random.default_rng(7)
    c1 = _init("w1", rng.normal(0, 0.4, (6, 3, 3, 3)))
    dw = _init("w2", rng.normal(0, 0.4, (6, 1, 3, 3)))
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             _bn("c1", "b1", "bn1"),
             helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], name="dw", pads=[1, 1, 1, 1], group=6),
             _bn("c2", "b2", "bn2"),
             helper.make_node("GlobalAveragePool", ["b2"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["g"], name="fc"),
             _bn("g", "y", "bn3")]
    fc = [_init("w3", rng.normal(0, 0.4, (6, 5))), _init("b3", rng.normal(0, 0.5, 5))]
    m = _model(nodes, [c1, dw] + fc + _bn_params("bn1", 6, rng) + _bn_params("bn2", 6, rng)
               + _bn_params("bn3", 5, rng), [1, 3, 8, 8], [1, 5], opset=13)
    f32 = tmp_path / "f32.onnx"
    onnx.save(m, str(f32))
    calib = tmp_path / "calib.npz"
    np.savez(calib, inputs=rng.normal(0, 1, (16, 3, 8, 8)).astype(np.float32))
    out = tmp_path / "q.onnx"
    p = subprocess.run([sys.executable, "-m", "codegen.cli", "quantize", str(f32), "--calib",
                        str(calib), "-o", str(out), "--json"], capture_output=True, text=True,
                       cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["batchnorm_folded"] == 3
    ops = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert "BatchNormalization" not in ops and ops.count("Conv") == 2 and ops.count("Gemm") == 1
    # float I/O model: quantize float inputs as its QuantizeLinear does, run on the
    # host, dequantize; must equal onnxruntime's float output bit for bit
    c = compile_model(out)
    g = c.graph
    xt, yt = g.tensors[g.inputs[0]], g.tensors[g.outputs[0]]
    xs = [rng.normal(0, 1, (1, 3, 8, 8)).astype(np.float32) for _ in range(8)]
    qx = np.stack([quantize(x, *xt.q.scalar(), -128, 127).astype(np.int8) for x in xs])
    outs, info = run_model(out, qx, board="host", compiled=c, build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(xs)
    want = np.stack([run_onnxruntime(out, {"x": x})["y"] for x in xs])
    got = dequantize(outs.view(np.int8).astype(np.int32), *yt.q.scalar()).reshape(want.shape)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    # and it still approximates the float model it came from (a sanity bound:
    # inputs outside the calibration range clip)
    ref = np.stack([run(m, x)[0] for x in xs]).reshape(got.shape)
    assert np.abs(got - ref).mean() < 0.05 * np.abs(ref).mean()
