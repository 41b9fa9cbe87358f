"""PRelu (a slope per channel, [C, 1, 1] on NCHW or [C] on [N, C], or one slope; the slope
quantized per tensor or per channel) between DequantizeLinear and QuantizeLinear:

* ort: onnxruntime keeps the group in float (checked on its optimized graph) and the
  generated C on the host equals its outputs, also after a Conv (NHWC input), with a fused
  Relu / Clip and with power-of-two scales (rounding ties); the float32 formula written here,
  QuantizeLinear(x > 0 ? x : x * slope), equals onnxruntime, with >= as with >, and a float64
  one does not;
* tflite: the C equals a numpy model of TFLite Micro's PRELU written here from its source
  (prelu_common.cc CalculatePreluParams, reference/prelu.h BroadcastPrelu4DSlow, common.cc
  MultiplyByQuantizedMultiplier), and that model equals TFLite Micro's own interpreter on a
  .tflite with a PRELU builtin built here;
* both: the C equals the operator's numpy oracle (host_run_checked), and once on qemu-m4;
* bad slopes: one line naming the model and the node, exit 2.
"""
import math
import subprocess
import sys

import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.driver.verify import run_model
from codegen.frontend.ort_facts import optimized_graph
from codegen.reference import run_graph

from tests.helpers.env import REPO, require_arm_toolchain
from tests.helpers.op_models import X_Q, Y_Q, prelu_model
from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save

F32 = np.float32
KERNEL = "tinyaot_prelu_s8"


def ort_runs_float_prelu(path):
    ops = [n.op_type for n in optimized_graph(path).graph.node]
    return "PRelu" in ops and not any("PRelu" in o and o != "PRelu" for o in ops)


# (id, shape, slope shape, model options)
ORT_CASES = [
    ("channel_c1", (1, 1, 4, 5), (1, 1, 1), {}),
    ("channel_c3", (1, 3, 4, 5), (3, 1, 1), {}),
    ("channel_c8", (2, 8, 4, 4), (8, 1, 1), {}),
    ("channel_4d", (1, 5, 3, 4), (1, 5, 1, 1), {}),
    ("per_channel_scales", (1, 6, 4, 4), (6, 1, 1),
     {"s_scale": np.array([0.011, 0.004, 0.03, 0.0078125, 0.02, 0.001], F32),
      "s_zp": np.array([2, 0, -7, 0, 100, -128], np.int8), "s_axis": 0}),
    ("scalar", (1, 3, 4, 5), (1,), {}),
    ("scalar_rank0", (1, 3, 4, 5), (), {}),
    ("rows", (4, 16), (16,), {}),
    ("rank3", (2, 7, 6), (7, 1), {}),
    ("after_conv", (1, 5, 4, 6), (5, 1, 1), {"after_conv": True}),
    ("after_conv_scalar", (1, 4, 3, 5), (1,), {"after_conv": True}),
    ("relu", (1, 3, 4, 5), (3, 1, 1), {"act": "relu"}),
    ("clip_after_conv", (1, 3, 4, 5), (3, 1, 1), {"act": "clip", "after_conv": True}),
    ("ties", (1, 4, 8, 8), (4, 1, 1), {"x_q": (2.0**-5, 0), "s_scale": 2.0**-7, "s_zp": 0,
                                       "y_q": (2.0**-6, 1)}),
]


@pytest.mark.parametrize("case,shape,s_shape,kw", ORT_CASES, ids=[c[0] for c in ORT_CASES])
def test_prelu_ort_host_bit_exact_with_onnxruntime(case, shape, s_shape, kw, tmp_path):
    m, _ = prelu_model(shape, s_shape, seed=len(case), **kw)
    path = save(m, tmp_path)
    assert ort_runs_float_prelu(path), "onnxruntime fused PRelu: codegen/ops/prelu.py is stale"
    x = all_int8_inputs(shape, 4, seed=len(case))
    outs, c = host_run_checked(path, x, "ort", tmp_path, KERNEL)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    if kw.get("after_conv"):  # the slope is read per channel of an NHWC-stored input
        n = next(n for n in c.graph.nodes if n.op == "prelu")
        assert c.graph.tensors[n.inputs[0]].perm == (0, 2, 3, 1)


