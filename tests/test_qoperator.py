"""QOperator-form and uint8 models (onnxruntime quantize_static), compiled
to C on the host and compared bit for bit with onnxruntime on each file.

onnxruntime runs QLinearConv / QGemm of a QOperator model as integer kernels,
so those layers must not be marked ort_float (the QDQ form of the same model
has float Conv layers in ORT): both are checked against ORT's own outputs.
"""
import numpy as np
import onnx
import pytest

from codegen.compiler import compile_model
from codegen.errors import TinyAotError, UnsupportedError
from codegen.frontend.onnx_loader import read_onnx
from codegen.frontend.qoperator import qoperator_to_qdq
from codegen.reference import run_graph
from codegen.reference.onnxruntime_oracle import run_onnxruntime
from codegen.reference.ort_float import dequantize, quantize
from codegen.verify import run_model

import qmodels

FORMS = [("QDQ", "QInt8"), ("QOperator", "QInt8"), ("QDQ", "QUInt8"), ("QOperator", "QUInt8")]


@pytest.fixture(scope="module")
def cnn_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("qop")
    m = qmodels.cnn()
    return {(f, a): qmodels.quantize(m, d / f"cnn_{f}_{a}.onnx", f, a) for f, a in FORMS}


def _quantize_input(c, x):
    t = c.graph.tensors[c.graph.inputs[0]]
    s, zp = t.q.scalar()
    lo, hi = (0, 255) if t.dtype == "uint8" else (-128, 127)
    return quantize(x, s, zp, lo, hi).astype(t.dtype)


def _host_vs_onnxruntime(path, tmp_path):
    """Run on the host; return (tinyaot output dequantized, ORT output, compiled)."""
    c = compile_model(path, numerics="ort")
    xs = qmodels.sample_inputs()
    qx = np.stack([_quantize_input(c, x) for x in xs])
    outs, info = run_model(path, qx, board="host", numerics="ort", compiled=c,
                           build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(xs)
    g = c.graph
    ref = np.stack([run_graph(g, "ort", {g.inputs[0]: q[None]}, c.params)[g.outputs[0]] for q in qx])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)
    yt = g.tensors[g.outputs[0]]
    s, zp = yt.q.scalar()
    ort_out = np.stack([run_onnxruntime(path, {"x": x})["y"] for x in xs])
    return dequantize(outs, s, zp).reshape(ort_out.shape), ort_out, c


@pytest.mark.parametrize("form,act", FORMS)
def test_cnn_bit_exact_with_onnxruntime(cnn_models, form, act, tmp_path):
    got, want, c = _host_vs_onnxruntime(cnn_models[(form, act)], tmp_path)
    # float32 equality of DequantizeLinear(q): the integers are identical
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    g = c.graph
    dtype = "uint8" if act == "QUInt8" else "int8"
    assert g.tensors[g.inputs[0]].dtype == dtype and g.tensors[g.outputs[0]].dtype == dtype
    # inside, everything is int8 (uint8 shifted by 128 at compile time)
    inner = {t.dtype for n in g.nodes for t in map(g.tensors.get, n.inputs + n.outputs)
             if t is not None and t.name not in (g.inputs[0], g.outputs[0]) and not t.is_const
             and t.dtype != "int32"}
    assert inner == {"int8"}
    assert f"const {dtype}_t *input, {dtype}_t *output" in c.module.header
    if form == "QOperator":
        # ORT runs QLinearConv / QGemm: integer kernels, never float
        convs = [n for n in g.nodes if n.op in ("conv2d", "fully_connected")]
        assert len(convs) == 4 and not any(n.attrs.get("ort_float") for n in convs)


def test_forms_agree_where_onnxruntime_agrees(cnn_models, tmp_path):
    """Same float model, two forms: tinyaot's outputs differ exactly where ORT's do
    (QDQ keeps some convs in float in ORT, QOperator never)."""
    for act in ("QInt8", "QUInt8"):
        a, ra, _ = _host_vs_onnxruntime(cnn_models[("QDQ", act)], tmp_path / f"qdq{act}")
        b, rb, _ = _host_vs_onnxruntime(cnn_models[("QOperator", act)], tmp_path / f"qop{act}")
        np.testing.assert_array_equal(a == b, ra == rb)
        assert (a == b).mean() > 0.5  # the same network, mostly the same bits


