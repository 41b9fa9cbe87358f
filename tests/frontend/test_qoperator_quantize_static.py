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
from codegen.numerics.ort_float import dequantize, quantize
from codegen.driver.verify import run_model

from tests.helpers import quantize_static_models as qmodels

FORMS = [("QDQ", "QInt8"), ("QOperator", "QInt8"), ("QDQ", "QUInt8"), ("QOperator", "QUInt8")]


@pytest.fixture(scope="module")
def cnn_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("qop")
    m = qmodels.cnn(avgpool=True, softmax=True)
    return {(f, a): qmodels.quantize(m, d / f"cnn_{f}_{a}.onnx", f, a) for f, a in FORMS}


def _quantize_input(c, x):
    t = c.graph.tensors[c.graph.inputs[0]]
    s, zp = t.q.scalar()
    lo, hi = (0, 255) if t.dtype == "uint8" else (-128, 127)
    return quantize(x, s, zp, lo, hi).astype(t.dtype)


def _host_vs_onnxruntime(path, tmp_path):
    """Run on the host; return (tinyaot output dequantized, ORT output, compiled)."""
    c = compile_model(path, numerics="ort")
    xs = qmodels.sample_inputs(shape=tuple(c.graph.tensors[c.graph.inputs[0]].shape))
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
    m = qmodels.cnn(avgpool=True)  # no Softmax: its output scale differs between the forms
    for act in ("QInt8", "QUInt8"):
        pa = qmodels.quantize(m, tmp_path / f"qdq{act}.onnx", "QDQ", act)
        pb = qmodels.quantize(m, tmp_path / f"qop{act}.onnx", "QOperator", act)
        a, ra, _ = _host_vs_onnxruntime(pa, tmp_path / f"qdq{act}")
        b, rb, _ = _host_vs_onnxruntime(pb, tmp_path / f"qop{act}")
        np.testing.assert_array_equal(a == b, ra == rb)
        assert (a == b).mean() > 0.5  # the same network, mostly the same bits


def test_pool_and_softmax_follow_what_onnxruntime_runs(cnn_models):
    """ORT fuses these AveragePool / Softmax into QLinearAveragePool / QLinearSoftmax
    (both forms; on x86 an int8 QDQ graph even runs them on uint8): marked so."""
    for (form, act), path in cnn_models.items():
        c = compile_model(path)
        nodes = [n for n in c.graph.nodes if n.op in ("avgpool", "softmax")]
        assert len(nodes) == 3
        by = {n.name.replace("_quant", ""): n for n in nodes}
        assert by["ap"].attrs["ort_qlinear"] and by["sm"].attrs["ort_qlinear"]
        sm = next(layer for layer in c.module.layers if layer["op"] == "softmax")
        assert sm["kernel"] == "tinyaot_softmax_qlinear_s8"


def test_unfused_softmax_keeps_float_formula():
    """The MLPerf models' Softmax stays a float op in ORT: no QLinearSoftmax kernel."""
    from tests.helpers.env import shared_model
    onnx_path, _ = shared_model("kws01")
    c = compile_model(onnx_path)
    sm = [n for n in c.graph.nodes if n.op in ("softmax", "avgpool")]
    assert sm and not any(n.attrs.get("ort_qlinear") for n in sm)


def test_rewrite_leaves_only_qdq_and_float_ops(cnn_models):
    path = cnn_models[("QOperator", "QInt8")]
    proto = read_onnx(path)
    ops = {n.op_type for n in proto.graph.node}
    assert {"QLinearConv", "QGemm", "QLinearAdd", "QLinearAveragePool", "QLinearSoftmax",
            "QLinearGlobalAveragePool"} <= ops
    new = qoperator_to_qdq(proto, path)
    new_ops = {(n.domain, n.op_type) for n in new.graph.node}
    assert all(d == "" for d, _ in new_ops)
    assert {o for _, o in new_ops} == {"QuantizeLinear", "DequantizeLinear", "Conv", "Add",
                                       "AveragePool", "GlobalAveragePool", "Flatten", "Gemm",
                                       "Softmax"}
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
    with pytest.raises(UnsupportedError) as e:
        compile_model(q)
    msg = str(e.value)
    assert ("DynamicQuantizeLinear 'x_QuantizeLinear': dynamic quantization is not supported: "
            "quantize statically (tinyaot quantize)") in msg
    assert "ConvInteger 'conv1_quant': dynamic quantization is not supported" in msg


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