def uint8_prelu_model(shape, c):
    """onnxruntime quantize_static's default types: uint8 activations and a uint8 slope."""
    from onnx import TensorProto, helper
    b = QdqBuilder("prelu_u8")
    s_x, z_x = b.qparams(0.03, 131, np.uint8)
    s_a, z_a = b.qparams(0.009, 128, np.uint8)
    s_y, z_y = b.qparams(0.04, 117, np.uint8)
    a = b.const_int(np.random.default_rng(c).integers(0, 256, size=(c, 1, 1)), np.uint8)
    b.nodes += [helper.make_node("DequantizeLinear", ["x", s_x, z_x], ["xf"], name="dq_x"),
                helper.make_node("DequantizeLinear", [a, s_a, z_a], ["af"], name="dq_a"),
                helper.make_node("PRelu", ["xf", "af"], ["yf"], name="prelu"),
                helper.make_node("QuantizeLinear", ["yf", s_y, z_y], ["y"], name="q_y")]
    g = helper.make_graph(b.nodes, "prelu_u8",
                          [helper.make_tensor_value_info("x", TensorProto.UINT8, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, list(shape))],
                          b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_prelu_uint8_model(numerics, tmp_path):
    """uint8 activations and slope become int8 (passes/uint8.py): exact in both numerics
    (tflite: against the numpy TFLM model on the uint8 values, zero points included)."""
    shape, c = (1, 3, 4, 5), 3
    m = uint8_prelu_model(shape, c)
    path = save(m, tmp_path)
    x = (all_int8_inputs(shape, 3).astype(np.int16) + 128).astype(np.uint8)
    c_ = compile_model(path, numerics=numerics)
    outs, info = run_model(path, x, board="host", numerics=numerics, build_dir=tmp_path / "g",
                           compiled=c_)
    assert info["status"] == [0] * len(x) and KERNEL in c_.report["kernels"]
    outs = outs.reshape(x.shape).astype(np.uint8)
    if numerics == "ort":
        np.testing.assert_array_equal(outs, run_ort(path, x).reshape(x.shape))
        return
    from onnx import numpy_helper
    alpha = next(numpy_helper.to_array(i) for i in m.graph.initializer if list(i.dims) == [c, 1, 1])
    a_full = np.broadcast_to(alpha.reshape(1, c, 1, 1), shape).astype(np.int32)
    want = np.stack([tflm_prelu(v.astype(np.int32), a_full, (0.03, 131), (F32(0.009), 128),
                                (0.04, 117), u8=True) for v in x])
    np.testing.assert_array_equal(outs, want)


# ------------------------------------------------------------ ort: the formula itself

def ort_formula(x, alpha, x_q, a_q, y_q, ge=False, f64=False):
    """QuantizeLinear(x_f > 0 ? x_f : x_f * slope_f) on [C, n] x and [C] alpha, written
    from the ONNX spec and onnxruntime's kernels: DequantizeLinear float32(q - zp) * s,
    PRelu in float32 (f64: in float64, for contrast), QuantizeLinear rint(y / s) + zp."""
    t = np.float64 if f64 else F32
    xf = (x.astype(np.int32) - x_q[1]).astype(F32) * F32(x_q[0])
    af = ((alpha.astype(np.int32) - a_q[1]).astype(F32) * F32(a_q[0]))[:, None]
    xf, af = xf.astype(t), af.astype(t)
    y = np.where(xf >= 0 if ge else xf > 0, xf, xf * af)
    v = np.rint(y / t(y_q[0])) + y_q[1]
    return np.clip(v, -128, 127).astype(np.int8)


def test_prelu_ort_formula_is_onnxruntime_float32(tmp_path):
    """Every int8 x against 16 slopes (-128 and 127 among them): onnxruntime equals the
    float32 formula with > and with >= (x = 0 gives 0 either way), and a float64 product
    and quotient would not (these scales were searched for one element that differs:
    x = -75 with slope -128, near a rounding tie)."""
    x_q, a_q, y_q = (F32(0.074019335), -6), (F32(0.0061577256), 0), (F32(0.036430262), 0)
    c = 16
    alpha = np.concatenate([[-128, 127, 0], np.arange(-13, 0)]).astype(np.int8)
    m, _ = prelu_model((1, c, 16, 16), (c, 1, 1), s_scale=a_q[0], s_zp=a_q[1], x_q=x_q, y_q=y_q)
    # the model's slope values are slope_values(); put ours in its initializer
    import onnx
    from onnx import numpy_helper
    init = next(i for i in m.graph.initializer if i.data_type == onnx.TensorProto.INT8
                and list(i.dims) == [c, 1, 1])
    init.CopyFrom(numpy_helper.from_array(alpha.reshape(c, 1, 1), init.name))
    path = save(m, tmp_path)
    x = np.tile(np.arange(-128, 128, dtype=np.int8), c).reshape(1, 1, c, 16, 16)  # one input
    got = run_ort(path, x).reshape(c, 256)
    xs = x.reshape(c, 256)
    np.testing.assert_array_equal(got, ort_formula(xs, alpha, x_q, a_q, y_q))
    np.testing.assert_array_equal(got, ort_formula(xs, alpha, x_q, a_q, y_q, ge=True))
    assert (got != ort_formula(xs, alpha, x_q, a_q, y_q, f64=True)).any()
    outs, _ = host_run_checked(path, x, "ort", tmp_path, KERNEL)
    np.testing.assert_array_equal(outs.reshape(c, 256), got)


# ------------------------------------------------------------ tflite: TFLM's PRELU in numpy

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


def tfl_round(v):
    """TfLiteRound (std::round): half away from zero."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def tfl_quantize_multiplier(d):
    """quantization_util.cc QuantizeMultiplier (TFLITE_SINGLE_ROUNDING unset)."""
    if d == 0.0:
        return 0, 0
    q, shift = math.frexp(d)
    q_fixed = tfl_round(q * 2.0**31)
    if q_fixed == 2**31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def wrap32(v):
    return (v + 2**31) % 2**32 - 2**31


def srdhm(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul."""
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    num = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    q = abs(num) // 2**31
    return q if num >= 0 else -q  # C++ division truncates


def rdbpot(x, e):
    """gemmlowp RoundingDivideByPOT."""
    mask = (1 << e) - 1
    rem, thr = x & mask, (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > thr else 0)


def mbqm(x, m, shift):
    """common.cc MultiplyByQuantizedMultiplier, double rounding."""
    left, right = (shift, 0) if shift > 0 else (0, -shift)
    return rdbpot(srdhm(wrap32(x * (1 << left)), m), right)


def tflm_prelu(x, alpha, x_q, a_q, y_q, act=None, u8=False):
    """TFLite Micro's int8 PRELU (CalculatePreluParams + BroadcastPrelu4DSlow) on x and an
    alpha already broadcast to x's shape, then TFLite's RELU / RELU6-style clamp for a
    fused Relu / Clip (CalculateActivationRangeQuantized: zp + TfLiteRound(f / scale))."""
    d = lambda v: float(F32(v))  # noqa: E731  float32 tensor scales, widened to double
    m1, s1 = tfl_quantize_multiplier(d(x_q[0]) / d(y_q[0]))
    m2, s2 = tfl_quantize_multiplier(d(x_q[0]) * d(a_q[0]) / d(y_q[0]))
    qmin, qmax = (0, 255) if u8 else (-128, 127)
    lo, hi = qmin, qmax
    if act is not None:
        q = lambda f: y_q[1] + tfl_round(float(F32(F32(f) / F32(y_q[0]))))  # noqa: E731
        lo = max(lo, q(act[0]))
        hi = hi if act[1] is None else min(hi, q(act[1]))
    out = np.empty(x.shape, np.uint8 if u8 else np.int8)
    for i, (xv, av) in enumerate(zip(x.reshape(-1).tolist(), alpha.reshape(-1).tolist())):
        v = xv - x_q[1]
        r = mbqm(v, m1, s1) if v >= 0 else mbqm(v * (av - a_q[1]), m2, s2)
        r = min(qmax, max(qmin, r + y_q[1]))
        out.reshape(-1)[i] = min(hi, max(lo, r))
    return out


TFL_CASES = [
    ("channel", (1, 3, 4, 5), (3, 1, 1), {}, None),
    ("channel_c8", (2, 8, 4, 4), (8, 1, 1), {}, None),
    ("scalar", (1, 3, 4, 5), (1,), {}, None),
    ("rows", (4, 16), (16,), {}, None),
    ("relu", (1, 3, 4, 5), (3, 1, 1), {"act": "relu"}, (0.0, None)),
    ("clip", (1, 3, 4, 5), (3, 1, 1), {"act": "clip"}, (-0.3, 1.5)),
    ("ties", (1, 4, 8, 8), (4, 1, 1), {"x_q": (2.0**-5, 0), "s_scale": 2.0**-7, "s_zp": 0,
                                       "y_q": (2.0**-6, 1)}, None),
    ("big_slope", (1, 3, 4, 5), (3, 1, 1), {"s_scale": 0.4, "s_zp": -3}, None),
]


@pytest.mark.parametrize("case,shape,s_shape,kw,act", TFL_CASES, ids=[c[0] for c in TFL_CASES])
def test_prelu_tflite_host_equals_tflm_prelu_in_numpy(case, shape, s_shape, kw, act, tmp_path):
    m, alpha = prelu_model(shape, s_shape, seed=len(case), **kw)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 4, seed=len(case))
    outs, _ = host_run_checked(path, x, "tflite", tmp_path, KERNEL)
    a_full = np.broadcast_to(alpha.reshape((1,) * (len(shape) - alpha.ndim) + alpha.shape), shape)
    a_q = (F32(kw.get("s_scale", 0.011)), kw.get("s_zp", 2))
    want = np.stack([tflm_prelu(v, a_full, kw.get("x_q", X_Q), a_q, kw.get("y_q", Y_Q), act)
                     for v in x])
    np.testing.assert_array_equal(outs, want.reshape(outs.shape))


