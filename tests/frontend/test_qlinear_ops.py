"""QOperator frontend: QLinearConcat, QLinearMatMul + QLinearAdd (bias), the
unsupported-node message; models built with onnx.helper, int8 and uint8,
generated C on the host bit-exact with onnxruntime (numerics ort)."""
import numpy as np
import onnx
import pytest
from onnx import helper

from codegen.compiler import compile_model
from codegen.errors import UnsupportedError
from codegen.frontend.onnx_loader import read_onnx
from codegen.frontend.qoperator import qoperator_to_qdq
from codegen.reference import run_graph
from codegen.driver.verify import run_model

from tests.helpers.qdq_builder import run_ort, save
from tests.helpers.qop_builder import MS, QopBuilder, all_inputs

DTYPES = [np.int8, np.uint8]


def host_vs_ort(path, x, tmp_path, kernel=None):
    """Host C == numpy reference == onnxruntime, integer equality."""
    c = compile_model(path, numerics="ort")
    outs, info = run_model(path, x, board="host", numerics="ort", compiled=c,
                           build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(x)
    g = c.graph
    want = run_ort(path, x)
    got = outs.view(want.dtype).reshape(want.shape)
    ref = np.stack([run_graph(g, "ort", {g.inputs[0]: v[None].view(np.int8) if v.dtype == np.uint8
                                         else v[None]}, c.params)[g.outputs[0]] for v in x])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ref.reshape(want.shape).astype(np.int64) & 0xFF,
                                  want.astype(np.int64) & 0xFF)
    if kernel:
        assert kernel in c.report["kernels"]
    return c


def _zp(dtype, zp):
    return zp + 128 if dtype == np.uint8 else zp


# ---- QLinearConcat ----------------------------------------------------------

def qlinear_concat_model(dtype, in_q, out_q, axis=1, shape=(1, 3, 4, 4)):
    """QLinearConcat(x read with in_q[0], x read with in_q[1], ...): every input
    holds all the type's values, each with its own (scale, zero point)."""
    b = QopBuilder(dtype)
    ins = list(b.qp(out_q[0], _zp(dtype, out_q[1])))
    for s, z in in_q:
        ins += ["x", *b.qp(s, _zp(dtype, z))]
    b.node("QLinearConcat", ins, domain=MS, axis=axis)
    out = list(shape)
    out[axis] *= len(in_q)
    return b.model(shape, out)


