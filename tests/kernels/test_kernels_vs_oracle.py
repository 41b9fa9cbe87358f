"""Every runtime_c kernel against the numpy oracle, bit-exact, in both numerics.

For each kernel, hypothesis draws shapes (H, W 1..12, channels 1, 2, 3, 4,
5, 7, 8, 16), kernel sizes 1..5, strides 1..3, dilations 1..2, asymmetric
pads, groups / depthwise multipliers, int8 inputs and weights, scales
(log-uniform 1e-4..1, or exact powers of two, which make rounding ties
happen) and zero points, fused clamps (Relu, Relu6, Clip), per-channel and
per-tensor weights. Each case is a one-node IR graph; its parameters come
from codegen.ops.prepare (each operator's Op.prepare), the expected output from the operator's
numpy oracle (codegen/ops/; logical NCHW), and the C kernel gets the same
parameters through cffi (tests/helpers/kernels_cffi.py), mapped onto the structs and
weight layouts exactly as each operator's emit (codegen/ops/) does. Outputs must
be equal as integers.

Budget: TINYAOT_HYPOTHESIS_EXAMPLES examples per test (default 100);
TINYAOT_HYPOTHESIS_RANDOM=1 explores new examples instead of the fixed,
derandomized ones.
"""
from __future__ import annotations

import os

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tests.helpers import kernels_cffi as K
from codegen.kernels import fast_pack
from codegen.kernels.fc_float_pack import input_table, pack_fc_float
from codegen.kernels.ort_requant_fixed import fc_fixed_requant
from codegen.ir import Graph, Node, QParams, Tensor
from codegen.ops.binary_f32 import broadcast_dims
from codegen.ops.conv2d import conv2d_acc, conv2d_float, conv2d_int
from codegen.ops.conv_params import EPILOGUE, ORT, TFLITE
from codegen.ops.fully_connected import fully_connected_float, fully_connected_int
from codegen import ops as codegen_ops
from codegen.numerics import ort_float
from codegen.numerics.mlas_fc_order import ORDER_CODE

F32 = np.float32
EXAMPLES = int(os.environ.get("TINYAOT_HYPOTHESIS_EXAMPLES", "100"))
CHANNELS = [1, 2, 3, 4, 5, 7, 8, 16]
NUMERICS = ["ort", "tflite"]
ACTS = [(None, None), (0.0, None), (0.0, 6.0), (None, 6.0), (-1.0, 1.0)]

SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    derandomize=not os.environ.get("TINYAOT_HYPOTHESIS_RANDOM"),
                    suppress_health_check=list(HealthCheck), print_blob=True)


# ------------------------------------------------------------- strategies

def log_scale():
    return st.floats(-4.0, 0.0).map(lambda e: F32(10.0 ** e))


def p2_scale():
    return st.integers(0, 13).map(lambda k: F32(2.0 ** -k))


def scale(tie=False):
    """log-uniform in [1e-4, 1], or an exact power of two. tie=True: powers of
    two only (exact float products, so rounding ties happen)."""
    return p2_scale() if tie else st.one_of(log_scale(), p2_scale())


zp = st.integers(-128, 127)


