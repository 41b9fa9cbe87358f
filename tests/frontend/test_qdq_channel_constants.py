"""Per-channel constant Mul / Add on 4-D tensors, as exporters write them.

An unfolded BatchNorm is a Mul and an Add of per-channel constants: onnxruntime's
quantize_static writes `DQ(x) * DQ(c[C, 1, 1]) -> Q -> DQ + DQ(d[C, 1, 1]) -> Q` on NCHW,
tf2onnx the same with [C] constants between Transposes to and from NHWC. A conv bias may be
its own Add: of an int32 [C, 1, 1] constant (DequantizeLinear with the accumulator's scale)
right after the Conv, which folds into the Conv (exact), or of an int8 constant after the
Conv's QuantizeLinear, which runs as a per-channel Add.

Oracles: onnxruntime on the same file (ort); TFLite Micro's interpreter on the same layer
written as a .tflite ADD / MUL with a [C] constant on NHWC (tflite); the numpy oracle equals
the C (both, tests.helpers.qdq_builder.host_run_checked).
"""
import numpy as np
import pytest

from codegen.frontend.ort_facts import optimized_graph

from tests.helpers import quantize_static_models as qmodels
from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save

X_Q = (0.043, -7)
C_Q = (0.0125, 3)
M_Q = (0.061, 5)
D_Q = (0.021, -2)
Y_Q = (0.083, 4)


def consts(c, seed):
    rng = np.random.default_rng(seed)
    cv = rng.integers(-128, 128, size=c).astype(np.int8)
    cv[0], cv[-1] = -128, 127  # the extremes
    dv = rng.integers(-128, 128, size=c).astype(np.int8)
    return cv, dv


def unfolded_bn(shape, layout, conv=False, order="mul_add", seed=0, const_first=False):
    """x [N, C, H, W] (layout "nchw": constants [C, 1, 1]; "nchw4": [1, C, 1, 1]; "nhwc":
    Transpose to NHWC, constants [C], Transpose back), optionally after a 1x1 Conv; returns
    (model, input shape, output shape, mul constants, add constants)."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("bn")
    n, c, h, w = shape
    x = b.dq("x", *X_Q)
    if conv:
        wt, _ = b.weight(rng.normal(size=(c, c, 1, 1)).astype(np.float32) * 0.4)
        x = b.dq(b.q(b.op("Conv", [x, wt]), *X_Q), *X_Q)
    if layout == "nhwc":
        x = b.dq(b.q(b.op("Transpose", [x], perm=[0, 2, 3, 1]), *X_Q), *X_Q)
    cshape = {"nchw": (c, 1, 1), "nchw4": (1, c, 1, 1), "nhwc": (c,)}[layout]
    cv, dv = consts(c, seed)
    cq = b.dq(b.const_int(cv.reshape(cshape), np.int8), *C_Q)
    dq = b.dq(b.const_int(dv.reshape(cshape), np.int8), *D_Q)
    for step in order.split("_"):
        if step == "mul":
            ins = [cq, x] if const_first else [x, cq]
            x = b.dq(b.q(b.op("Mul", ins), *M_Q), *M_Q)
        else:
            ins = [dq, x] if const_first else [x, dq]
            x = b.op("Add", ins)
            if layout == "nhwc":
                x = b.dq(b.q(x, *Y_Q), *Y_Q)
    if layout == "nhwc":
        x = b.op("Transpose", [x], perm=[0, 3, 1, 2])
    b.q(x, *Y_Q, out="y")
    return b.model("x", shape, "y", shape), shape, cv, dv


CASES = {
    "nchw_graph_input": ((1, 5, 4, 6), "nchw", False),  # NCHW in memory: one run per channel
    "nchw_after_conv": ((1, 6, 5, 3), "nchw", True),  # NHWC in memory: [C] rows
    "nchw4_after_conv": ((1, 4, 3, 5), "nchw4", True),
    "nhwc_transposes": ((1, 7, 3, 4), "nhwc", False),
    "nhwc_transposes_after_conv": ((1, 3, 4, 4), "nhwc", True),
    "one_channel": ((1, 1, 5, 5), "nchw", False),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("order", ["mul_add", "add"])
def test_channel_consts_ort_bit_exact_with_onnxruntime(case, order, tmp_path):
    shape, layout, conv = CASES[case]
    m, shape, _, _ = unfolded_bn(shape, layout, conv, order, seed=len(case))
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 6, seed=3)
    outs, c = host_run_checked(path, x, "ort", tmp_path, None)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    assert [n.op for n in c.graph.nodes if n.op in ("add", "mul")] == order.split("_")
    add = next(n for n in c.graph.nodes if n.op == "add")
    if case == "nchw_graph_input" and order == "add":  # QLinearAdd, NCHW in memory: a value
        assert c.params[add.name].use_float == 3  # repeated over each run, never folded


def test_onnxruntime_fuses_the_per_channel_add(tmp_path):
    """Pinned: onnxruntime runs DQ + DQ(const [C, 1, 1]) -> Q as QLinearAdd (tinyaot's
    modes 2 / 3 follow its MLAS arithmetic; a release that stops fusing fails here)."""
    m, *_ = unfolded_bn((1, 5, 4, 6), "nchw", False, "add")
    path = save(m, tmp_path)
    ops = [n.op_type for n in optimized_graph(path).graph.node]
    assert "QLinearAdd" in ops and "Add" not in ops


def test_const_first_operand(tmp_path):
    """DQ(const) first: Mul is symmetric; an Add of a constant first that is not one value
    is refused under ort (onnxruntime's QLinearAdd nests its operands in ONNX order)."""
    m, shape, _, _ = unfolded_bn((1, 3, 4, 4), "nchw", False, "mul", const_first=True)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, _ = host_run_checked(path, x, "ort", tmp_path, None)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))


