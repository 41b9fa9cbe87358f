"""tinyaot_convolve_narrow_s8 (inputs of 1-3 channels: two output channels per weight word,
w0 + w1 * 2^21, summed by SMLAL; the input zero point folded into the bias) against the
numpy oracle of the conv operator (codegen/ops/conv2d.py: conv2d_int with the layer's own
bias, int64 sums), both requantizations, with and without the per-channel records, a
clamped output range: on the host (portable C) and on qemu-m4 (the asm). Shapes: strides 1
and 2, padding on every side and none, windows wholly outside the interior (input smaller
than the kernel), odd output widths (a lone last pixel), rows of 1 to 16 taps (the asm's
unrolled row entered at every depth), more channel quads than one pass sums, and the
extremes of the split (sums of +-32 * 2^14 in the low channel, the most 32 taps reach)."""
from __future__ import annotations

import numpy as np
import pytest

from codegen.kernels.fast_pack import (NARROW_K_MAX, NARROW_ROW_MAX, fold_input_zero_point,
                                       narrow_fits, pack_narrow)
from tests.helpers.env import require_arm_toolchain
from tests.helpers.kernels_cffi import conv_dims_fields
from tests.helpers.requant_cases import requant_fields

# (cin, cout, (h, w), (kh, kw), (sh, sw), pads top/left/bottom/right)
SHAPES = [(3, 8, (12, 12), (3, 3), (2, 2), (0, 0, 1, 1)),   # the VWW MobileNet's first
          (3, 16, (9, 10), (3, 3), (1, 1), (1, 1, 1, 1)),   # ResNet-8's first
          (3, 12, (7, 9), (3, 3), (1, 1), (1, 1, 1, 1)),    # odd output width
          (1, 4, (7, 5), (3, 3), (1, 1), (1, 1, 1, 1)),
          (2, 12, (6, 9), (5, 3), (1, 2), (2, 1, 2, 1)),
          (1, 8, (10, 7), (7, 4), (1, 1), (3, 2, 3, 1)),
          (3, 40, (5, 6), (3, 3), (1, 1), (1, 1, 1, 1)),    # two passes of quads
          (3, 8, (4, 5), (1, 3), (1, 1), (0, 1, 0, 1)),     # one row
          (2, 4, (3, 10), (2, 8), (1, 1), (0, 0, 0, 0)),    # a row of 16 taps
          (3, 4, (2, 2), (3, 3), (1, 1), (1, 1, 1, 1)),     # every window cut
          (1, 4, (9, 9), (1, 1), (1, 1), (0, 0, 0, 0)),     # one tap
          (3, 4, (9, 9), (2, 5), (2, 3), (0, 0, 0, 0))]     # rows of 15
VARIANTS = [("ort", False, False), ("ort", True, False), ("ort", False, True),
            ("tflite", False, False), ("tflite", True, False), ("tflite", True, True)]


def _attrs(k, s, pads):
    return {"kernel": k, "strides": s, "pads": pads, "dilations": (1, 1), "group": 1}