def test_qoperator_avgpool_softmax_bit_exact(tmp_path):
    """QLinearAveragePool and QLinearSoftmax (QOperator: output scale 1/256)."""
    path = qmodels.quantize(qmodels.cnn(avgpool=True, softmax=True), tmp_path / "ap.onnx",
                            "QOperator", "QInt8")
    assert {"QLinearAveragePool", "QLinearSoftmax"} <= {n.op_type for n in onnx.load(str(path)).graph.node}
    got, want, _ = _host_vs_onnxruntime(path, tmp_path)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_rewrite_leaves_only_qdq_and_float_ops(cnn_models):
    path = cnn_models[("QOperator", "QInt8")]
    proto = read_onnx(path)
    ops = {n.op_type for n in proto.graph.node}
    assert {"QLinearConv", "QGemm", "QLinearAdd", "QLinearGlobalAveragePool"} <= ops
    new = qoperator_to_qdq(proto, path)
    new_ops = {(n.domain, n.op_type) for n in new.graph.node}
    assert all(d == "" for d, _ in new_ops)
    assert {o for _, o in new_ops} == {"QuantizeLinear", "DequantizeLinear", "Conv", "Add",
                                       "GlobalAveragePool", "Flatten", "Gemm"}
    onnx.checker.check_model(new)
    # a QDQ model is passed through untouched
    qdq = read_onnx(cnn_models[("QDQ", "QInt8")])
    assert qoperator_to_qdq(qdq, "m") is qdq


def test_qoperator_ops_without_ir_op_fail_cleanly_or_match(tmp_path):
    """QLinearMul/Concat/Sigmoid/LeakyRelu: bit-exact if the IR has the ops,
    else one UnsupportedError listing each node by name."""
    path = qmodels.quantize(qmodels.elementwise(), tmp_path / "ew.onnx", "QOperator", "QInt8")
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert {"QLinearMul", "QLinearConcat", "QLinearSigmoid", "QLinearLeakyRelu"} <= ops
    try:
        got, want, _ = _host_vs_onnxruntime(path, tmp_path)
    except UnsupportedError as e:
        msg = str(e)
        assert str(path) in msg and "\n" not in msg
        named = 0
        for op, node in (("Mul", "mul"), ("Concat", "cat"), ("Sigmoid", "sig"),
                         ("LeakyRelu", "lrelu")):
            if f"{op} '" in msg:  # the rewritten op, named as the QOperator node
                assert f"{op} '{node}_quant': operator is not supported" in msg
                named += 1
        assert named >= 1
        assert "unsupported node(s)" in msg
    else:
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_dynamic_quantization_is_reported(tmp_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    f = tmp_path / "f.onnx"
    onnx.save(qmodels.cnn(), str(f))
    q = tmp_path / "dyn.onnx"
    quantize_dynamic(str(f), str(q), weight_type=QuantType.QInt8)
    ops = {n.op_type for n in onnx.load(str(q)).graph.node}
    assert ops & {"ConvInteger", "MatMulInteger"}
    with pytest.raises(UnsupportedError, match="dynamic quantization .* quantize_static"):
        compile_model(q)


def test_channels_last_pool_is_reported(cnn_models, tmp_path):
    m = onnx.load(str(cnn_models[("QOperator", "QInt8")]))
    for n in m.graph.node:
        if n.op_type == "QLinearGlobalAveragePool":
            for a in n.attribute:
                if a.name == "channels_last":
                    a.i = 1
    p = tmp_path / "cl.onnx"
    onnx.save(m, str(p))
    with pytest.raises(TinyAotError, match="QLinearGlobalAveragePool 'gap_quant': channels_last=1"):
        compile_model(p)


def test_qlinearconv_missing_weight_initializer_is_reported(cnn_models, tmp_path):
    m = onnx.load(str(cnn_models[("QOperator", "QInt8")]))
    conv = next(n for n in m.graph.node if n.op_type == "QLinearConv")
    conv.input[4] = "x"  # weight scale is now the float graph input
    p = tmp_path / "bad.onnx"
    onnx.save(m, str(p))
    with pytest.raises(TinyAotError) as e:
        compile_model(p)
    assert "conv1_quant" in str(e.value)
