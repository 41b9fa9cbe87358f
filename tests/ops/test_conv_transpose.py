"""ConvTranspose (QDQ DQ(x), DQ(w), DQ(bias) -> ConvTranspose -> [Relu/Clip] -> Q):
generated C on the host, bit-exact with onnxruntime (ort; ORT runs it as a
float ConvTranspose) and with the numpy reference (tflite), which is itself
checked against a brute-force TFLite TransposeConv written here from the
specification. Strides 1-3, kernels 1-5, asymmetric pads, output_padding,
auto_pad, output_shape, groups, dilations, 1-D, odd channel counts,
per-tensor and per-channel weights, a quantize_static model, and the errors."""
import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from codegen.compiler import compile_model
from codegen.errors import TinyAotError
from codegen.reference import run_graph
from codegen.driver.verify import run_model

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, run_ort, save


def ct_model(cin=3, og=2, group=1, hw=(4, 5), k=(3, 3), s=(2, 2), pads=(0, 0, 0, 0), d=(1, 1),
             opad=None, per_channel=True, act=None, bias=True, auto_pad=None, out_shape=None,
             x_q=(0.05, 3), y_q=(0.07, -4), seed=0):
    """A QDQ ConvTranspose model; the output shape is left to ONNX shape inference."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("convtranspose")
    x = b.dq("x", *x_q)
    wf = (rng.normal(size=(cin, og) + tuple(k)) * 0.4).astype(np.float32)
    if per_channel:
        w, ws = b.weight(wf, axis=1)
    else:
        ws = np.float32(np.abs(wf).max() / 127)
        wq = np.clip(np.rint(wf / ws), -127, 127).astype(np.int8)
        w = b.dq(b.const_int(wq, np.int8), ws, 0)
    ins = [x, w]
    if bias:
        bs = (np.float32(x_q[0]) * np.resize(np.asarray(ws, np.float32), og * group)).astype(np.float32)
        ins.append(b.bias(rng.normal(size=og * group) * 0.4, bs))
    a = {"kernel_shape": list(k), "strides": list(s), "group": group}
    if d is not None:
        a["dilations"] = list(d)
    if auto_pad:
        a["auto_pad"] = auto_pad
    elif pads is not None:
        a["pads"] = list(pads)
    if opad:
        a["output_padding"] = list(opad)
    if out_shape:
        a["output_shape"] = list(out_shape)
    y = b.op("ConvTranspose", ins, **a)
    if act == "relu":
        y = b.op("Relu", [y])
    elif act == "clip":
        y = b.op("Clip", [y, b.const_int(np.float32(-0.3), np.float32),
                          b.const_int(np.float32(0.5), np.float32)])
    b.q(y, *y_q, out="y")
    shape = (1, cin) + tuple(hw)
    m = b.model("x", shape, "y", shape)
    m.graph.output[0].type.tensor_type.ClearField("shape")
    return m, shape


def host_run(path, x, numerics, tmp_path):
    """C on the host; also asserts C == the numpy reference of `numerics`."""
    c = compile_model(path, numerics=numerics)
    kernel = "tinyaot_transpose_conv_f32_s8" if numerics == "ort" else "tinyaot_transpose_conv_s8"
    assert kernel in c.report["kernels"]
    outs, info = run_model(path, x, board="host", numerics=numerics,
                           build_dir=tmp_path / f"gen_{numerics}", compiled=c)
    assert info["status"] == [0] * len(x)
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    outs = outs.reshape(ref.shape)
    np.testing.assert_array_equal(outs, ref)
    return outs, c


# cin, og, group, hw, k, s, pads, d, opad, per_channel, act
ORT_CASES = [
    (3, 2, 1, (4, 5), (3, 3), (2, 2), (1, 0, 0, 1), (1, 1), None, True, None),
    (1, 1, 1, (5, 4), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), None, False, None),
    (5, 3, 1, (3, 3), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), (1, 1), True, "relu"),
    (7, 5, 1, (3, 4), (5, 5), (3, 3), (2, 1, 3, 0), (1, 1), (2, 1), True, None),
    (3, 7, 1, (4, 4), (4, 2), (3, 1), (1, 0, 2, 1), (1, 1), (0, 0), False, "clip"),
    (6, 2, 3, (3, 5), (3, 3), (2, 1), (1, 1, 1, 1), (1, 1), None, True, None),  # groups
    (5, 1, 5, (4, 4), (3, 3), (2, 2), (1, 1, 0, 0), (1, 1), (1, 0), True, "relu"),  # depthwise-like
    (4, 3, 2, (3, 3), (3, 2), (1, 2), (0, 1, 2, 0), (2, 3), None, False, None),  # dilations
    (3, 3, 1, (4, 3), (5, 3), (2, 3), (3, 2, 1, 0), (2, 1), (1, 2), True, None),
    (9, 4, 1, (1, 1), (4, 4), (1, 1), (0, 0, 0, 0), (1, 1), None, True, None),  # 1 pixel: MLAS M=1 kernel
    (7, 3, 1, (1, 1), (3, 3), (2, 2), (1, 1, 0, 0), (1, 1), (1, 1), False, None),
    (300, 2, 1, (2, 3), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), None, True, None),  # K > 128: blocks
    (260, 3, 2, (3, 2), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), None, True, None),
]


@pytest.mark.parametrize("cin,og,group,hw,k,s,pads,d,opad,pc,act", ORT_CASES)
def test_conv_transpose_ort_host_bit_exact_with_onnxruntime(cin, og, group, hw, k, s, pads, d, opad,
                                                            pc, act, tmp_path):
    m, shape = ct_model(cin, og, group, hw, k, s, pads, d, opad, pc, act)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 4)
    outs, c = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    assert all(n.attrs.get("ort_float") for n in c.graph.nodes if n.op == "conv_transpose")


@pytest.mark.parametrize("auto_pad,out_shape,opad", [
    ("SAME_UPPER", None, None), ("SAME_LOWER", None, None), ("VALID", None, (1, 1)),
    ("NOTSET", (9, 10), None), ("NOTSET", (8, 9), None), ("SAME_UPPER", (8, 9), None),
    ("SAME_LOWER", (8, 11), None),
    (None, (10, 13), None),  # larger than the natural size: the extra rows are bias only
])
def test_conv_transpose_auto_pad_and_output_shape_ort(auto_pad, out_shape, opad, tmp_path):
    m, shape = ct_model(3, 2, 1, (4, 5), (3, 4), (2, 2), None, (1, 1), opad, True, None,
                        auto_pad=auto_pad, out_shape=out_shape)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, _ = host_run(path, x, "ort", tmp_path)
    ort_out = run_ort(path, x)
    assert ort_out.shape[1:] == outs.shape[1:]
    np.testing.assert_array_equal(outs, ort_out.reshape(outs.shape))


def test_conv_transpose_geometry_matches_onnxruntime():
    """Pads / output size for every auto_pad x output_shape x stride x output_padding
    combination: the integer sums placed with tinyaot's geometry equal onnxruntime's
    float ConvTranspose (small integers: exact in float)."""
    import onnxruntime as ort
    from codegen.ops.conv_transpose import AttrError, conv_transpose_acc, conv_transpose_geometry
    rng = np.random.default_rng(0)
    checked = refused = 0
    for auto in ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", None]:
        for out_shape in [None, (7, 8), (8, 9), (9, 10), (10, 13), (13, 14), (5, 6)]:
            for s in [(1, 1), (2, 2), (3, 2)]:
                for opad in [None, (1, 0)]:
                    k, hw = (3, 4), (4, 5)
                    w = rng.integers(-3, 4, size=(2, 3) + k).astype(np.float32)
                    a = {"kernel_shape": list(k), "strides": list(s)}
                    if auto:
                        a["auto_pad"] = auto
                    if auto in (None, "NOTSET"):
                        a["pads"] = [1, 0, 0, 2]
                    if out_shape:
                        a["output_shape"] = list(out_shape)
                    if opad:
                        a["output_padding"] = list(opad)
                    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], **a)
                    gr = helper.make_graph(
                        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, *hw])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                        [onnx.numpy_helper.from_array(w, "w")])
                    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
                    m.ir_version = 8
                    x = rng.integers(-3, 4, size=(1, 2) + hw).astype(np.float32)
                    so = ort.SessionOptions()
                    so.log_severity_level = 4
                    try:
                        y = ort.InferenceSession(m.SerializeToString(), so,
                                                 providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
                    except Exception:  # onnxruntime refuses it: so must tinyaot
                        with pytest.raises(AttrError):
                            conv_transpose_geometry(a, hw, k)
                        refused += 1
                        continue
                    geo = conv_transpose_geometry(a, hw, k)
                    assert geo["out_hw"] == y.shape[2:], (a, geo)
                    acc = conv_transpose_acc(x.astype(np.int64), w.astype(np.int64), 0,
                                             {"group": 1, "strides": s, "dilations": (1, 1),
                                              "pads": geo["pads"]}, geo["out_hw"])
                    np.testing.assert_array_equal(acc, y, err_msg=str(a))
                    checked += 1
    assert checked > 100 and refused > 10


def test_conv_transpose_1d_ort_and_tflite(tmp_path):
    rng = np.random.default_rng(3)
    b = QdqBuilder("ct1d")
    x = b.dq("x", 0.04, -2)
    w, ws = b.weight((rng.normal(size=(5, 3, 4)) * 0.4).astype(np.float32), axis=1)
    bias = b.bias(rng.normal(size=3) * 0.3, (0.04 * ws).astype(np.float32))
    y = b.op("ConvTranspose", [x, w, bias], kernel_shape=[4], strides=[3], pads=[2, 1],
             output_padding=[1])
    b.q(y, 0.06, 5, out="y")
    m = b.model("x", (1, 5, 7), "y", (1, 3, 20))
    path = save(m, tmp_path)
    x = all_int8_inputs((1, 5, 7), 4)
    outs, _ = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    outs_t, c = host_run(path, x, "tflite", tmp_path)
    np.testing.assert_array_equal(outs_t, brute_tflite(c, x).reshape(outs_t.shape))


def test_conv_transpose_without_bias_ort(tmp_path):
    m, shape = ct_model(3, 4, 1, (3, 3), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), True, None,
                        bias=False)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, _ = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))


# ---- tflite: the numpy reference vs a brute-force TransposeConv ----------------------

def quantize_multiplier(m):
    """TFLite QuantizeMultiplier from the definition: m = q * 2^shift, q in [0.5, 1) as Q31."""
    if m == 0:
        return 0, 0
    q, shift = math.frexp(m)
    qf = int(math.floor(abs(q) * (1 << 31) + 0.5)) * (1 if q > 0 else -1)  # TfLiteRound
    if qf == 1 << 31:
        qf //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return qf, shift


def mbqm(x, mult, shift):
    """MultiplyByQuantizedMultiplier on Python ints: SaturatingRoundingDoublingHighMul,
    then RoundingDivideByPOT (round half away from zero)."""
    left, right = max(shift, 0), max(-shift, 0)
    a = x * (1 << left)
    if a == mult == -(1 << 31):
        hi = (1 << 31) - 1
    else:
        ab = a * mult
        nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
        hi = (ab + nudge)
        hi = -((-hi) >> 31) if hi < 0 else hi >> 31  # C division truncates toward zero
    if right == 0:
        return hi
    mask = (1 << right) - 1
    rem = hi & mask
    thr = (mask >> 1) + (1 if hi < 0 else 0)
    return (hi >> right) + (1 if rem > thr else 0)


def brute_tflite(c, xs):
    """reference_integer_ops::TransposeConv, loops as in the specification: scatter
    (x + input_offset) * w into an int32 buffer, + bias, requantize per channel, clamp.
    Everything recomputed from the IR tensors, not from the prepared parameters."""
    g = c.graph
    n = next(n for n in g.nodes if n.op == "conv_transpose")
    xt, wt, yt = (g.tensors[i] for i in (n.inputs[0], n.inputs[1], n.outputs[0]))
    bt = g.tensors[n.inputs[2]] if len(n.inputs) > 2 and n.inputs[2] else None
    sx, zx = float(xt.q.scale[0]), int(xt.q.zero_point[0])
    sy, zy = float(yt.q.scale[0]), int(yt.q.zero_point[0])
    w = wt.data.astype(np.int64)  # [cin, cout, kh, kw]
    cin, cout, kh, kw = w.shape
    sw = np.broadcast_to(wt.q.scale, (cout,))
    mults = [quantize_multiplier(sx * float(sw[o]) / sy) for o in range(cout)]
    lo, hi = c.params[n.name].act_min, c.params[n.name].act_max
    (sh, swd), (t, l) = n.attrs["strides"], n.attrs["pads"][:2]
    _, _, oh, ow = yt.shape
    outs = []
    for xv in xs:
        xv = np.asarray(xv).reshape(xt.shape)[0].astype(np.int64)
        acc = np.zeros((cout, oh, ow), dtype=np.int64)
        for iy in range(xt.shape[2]):
            for ix in range(xt.shape[3]):
                for fy in range(kh):
                    for fx in range(kw):
                        oy, ox = iy * sh - t + fy, ix * swd - l + fx
                        if 0 <= oy < oh and 0 <= ox < ow:
                            acc[:, oy, ox] += (xv[:, iy, ix] - zx) @ w[:, :, fy, fx]
        y = np.zeros((cout, oh, ow), dtype=np.int64)
        for o in range(cout):
            b = int(bt.data[o]) if bt is not None else 0
            for i in range(oh):
                for j in range(ow):
                    v = mbqm(int(acc[o, i, j]) + b, *mults[o]) + zy
                    y[o, i, j] = min(max(v, lo), hi)
        outs.append(y)
    return np.stack(outs)


# cin, og, hw, k, s, pads, opad, per_channel, act
TFLITE_CASES = [
    (3, 2, (4, 5), (3, 3), (2, 2), (1, 0, 0, 1), None, True, None),
    (1, 3, (5, 3), (1, 1), (1, 1), (0, 0, 0, 0), None, False, None),
    (5, 5, (3, 3), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), True, "relu"),
    (7, 1, (3, 4), (5, 5), (3, 3), (2, 1, 3, 0), (2, 1), True, None),
    (3, 7, (4, 4), (4, 2), (3, 1), (1, 0, 2, 1), None, False, "clip"),
    (9, 4, (1, 1), (4, 4), (1, 1), (0, 0, 0, 0), None, True, None),
    (6, 3, (3, 2), (3, 5), (2, 3), (3, 2, 1, 0), (1, 2), True, None),
]


@pytest.mark.parametrize("cin,og,hw,k,s,pads,opad,pc,act", TFLITE_CASES)
def test_conv_transpose_tflite_host_equals_reference_and_spec(cin, og, hw, k, s, pads, opad, pc,
                                                              act, tmp_path):
    m, shape = ct_model(cin, og, 1, hw, k, s, pads, (1, 1), opad, pc, act, y_q=(0.03, -1))
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 4)
    outs, c = host_run(path, x, "tflite", tmp_path)
    np.testing.assert_array_equal(outs, brute_tflite(c, x).reshape(outs.shape))


def test_mbqm_helper_matches_known_values():
    # hand-computed from the definitions: 100 * 0.75 = 75 exactly; 0.25 is 2^30 with
    # shift -1, so +-10 * 0.25 = +-2.5 goes through RoundingDivideByPOT: away from zero
    assert quantize_multiplier(0.75) == (3 << 29, 0)
    assert mbqm(100, *quantize_multiplier(0.75)) == 75
    assert quantize_multiplier(0.25) == (1 << 30, -1)
    assert mbqm(10, 1 << 30, -1) == 3 and mbqm(-10, 1 << 30, -1) == -3


# ---- a float model quantized by onnxruntime ------------------------------------------

@pytest.mark.parametrize("act", ["QInt8", "QUInt8"])
def test_quantize_static_decoder_ort_and_tflite(act, tmp_path):
    """onnxruntime's quantize_static (QDQ, per-channel weights, int8 or uint8
    activations) on a float decoder; its QOperator form leaves ConvTranspose in
    float, which is a float model, not this test."""
    import onnxruntime as ort
    from tests.helpers import quantize_static_models as qmodels
    rng = np.random.default_rng(7)
    inits = [onnx.numpy_helper.from_array((rng.normal(size=s) * 0.3).astype(np.float32), n)
             for n, s in {"w1": (3, 4, 3, 3), "b1": (4,), "w2": (4, 2, 4, 4), "b2": (2,)}.items()]
    h = helper.make_node
    nodes = [h("ConvTranspose", ["x", "w1", "b1"], ["u1"], strides=[2, 2], pads=[1, 1, 1, 1],
               output_padding=[1, 1], name="up1"),
             h("Relu", ["u1"], ["r1"], name="relu1"),
             h("ConvTranspose", ["r1", "w2", "b2"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
               name="up2")]
    m = qmodels._model(nodes, inits, (1, 2, 32, 32), "decoder")
    path = qmodels.quantize(m, tmp_path / "dec.onnx", "QDQ", act)
    c = compile_model(path, numerics="ort")
    xin = c.graph.tensors[c.graph.inputs[0]]
    yt = c.graph.tensors[c.graph.outputs[0]]
    lo, hi = (0, 255) if xin.dtype == "uint8" else (-128, 127)
    x = np.random.default_rng(1).integers(lo, hi + 1, size=(4,) + xin.shape).astype(xin.dtype)
    outs, _ = run_model(path, x, board="host", numerics="ort", build_dir=tmp_path / "g", compiled=c)
    # the model has float I/O: feed ORT the dequantized integers, quantize its output
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    s_in, z_in = xin.q.scalar()
    s_out, z_out = yt.q.scalar()
    for i, v in enumerate(x):
        yf = sess.run(None, {"x": (v.astype(np.float32) - z_in) * s_in})[0]
        yq = np.clip(np.rint(yf / s_out) + z_out, lo, hi)
        np.testing.assert_array_equal(outs[i].reshape(-1).astype(np.int64), yq.reshape(-1))
    if act == "QInt8":
        outs_t, ct = host_run(path, x, "tflite", tmp_path)
        assert [n.op for n in ct.graph.nodes].count("conv_transpose") == 2


# ---- errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("kw,needle", [({"group": 3, "cin": 6}, "group=3"),
                                       ({"d": (2, 1)}, "dilations=[2, 1]")])
def test_conv_transpose_tflite_rejects_groups_and_dilation(kw, needle, tmp_path):
    m, _ = ct_model(**kw)
    path = save(m, tmp_path)
    with pytest.raises(TinyAotError) as e:
        compile_model(path, numerics="tflite")
    msg = str(e.value)
    assert "convtranspose_" in msg and "TRANSPOSE_CONV" in msg and needle in msg


def test_conv_transpose_weights_quantized_on_axis0_named(tmp_path):
    rng = np.random.default_rng(0)
    b = QdqBuilder("ct")
    x = b.dq("x", 0.05, 0)
    w, _ = b.weight((rng.normal(size=(3, 2, 3, 3))).astype(np.float32), axis=0)
    y = b.op("ConvTranspose", [x, w], kernel_shape=[3, 3])
    b.q(y, 0.1, 0, out="y")
    m = b.model("x", (1, 3, 4, 4), "y", (1, 2, 6, 6))
    with pytest.raises(TinyAotError) as e:
        compile_model(save(m, tmp_path))
    assert "ConvTranspose 'convtranspose_" in str(e.value) and "axis 0, expected 1" in str(e.value)


def test_conv_transpose_3d_is_unsupported_cli(tmp_path):
    from tests.helpers.cli import assert_clean_error, run_cli
    b = QdqBuilder("ct3d")
    x = b.dq("x", 0.05, 0)
    wq = np.ones((2, 2, 2, 2, 2), np.int8)
    w = b.dq(b.const_int(wq, np.int8), np.float32(0.01), 0)
    y = b.op("ConvTranspose", [x, w], kernel_shape=[2, 2, 2])
    b.q(y, 0.1, 0, out="y")
    m = b.model("x", (1, 2, 3, 3, 3), "y", (1, 2, 4, 4, 4))
    path = save(m, tmp_path)
    out = tmp_path / "out"
    assert_clean_error(run_cli("compile", path, "-o", out), "convtranspose_", "1-D and 2-D")
    assert not out.exists()


# ---- the integer kernel alone (kernels_cffi: UBSan build, canaries around the output) --

def test_transpose_conv_s8_kernel_random_shapes():
    """tinyaot_transpose_conv_s8 on random shapes (groups and dilations too, which the
    kernel handles although tflite numerics never asks for them) and output sizes
    (output_padding / output_shape), against the numpy reference; the scratch is
    sized by its _get_buffer_size and filled with garbage first."""
    from tests.helpers import kernels_cffi as kf
    from codegen.ops.conv_params import TFLITE, ConvParams
    from codegen.ops.conv_transpose import (conv_transpose_filter, conv_transpose_int,
                                            transpose_conv_scratch_bytes)
    rng = np.random.default_rng(42)
    for case in range(60):
        group = int(rng.choice([1, 1, 2, 3]))
        cg, og = int(rng.integers(1, 8)), int(rng.integers(1, 6))
        k = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
        s = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        d = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        hw = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
        pads = (int(rng.integers(0, k[0] * d[0])), int(rng.integers(0, k[1] * d[1])))
        out_hw = tuple((hw[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - pads[i]
                       + int(rng.integers(-pads[i], s[i])) for i in range(2))
        if min(out_hw) < 1:
            continue
        cin, cout = cg * group, og * group
        x = rng.integers(-128, 128, size=(1, cin) + hw).astype(np.int8)
        w = rng.integers(-127, 128, size=(cin, og) + k).astype(np.int8)
        from codegen.numerics import tflite_fixedpoint as tfp
        mult, shift = tfp.conv_output_multipliers(0.05, rng.uniform(0.001, 0.01, cout), 0.1)
        p = ConvParams(TFLITE, int(rng.integers(-128, 128)), int(rng.integers(-20, 20)), -120, 110,
                       bias=rng.integers(-5000, 5000, cout).astype(np.int32),
                       mult=np.asarray(mult, np.int32), shift=np.asarray(shift, np.int32))
        attrs = {"group": group, "strides": s, "dilations": d, "pads": pads + (0, 0)}
        ref = conv_transpose_int(x, w, attrs, p, out_hw)[0].transpose(1, 2, 0)
        keep = []
        dims = kf.new_struct("tinyaot_conv_dims_t", dict(
            in_h=hw[0], in_w=hw[1], in_c=cin, out_h=out_hw[0], out_w=out_hw[1], out_c=cout,
            k_h=k[0], k_w=k[1], stride_h=s[0], stride_w=s[1], dil_h=d[0], dil_w=d[1],
            pad_top=pads[0], pad_left=pads[1], groups=group), keep)
        q = kf.new_struct("tinyaot_requant_t", dict(
            in_zp=p.in_zp, out_zp=p.out_zp, act_min=-120, act_max=110, bias=p.bias,
            scale=None, mult=np.asarray(mult, np.int32), shift=np.asarray(shift, np.int32),
            post_bias=None, out_scale=0.0, rq=None), keep)
        nbytes = kf.kernels().call("tinyaot_transpose_conv_s8_get_buffer_size", dims)
        assert nbytes == transpose_conv_scratch_bytes(cout)
        scratch = rng.integers(-2**31, 2**31 - 1, nbytes // 4).astype(np.int32)
        out = kf.OutBuf(ref.size, rng)
        assert kf.kernels().call(
            "tinyaot_transpose_conv_s8", dims, q, kf.cbuf(x[0].transpose(1, 2, 0), np.int8, keep),
            kf.cbuf(conv_transpose_filter(w, group), np.int8, keep),
            kf.ffi.from_buffer("int32_t[]", scratch, require_writable=True), out.ptr) == 0
        np.testing.assert_array_equal(out.result("tinyaot_transpose_conv_s8").reshape(ref.shape),
                                      ref, err_msg=str((case, cg, og, group, k, s, d, hw, pads)))


@pytest.mark.parametrize("bad", [
    {"strides": [0, 1]}, {"dilations": [1]}, {"pads": [-1, 0, 0, 0]},
    {"output_padding": [2, 0]}, {"kernel_shape": [2, 2]}, {"output_shape": [40, 40]},
    {"auto_pad": "SAME_MIDDLE"}, {"group": 2}, {"pads": [5, 5, 5, 5]},
])
def test_conv_transpose_bad_attributes_are_clean_errors(bad, tmp_path):
    """Invalid attributes: a TinyAotError naming the model (and the node when it gets
    that far), whichever of ONNX shape inference or tinyaot sees it first."""
    rng = np.random.default_rng(0)
    b = QdqBuilder("ct_bad")
    x = b.dq("x", 0.05, 0)
    w, _ = b.weight((rng.normal(size=(3, 2, 3, 3))).astype(np.float32), axis=1)
    a = {"kernel_shape": [3, 3], "strides": [2, 2]}
    a.update(bad)
    b.nodes.append(helper.make_node("ConvTranspose", [x, w], ["ct"], name="ct_node", **a))
    b.q("ct", 0.1, 0, out="y")
    m = b.model("x", (1, 3, 4, 4), "y", (1, 3, 4, 4))
    m.graph.output[0].type.tensor_type.ClearField("shape")
    path = save(m, tmp_path)
    for numerics in ("ort", "tflite"):
        with pytest.raises(TinyAotError) as e:
            compile_model(path, numerics=numerics)
        assert str(path) in str(e.value)
