"""tinyaot_fully_connected_fast_w8_s8 (int8 weights, two rows per int16 lane: H = 256 * hi
+ lo; hi's sum recovered as (A - S) / 256) against the numpy oracle of the FC operator
(codegen/ops/fully_connected.py: fully_connected_int, int64 sums, TFLite's requantization),
on the host (portable C, under UBSan) and on qemu-m4 (the DSP inline asm): K not a
multiple of 4, quad counts from 1 to 160 (every count mod 4), N odd, below 8 and not a
multiple of 8 (the pairs after the last whole group of four), rows > 1 (an unaligned
second row), hi sums with their biases at the edge of the kernel's 24-bit bound from both
sides, hi weights of -128, per-channel headers and per-tensor ones (one group of eight
for every group: fast_pack.fc_pair_records). The packing refuses what the kernel cannot
do exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

from codegen.kernels.fast_pack import (fc_pair_records, fc_scratch_bytes, pack_fc_pairs,
                                       smlal_requant)
from tests.helpers.env import require_arm_toolchain
from tests.helpers.requant_cases import requant_fields

# (rows, K, N): quads K/4 = 160 (0 mod 4), 32, 2, 10 (2), 16, 2, 1, 2, 11 (3), 17 (1),
# 36 (0), 9 (1), 5 (1)
SHAPES = [(1, 640, 128), (1, 128, 8), (1, 8, 128), (1, 37, 10), (2, 64, 6), (3, 5, 9),
          (1, 1, 1), (1, 7, 3), (2, 44, 13), (1, 68, 16), (1, 141, 24), (2, 36, 5),
          (2, 18, 20)]


def _layer(rng, rows, k, n, x=None, w=None, in_zp=None, per_tensor=False, bias=None):
    """(q fields, x, w, want): the one-SMLAL records over the whole int8 range, shifts
    chosen so that the outputs spread over int8 (a wrong sum shows), split as the kernel
    reads them; per_tensor: one multiplier for every channel."""
    from codegen.ops.fully_connected import fully_connected_int
    if in_zp is None:
        in_zp = int(rng.integers(-128, 128))
    if x is None:
        x = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    if w is None:
        w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    q, p = requant_fields(rng, n, in_zp, "tflite")
    if bias is not None:
        p.bias = q["bias"] = np.asarray(bias, np.int32)
    if per_tensor:
        p.mult = q["mult"] = np.full(n, q["mult"][0], np.int32)
    acc = (x.astype(np.int64) - in_zp) @ w.astype(np.int64).T + q["bias"]
    e = int(np.ceil(np.log2(max(float(np.abs(acc).max()), 1.0) / 90.0))) + 1
    p.shift = q["shift"] = np.full(n, -min(max(e, 1), 31), np.int32)
    records = smlal_requant(q["mult"], q["shift"], q["bias"], p.out_zp)
    assert records is not None
    packed = pack_fc_pairs(w, in_zp, bias=q["bias"])  # (the channels' biases bound hi's sums)
    q["rq"], q["bias"] = fc_pair_records(records)
    assert q["rq"][0] == (0 if per_tensor or n == 1 else 32)
    return q, x, w, fully_connected_int(x, w, p), packed


# 259 x 127 x 255: the greatest hi sum of the bound cases, 2^23 - 893
EDGE = 259 * 127 * 255


def _cases():
    rng = np.random.default_rng(77)
    out = [(f"{r}x{k}x{n}",) + _layer(rng, r, k, n) for r, k, n in SHAPES]
    out += [(f"{r}x{k}x{n} per tensor",) + _layer(rng, r, k, n, per_tensor=True)
            for r, k, n in SHAPES[::2]]
    # hi sums with their biases at the bound, positive and negative (hi's bias takes it
    # to 2^23 - 1 or -2^23), with the lo rows at their own extremes (their sums are
    # exact int32 anyway)
    k = 259
    for sign, zp, xv in ((1, -128, 127), (-1, -128, 127), (1, 127, -128), (-1, 127, -128)):
        w = rng.integers(-127, 128, (10, k)).astype(np.int8)
        w[1::2] = sign * 127
        w[0::2][:, :5] = -127 * sign
        x = np.full((1, k), xv, np.int8)
        s = sign if zp == -128 else -sign  # the hi sums' sign (x - zp is 255 or -255)
        b = rng.integers(-5000, 5000, 10)
        b[1::2] = (1 << 23) - 1 - EDGE if s > 0 else -(1 << 23) + EDGE
        out.append((f"bound {sign:+d} zp {zp}",) + _layer(rng, 1, k, 10, x, w, zp, bias=b))
    # per tensor at e = 1 (sums within +-90): the sign fix decides about half the
    # negative outputs (the asm's per-tensor requantization folds it into R)
    w = rng.integers(-1, 2, (16, 16)).astype(np.int8)
    x = rng.integers(-8, 9, (2, 16)).astype(np.int8)
    out.append(("per tensor e 1",) + _layer(rng, 2, 16, 16, x, w, 0, per_tensor=True,
                                             bias=rng.integers(-20, 21, 16)))
    # hi weights of -128 over lo weights >= 0 (H = -32768 .. -32641)
    w = rng.integers(-127, 128, (16, 48)).astype(np.int8)
    w[1::2] = -128
    w[0::2] = np.abs(w[0::2])
    out.append(("hi -128",) + _layer(rng, 2, 48, 16, w=w))
    return out


def test_pack_refuses_what_the_kernel_cannot_do_exactly():
    k = 259
    w = np.zeros((2, k + 1), np.int8)
    w[1, :k] = 127
    assert pack_fc_pairs(w, -128) is not None  # 127 x 255 x 259 < 2^23
    edge = (1 << 23) - 1 - EDGE
    assert pack_fc_pairs(w, -128, bias=[0, edge]) is not None  # hi's bias: up to 2^23 - 1
    assert pack_fc_pairs(w, -128, bias=[0, edge + 1]) is None
    assert pack_fc_pairs(w, -128, bias=[1 << 30, edge]) is not None  # (lo's is not bounded)
    assert pack_fc_pairs(-w, -128, bias=[0, -edge - 1]) is not None  # down to -2^23
    assert pack_fc_pairs(-w, -128, bias=[0, -edge - 2]) is None
    w[1, k] = 127
    assert pack_fc_pairs(w, -128) is None  # x 260: past it
    assert pack_fc_pairs(w, 0) is not None  # x - 0 <= 128: 127 x 128 x 260 fits
    w = np.zeros((4, 8), np.int8)
    w[3, 5], w[2, 5] = -128, 0
    assert pack_fc_pairs(w, 0) is not None  # H = -32768
    w[2, 5] = -1
    assert pack_fc_pairs(w, 0) is None  # H = -32769
    w[2, 5], w[1, 2], w[0, 2] = 0, -128, -1  # the first pair's
    assert pack_fc_pairs(w, 0) is None
    wide = np.zeros((2, 4), np.int16)  # weights minus a zero point beyond int8
    wide[0, 1] = 130
    assert pack_fc_pairs(wide, 0) is None


def test_pack_layout():
    """Per group of up to four pairs, per quad, the pairs' {H0, H2}, then their {H1, H3}."""
    rng = np.random.default_rng(5)
    w = rng.integers(-127, 128, (11, 9)).astype(np.int8)  # 6 pairs: groups of 4 and 2
    halves = pack_fc_pairs(w, 0).view(np.int16)
    p = np.zeros((12, 12), np.int64)
    p[:11, :9] = w
    h = 256 * p[1::2] + p[0::2]
    want = []
    for g, np_ in ((0, 4), (4, 2)):
        for j in range(3):
            for half in (0, 1):
                for pr in range(g, g + np_):
                    want += [h[pr, 4 * j + half], h[pr, 4 * j + half + 2]]
    assert halves.tolist() == want