# ------------------------------------------------------------ a conv bias added on its own

def conv_bias_add(kind, seed=0):
    """DQ(x) -> Conv(no bias) -> Add(bias) -> Q: `int32`, DequantizeLinear of int32 [C, 1, 1]
    with scale s_x * s_w; `int8`: Conv -> Q -> DQ -> Add(DQ of int8 [C, 1, 1]) -> Q."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("bias_add")
    x = b.dq("x", *X_Q)
    w, ws = b.weight(rng.normal(size=(6, 4, 3, 3)).astype(np.float32) * 0.3)
    y = b.op("Conv", [x, w], pads=[1, 1, 1, 1])
    if kind == "int32":
        s = (np.float32(X_Q[0]) * ws).astype(np.float32)
        bq = np.rint(rng.normal(size=6) / s).astype(np.int32).reshape(6, 1, 1)
        bias = b.dq(b.const_int(bq, np.int32), s, np.zeros(6, np.int32), axis=0, dtype=np.int32)
    else:
        y = b.dq(b.q(y, *M_Q), *M_Q)
        bias = b.dq(b.const_int(rng.integers(-128, 128, size=(6, 1, 1)), np.int8), *D_Q)
    b.q(b.op("Add", [y, bias]), *Y_Q, out="y")
    return b.model("x", (1, 4, 5, 5), "y", (1, 6, 5, 5))


@pytest.mark.parametrize("kind", ["int32", "int8"])
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_conv_bias_added_on_its_own(kind, numerics, tmp_path):
    path = save(conv_bias_add(kind), tmp_path)
    x = all_int8_inputs((1, 4, 5, 5), 5, seed=1)
    outs, c = host_run_checked(path, x, numerics, tmp_path, None)
    ops = [n.op for n in c.graph.nodes if n.op in ("conv2d", "add")]
    assert ops == (["conv2d"] if kind == "int32" else ["conv2d", "add"])  # folded: exact
    if kind == "int32":
        conv = next(n for n in c.graph.nodes if n.op == "conv2d")
        assert conv.inputs[2] is not None  # the Add's constant is the conv's bias
    if numerics == "ort":
        np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    elif kind == "int32":  # the same conv with the bias as its third input, as converters write it
        ref = save(conv_bias_as_input(), tmp_path, "ref.onnx")
        want, _ = host_run_checked(ref, x, numerics, tmp_path / "ref", None)
        np.testing.assert_array_equal(outs, want)
    # tflite, int8: a per-channel ADD (against TFLite Micro below); here C == the numpy oracle


def conv_bias_as_input(seed=0):
    rng = np.random.default_rng(seed)
    b = QdqBuilder("bias_in")
    x = b.dq("x", *X_Q)
    w, ws = b.weight(rng.normal(size=(6, 4, 3, 3)).astype(np.float32) * 0.3)
    s = (np.float32(X_Q[0]) * ws).astype(np.float32)
    bq = np.rint(rng.normal(size=6) / s).astype(np.int32)
    bias = b.dq(b.const_int(bq, np.int32), s, np.zeros(6, np.int32), axis=0, dtype=np.int32)
    b.q(b.op("Conv", [x, w, bias], pads=[1, 1, 1, 1]), *Y_Q, out="y")
    return b.model("x", (1, 4, 5, 5), "y", (1, 6, 5, 5))


# ------------------------------------------------------------ tflite: TFLite Micro itself

def tflite_binary(op, xshape, const, x_q, c_q, y_q):
    """A .tflite with one ADD or MUL builtin: int8 x [xshape] (NHWC) and a constant int8
    [C] operand, int8 y; TFLite's own schema classes (shipped by the tflite-micro package)."""
    import flatbuffers
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as S

    def tensor(name, shape, q, buf):
        t = S.TensorT()
        t.name, t.shape, t.type, t.buffer = name, list(shape), S.TensorType.INT8, buf
        t.quantization = S.QuantizationParametersT()
        t.quantization.scale, t.quantization.zeroPoint = [float(q[0])], [int(q[1])]
        return t

    m = S.ModelT()
    m.version = 3
    m.buffers = [S.BufferT() for _ in range(4)]
    m.buffers[1].data = list(np.ascontiguousarray(const, np.int8).view(np.uint8).reshape(-1))
    code = S.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = getattr(S.BuiltinOperator, op)
    code.version = 2
    m.operatorCodes = [code]
    g = S.SubGraphT()
    g.tensors = [tensor("x", xshape, x_q, 2), tensor("c", const.shape, c_q, 1),
                 tensor("y", xshape, y_q, 3)]
    o = S.OperatorT()
    o.opcodeIndex, o.inputs, o.outputs = 0, [0, 1], [2]
    if op == "ADD":
        o.builtinOptionsType = S.BuiltinOptions.AddOptions
        o.builtinOptions = S.AddOptionsT()
    else:
        o.builtinOptionsType = S.BuiltinOptions.MulOptions
        o.builtinOptions = S.MulOptionsT()
    g.operators, g.inputs, g.outputs = [o], [0], [2]
    m.subgraphs = [g]
    fb = flatbuffers.Builder(1024)
    fb.Finish(m.Pack(fb), file_identifier=b"TFL3")
    return bytes(fb.Output())


