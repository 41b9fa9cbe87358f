"""tinyaot_convolve_1x1_w8_s8 (1x1 convs with int8 weights, two channels per int16 lane:
H = 256 * hi + lo, hi's sum with its bias recovered as (A - S) / 256, A started at the
pair's start word) against the numpy oracle of the conv operator (codegen/ops/conv2d.py:
conv2d_int, int64 sums, TFLite's requantization), on the host (portable C, under UBSan)
and on qemu-m4 (the DSP inline asm): quad counts from 1 to 36 (every count mod 4, the asm
from 4 on: its straight quads entered part way), odd pixel counts (the last pixel in a
pair with the one before it) and one pixel alone, hi sums with their biases at the edge
of the kernel's 24-bit bound from both sides, hi weights of -128. The packing refuses
what the kernel cannot do exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

from codegen.kernels.fast_pack import (conv_scratch_bytes, pack_conv_pairs, pair_records,
                                       smlal_requant)
from tests.helpers.env import require_arm_toolchain
from tests.helpers.pair_cases import pair_layer

# (in_c, out_c, pixels (h, w)): quads 16 (0 mod 4), 32, 10 (2), 4, 5 (1), 7 (3), 36, 1, 2, 3
SHAPES = [(64, 16, (5, 5)), (128, 8, (3, 2)), (40, 12, (1, 7)), (16, 4, (2, 2)),
          (20, 8, (1, 1)), (28, 4, (3, 1)), (144, 4, (1, 3)), (4, 8, (2, 3)), (7, 4, (1, 2)),
          (12, 4, (3, 3))]
def _cases():
    rng = np.random.default_rng(91)
    out = [(f"{cin}->{cout} {hw}",) + pair_layer(rng, cin, cout, hw) for cin, cout, hw in SHAPES]
    # hi sums with their biases at the bound: 127 x 255 x 258 + bias = 2^23 - 1 - small
    cin = 258
    for sign, zp, xv in ((1, -128, 127), (-1, 127, -128), (-1, -128, 127), (1, 127, -128)):
        w = rng.integers(-127, 128, (4, cin)).astype(np.int8)
        w[1::2] = sign * 127
        bias = rng.integers(-3000, 3000, 4)
        # the hi sums' sign, their biases adding to it: |sum + bias| = 2^23 - 8
        bias[1::2] = int(np.sign(sign * (xv - zp))) * (2 ** 23 - 1 - 127 * 255 * cin - 7)
        x = np.full((1, cin, 1, 3), xv, np.int8)
        out.append((f"bound {sign:+d} zp {zp}",) + pair_layer(rng, cin, 4, (1, 3), x, w, zp, bias))
    # hi channels whose biases dwarf the bound, their multipliers 0 (vww01 has such)
    bias = rng.integers(-3000, 3000, 8)
    bias[1], bias[5] = 2 ** 30, -(2 ** 30)
    out.append(("free hi",) + pair_layer(rng, 64, 8, (1, 5), bias=bias, zero_mult=(1, 5)))
    w = rng.integers(-127, 128, (8, 48)).astype(np.int8)
    w[1::2] = -128
    w[0::2] = np.abs(w[0::2])
    out.append(("hi -128",) + pair_layer(rng, 48, 8, (2, 3), w=w))
    # small sums, so a small shift (e 3): one negative sum in 2^e meets the sign fix's
    # window (tinyaot_requant_fast.h; hi's 256 times lo's), the zero point above the clamp
    x = rng.integers(-6, 7, (1, 40, 4, 5)).astype(np.int8)
    w = rng.integers(-3, 4, (16, 40)).astype(np.int8)
    out.append(("sign fix",) + pair_layer(rng, 40, 16, (4, 5), x=x, w=w, in_zp=0, out_zp=20,
                                      bias=rng.integers(-20, 20, 16)))
    return out


def test_pack_refuses_what_the_kernel_cannot_do_exactly():
    cin = 258
    w = np.zeros((4, cin), np.int8)
    w[1] = 127
    edge = 2 ** 23 - 1 - 127 * 255 * cin
    assert pack_conv_pairs(w, -128, [0, edge, 0, 0]) is not None  # the greatest sum
    assert pack_conv_pairs(w, -128, [0, edge + 1, 0, 0]) is None  # one past it
    assert pack_conv_pairs(w, 127, [0, -edge - 1, 0, 0]) is not None  # x - zp = -255: -2^23
    assert pack_conv_pairs(w, 127, [0, -edge - 2, 0, 0]) is None  # -2^23 - 1
    w = np.zeros((4, 4), np.int8)
    w[1, 2], w[0, 2] = -128, -1  # H = -32769
    assert pack_conv_pairs(w, 0, [0, 0, 0, 0]) is None
    w = np.ones((4, 4), np.int8)
    big = [0, 2 ** 30, 0, 0]
    assert pack_conv_pairs(w, 0, big) is None
    assert pack_conv_pairs(w, 0, big, [False, True, False, False]) is not None  # its m is 0
    assert pack_conv_pairs(w, 0, big, [True, False, True, True]) is None


def test_pair_records_refuse_hi_channels_they_cannot_scale():
    """A hi channel's requantization takes A - S (256 times its sum) with R times 256 and
    the shift 8 more: refused where the 64-bit sum R + (A - S) m leaves 64 bits over the
    kernel's whole sum bound (|A - S| up to 2^31; R holds the output zero point times
    2^(31+e)) or the shift passes 31. With m = 2^31 - 1: at e = 16 and zp = -128, R * 256
    is about -2^62 and so is the most negative product: the sum just fits; at e = 17 it
    does not; at e = 17 with zp 0, R * 256 is about 2^55 and it fits; at e = 24 with zp 0,
    R * 256 is 2^62 + 2^38 and the most positive product (2^31 - 256) * (2^31 - 1) keeps
    the sum just under 2^63; with zp 127 R * 256 alone passes 2^63; at e = 25 the shift
    is 32."""
    bias = np.zeros(2, np.int64)
    for e, zp, ok in ((15, -128, True), (16, -128, True), (17, -128, False), (17, 0, True),
                      (24, 0, True), (24, 127, False), (25, 0, False)):
        rec = smlal_requant([1 << 30, (1 << 31) - 1], [-e, -e], bias, zp)
        assert (pair_records(rec, bias) is not None) == ok, (e, zp)
    rec = smlal_requant([1 << 30, 0], [-3, -3], bias, 5)  # a constant hi channel
    got = pair_records(rec, bias).reshape(2, 5)
    assert got[1, 0] == 0 and got[1, 1] == 8  # m 0, e 1: shift 0 + 8


def test_pack_layout_and_records():
    """Per group of two pairs, per quad: pair 0 {H0, H2}, pair 1 {H0, H2}, pair 0
    {H1, H3}, pair 1 {H1, H3}; the hi channels' fifth record word is the start."""
    rng = np.random.default_rng(3)
    w = rng.integers(-127, 128, (8, 6)).astype(np.int8)
    halves = pack_conv_pairs(w, 0, np.zeros(8)).view(np.int16)
    p = np.zeros((8, 8), np.int64)
    p[:, :6] = w
    h = 256 * p[1::2] + p[0::2]
    want = []
    for g in range(2):
        for j in range(2):
            for half in ((0, 2), (1, 3)):
                for pr in (2 * g, 2 * g + 1):
                    want += [h[pr, 4 * j + half[0]], h[pr, 4 * j + half[1]]]
    assert halves.tolist() == want
    bias = np.array([5, -7, 2 ** 30, 2 ** 30], np.int64)
    rec = np.arange(20, dtype=np.int32)
    got = pair_records(rec, bias).reshape(4, 5)
    assert got[0, 4] == 4 and got[2, 4] == 14  # lo channels keep theirs
    assert got[1, 4] == 5 - 7 * 256
    assert got[3, 4] == 2 ** 30  # 2^30 + 256 * 2^30 = 257 * 2^30, mod 2^32: 2^30
    assert got[0, :4].tolist() == [0, 1, 2, 3] and got[2, :4].tolist() == [10, 11, 12, 13]
    # hi: m kept, the shift 8 more, R = R hi * 2^32 + R lo times 256 (here 8 * 2^32 + 7 and
    # 18 * 2^32 + 17): low word 7 * 256, high word 8 * 256
    assert got[1, :4].tolist() == [5, 6 + 8, 7 * 256, 8 * 256]
    assert got[3, :4].tolist() == [15, 16 + 8, 17 * 256, 18 * 256]