# ------------------------------------------------------------ tflite: TFLite Micro itself

def prelu_tflite_file(xshape, alpha, x_q, a_q, y_q):
    """A .tflite with one PRELU builtin: int8 x [xshape] (NHWC), alpha a constant, int8 y;
    written with TFLite's own schema classes (shipped by the tflite-micro package)."""
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
    m.buffers = [S.BufferT() for _ in range(4)]  # 0: empty; 1: alpha; 2, 3: x, y
    m.buffers[1].data = list(np.ascontiguousarray(alpha, np.int8).view(np.uint8).reshape(-1))
    code = S.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = S.BuiltinOperator.PRELU
    code.version = 1
    m.operatorCodes = [code]
    g = S.SubGraphT()
    g.tensors = [tensor("x", xshape, x_q, 2), tensor("alpha", alpha.shape, a_q, 1),
                 tensor("y", xshape, y_q, 3)]
    op = S.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, [0, 1], [2]
    g.operators, g.inputs, g.outputs = [op], [0], [2]
    m.subgraphs = [g]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@pytest.mark.parametrize("c,scalar", [(3, False), (8, False), (4, True)])
def test_prelu_tflite_equals_tflite_micro_interpreter(c, scalar, tmp_path):
    """TFLite Micro runs PRELU on NHWC x with alpha [1, 1, C] (or [1]); tinyaot compiles the
    same layer as ONNX (NCHW x, slope [C, 1, 1] or [1]); the numpy model above agrees."""
    rt = pytest.importorskip("tflite_micro", reason="pip install tflite-micro").runtime
    shape = (1, c, 4, 8)
    m, alpha = prelu_model(shape, (1,) if scalar else (c, 1, 1), seed=c)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 4, seed=c)
    a_q = (0.011, 2)
    tfl_alpha = alpha.reshape(1) if scalar else alpha.reshape(1, 1, c)
    data = prelu_tflite_file((1, 4, 8, c), tfl_alpha, X_Q, a_q, Y_Q)
    interp = rt.Interpreter.from_bytes(data)
    want = []
    for v in x:
        interp.reset()
        interp.set_input(np.ascontiguousarray(v.transpose(0, 2, 3, 1)), 0)
        interp.invoke()
        want.append(np.asarray(interp.get_output(0)).transpose(0, 3, 1, 2))
    want = np.stack(want)
    a_full = np.broadcast_to(alpha.reshape((1,) * (4 - alpha.ndim) + alpha.shape), shape)
    model = np.stack([tflm_prelu(v, a_full, X_Q, (F32(a_q[0]), a_q[1]), Y_Q) for v in x])
    np.testing.assert_array_equal(model, want)  # the numpy model is TFLite Micro's
    outs, _ = host_run_checked(path, x, "tflite", tmp_path, KERNEL)
    np.testing.assert_array_equal(outs, want.reshape(outs.shape))