def test_fc_pairs_equal_the_numpy_oracle_on_the_host():
    from tests.helpers import kernels_cffi as kf
    rng = np.random.default_rng(9)
    for label, q, x, w, want, packed in _cases():
        rows, k = x.shape
        n = w.shape[0]
        assert kf.kernels().call("tinyaot_fully_connected_fast_w8_s8_get_buffer_size", k) == \
            fc_scratch_bytes(k)
        got = kf.fully_connected_fast_w8_s8(rows, k, n, q, x, packed, fc_scratch_bytes(k), rng)
        np.testing.assert_array_equal(got.reshape(rows, n), want, err_msg=label)
        # the outputs spread over int8 (a wrong sum changes them, not a saturated end)
        assert want.size < 8 or len(np.unique(want)) >= min(want.size // 3, 20), label


def test_fc_pairs_refuse_other_requantizations():
    from tests.helpers import kernels_cffi as kf
    rng = np.random.default_rng(1)
    q, x, w, _, packed = _layer(rng, 1, 16, 8)
    q["act_min"] = -100  # a clamped range: not the saturating one-SMLAL mode
    with pytest.raises(AssertionError, match="returned -1"):
        kf.fully_connected_fast_w8_s8(1, 16, 8, q, x, packed, fc_scratch_bytes(16), rng)


@pytest.mark.qemu
def test_fc_pairs_asm_on_qemu_m4(tmp_path):
    """The same cases through the DSP inline asm (whole groups of four pairs; the pairs
    left in C); nothing is stored past a case's output."""
    require_arm_toolchain()
    from tests.helpers.kernel_firmware import conv_case_c, fast_cases_on_qemu_m4

    cases = _cases()
    src, calls, scratch = [], [], 4
    for i, (_, q, x, w, want, packed) in enumerate(cases):
        rows, k = x.shape
        src += conv_case_c(i, None, q, x, packed, "int32_t")
        scratch = max(scratch, fc_scratch_bytes(k))
        calls.append(f"    case {i}: return tinyaot_fully_connected_fast_w8_s8({rows}, {k}, "
                     f"{w.shape[0]}, &q{i}, x{i}, w{i}, scratch, output);")
    fast_cases_on_qemu_m4(tmp_path, "fc_pairs", src, calls, scratch, [c[4] for c in cases],
                          [c[0] for c in cases], "tinyaot_fully_connected_fast_w8_s8.c",
                          (r"sxtb16\s+r4, r4", r"smlad\s+lr, r5, r4, lr", r"strd\s+r6, r7",
                           r"ldmia?(\.w)?\s+r0, \{r6, r7, r8, r9, sl, fp, ip, lr\}",
                           r"sbc(\.w)?\s+r7, r5, #0"))


@pytest.mark.shared
def test_every_pair_stream_starts_8_bytes_past_16():
    """The compiler hands the kernel each layer's stream 8 bytes past a 16-byte boundary
    (its array 16-aligned, the pointer FC_PAIR_PAD words in; ops/fully_connected.py): a
    quad's first run of loads then never waits for two flash words of a cache line
    (docs/kernels.md). ad01 under tflite: all ten layers on this kernel."""
    import re
    from codegen.compiler import compile_model
    from tests.helpers.env import shared_model
    src = compile_model(shared_model("ad01")[0], numerics="tflite").module.source
    calls = re.findall(r"tinyaot_fully_connected_fast_w8_s8\((.*)\) != TINYAOT_OK", src)
    assert len(calls) == 10
    for args in calls:
        m = re.search(r"\((\w+_wp) \+ (\d+)\)", args)
        assert m, args
        name, pad = m.group(1), int(m.group(2))
        decl = re.search(rf"const int32_t {name}\[(\d+)\] __attribute__\(\(aligned\((\d+)\)\)\)",
                         src)
        assert decl, name
        assert int(decl.group(2)) % 16 == 0 and (4 * pad) % 16 == 8, (name, decl.group(0), pad)