def test_conv_1x1_pairs_equal_the_numpy_oracle_on_the_host():
    from tests.helpers import kernels_cffi as kf
    rng = np.random.default_rng(4)
    for label, dims, q, x, words, want in _cases():
        d = dict(zip(kf.struct_fields("tinyaot_conv_dims_t"), dims))
        nbytes = kf.buffer_size("tinyaot_convolve_1x1_w8_s8", d)
        assert nbytes == conv_scratch_bytes(1, 1, d["in_c"]), label
        got = kf.convolve_1x1_w8_s8(d, q, x, words, nbytes, rng).reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=label)
        if not label.startswith(("bound", "free")):  # (constant inputs, constant channels)
            assert want.size < 8 or len(np.unique(want)) >= min(want.size // 3, 20), label


@pytest.mark.qemu
def test_conv_1x1_pairs_asm_on_qemu_m4(tmp_path):
    """The same cases through the DSP inline asm (4 quads or more; fewer in C)."""
    require_arm_toolchain()
    from tests.helpers.kernel_firmware import conv_case_c, fast_cases_on_qemu_m4

    cases = _cases()
    src, calls, scratch = [], [], 4
    for i, (_, dims, q, x, words, want) in enumerate(cases):
        src += conv_case_c(i, dims, q, x, words, "int32_t")
        scratch = max(scratch, conv_scratch_bytes(1, 1, x.shape[-1]))
        calls.append(f"    case {i}: return tinyaot_convolve_1x1_w8_s8(&d{i}, &q{i}, x{i}, "
                     f"w{i}, scratch, output);")
    fast_cases_on_qemu_m4(tmp_path, "conv_1x1_pairs", src, calls, scratch,
                          [c[5] for c in cases], [c[0] for c in cases],
                          "tinyaot_convolve_1x1_w8_s8.c",
                          (r"smlad\s+lr, r5, r3, lr", r"bx\s+r2", r"smlal\s+r5, r7"))