@st.composite
def int8_array(draw, shape, zero=0, tie=False):
    """int8 values: uniform, extremes (saturation), or within 3 of `zero`
    (small accumulators; tie=True always does this)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = "small" if tie else draw(st.sampled_from(["uniform", "uniform", "extremes", "small"]))
    if kind == "uniform":
        a = rng.integers(-128, 128, size=shape)
    elif kind == "extremes":
        a = rng.choice(np.array([-128, -127, 127, 0, -1, 1]), size=shape)
    else:
        a = np.clip(rng.integers(-3, 4, size=shape) + zero, -128, 127)
    return a.astype(np.int8)


def out_scale_for(draw, sx, wq, k, tie):
    """Output scale of a conv / FC. tie: sx * w_scale[0] / sy is exactly 2^-j,
    j small, so with small accumulators many outputs are exact .5 ties (round
    half even vs away is tested). Otherwise independent (mostly saturated or
    zero outputs) or one that puts a typical accumulator of k terms in range."""
    if tie:
        prod = F32(sx * wq.scale[0])
        return F32(prod * F32(2.0 ** draw(st.integers(1, 5))))
    if draw(st.booleans()):
        return draw(scale())
    typical = 128.0 * 64.0 * max(1.0, np.sqrt(k)) / 100.0
    ref = float(np.exp(np.mean(np.log(wq.scale.astype(np.float64)))))
    return F32(max(float(sx) * ref * typical * 2.0 ** draw(st.floats(-3.0, 3.0)), 1e-30))


def weight_q(draw, cout, axis, tie=False):
    """Per-tensor or per-channel (independent scales, or a base scale times
    powers of two, which keeps every channel's multiplier a power of two)."""
    per_channel = cout > 1 and draw(st.booleans())
    if per_channel:
        if not tie and draw(st.booleans()):
            s = np.array([draw(scale()) for _ in range(cout)], dtype=F32)
        else:
            base = draw(scale(tie))
            s = np.array([base * F32(2.0 ** -draw(st.integers(0, 3))) for _ in range(cout)],
                         dtype=F32)
            s[0] = base
        return QParams(s, np.zeros(cout, np.int32), axis)
    return QParams(np.array([draw(scale(tie))], F32), np.zeros(1, np.int32), None)


def bias_tensor(draw, name, cout, sx, wq, tie=False):
    bits = draw(st.sampled_from([0, 3] if tie else [0, 8, 16, 24]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    data = rng.integers(-(1 << bits), (1 << bits) + 1, size=cout).astype(np.int32)
    bs = (sx * wq.scale).astype(F32)
    q = QParams(bs, np.zeros(bs.size, np.int32), 0 if wq.per_channel else None)
    return Tensor(name, (cout,), "int32", q, data)


def qt(name, shape, s, z):
    return Tensor(name, tuple(shape), "int8", QParams(np.array([s], F32), np.array([z], np.int32)))


def one_node(op, ins, outs, attrs):
    g = Graph(name=f"one_{op}", source="<hypothesis>")
    for t in ins + outs:
        if t is not None:
            g.add_tensor(t)
    n = Node(op, f"{op}0", [t.name if t is not None else "" for t in ins],
             [t.name for t in outs], dict(attrs))
    g.nodes.append(n)
    g.inputs = [ins[0].name]
    g.outputs = [outs[0].name]
    return g, n


@st.composite
def conv_case(draw, kind):
    """kind: 'conv' (grouped too), 'depthwise' or 'float' (ort float Conv)."""
    cin = draw(st.sampled_from(CHANNELS))
    if kind == "depthwise":
        groups = cin
        cout = cin * draw(st.integers(1, 3))
    else:
        groups = draw(st.sampled_from([g for g in range(1, cin + 1) if cin % g == 0]))
        cout = draw(st.sampled_from([c for c in CHANNELS if c % groups == 0]))
    kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    t, l, b, r = (draw(st.integers(0, 3)) for _ in range(4))
    eh, ew = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    h = draw(st.integers(max(1, eh - t - b), 12))
    w = draw(st.integers(max(1, ew - l - r), 12))
    oh = (h + t + b - eh) // sh + 1
    ow = (w + l + r - ew) // sw + 1
    cg = cin // groups
    tie = draw(st.integers(0, 2)) == 0  # the rounding-tie regime
    sx, zx = draw(scale(tie)), draw(zp)
    wq = weight_q(draw, cout, 0, tie)
    sy = out_scale_for(draw, sx, wq, cg * kh * kw, tie)
    zy = draw(zp)
    lo, hi = draw(st.sampled_from(ACTS))
    x = qt("x", (1, cin, h, w), sx, zx)
    wt = Tensor("w", (cout, cg, kh, kw), "int8", wq, draw(int8_array((cout, cg, kh, kw), 0, tie)))
    bt = bias_tensor(draw, "b", cout, sx, wq, tie) if draw(st.integers(0, 4)) else None
    y = qt("y", (1, cout, oh, ow), sy, zy)
    attrs = {"kernel": (kh, kw), "strides": (sh, sw), "dilations": (dh, dw),
             "pads": (t, l, b, r), "group": groups, "act_lo": lo, "act_hi": hi}
    if kind == "float":
        attrs["ort_float"] = True
    xv = draw(int8_array((1, cin, h, w), zx, tie))
    g, n = one_node("conv2d", [x, wt, bt], [y], attrs)
    if kind == "float" and not tie and draw(st.booleans()):
        acc = conv2d_acc(xv, wt.data, zx, (sh, sw), (t, l, b, r), (dh, dw), groups)
        cancel_outputs(draw, g, n, xv, acc[0, :, 0, 0])
    return (g, n), xv


def cancel_outputs(draw, g, n, xv, acc0):
    """The float layers' cancellation regime: log-uniform scales, the bias
    cancels the exact integer accumulator of the first output position of each
    channel (acc0) and the output scale is ~2^-8..2^-20 of sx * w_scale, so
    those outputs are the float32 rounding residue of the fma chain, which
    any change of operation order, of fma vs multiply-add, or of dequantization
    changes completely (random data resolves only 8 of the 24 bits)."""
    x, wt, y = g.tensors[n.inputs[0]], g.tensors[n.inputs[1]], g.tensors[n.outputs[0]]
    sx = x.q.scale[0]
    cout = wt.shape[0]
    bias = np.clip(-np.asarray(acc0, np.int64), -2**31, 2**31 - 1).astype(np.int32)
    bs = (sx * wt.q.scale).astype(F32)
    bt = Tensor("b", (cout,), "int32",
                QParams(bs, np.zeros(bs.size, np.int32), 0 if wt.q.per_channel else None), bias)
    g.add_tensor(bt)
    if len(n.inputs) < 3:
        n.inputs.append("")
    n.inputs[2] = "b"
    ref = float(np.exp(np.mean(np.log(wt.q.scale.astype(np.float64)))))
    sy = F32(float(sx) * ref * 2.0 ** -draw(st.integers(8, 20)))
    y.q = QParams(np.array([sy], F32), y.q.zero_point.copy())
    n.attrs["act_lo"] = n.attrs["act_hi"] = None


def seek_boundary(draw, g, n, oracle):
    """The boundary regime of the float-quantizing ort kernels: set the output
    scale of g's node to one of the two adjacent float32 values between which
    the oracle's output at a drawn element changes (found by bisection on the
    float32 bit pattern). There, the element depends on the last bit of the
    float result, so any difference in the float computation (operation order,
    exp polynomial, division vs reciprocal) shows in the int8 output, which
    random scales resolve only to 8 bits. oracle(p) -> output array."""
    y = g.tensors[n.outputs[0]]

    def run(bits):
        y.q = QParams(np.array([bits], np.uint32).view(F32), y.q.zero_point.copy())
        return np.asarray(oracle(codegen_ops.prepare(g, n, "ort"))).reshape(-1)

    lo, hi = int(F32(1e-7).view(np.uint32)), int(F32(1e3).view(np.uint32))
    out_lo, out_hi = run(lo), run(hi)
    cand = np.flatnonzero(out_lo != out_hi)
    if cand.size == 0:
        return
    i = int(cand[draw(st.integers(0, cand.size - 1))])
    v_lo = out_lo[i]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if run(mid)[i] == v_lo:
            lo = mid
        else:
            hi = mid
    run(draw(st.sampled_from([lo, hi])))


def describe(g, n, extra=""):
    return g.dump() + (("\n  " + extra) if extra else "")


def assert_bit_exact(expected, got, what, g, n, p):
    expected = np.asarray(expected).astype(np.int64)
    got = np.asarray(got).astype(np.int64).reshape(expected.shape)
    if np.array_equal(expected, got):
        return
    bad = np.argwhere(expected != got)
    lines = [f"{what}: {len(bad)} of {expected.size} output integers differ from the oracle",
             describe(g, n),
             "  prepared: " + ", ".join(f"{k}={_short(v)}" for k, v in sorted(
                 (p if isinstance(p, dict) else vars(p)).items())),
             "  first mismatches (logical index: oracle vs C):"]
    for idx in bad[:8]:
        i = tuple(int(v) for v in idx)
        lines.append(f"    {i}: {expected[i]} vs {got[i]}")
    raise AssertionError("\n".join(lines))


def _short(v):
    a = np.asarray(v)
    if a.ndim == 0:
        if a.dtype.kind == "f":  # exact bits too: boundary cases depend on the last one
            return f"{float(a):.9g} ({float(np.float32(a)).hex()})"
        return repr(a.item())
    s = np.array2string(a.reshape(-1)[:8], separator=",")
    return s if a.size <= 8 else s[:-1] + f",... ({a.size})]"


# ---------------------------------------------------------- param mapping
# As the emitters: conv_dims, requant, float layer (ops/conv_records.py), emit_add, ...

def conv_dims(g, n):
    x, y = g.tensors[n.inputs[0]], g.tensors[n.outputs[0]]
    a = n.attrs
    _, c, h, w = x.shape
    _, oc, oh, ow = y.shape
    return {"in_h": h, "in_w": w, "in_c": c, "out_h": oh, "out_w": ow, "out_c": oc,
            "k_h": a["kernel"][0], "k_w": a["kernel"][1],
            "stride_h": a["strides"][0], "stride_w": a["strides"][1],
            "dil_h": a["dilations"][0], "dil_w": a["dilations"][1],
            "pad_top": a["pads"][0], "pad_left": a["pads"][1], "groups": a["group"]}


def requant_fields(p):
    """tinyaot_requant_t of a prepared ConvParams (ops/conv_records.py:emit_requant)."""
    f = {"in_zp": p.in_zp, "out_zp": p.out_zp, "act_min": p.act_min,
         "act_max": p.act_max, "bias": np.asarray(p.bias, np.int32)}
    if p.mode in (ORT, EPILOGUE):
        f.update(scale=np.asarray(p.scale, F32), mult=None, shift=None)
    else:
        f.update(scale=None, mult=np.asarray(p.mult, np.int32),
                 shift=np.asarray(p.shift, np.int32))
    if p.mode == EPILOGUE:  # ConvInteger / MatMulInteger epilogue
        f.update(post_bias=np.asarray(p.post_bias, F32), out_scale=F32(p.out_scale))
    else:
        f.update(post_bias=None, out_scale=0.0)
    f["rq"] = None  # the fast kernels' one-SMLAL records (fast_requant_fields)
    return f


def fast_requant_fields(p):
    """requant_fields plus the one-SMLAL records, as the code generator emits
    them for a fast kernel (conv_records.emit_requant)."""
    f = requant_fields(p)
    if p.mode == TFLITE:
        rq = fast_pack.smlal_requant(p.mult, p.shift, p.bias, p.out_zp)
        if rq is not None:
            f.update(rq=rq, mult=None, shift=None)
    return f


def float_fields(p, filt):
    """tinyaot_float_conv_t of a prepared FLOAT layer (conv_records.emit_float_layer)."""
    return {"in_scale": p.in_scale, "in_zp": p.in_zp, "out_scale": p.out_scale,
            "out_zp": p.out_zp, "act_min": p.act_min, "act_max": p.act_max,
            "filter": np.ascontiguousarray(filt, np.int8),
            "filter_scale": np.ascontiguousarray(p.filter_scale, F32),
            "bias_f": np.asarray(p.bias_f, F32)}


def nhwc(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def from_nhwc(flat, shape_nchw):
    n, c, h, w = shape_nchw
    return flat.reshape(n, h, w, c).transpose(0, 3, 1, 2)


# ------------------------------------------------------------------ tests

def test_header_matches_the_wrappers():
    """The prototypes the tests call are the header's (a drift is one clear failure)."""
    for name, sig in K.EXPECTED_FUNCTIONS.items():
        got = K.function_signature(name)
        assert got is not None, f"{name} is no longer declared in {K.HEADER}"
        assert got == sig, f"{name} changed in {K.HEADER}: {got}, the tests call {sig}"


@pytest.mark.parametrize("numerics", NUMERICS)
@pytest.mark.parametrize("kind", ["conv", "depthwise"])
@SETTINGS
@given(case=st.data())
def test_conv_s8(numerics, kind, case):
    (g, n), xv = case.draw(conv_case(kind))
    x, wt = g.tensors[n.inputs[0]], g.tensors[n.inputs[1]]
    y = g.tensors[n.outputs[0]]
    p = codegen_ops.prepare(g, n, numerics)
    note(describe(g, n))
    expected = conv2d_int(xv, wt.data, n.attrs, p)
    dims = conv_dims(g, n)
    if kind == "depthwise":
        got = K.depthwise_conv_s8(dims, requant_fields(p), nhwc(xv),
                                  wt.data[:, 0].transpose(1, 2, 0))
    else:
        got = K.convolve_s8(dims, requant_fields(p), nhwc(xv), wt.data.transpose(0, 2, 3, 1))
    assert_bit_exact(expected, from_nhwc(got, y.shape), f"tinyaot_{kind}_s8 [{numerics}]",
                     g, n, p)
    # the fast kernel on the layers kernel_select gives it, with what the emitter passes
    q = fast_requant_fields(p)
    cin = x.shape[1]
    if kind == "depthwise" and cin % 4 == 0 and wt.shape[1] == 1 and y.shape[1] == cin:
        wtc = wt.data[:, 0].transpose(1, 2, 0)
        got = K.depthwise_conv_fast_s8(dims, q, nhwc(xv),
                                       fast_pack.pack_depthwise(wtc.reshape(-1, cin)))
    elif kind == "conv" and n.attrs["group"] == 1:
        kh, kw = n.attrs["kernel"]
        got = K.convolve_fast_s8(dims, q, nhwc(xv),
                                 fast_pack.pack_conv_gemm(fast_pack.conv_gemm_weights(wt.data)),
                                 fast_pack.conv_scratch_bytes(kh, kw, cin))
    else:
        return
    assert_bit_exact(expected, from_nhwc(got, y.shape),
                     f"tinyaot_{kind}_fast_s8 [{numerics}, rq {'set' if q['rq'] is not None else 'NULL'}]",
                     g, n, p)


@SETTINGS
@given(case=st.data())
def test_convolve_f32_s8_ort(case):
    (g, n), xv = case.draw(conv_case("float"))
    wt = g.tensors[n.inputs[1]]
    y = g.tensors[n.outputs[0]]
    p = codegen_ops.prepare(g, n, "ort")
    note(describe(g, n))
    expected = conv2d_float(xv, wt, n.attrs, p)
    from codegen.kernels import conv_f32_pack as cp  # what the emitter passes
    plan = cp.plan_fields(g.tensors[n.inputs[0]].shape, y.shape, wt, n.attrs, p.in_scale, p.in_zp)
    fp = float_fields(p, wt.data.transpose(0, 2, 3, 1))
    fp.update(filter=None, filter_scale=None)  # not read by this kernel
    got = K.convolve_f32_s8(conv_dims(g, n), fp, plan, nhwc(xv))
    assert_bit_exact(expected, from_nhwc(got, y.shape), "tinyaot_convolve_f32_s8 [ort]", g, n, p)


@st.composite
def fc_case(draw, ort_float=False):
    rows = draw(st.integers(1, 4))
    k = draw(st.one_of(st.sampled_from(CHANNELS), st.integers(1, 64)))
    nout = draw(st.sampled_from(CHANNELS + [10]))
    tie = draw(st.integers(0, 2)) == 0
    sx, zx = draw(scale(tie)), draw(zp)
    wq = weight_q(draw, nout, 0, tie)
    sy = out_scale_for(draw, sx, wq, k, tie)
    zy = draw(zp)
    lo, hi = draw(st.sampled_from(ACTS))
    x = qt("x", (rows, k), sx, zx)
    wt = Tensor("w", (nout, k), "int8", wq, draw(int8_array((nout, k), 0, tie)))
    bt = bias_tensor(draw, "b", nout, sx, wq, tie) if draw(st.integers(0, 4)) else None
    y = qt("y", (rows, nout), sy, zy)
    attrs = {"act_lo": lo, "act_hi": hi}
    if ort_float:
        attrs["ort_float"] = True
    xv = draw(int8_array((rows, k), zx, tie))
    g, n = one_node("fully_connected", [x, wt, bt], [y], attrs)
    if ort_float and not tie and draw(st.booleans()):
        cancel_outputs(draw, g, n, xv, (xv[0].astype(np.int64) - zx) @ wt.data.astype(np.int64).T)
    return (g, n), xv


@pytest.mark.parametrize("numerics", NUMERICS)
@SETTINGS
@given(case=st.data())
def test_fully_connected_s8(numerics, case):
    (g, n), xv = case.draw(fc_case())
    wt = g.tensors[n.inputs[1]]
    rows, k = xv.shape
    nout = wt.shape[0]
    p = codegen_ops.prepare(g, n, numerics)
    note(describe(g, n))
    expected = fully_connected_int(xv, wt.data, p)
    got = K.fully_connected_s8(rows, k, nout, requant_fields(p), xv, wt.data)
    assert_bit_exact(expected, got.reshape(rows, nout),
                     f"tinyaot_fully_connected_s8 [{numerics}]", g, n, p)
    got = K.fully_connected_fast_s8(rows, k, nout, fast_requant_fields(p), xv,
                                    fast_pack.pack_gemm(wt.data, 4), fast_pack.fc_scratch_bytes(k))
    assert_bit_exact(expected, got.reshape(rows, nout),
                     f"tinyaot_fully_connected_fast_s8 [{numerics}]", g, n, p)
    fixed = (fc_fixed_requant(wt.data, p.bias, p.scale, p.in_zp, p.out_zp, p.act_min, p.act_max)
             if p.mode == ORT else None)  # ort: the exact SMMLAR form, when there is one
    if fixed is not None:
        q = {"in_zp": p.in_zp, "out_zp": p.out_zp, "act_min": p.act_min,
             "act_max": p.act_max, "bias": None, "scale": None, "mult": None, "shift": None,
             "post_bias": None, "out_scale": 0.0, "rq": None}
        got = K.fully_connected_fast_s8(rows, k, nout, q, xv, fast_pack.pack_gemm_fixed(wt.data, fixed),
                                        fast_pack.fc_scratch_bytes(k))
        assert_bit_exact(expected, got.reshape(rows, nout),
                         "tinyaot_fully_connected_fast_s8 [ort fixed-point]", g, n, p)
    f = fast_requant_fields(p)
    pairs = fast_pack.pack_fc_pairs(wt.data, p.in_zp, bias=p.bias)
    if (f["rq"] is not None and p.act_min <= -128 and p.act_max >= 127
            and pairs is not None):  # the one requantization the pair kernel has
        f["rq"], f["bias"] = fast_pack.fc_pair_records(f["rq"])  # (as the kernel reads them)
        got = K.fully_connected_fast_w8_s8(rows, k, nout, f, xv, pairs,
                                           fast_pack.fc_scratch_bytes(k))
        assert_bit_exact(expected, got.reshape(rows, nout),
                         f"tinyaot_fully_connected_fast_w8_s8 [{numerics}]", g, n, p)


@SETTINGS
@given(case=st.data())
def test_fully_connected_f32_s8_ort(case):
    (g, n), xv = case.draw(fc_case(ort_float=True))
    wt = g.tensors[n.inputs[1]]
    rows, k = xv.shape
    nout = wt.shape[0]
    p = codegen_ops.prepare(g, n, "ort")
    note(describe(g, n))
    expected = fully_connected_float(xv, wt, p)
    fp = {"order": ORDER_CODE[p.fc_order], "k_block": p.k_block,
          "out_scale": p.out_scale, "out_zp": p.out_zp, "act_min": p.act_min,
          "act_max": p.act_max, "in_table": input_table(p.in_scale, p.in_zp),
          "weights": pack_fc_float(ort_float.float_weights(wt), p.fc_order),
          "bias": np.asarray(p.bias_f, F32)}
    got = K.fully_connected_f32_s8(rows, k, nout, fp, xv)
    assert_bit_exact(expected, got.reshape(rows, nout),
                     "tinyaot_fully_connected_f32_s8 [ort]", g, n, p)


def act_shape(draw):
    return (1, draw(st.sampled_from(CHANNELS)), draw(st.integers(1, 12)), draw(st.integers(1, 12)))


@pytest.mark.parametrize("numerics", NUMERICS)
@SETTINGS
@given(case=st.data())
def test_add_s8(numerics, case):
    d = case.draw
    shape = act_shape(d)
    scalar_b = d(st.integers(0, 4)) == 0
    bshape = (1,) if scalar_b else shape
    tie = d(st.integers(0, 2)) == 0  # powers of two: exact sums, rounding ties
    a = qt("a", shape, d(scale(tie)), d(zp))
    b = qt("b", bshape, d(scale(tie)), d(zp))
    mode = 1 if tie else d(st.integers(0, 2))
    big = max(a.q.scale[0], b.q.scale[0])
    if mode == 0:  # output scale near the inputs' (the common case)
        sy = F32(big * 2.0 ** d(st.floats(-2.0, 2.0)))
    elif mode == 1:  # a power of two times the larger one: ties if the inputs' are too
        sy = F32(big * F32(2.0 ** d(st.integers(-1, 3))))
    else:
        sy = d(scale())
    y = qt("y", shape, sy, d(zp))
    lo, hi = d(st.sampled_from(ACTS))
    g, n = one_node("add", [a, b], [y], {"act_lo": lo, "act_hi": hi})
    av, bv = d(int8_array(shape)), d(int8_array(bshape))
    oracle = codegen_ops.get("add").reference
    if numerics == "ort" and not tie and d(st.booleans()):
        seek_boundary(d, g, n, lambda p: oracle(g, n, [av, bv], p, "ort"))
    p = codegen_ops.prepare(g, n, numerics)
    qlinear = numerics == "ort" and d(st.booleans())
    if qlinear:  # onnxruntime's fused QLinearAdd (numerics/ort_qlinear_add.py), s8 or u8
        from codegen.numerics.ort_qlinear_add import qlinear_add_params
        q = qlinear_add_params(a.q.scalar(), b.q.scalar(), y.q.scalar(), d(st.booleans()), False,
                               int(bv.reshape(-1)[0]) if scalar_b else None)
        p = dataclasses.replace(p, use_float=q["mode"], a_scale=q["a_scale"],
                                b_scale=q["b_scale"], qlinear_fixed=q["qlinear_fixed"],
                                u8_shift=q["u8_shift"])
    note(describe(g, n))
    expected = oracle(g, n, [av, bv], p, numerics)
    assert p.use_float == {"tflite": 0, "ort": 2 if qlinear else 1}[numerics]
    fields = dataclasses.asdict(p)  # ops/add.py: the record is the C struct
    fields.update(a_lut=None, b_lut=None, out_rq=None)  # tinyaot_add_fast_s8's tables
    size = int(np.prod(shape))
    got = K.add_s8(size, fields, av.reshape(-1), bv.reshape(-1), 0 if scalar_b else 1)
    assert_bit_exact(expected, got.reshape(shape), f"tinyaot_add_s8 [{numerics}]", g, n, p)
    if numerics == "tflite":  # tinyaot_add_fast_s8 with the emitter's tables
        a_lut, b_lut, out_rq = fast_pack.add_tables(vars(p))
        fields.update(a_lut=a_lut, b_lut=b_lut, out_rq=out_rq)
        got = K.add_fast_s8(size, fields, av.reshape(-1), bv.reshape(-1), 0 if scalar_b else 1)
        assert_bit_exact(expected, got.reshape(shape), "tinyaot_add_fast_s8 [tflite]", g, n, p)


@st.composite
def pool_case(draw, op, numerics):
    c = draw(st.sampled_from(CHANNELS))
    sx, zx = draw(scale()), draw(zp)
    mean = False  # tflite MEAN: global window, own output quantization
    if op == "avgpool" and numerics == "tflite":
        mean = draw(st.booleans())
    glob = mean or draw(st.integers(0, 5)) == 0
    if glob:
        h, w = draw(st.integers(1, 12)), draw(st.integers(1, 12))
        kh, kw, sh, sw, pads = h, w, 1, 1, (0, 0, 0, 0)
    else:
        kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
        sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        # ONNX: pads smaller than the kernel (every window sees the input)
        t, b = draw(st.integers(0, kh - 1)), draw(st.integers(0, kh - 1))
        l, r = draw(st.integers(0, kw - 1)), draw(st.integers(0, kw - 1))
        pads = (t, l, b, r)
        h = draw(st.integers(max(1, kh - t - b), 12))
        w = draw(st.integers(max(1, kw - l - r), 12))
    oh = (h + pads[0] + pads[2] - kh) // sh + 1
    ow = (w + pads[1] + pads[3] - kw) // sw + 1
    same_q = op == "maxpool" or (numerics == "tflite" and not mean) or draw(st.booleans())
    if same_q:
        sy, zy = sx, zx
    else:
        sy, zy = draw(scale()), draw(zp)
    cip = int(op == "avgpool" and numerics == "ort" and draw(st.booleans()))
    lo, hi = draw(st.sampled_from(ACTS))
    x = qt("x", (1, c, h, w), sx, zx)
    y = qt("y", (1, c, oh, ow), sy, zy)
    attrs = {"kernel": (kh, kw), "strides": (sh, sw), "pads": pads, "count_include_pad": cip,
             "act_lo": lo, "act_hi": hi}
    return one_node(op, [x], [y], attrs), draw(int8_array((1, c, h, w)))


def pool_fields(g, n, p):
    """The record is the C struct (ops/pooling.py); its geometry must be the IR node's."""
    x, y = g.tensors[n.inputs[0]], g.tensors[n.outputs[0]]
    a = n.attrs
    _, c, h, w = x.shape
    _, _, oh, ow = y.shape
    f = dataclasses.asdict(p)
    assert (f["in_h"], f["in_w"], f["c"], f["out_h"], f["out_w"]) == (h, w, c, oh, ow)
    assert (f["k_h"], f["k_w"], f["stride_h"], f["stride_w"], f["pad_top"], f["pad_left"]) == \
        tuple(a["kernel"]) + tuple(a["strides"]) + tuple(a["pads"][:2])
    assert f["count_include_pad"] == a.get("count_include_pad", 0)
    # the compile-time dequantization table, as the C emitter gives it
    f["dq_lut"] = (fast_pack.dequant_table(p.in_scale, p.in_zp)
                   if n.op == "avgpool" and p.use_float == 1 else None)
    return f


@pytest.mark.parametrize("numerics", NUMERICS)
@pytest.mark.parametrize("op", ["avgpool", "maxpool"])
@SETTINGS
@given(case=st.data())
def test_pool_s8(numerics, op, case):
    (g, n), xv = case.draw(pool_case(op, numerics))
    y = g.tensors[n.outputs[0]]
    x = g.tensors[n.inputs[0]]
    oracle = codegen_ops.get(op).reference
    if op == "avgpool" and numerics == "ort" and not x.q.same_as(y.q) and case.draw(st.booleans()):
        seek_boundary(case.draw, g, n, lambda p: oracle(g, n, [xv], p, "ort"))
    p = codegen_ops.prepare(g, n, numerics)
    note(describe(g, n))
    expected = oracle(g, n, [xv], p, numerics)
    kern = K.avgpool_s8 if op == "avgpool" else K.maxpool_s8
    got = kern(pool_fields(g, n, p), nhwc(xv))
    assert_bit_exact(expected, from_nhwc(got, y.shape), f"tinyaot_{op}_s8 [{numerics}]", g, n, p)


@pytest.mark.parametrize("numerics", NUMERICS)
@pytest.mark.parametrize("hw", [(16, 16), (1, 257), (15, 17)])
@pytest.mark.parametrize("c", [8, 7, 12])
@pytest.mark.parametrize("fill", ["min", "max", "random"])
def test_avgpool_large_windows(numerics, hw, c, fill):
    """Global windows of 256 values (the most the kernel's int16 channel pairs sum:
    256 * -128 = -32768) and of 257 (summed per channel instead), at the extremes where
    a wider window would wrap the pairs; 7 channels: one quad and three lone ones; 8 and
    12: two quads a pass (two pixels a pass, an odd last column: 15 x 17), then a quad."""
    h, w = hw
    x = qt("x", (1, c, h, w), F32(0.02), 3)
    y = qt("y", (1, c, 1, 1), F32(0.02), 3)
    attrs = {"kernel": (h, w), "strides": (1, 1), "pads": (0, 0, 0, 0), "count_include_pad": 0,
             "act_lo": None, "act_hi": None}
    g, n = one_node("avgpool", [x], [y], attrs)
    rng = np.random.default_rng(h * 100 + c)
    xv = {"min": np.full((1, c, h, w), -128, np.int8), "max": np.full((1, c, h, w), 127, np.int8),
          "random": rng.integers(-128, 128, (1, c, h, w), dtype=np.int8)}[fill]
    p = codegen_ops.prepare(g, n, numerics)
    expected = codegen_ops.get("avgpool").reference(g, n, [xv], p, numerics)
    if fill != "random":  # the mean of equal values is that value (an oracle of its own)
        assert (expected == xv[:, :, :1, :1]).all()
    got = K.avgpool_s8(pool_fields(g, n, p), nhwc(xv))
    assert_bit_exact(expected, from_nhwc(got, y.shape), f"tinyaot_avgpool_s8 [{numerics}]", g, n, p)


@pytest.mark.parametrize("numerics", NUMERICS)
@SETTINGS
@given(case=st.data())
def test_softmax_s8(numerics, case):
    d = case.draw
    rows, nlast = d(st.integers(1, 4)), d(st.integers(1, 64))
    x = qt("x", (rows, nlast), d(scale()), d(zp))
    if numerics == "tflite" or d(st.booleans()):
        sy, zy = F32(1.0 / 256), -128
    else:
        sy, zy = d(scale()), d(zp)
    y = qt("y", (rows, nlast), sy, zy)
    g, n = one_node("softmax", [x], [y], {"axis": 1})
    xv = d(int8_array((rows, nlast)))
    oracle = codegen_ops.get("softmax").reference
    if numerics == "ort" and d(st.booleans()):
        seek_boundary(d, g, n, lambda p: oracle(g, n, [xv], p, "ort"))
    p = codegen_ops.prepare(g, n, numerics)
    note(describe(g, n))
    expected = oracle(g, n, [xv], p, numerics)
    assert p.use_float == (numerics == "ort")
    fields = dataclasses.asdict(p)  # ops/softmax.py: the record is the C struct
    got = K.softmax_s8(rows, nlast, fields, xv)
    assert_bit_exact(expected, got.reshape(rows, nlast), f"tinyaot_softmax_s8 [{numerics}]",
                     g, n, p)


@pytest.mark.parametrize("numerics", NUMERICS)
@SETTINGS
@given(case=st.data())
def test_requantize_s8(numerics, case):
    """clamp (same quantization: fused Relu/Clip on its own) and requantize."""
    d = case.draw
    shape = act_shape(d)
    tie = d(st.integers(0, 2)) == 0  # sy = sx * 2^j: exact, many rounding ties
    sx, zx = d(scale(tie)), d(zp)
    same = not tie and d(st.booleans())
    if same:
        sy, zy = sx, zx
    else:
        sy = F32(sx * F32(2.0 ** d(st.integers(1, 4)))) if tie else d(scale())
        zy = d(zp)
    lo, hi = d(st.sampled_from(ACTS))
    x, y = qt("x", shape, sx, zx), qt("y", shape, sy, zy)
    g, n = one_node("clamp" if same else "requantize", [x], [y], {"act_lo": lo, "act_hi": hi})
    xv = d(int8_array(shape))
    p = codegen_ops.prepare(g, n, numerics)
    note(describe(g, n))
    expected = codegen_ops.get(n.op).reference(g, n, [xv], p, numerics)
    fields = dataclasses.asdict(p)  # ops/requantize.py: the record is the C struct
    got = K.requantize_s8(int(np.prod(shape)), fields, xv.reshape(-1))
    assert_bit_exact(expected, got.reshape(shape), f"tinyaot_requantize_s8 [{numerics}]",
                     g, n, p)


@pytest.mark.parametrize("numerics", NUMERICS)
@SETTINGS
@given(case=st.data())
def test_prelu_s8(numerics, case):
    """PRelu with one slope or one per channel ([C, 1, 1] / [C]), on NCHW, NHWC-stored or
    [N, C] input, in place or not; ort also with per-channel slope scales. The kernel walks
    the physical input as [outer][channels][inner], as ops/prelu.py emits it."""
    d = case.draw
    kind = d(st.sampled_from(["nchw", "nhwc", "rows"]))
    shape = (act_shape(d) if kind != "rows"
             else (d(st.integers(1, 4)), d(st.sampled_from(CHANNELS))))
    c = shape[1]
    per_channel = d(st.booleans())
    s_shape = ((c, 1, 1) if kind != "rows" else (c,)) if per_channel else (1,)
    tie = d(st.integers(0, 2)) == 0  # powers of two, slope zp 0: exact products, ties
    sx, zx = d(scale(tie)), d(zp)
    sy = F32(sx * F32(2.0 ** d(st.integers(-3, 3)))) if tie else d(scale())
    if numerics == "ort" and per_channel and not tie and d(st.booleans()):
        aq = QParams(np.array([d(scale()) for _ in range(c)], F32),
                     np.array([d(zp) for _ in range(c)], np.int32), 0)
    else:
        aq = QParams(np.array([d(scale(tie))], F32), np.array([0 if tie else d(zp)], np.int32))
    alpha = d(int8_array((int(np.prod(s_shape)),))).reshape(s_shape)
    x, y = qt("x", shape, sx, zx), qt("y", shape, sy, d(zp))
    if kind == "nhwc":
        x.perm = y.perm = (0, 2, 3, 1)
    a = Tensor("alpha", s_shape, "int8", aq, alpha)
    lo, hi = d(st.sampled_from(ACTS))
    g, n = one_node("prelu", [x, a], [y], {"act_lo": lo, "act_hi": hi})
    xv = d(int8_array(shape, zero=zx, tie=tie))
    p = codegen_ops.prepare(g, n, numerics)
    note(describe(g, n))
    expected = codegen_ops.get("prelu").reference(g, n, [xv, alpha], p, numerics)
    phys = nhwc(xv) if kind == "nhwc" else xv
    if not per_channel:
        walk = (1, 1, xv.size)
    elif kind == "nhwc":
        walk = (shape[0] * shape[2] * shape[3], c, 1)
    else:
        walk = (shape[0], c, int(np.prod(shape[2:])))
    av = alpha.reshape(-1)
    zps, scales = aq.zero_point, aq.scale
    slope_f = ((av.astype(np.int32) - zps).astype(F32) * scales).astype(F32)  # DequantizeLinear
    fields = dataclasses.asdict(p)  # ops/prelu.py: the record is the C struct
    got = K.prelu_s8(*walk, fields, av if numerics == "tflite" else None,
                     slope_f if numerics == "ort" else None, phys.reshape(-1),
                     inplace=d(st.booleans()))
    got = from_nhwc(got, shape) if kind == "nhwc" else got.reshape(shape)
    assert_bit_exact(expected, got, f"tinyaot_prelu_s8 [{numerics}]", g, n, p)


@SETTINGS
@given(case=st.data())
def test_minmax_s8(case):
    """TFLite MAXIMUM / MINIMUM: numpy broadcasting of any operand shape onto the output
    (rank 1 to 6), a constant operand or an activation, in place or not."""
    d = case.draw
    rank = d(st.integers(1, 6))
    out = tuple(d(st.integers(1, 4)) for _ in range(rank))
    b_shape = tuple(1 if d(st.booleans()) else e for e in out)[d(st.integers(0, rank)):]
    q = (d(scale()), d(zp))
    x, y = qt("a", out, *q), qt("y", out, *q)
    bv = d(int8_array(b_shape))
    const = d(st.booleans())
    b = Tensor("b", b_shape, "int8", QParams(np.array([q[0]], F32), np.array([q[1]], np.int32)),
               bv if const else None)
    is_max = d(st.integers(0, 1))
    g, n = one_node("minmax", [x, b], [y], {"is_max": is_max})
    av = d(int8_array(out))
    p = codegen_ops.prepare(g, n, "tflite")
    note(describe(g, n))
    expected = codegen_ops.get("minmax").reference(g, n, [av, bv], p, "tflite")
    dims, sa = broadcast_dims(x, out)
    _, sb = broadcast_dims(b, out)
    got = K.minmax_s8(is_max, dims + sa + sb, av.reshape(-1), bv.reshape(-1), av.size,
                      inplace=d(st.booleans()))
    assert_bit_exact(expected, got.reshape(out), "tinyaot_minmax_s8", g, n, p)


@SETTINGS
@given(case=st.data())
def test_reduce_sum_s8(case):
    """TFLite SUM over [outer][count][inner]: scale ratios below and above one (saturating
    sums), counts up to 300."""
    d = case.draw
    outer, count, inner = d(st.integers(1, 4)), d(st.integers(1, 300)), d(st.integers(1, 6))
    sx, zx = d(scale()), d(zp)
    sy = F32(sx * F32(2.0 ** d(st.integers(-4, 8))) * F32(d(st.floats(0.5, 1.0))))
    x, y = qt("x", (outer, count, inner), sx, zx), qt("y", (outer, inner), sy, d(zp))
    g, n = one_node("reduce_sum", [x], [y], {"view": (outer, count, inner)})
    xv = d(int8_array((outer, count, inner), zero=zx))
    p = codegen_ops.prepare(g, n, "tflite")
    note(describe(g, n))
    expected = codegen_ops.get("reduce_sum").reference(g, n, [xv], p, "tflite")
    got = K.reduce_sum_s8(outer, count, inner, dataclasses.asdict(p), xv.reshape(-1))
    assert_bit_exact(expected, got.reshape(outer, inner), "tinyaot_reduce_sum_s8", g, n, p)


@SETTINGS
@given(dims=st.lists(st.integers(1, 6), min_size=4, max_size=4),
       perm=st.permutations(range(4)), seed=st.integers(0, 2**32 - 1))
def test_transpose_s8(dims, perm, seed):
    xv = np.random.default_rng(seed).integers(-128, 128, size=dims).astype(np.int8)
    expected = xv.transpose(perm)
    got = K.transpose_s8(dims, perm, xv)
    if not np.array_equal(got.reshape(expected.shape), expected):
        bad = np.argwhere(got.reshape(expected.shape) != expected)
        raise AssertionError(f"tinyaot_transpose_s8 dims {dims} perm {list(perm)}: "
                             f"{len(bad)} of {xv.size} bytes misplaced, first at output "
                             f"{tuple(int(v) for v in bad[0])}")


def test_kernel_library_is_sanitized_or_says_why():
    """Informational: the kernels run under UBSan unless TINYAOT_KERNEL_UBSAN=0."""
    k = K.kernels()
    if not k.ubsan:
        pytest.skip("kernels built without UBSan: " + (k.build_log.strip() or
                                                       "TINYAOT_KERNEL_UBSAN=0"))


@SETTINGS
@given(dims=st.lists(st.integers(1, 7), min_size=4, max_size=4), case=st.data())
def test_slice_s8(dims, case):
    """Any window (negative starts / ends, clamping, steps of either sign) of a
    4-D tensor: the kernel's bytes equal numpy's slicing of the input."""
    from codegen.ops.slice import slice_window
    d = case.draw
    starts = [d(st.integers(-9, 9)) for _ in dims]
    ends = [d(st.integers(-9, 9)) for _ in dims]
    steps = [d(st.sampled_from([-3, -2, -1, 1, 1, 2, 3])) for _ in dims]
    for k, n in enumerate(dims):  # an empty axis becomes the whole axis (both ends clamped)
        if not len(range(n)[slice(starts[k], ends[k], steps[k])]):
            starts[k], ends[k] = (-9, 9) if steps[k] > 0 else (9, -9)
    xv = np.random.default_rng(d(st.integers(0, 2**32 - 1))).integers(
        -128, 128, size=dims).astype(np.int8)
    expected = xv[tuple(slice(s, e, t) for s, e, t in zip(starts, ends, steps))]
    st0, sp, oshape = slice_window(dims, starts, ends, None, steps)
    assert oshape == expected.shape
    got = K.slice_s8(list(dims) + list(oshape) + list(st0) + list(sp), xv, expected.size)
    assert np.array_equal(got.reshape(expected.shape), expected), (
        f"tinyaot_slice_s8 dims {dims} starts {starts} ends {ends} steps {steps}")


RESIZE_MODES = [("nearest", c, m) for c in ("half_pixel", "asymmetric", "align_corners",
                                            "pytorch_half_pixel", "tf_half_pixel_for_nn")
                for m in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")]
RESIZE_MODES += [("linear", c, "floor") for c in ("half_pixel", "asymmetric", "align_corners",
                                                  "pytorch_half_pixel")]


def resize_fields(p):
    """tinyaot_resize_bilinear_params_t from the prepared record, which mirrors it
    field by field (the emitter writes its arrays' names in their place)."""
    return {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}


@pytest.mark.parametrize("numerics", NUMERICS)
@SETTINGS
@given(case=st.data())
def test_resize_s8(numerics, case):
    """Nearest (every ctm x nearest_mode) and bilinear: scales up and down,
    channels 1..16, different output quantization, fused clamps."""
    from codegen.errors import TinyAotError
    from codegen.ops.resize import ResizeNearestParams
    d = case.draw
    mode, ctm, nm = d(st.sampled_from(RESIZE_MODES))
    nb, c = d(st.integers(1, 2)), d(st.sampled_from(CHANNELS))
    h, w, oh, ow = (d(st.integers(1, 8)) for _ in range(4))
    shape, oshape = (nb, c, h, w), (nb, c, oh, ow)
    sx, zx = d(scale()), d(zp)
    sy, zy = (sx, zx) if d(st.booleans()) else (d(scale()), d(zp))
    lo, hi = d(st.sampled_from(ACTS))
    x, y = qt("x", shape, sx, zx), qt("y", oshape, sy, zy)
    attrs = {"mode": mode, "ctm": ctm, "nearest_mode": nm, "act_lo": lo, "act_hi": hi,
             "scales": (float(F32(oh) / F32(h)), float(F32(ow) / F32(w))), "ort_int8": False}
    g, n = one_node("resize", [x], [y], attrs)
    try:
        p = codegen_ops.prepare(g, n, numerics)
    except TinyAotError:  # an ONNX mode without a TFLite equivalent
        assert numerics == "tflite"
        return
    xv = d(int8_array(shape))
    note(describe(g, n))
    expected = codegen_ops.get("resize").reference(g, n, [xv], p, numerics)
    if isinstance(p, ResizeNearestParams):
        got = K.resize_nearest_s8([nb, h, w, c, oh, ow], p.y_idx, p.x_idx, p.table, nhwc(xv))
    else:
        got = K.resize_bilinear_s8(resize_fields(p), nhwc(xv))
    assert_bit_exact(expected, from_nhwc(got, oshape), f"resize [{numerics}]", g, n, p)


# ------------------------------------------------------------------ the float fallback

def _floats(d, n, wide):
    """n float32s: dequantized-looking values, or (wide) any finite float of either sign
    across many binades, with ties and repeats."""
    if wide:
        return np.asarray(d(st.lists(st.floats(-1e4, 1e4, width=32), min_size=n, max_size=n)),
                          F32)
    q = np.asarray(d(st.lists(st.integers(-128, 127), min_size=n, max_size=n)), np.int32)
    return (q.astype(F32) * d(scale())).astype(F32)


@pytest.mark.parametrize("numerics", NUMERICS)
@SETTINGS
@given(case=st.data())
def test_softmax_f32(numerics, case):
    """Softmax / LogSoftmax over any axis (n at stride inner) against ops/softmax_f32.py's
    reference (MLAS's 16-lane sum and 32-blocks of max under ort; TFLite Micro's in-order
    sum under tflite)."""
    from codegen.ops.softmax_f32 import SoftmaxF32Params, softmax_f32
    from codegen.ops.float_io import mode_of
    d = case.draw
    outer, n, inner = d(st.integers(1, 3)), d(st.integers(1, 80)), d(st.integers(1, 3))
    p = SoftmaxF32Params(outer, n, inner, int(d(st.booleans())), mode_of(numerics))
    x = _floats(d, outer * n * inner, d(st.booleans()))
    expected = softmax_f32(x, p).reshape(-1)
    got = K.softmax_f32(dataclasses.asdict(p), x)
    note(f"{p}")
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


@SETTINGS
@given(case=st.data())
def test_unary_f32(case):
    """Every function code of tinyaot_unary_f32 against ops/unary_f32.py's reference, on
    floats over the functions' whole ranges (NaN and infinities included)."""
    from codegen.ops.unary_f32 import EXACT, ORT_ONLY, TFLITE_ONLY, UnaryF32Params, unary_f32
    d = case.draw
    table = {**EXACT, **ORT_ONLY, **{k + ":tflite": v for k, v in TFLITE_ONLY.items()}}
    op = d(st.sampled_from(sorted(table)))
    n = d(st.integers(1, 64))
    x = np.asarray(d(st.lists(st.floats(width=32, allow_nan=True), min_size=n, max_size=n)),
                   F32)
    p = UnaryF32Params(table[op][0], op)
    expected = unary_f32(x, p)
    got = K.unary_f32(p.fn, x)
    note(op)
    same = (got.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(got) & np.isnan(expected))
    assert same.all(), (op, x[~same], got[~same], expected[~same])