# ------------------------------------------------------------ qemu-m4

@pytest.mark.qemu
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_prelu_on_qemu_m4(numerics, tmp_path):
    """After a Conv (NHWC) with a fused Relu: the firmware equals onnxruntime (ort) and the
    numpy oracle (both numerics)."""
    require_arm_toolchain()
    shape = (1, 5, 4, 6)
    m, _ = prelu_model(shape, (5, 1, 1), after_conv=True, act="relu", seed=5)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3, seed=5)
    c = compile_model(path, numerics=numerics)
    outs, info = run_model(path, x, board="qemu-m4", numerics=numerics,
                           build_dir=tmp_path / "gen", compiled=c)
    assert info["status"] == [0] * len(x)
    assert KERNEL in c.report["kernels"]
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)
    if numerics == "ort":
        np.testing.assert_array_equal(outs.reshape(ref.shape), run_ort(path, x).reshape(ref.shape))


# ------------------------------------------------------------ bad input

def compile_cli(path, numerics, out):
    return subprocess.run([sys.executable, "-m", "codegen.cli", "compile", str(path),
                           "--numerics", numerics, "-o", str(out)],
                          capture_output=True, text=True, cwd=REPO)


def activation_slope_model():
    """PRelu whose slope is the activation itself (not a constant)."""
    b = QdqBuilder("prelu_act_slope")
    x = b.dq("x", *X_Q)
    b.q(b.op("PRelu", [x, b.dq(b.q(b.op("Relu", [x]), 0.02, 0), 0.02, 0)]), *Y_Q, out="y")
    return b.model("x", (1, 3, 4, 5), "y", (1, 3, 4, 5))