def test_cli_reports_dynamic_quantization_in_one_line(tmp_path, capsys):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from codegen.cli import main

    f = tmp_path / "f.onnx"
    onnx.save(qmodels.cnn(), str(f))
    q = tmp_path / "dyn.onnx"
    quantize_dynamic(str(f), str(q), weight_type=QuantType.QInt8)
    assert main(["compile", str(q), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tinyaot: error: ") and "\n" not in err and "ConvInteger '" in err
    assert not (tmp_path / "out").exists()


def test_report_and_header_name_the_boundary(cnn_models):
    c = compile_model(cnn_models[("QOperator", "QUInt8")])
    io = c.report["io"]
    assert io["input"]["model_boundary"] == "float" and io["input"]["dtype"] == "uint8"
    assert io["input"]["onnx_name"] == "x" and io["output"]["onnx_name"] == "y"
    t = c.graph.tensors[c.graph.inputs[0]]
    assert io["input"]["zero_point"] == int(t.q.zero_point[0]) and 0 <= io["input"]["zero_point"] <= 255
    # the default API takes the float input and quantizes it inside (backend/io_api.py)
    assert "input  'x': float32" in c.module.header and "_run quantizes it" in c.module.header
    assert io["inputs"][0]["api_type"] == "float32" and io["inputs"][0]["dtype"] == "uint8"
    # --io int8: the caller quantizes, as the header says
    q = compile_model(cnn_models[("QOperator", "QUInt8")], io="int8")
    assert "input boundary: the model's float input 'x'" in q.module.header


@pytest.mark.parametrize("form,act", FORMS)
def test_matmul_bit_exact_with_onnxruntime(form, act, tmp_path):
    """MatMul without bias: QLinearMatMul (QOperator) / QDQ MatMul, per-column weights."""
    path = qmodels.quantize(qmodels.matmul(), tmp_path / "mm.onnx", form, act)
    if form == "QOperator":
        assert "QLinearMatMul" in {n.op_type for n in onnx.load(str(path)).graph.node}
    got, want, c = _host_vs_onnxruntime(path, tmp_path)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert [n.op for n in c.graph.nodes if n.op == "fully_connected"] == ["fully_connected"] * 2


@pytest.mark.qemu
@pytest.mark.parametrize("form,act", [("QDQ", "QInt8"), ("QOperator", "QUInt8")])
def test_cnn_bit_exact_on_qemu_m4(cnn_models, form, act, tmp_path):
    """The QLinearAveragePool / QLinearSoftmax kernels and uint8 I/O on Cortex-M4."""
    from tests.helpers.env import require_arm_toolchain
    require_arm_toolchain()
    path = cnn_models[(form, act)]
    c = compile_model(path)
    xs = qmodels.sample_inputs(4)
    qx = np.stack([_quantize_input(c, x) for x in xs])
    outs, info = run_model(path, qx, board="qemu-m4", compiled=c, build_dir=tmp_path / "fw")
    assert info["status"] == [0] * len(xs)
    s, zp = c.graph.tensors[c.graph.outputs[0]].q.scalar()
    want = np.stack([run_onnxruntime(path, {"x": x})["y"] for x in xs])
    got = dequantize(outs, s, zp).reshape(want.shape)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("form,act", [("QDQ", "QInt8"), ("QOperator", "QUInt8")])
def test_io_float_wrapper_equals_onnxruntime_float_model(cnn_models, form, act, tmp_path):
    """--io float: <name>_run_f32 on float inputs == onnxruntime on the float-I/O model."""
    from cffi import FFI

    from codegen.driver.firmware import build_generated
    from codegen.compiler import write_outputs

    path = cnn_models[(form, act)]
    c = compile_model(path, io="float")
    assert c.report["io"]["api"] == "float"
    assert f"int {c.module.name}_run_f32(const float *input, float *output);" in c.module.header
    out = tmp_path / "gen"
    write_outputs(c, out)
    so = build_generated(str(out), "host", harness=False)
    ffi = FFI()
    ffi.cdef(f"int {c.module.name}_run_f32(const float *input, float *output);")
    lib = ffi.dlopen(str(so))
    xs = qmodels.sample_inputs(8)
    xs[0] = xs[0] * 1000  # saturating inputs
    for x in xs:
        want = run_onnxruntime(path, {"x": x})["y"].reshape(-1)
        got = np.zeros(want.size, np.float32)
        xin = np.ascontiguousarray(x.reshape(-1), dtype=np.float32)
        assert getattr(lib, f"{c.module.name}_run_f32")(
            ffi.from_buffer("float[]", xin), ffi.from_buffer("float[]", got)) == 0
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    with pytest.raises(TinyAotError, match="unknown --io"):
        compile_model(path, io="int16")