def _out_hw(hw, k, s, pads):
    return tuple((hw[i] + pads[i] + pads[i + 2] - k[i]) // s[i] + 1 for i in (0, 1))


def _case(rng, numerics, records, clamp, cin, cout, hw, k, s, pads, x=None, w=None):
    attrs = _attrs(k, s, pads)
    if x is None:
        x = rng.integers(-128, 128, (1, cin) + hw).astype(np.int8)
    if w is None:
        w = rng.integers(-128, 128, (cout, cin) + k).astype(np.int8)
    in_zp = int(rng.integers(-128, 128))
    q, p = requant_fields(rng, cout, in_zp, numerics, False)
    if clamp:
        q["act_min"] = p.act_min = -30
        q["act_max"] = p.act_max = 100
    want = conv2d_int_oracle(x, w, attrs, p)[0]  # the layer's own bias
    folded = fold_input_zero_point(p.bias, w.reshape(cout, -1), in_zp).astype(np.int32)
    q["bias"] = folded
    if records:
        from codegen.kernels.fast_pack import float_requant, smlal_requant
        q["rq"] = (float_requant(q["scale"], folded) if numerics == "ort"
                   else smlal_requant(q["mult"], q["shift"], folded, q["out_zp"]))
        q["bias"] = None  # the records hold it
    dims = conv_dims_fields(x.shape, (1, cout) + _out_hw(hw, k, s, pads), attrs)
    return (dims, q, x[0].transpose(1, 2, 0), pack_narrow(w), want.transpose(1, 2, 0),
            (cin, cout, hw, k, s, pads, numerics, records, clamp))


def conv2d_int_oracle(x, w, attrs, p):
    from codegen.ops.conv2d import conv2d_int
    return conv2d_int(x, w, attrs, p)


def _cases():
    """(dims, q with the folded bias, x NHWC, packed words, want NHWC, info)."""
    out = []
    for vi, (numerics, records, clamp) in enumerate(VARIANTS):
        rng = np.random.default_rng(90 + vi)
        for cin, cout, hw, k, s, pads in SHAPES:
            out.append(_case(rng, numerics, records, clamp, cin, cout, hw, k, s, pads))
    # the split's extremes: 32 taps of -128 * -128 (+524,288 in the low channel) and
    # of 127 * -128, against the high channel's opposite
    rng = np.random.default_rng(99)
    for xv, lo, hi in ((-128, -128, 127), (127, -128, -128), (-128, 127, -128)):
        x = np.full((1, 1, 8, 4), xv, np.int8)
        w = np.empty((4, 1, 8, 4), np.int8)
        w[0::2], w[1::2] = lo, hi
        for numerics in ("tflite", "ort"):
            out.append(_case(rng, numerics, True, False, 1, 4, (8, 4), (8, 4), (1, 1),
                             (0, 0, 0, 0), x, w))
    return out


def test_narrow_fits_limits():
    ok = np.full((4, 3, 3, 3), -128, np.int8)
    assert narrow_fits(ok)
    assert not narrow_fits(ok[:3])  # channel quads only
    assert not narrow_fits(np.zeros((4, 3, 1, NARROW_ROW_MAX // 3 + 1), np.int8))
    # windows of at most NARROW_K_MAX taps (the stack's edge copies), any int8 weights
    assert narrow_fits(np.full((4, 1, NARROW_K_MAX // 4, 4), -128, np.int8))
    assert not narrow_fits(np.zeros((4, 1, NARROW_K_MAX // 4 + 1, 4), np.int8))
    # (the sums' bound, 128 * sum |w| < 2^20, holds for every window that size)
    assert NARROW_K_MAX * 128 * 128 < 1 << 20


def test_pack_narrow_words():
    w = np.zeros((4, 1, 1, 2), np.int8)
    w[:, 0, 0, 0] = [1, -2, -128, 127]
    w[:, 0, 0, 1] = [-1, 3, 5, -7]
    words = pack_narrow(w)
    # tap 0: {1 - 2 * 2^21, -128 + 127 * 2^21}, tap 1: {-1 + 3 * 2^21, 5 - 7 * 2^21}
    assert list(words) == [1 - (2 << 21), -128 + (127 << 21), -1 + (3 << 21), 5 - (7 << 21)]


def test_narrow_equals_the_numpy_reference():
    from tests.helpers import kernels_cffi as kf
    kf.check_conv_cases(kf.convolve_narrow_s8, _cases(), 6)


def test_narrow_refuses_what_it_cannot_run():
    from tests.helpers import kernels_cffi as kf
    rng = np.random.default_rng(7)
    dims, q, x, words, want, _ = _case(rng, "tflite", True, False, 3, 8, (6, 6), (3, 3),
                                       (1, 1), (1, 1, 1, 1))
    names = kf.struct_fields("tinyaot_conv_dims_t")
    for field, value in (("out_c", 6), ("dil_w", 2), ("groups", 2), ("k_w", 6)):
        d = dict(zip(names, dims))
        d[field] = value
        with pytest.raises(Exception, match="-1"):
            kf.convolve_narrow_s8(d, q, x, words, rng)


@pytest.mark.qemu
def test_narrow_on_qemu_m4(tmp_path):
    require_arm_toolchain()
    from tests.helpers.kernel_firmware import conv_cases_on_qemu_m4
    conv_cases_on_qemu_m4(tmp_path, "narrow", _cases(), "tinyaot_kernels.h",
                          "tinyaot_convolve_narrow_s8.c",
                          lambda i: f"tinyaot_convolve_narrow_s8(&d{i}, &q{i}, x{i}, "
                                    f"(const uint32_t *)(const void *)w{i}, output)")


@pytest.mark.shared
def test_first_layers_take_the_narrow_kernel_where_it_pays():
    """vww01's first conv (3 -> 8 channels, 3x3 stride 2) runs the narrow kernel in speed
    builds; ic01's (3 -> 16) keeps the fast conv (NARROW_OUT_C), and so does a size build."""
    from codegen.compiler import compile_model
    from tests.helpers.env import shared_model

    def first_conv(key, optimize="speed"):
        model, _ = shared_model(key)
        layers = compile_model(str(model), numerics="tflite", optimize=optimize).report["layers"]
        return next(lay["kernel"] for lay in layers if lay["op"] == "conv2d")

    assert first_conv("vww01") == "tinyaot_convolve_narrow_s8"
    assert first_conv("ic01") == "tinyaot_convolve_fast_s8"
    assert first_conv("vww01", "size") != "tinyaot_convolve_narrow_s8"


@pytest.mark.shared
@pytest.mark.qemu
def test_narrow_loop_fits_the_stm32l4r5_instruction_cache():
    """vww01's first conv (the narrow kernel, its weights staged in RAM) on the STM32L4R5
    model (1 KB instruction cache): the code one pixel pair runs (the row of taps, one copy
    of the four requantizations run for both pixels, the pixel loop) fits in the cache, so
    the layer waits on flash for less than 5 % of its cycles. With the requantization
    unrolled for each pixel it waited 16 % (1.68M cycles against 1.41M ideal)."""
    require_arm_toolchain()
    from codegen.compiler import compile_model
    from codegen.driver.profile import profile_model
    from tests.helpers.env import shared_model
    model, _ = shared_model("vww01")
    path = model.with_suffix(".tflite")
    r = profile_model(path, board="qemu-m4", numerics="tflite", cycles=True,
                      compiled=compile_model(path, numerics="tflite"),
                      parts=["ideal", "stm32l4r5"])
    first = next(la for la in r["layers"] if la["kernel"] == "tinyaot_convolve_narrow_s8")
    assert first["cycles"]["stm32l4r5"] < 1.05 * first["cycles"]["ideal"], first["cycles"]


def test_folding_kernels_refuse_biases_the_zero_point_fold_would_overflow():
    """A bias that could leave int32 once the input zero point is folded in (|bias| +
    128 * sum |w| >= 2^31) keeps the fast conv, for the narrow and the sparse kernel alike
    (conv2d._fold_fits), as does a bias with no data."""
    from types import SimpleNamespace as T

    from codegen.ops.conv2d import _narrow, _sparse
    x = T(shape=(1, 3, 12, 12), dtype="int8")
    w = T(shape=(8, 3, 3, 3), dtype="int8", data=np.full((8, 3, 3, 3), -128, np.int8))
    n = T(inputs=["x", "w", "b"], attrs={"kernel": (3, 3), "dilations": (1, 1)})
    sw = T(shape=(8, 64, 1, 1), dtype="int8", data=np.zeros((8, 64, 1, 1), np.int8))
    sw.data[:, :4] = -128  # 6 % nonzero, sum |w| = 512 per channel
    sn = T(inputs=["x", "w", "b"], attrs={"kernel": (1, 1), "strides": (1, 1),
                                          "pads": (0, 0, 0, 0)})

    def with_bias(kernel, node, weights, data):
        g = T(tensors={"b": T(shape=(8,), dtype="int32", data=data)})
        return kernel(g, node, x, weights) if kernel is _narrow else kernel(g, node, weights)

    for kernel, node, weights, sum_w in ((_narrow, n, w, 27 * 128), (_sparse, sn, sw, 512)):
        limit = (1 << 31) - 128 * sum_w
        assert with_bias(kernel, node, weights, np.full(8, limit - 1, np.int32))
        assert not with_bias(kernel, node, weights, np.array([0] * 7 + [limit], np.int32))
        assert not with_bias(kernel, node, weights, np.array([0] * 7 + [-limit], np.int32))
        assert not with_bias(kernel, node, weights, None)
    assert _narrow(T(tensors={}), T(inputs=["x", "w"], attrs=n.attrs), x, w)  # no bias