@pytest.mark.parametrize("case", ["per_channel_tflite", "two_axes", "activation_slope"])
def test_prelu_refused_in_one_line(case, tmp_path):
    numerics = "ort"
    if case == "per_channel_tflite":  # TFLite's PRELU has one alpha scale
        m, _ = prelu_model((1, 3, 4, 5), (3, 1, 1), s_scale=np.array([0.01, 0.02, 0.03], F32),
                           s_zp=np.zeros(3, np.int8), s_axis=0)
        numerics, needles = "tflite", ["quantized per channel", "--numerics ort"]
    elif case == "two_axes":
        m, _ = prelu_model((1, 3, 4, 5), (3, 1, 5))
        needles = ["varies along more than one axis"]
    else:
        m = activation_slope_model()
        needles = ["must be a DequantizeLinear of an int8 constant"]
    path = save(m, tmp_path)
    node = next(n.name for n in m.graph.node if n.op_type == "PRelu")
    p = compile_cli(path, numerics, tmp_path / "out")
    assert p.returncode == 2, (p.returncode, p.stderr)
    err = p.stderr.strip()
    assert "Traceback" not in p.stderr and len(err.splitlines()) == 1, err
    for s in [str(path), node] + needles:
        assert s in err, (s, err)
    assert not (tmp_path / "out").exists()