CONCAT_CASES = [
    (((0.03, -100), (0.05, 2)), (0.05, 2), 1),
    (((0.05, 2), (0.11, 40), (0.02, -128)), (0.07, -9), 1),
    (((0.0123, 7), (0.0123, 7)), (0.0123, 7), 3),  # equal params: copies
    (((0.025, 0), (0.2, 60)), (0.05, 0), 2),  # ratio 0.5: ties, half to even
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("in_q,out_q,axis", CONCAT_CASES)
def test_qlinear_concat_bit_exact_with_onnxruntime(dtype, in_q, out_q, axis, tmp_path):
    m = qlinear_concat_model(dtype, in_q, out_q, axis)
    path = save(m, tmp_path)
    assert [n.op_type for n in onnx.load(str(path)).graph.node] == ["QLinearConcat"]
    x = all_inputs((1, 3, 4, 4), 3, dtype)
    c = host_vs_ort(path, x, tmp_path, "tinyaot_concat_s8")
    p = next(c.params[n.name] for n in c.graph.nodes if n.op == "concat")
    assert [t is None for t in p.tables] == [q == out_q for q in in_q]


def test_qlinear_concat_rewrite_is_dq_concat_q():
    m = qlinear_concat_model(np.int8, ((0.03, 1), (0.05, 2)), (0.05, 2))
    new = qoperator_to_qdq(m, "m")
    assert [n.op_type for n in new.graph.node] == ["DequantizeLinear", "DequantizeLinear",
                                                   "Concat", "QuantizeLinear"]
    assert next(n for n in new.graph.node if n.op_type == "Concat").name == m.graph.node[0].name


# ---- all unsupported nodes, both passes, one capped message ------------------

def many_unsupported_model(n_pools=10):
    """A Cos (neither the lowering nor the float fallback takes it; an Erf would now run in
    float32) then n_pools QLinearAveragePool with channels_last=1 (the QOperator rewrite
    refuses them)."""
    b = QopBuilder(np.int8)
    s, z = b.qp(0.05, 0)
    f = b.node("DequantizeLinear", ["x", s, z])
    e = b.node("Cos", [f])
    t = b.node("QuantizeLinear", [e, s, z])
    for _ in range(n_pools):
        t = b.node("QLinearAveragePool", [t, s, z, s, z], domain=MS, kernel_shape=[1, 1],
                   channels_last=1)
    return b.model((1, 2, 4, 4), (1, 2, 4, 4))


def test_unsupported_nodes_of_both_passes_in_one_capped_message(tmp_path):
    path = save(many_unsupported_model(10), tmp_path)
    with pytest.raises(UnsupportedError) as e:
        compile_model(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{path}: 12 unsupported node(s): ")
    assert "Cos 'cos_" in msg  # lowering
    assert "QLinearAveragePool 'qlinearaveragepool_" in msg and "channels_last=1" in msg  # rewrite
    assert msg.count("QLinearAveragePool '") == 6 and msg.endswith("; ... and 4 more")
    # the rewrite alone caps its list the same way
    with pytest.raises(UnsupportedError) as e2:
        qoperator_to_qdq(read_onnx(path), "m")
    assert "10 unsupported node(s)" in str(e2.value) and str(e2.value).endswith("... and 2 more")


def test_cli_lists_both_passes_in_one_line(tmp_path, capsys):
    from codegen.cli import main
    path = save(many_unsupported_model(2), tmp_path)
    assert main(["compile", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tinyaot: error: ") and "\n" not in err
    assert "4 unsupported node(s)" in err and "Cos '" in err and "channels_last=1" in err
    assert not (tmp_path / "out").exists()


# ---- QLinearAdd: MLAS's formula, an activation + a constant ------------------

def qlinear_add_model(dtype, qa, qb, qy, const, const_first=False):
    """y = QLinearAdd(x [256, 256], const) (or (const, x)); zero points in int8 terms."""
    b = QopBuilder(dtype)
    sa, za = b.qp(qa[0], _zp(dtype, qa[1]))
    c = b.const(const)
    sb, zb = b.qp(qb[0], _zp(dtype, qb[1]))
    sy, zy = b.qp(qy[0], _zp(dtype, qy[1]))
    ins = [c, sb, zb, "x", sa, za] if const_first else ["x", sa, za, c, sb, zb]
    b.node("QLinearAdd", ins + [sy, zy], domain=MS)
    return b.model((256, 256), (256, 256))


def every_pair_input(dtype):
    """x[i, j] = i-th value of the type: with a constant row b[j] = j-th value,
    the 65536 elements are every (a, b) pair."""
    v = np.arange(256, dtype=np.uint8).view(dtype)
    return np.repeat(v, 256).reshape(1, 256, 256)


ADD_PARAMS = [((0.031, -3), (0.017, 20), (0.045, 7)), ((0.1, 0), (0.1, 0), (0.2, 0)),
              ((0.0071, -128), (0.093, 127), (0.052, -20)), ((0.05, 10), (0.004, -7), (0.011, 3))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("qa,qb,qy", ADD_PARAMS)
def test_qlinear_add_constant_row_every_pair_bit_exact(dtype, qa, qb, qy, tmp_path):
    row = np.arange(256, dtype=np.uint8).view(dtype)
    path = save(qlinear_add_model(dtype, qa, qb, qy, row), tmp_path)
    c = host_vs_ort(path, every_pair_input(dtype), tmp_path, "tinyaot_add_s8")
    p = next(c.params[n.name] for n in c.graph.nodes if n.op == "add")
    assert p.use_float == 2 and p.u8_shift == (128 if dtype == np.uint8 else 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("const_first", [False, True])
def test_qlinear_add_scalar_constant_bit_exact(dtype, const_first, tmp_path):
    x = all_inputs((256, 256), 1, dtype)
    for k, (qa, qb, qy) in enumerate(ADD_PARAMS[1:3]):
        for v in (np.array([-77], np.int8).view(dtype), np.array([100], np.int8).view(dtype)):
            m = qlinear_add_model(dtype, qa, qb, qy, v, const_first)
            host_vs_ort(save(m, tmp_path, f"s{k}_{int(v[0])}.onnx"), x, tmp_path / f"s{k}_{v[0]}")


def test_mlas_formula_differs_from_the_float_formula():
    """Why mode 2 exists: over every pair, DequantizeLinear -> float add ->
    QuantizeLinear disagrees with MLAS in some elements for these parameters."""
    from codegen.numerics.ort_float import dequantize, quantize
    from codegen.numerics.ort_qlinear_add import qlinear_add, qlinear_add_params
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128))
    for (qa, qb, qy), want in zip(ADD_PARAMS[1:3], (6444, 18)):  # the every-pair cases above
        qa, qb, qy = ((np.float32(s), z) for s, z in (qa, qb, qy))
        p = dict(qlinear_add_params(qa, qb, qy, False), act_min=-128, act_max=127)
        fl = quantize((dequantize(a, *qa) + dequantize(b, *qb)).astype(np.float32), qy[0], qy[1])
        assert (qlinear_add(a, b, p) != fl).sum() == want


# ---- QLinearMatMul + QLinearAdd (bias): quantize_static's MatMul + Add -----------

def matmul_bias_float():
    from tests.helpers import quantize_static_models as qmodels
    from onnx import numpy_helper
    r = np.random.default_rng(0)
    inits = [numpy_helper.from_array((r.standard_normal(s) * sc).astype(np.float32), n)
             for n, s, sc in (("w1", (48, 16), 0.3), ("b1", (16,), 0.1), ("w2", (16, 10), 0.3),
                              ("b2", (10,), 0.1))]
    h = helper.make_node
    nodes = [h("MatMul", ["x", "w1"], ["m1"], name="mm1"), h("Add", ["m1", "b1"], ["a1"], name="add1"),
             h("Relu", ["a1"], ["r1"], name="relu"), h("MatMul", ["r1", "w2"], ["m2"], name="mm2"),
             h("Add", ["m2", "b2"], ["y"], name="add2")]
    return qmodels._model(nodes, inits, (1, 10), "matmul_bias", in_shape=(1, 48))


@pytest.mark.parametrize("form,act", [("QOperator", "QInt8"), ("QOperator", "QUInt8"),
                                      ("QDQ", "QInt8"), ("QDQ", "QUInt8")])
def test_matmul_with_bias_bit_exact_with_onnxruntime(form, act, tmp_path):
    from tests.helpers import quantize_static_models as qmodels
    path = qmodels.quantize(matmul_bias_float(), tmp_path / "mmb.onnx", form, act)
    ops = [n.op_type for n in onnx.load(str(path)).graph.node]
    if form == "QOperator":
        assert ops.count("QLinearMatMul") == 2 and ops.count("QLinearAdd") == 2
    c = compile_model(path)
    g = c.graph
    assert [n.op for n in g.nodes if n.op in ("fully_connected", "add")] == [
        "fully_connected", "add", "fully_connected", "add"]
    float_io_vs_ort(path, c, "host", tmp_path, 16)


def float_io_vs_ort(path, c, board, tmp_path, count):
    """A model with float I/O (quantize_static): quantize float inputs, run on the
    board, compare the dequantized outputs with onnxruntime's floats bit for bit."""
    from codegen.reference.onnxruntime_oracle import run_onnxruntime
    from codegen.numerics.ort_float import dequantize, quantize
    g = c.graph
    xt, yt = g.tensors[g.inputs[0]], g.tensors[g.outputs[0]]
    lo, hi = (0, 255) if xt.dtype == "uint8" else (-128, 127)
    xs = [(np.random.default_rng(k).standard_normal((1, 48)) * 1.5).astype(np.float32)
          for k in range(count)]
    qx = np.stack([quantize(x, *xt.q.scalar(), lo, hi).astype(xt.dtype) for x in xs])
    outs, info = run_model(path, qx, board=board, compiled=c, build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(xs)
    want = np.stack([run_onnxruntime(path, {"x": x})["y"] for x in xs])
    got = dequantize(outs.view(yt.dtype).astype(np.int32), *yt.q.scalar()).reshape(want.shape)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_matmul_with_bias_tflite_host_equals_reference(tmp_path):
    """The same graph under --numerics tflite: TFLite ADD of the constant row
    (tflite oracle), C == numpy reference, through the per-row kernel calls."""
    from tests.helpers import quantize_static_models as qmodels
    path = qmodels.quantize(matmul_bias_float(), tmp_path / "mmb.onnx", "QOperator", "QInt8")
    c = compile_model(path, numerics="tflite")
    g = c.graph
    x = np.random.default_rng(1).integers(-128, 128, (32, 1, 48)).astype(np.int8)
    outs, info = run_model(path, x, board="host", numerics="tflite", compiled=c,
                           build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(x)
    ref = np.stack([run_graph(g, "tflite", {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)


def test_constant_row_over_several_rows_loops_in_c(tmp_path):
    """[4, 256] + [256]: the generated C calls the kernel once per row."""
    dtype = np.int8
    b = QopBuilder(dtype)
    sa, za = b.qp(0.031, -3)
    c0 = b.const(np.arange(256, dtype=np.uint8).view(dtype))
    sb, zb = b.qp(0.017, 20)
    sy, zy = b.qp(0.045, 7)
    b.node("QLinearAdd", ["x", sa, za, c0, sb, zb, sy, zy], domain=MS)
    path = save(b.model((4, 256), (4, 256)), tmp_path)
    c = host_vs_ort(path, all_inputs((4, 256), 4, dtype), tmp_path)
    assert "for (int32_t r = 0; r < 4; ++r) {" in c.module.source


@pytest.mark.qemu
@pytest.mark.parametrize("act", ["QInt8", "QUInt8"])
def test_matmul_with_bias_bit_exact_on_qemu_m4(act, tmp_path):
    """QLinearAdd's fmaf on the Cortex-M4 FPU (VFMA) == onnxruntime."""
    from tests.helpers import quantize_static_models as qmodels
    from tests.helpers.env import require_arm_toolchain
    require_arm_toolchain()
    path = qmodels.quantize(matmul_bias_float(), tmp_path / "mmb.onnx", "QOperator", act)
    float_io_vs_ort(path, compile_model(path), "qemu-m4", tmp_path, 24)


@pytest.mark.parametrize("dtype", DTYPES)
def test_qlinear_add_of_a_one_value_activation_bit_exact(dtype, tmp_path):
    """QLinearAdd(x, QLinearGlobalAveragePool(x)) with one channel: b is a
    one-value activation; MLAS folds it unfused (its scalar path), so does the kernel."""
    b = QopBuilder(dtype)
    sx, zx = b.qp(0.031, _zp(dtype, -3))
    sg, zg = b.qp(0.013, _zp(dtype, 5))
    sy, zy = b.qp(0.045, _zp(dtype, 7))
    g = b.node("QLinearGlobalAveragePool", ["x", sx, zx, sg, zg], domain=MS)
    b.node("QLinearAdd", ["x", sx, zx, g, sg, zg, sy, zy], domain=MS)
    path = save(b.model((1, 1, 16, 16), (1, 1, 16, 16)), tmp_path)
    x = all_inputs((1, 1, 16, 16), 64, dtype, seed=3)
    c = host_vs_ort(path, x, tmp_path, "tinyaot_add_s8")
    p = next(c.params[n.name] for n in c.graph.nodes if n.op == "add")
    assert p.use_float == 2