def single_op_model(op, shape, layout, const, c_q, y_q):
    """DQ(x) op DQ(const) -> Q: NCHW with a [C, 1, 1] constant, or ("nhwc") between
    Transposes to and from NHWC with a [C] constant (tf2onnx), all in float before the Q."""
    b = QdqBuilder("single")
    x = b.dq("x", *X_Q)
    c = shape[1]
    if layout == "nhwc":
        x = b.op("Transpose", [x], perm=[0, 2, 3, 1])
    cd = b.dq(b.const_int(const.reshape((c,) if layout == "nhwc" else (c, 1, 1)), np.int8), *c_q)
    y = b.op(op.capitalize(), [x, cd])
    if layout == "nhwc":
        y = b.op("Transpose", [y], perm=[0, 3, 1, 2])
    b.q(y, *y_q, out="y")
    return b.model("x", shape, "y", shape)


@pytest.mark.parametrize("op", ["ADD", "MUL"])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("shape", [(1, 5, 4, 6), (1, 8, 3, 3)])
def test_channel_const_tflite_equals_tflite_micro(op, layout, shape, tmp_path):
    rt = pytest.importorskip("tflite_micro", reason="pip install tflite-micro").runtime
    n, c, h, w = shape
    cv, dv = consts(c, seed=c)
    const, c_q, y_q = (dv, D_Q, Y_Q) if op == "ADD" else (cv, C_Q, M_Q)
    path = save(single_op_model(op, shape, layout, const, c_q, y_q), tmp_path)
    x = all_int8_inputs(shape, 4, seed=2)
    interp = rt.Interpreter.from_bytes(tflite_binary(op, (n, h, w, c), const, X_Q, c_q, y_q))
    want = []
    for v in x:
        interp.reset()
        interp.set_input(np.ascontiguousarray(v.transpose(0, 2, 3, 1)), 0)
        interp.invoke()
        want.append(np.asarray(interp.get_output(0)).transpose(0, 3, 1, 2))
    want = np.stack(want)
    outs, _ = host_run_checked(path, x, "tflite", tmp_path, None)
    np.testing.assert_array_equal(outs, want.reshape(outs.shape))
    ort_outs, _ = host_run_checked(path, x, "ort", tmp_path / "ort", None)
    np.testing.assert_array_equal(ort_outs, run_ort(path, x).reshape(outs.shape))


@pytest.mark.parametrize("optimize", ["speed", "size"])
def test_per_channel_qlinear_add_every_pair(optimize, tmp_path):
    """Every (x, constant) int8 pair through onnxruntime's QLinearAdd with a per-channel
    constant on an NCHW graph input (a constant value repeated over each run): scales whose
    products tie, where MLAS's fold of a one-value operand would round differently, so a
    kernel that folded the repeated value would differ (mode 3; speed: tables, size: the
    portable kernel)."""
    from codegen.compiler import compile_model
    from codegen.driver.verify import run_model
    b = QdqBuilder("pairs")
    x = b.dq("x", 0.09375, 18)
    cd = b.dq(b.const_int(np.arange(-128, 128).astype(np.int8).reshape(256, 1, 1), np.int8),
              0.015625, 14)
    b.q(b.op("Add", [x, cd]), 0.09375, 7, out="y")
    shape = (1, 256, 1, 256)
    path = save(b.model("x", shape, "y", shape), tmp_path)
    xs = np.broadcast_to(np.arange(-128, 128, dtype=np.int8), (256, 256)).reshape((1,) + shape)
    c = compile_model(path, numerics="ort", optimize=optimize)
    outs, info = run_model(path, xs, board="host", numerics="ort", build_dir=tmp_path / "gen",
                           compiled=c)
    assert info["status"] == [0]
    add = next(n for n in c.graph.nodes if n.op == "add")
    assert c.params[add.name].use_float == 3
    np.testing.assert_array_equal(outs.reshape(xs.shape), run_ort(path, xs).reshape(xs.shape))


def test_per_channel_qlinear_mul_every_pair(tmp_path):
    """Every (x, constant) int8 pair through onnxruntime's QLinearMul with a per-channel
    constant [C, 1, 1] on an NCHW graph input; power-of-two scales, so products land on
    halves (round half to even) and the odd output zero point moves the ties."""
    b = QdqBuilder("mul_pairs")
    x = b.dq("x", 0.0625, 18)
    cd = b.dq(b.const_int(np.arange(-128, 128).astype(np.int8).reshape(256, 1, 1), np.int8),
              0.125, -14)
    b.q(b.op("Mul", [x, cd]), 1.0, 7, out="y")  # ratio 1/128: a tie at every 64 mod 128
    shape = (1, 256, 1, 256)
    path = save(b.model("x", shape, "y", shape), tmp_path)
    assert "QLinearMul" in [n.op_type for n in optimized_graph(path).graph.node]
    xs = np.broadcast_to(np.arange(-128, 128, dtype=np.int8), (256, 256)).reshape((1,) + shape)
    outs, c = host_run_checked(path, xs, "ort", tmp_path, "tinyaot_mul_s8")
    np.testing.assert_array_equal(outs.reshape(xs.shape), run_ort(path, xs).reshape(xs.shape))
    assert len(np.unique(outs)) > 200  # not saturated: the ties are exercised


def unfolded_bn_float(c=6, seed=0):
    """A float Conv -> Mul(gamma [C, 1, 1]) -> Add(beta [C, 1, 1]) -> Relu (a BatchNorm
    exported unfolded), for quantize_static."""
    from onnx import helper, numpy_helper
    r = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((r.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32),
                                     "w1"),
             numpy_helper.from_array((r.standard_normal(c) * 0.1).astype(np.float32), "b1"),
             numpy_helper.from_array(r.uniform(0.5, 1.5, (c, 1, 1)).astype(np.float32), "g"),
             numpy_helper.from_array((r.standard_normal((c, 1, 1)) * 0.3).astype(np.float32),
                                     "be")]
    h = helper.make_node
    nodes = [h("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv"),
             h("Mul", ["c1", "g"], ["m"], name="bn_mul"),
             h("Add", ["m", "be"], ["a"], name="bn_add"), h("Relu", ["a"], ["y"], name="relu")]
    return qmodels._model(nodes, inits, (1, c, 8, 8), "unfolded_bn")


@pytest.mark.parametrize("act", ["QInt8", "QUInt8"])
@pytest.mark.parametrize("form", ["QDQ", "QOperator"])
def test_unfolded_batchnorm_quantize_static(form, act, tmp_path):
    """onnxruntime's quantize_static of an unfolded BatchNorm (QLinearMul / QLinearAdd of
    per-channel constants in QOperator form; int8 or uint8 constants): tinyaot's integers
    equal onnxruntime's."""
    from codegen.compiler import compile_model
    from codegen.driver.verify import run_model
    from codegen.numerics.ort_float import dequantize, quantize
    from codegen.reference.onnxruntime_oracle import run_onnxruntime
    path = qmodels.quantize(unfolded_bn_float(), tmp_path / "m.onnx", form, act)
    c = compile_model(path, numerics="ort")
    g = c.graph
    assert [n.op for n in g.nodes if n.op in ("mul", "add")] == ["mul", "add"]
    xt = g.tensors[g.inputs[0]]
    s, zp = xt.q.scalar()
    lo, hi = (0, 255) if xt.dtype == "uint8" else (-128, 127)
    xs = qmodels.sample_inputs()
    qx = np.stack([quantize(x, s, zp, lo, hi).astype(xt.dtype) for x in xs])
    outs, info = run_model(path, qx, board="host", numerics="ort", compiled=c,
                           build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(xs)
    ys, yzp = g.tensors[g.outputs[0]].q.scalar()
    want = np.stack([run_onnxruntime(path, {"x": x})["y"] for x in xs])
    got = dequantize(outs, ys, yzp).reshape(want.shape)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
