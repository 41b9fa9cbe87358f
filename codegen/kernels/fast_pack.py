"""Compile-time weight packing for the fast kernels (runtime_c/include/tinyaot_fast_kernels.h).

Weights are widened to int16 and stored two per int32 word (low half first)
in the order the kernels' inner loops read them.
"""
from __future__ import annotations

import numpy as np

QUAD_ORDER = [0, 2, 1, 3]  # {k0, k2}, {k1, k3}: what SXTAB16 / SXTAB16 ror 8 widen


def _words(pairs_i16):
    """(..., 2) int16 -> (...,) int32 words, element 0 in the low half."""
    a = np.asarray(pairs_i16, dtype=np.int64)
    lo = a[..., 0] & 0xFFFF
    hi = a[..., 1] & 0xFFFF
    u = (hi << 16) | lo
    return np.where(u >= 1 << 31, u - (1 << 32), u).astype(np.int32)


def pack_gemm(w2d, group=2):
    """W[oc][k] int8 -> int32 words [group of rows][quad][row of the group][2];
    the row count is padded with zero rows to a multiple of `group` (2: the
    conv GEMM's channel pairs; 4: tinyaot_fully_connected_fast_s8's groups)."""
    w = np.asarray(w2d, dtype=np.int16)
    oc, k = w.shape
    kp = (k + 3) // 4 * 4
    ocp = (oc + group - 1) // group * group
    p = np.zeros((ocp, kp), dtype=np.int16)
    p[:oc, :k] = w
    p = p.reshape(ocp // group, group, kp // 4, 4)[..., QUAD_ORDER]  # group, r, j, (k0 k2 k1 k3)
    p = p.transpose(0, 2, 1, 3).reshape(ocp // group, kp // 4, group, 2, 2)
    return _words(p).reshape(-1)


# tinyaot_fully_connected_fast_w8_s8: a row pair's hi sum comes out of 32-bit sums as
# (A - S) / 256, so it must lie in [-2^23, 2^23)
FC_PAIR_SUM_BITS = 24


def _pair_halves(w2d, in_zp, bias_hi=None, free_hi=None):
    """W[n][k] int8 -> the row pairs' int16 halfwords H = 256 * w[2p + 1] + w[2p], [pair][k4]
    (an odd N padded with a zero hi row, k with zero columns to a multiple of 4), or None
    when a weight is not an int8 (the kernels read lo as the low byte), an H is outside
    int16 (a hi weight of -128 over a negative lo one), or a hi row's sum over inputs
    x - in_zp (x int8), plus its bias_hi (the start the conv kernel gives it), can leave
    [-2^23, 2^23): the kernels recover it from 32-bit sums as (A - S) / 256. A hi row
    marked in free_hi (its record's multiplier is 0: the output does not depend on the
    sum, fast_pack.smlal_requant) is not bounded."""
    w = np.asarray(w2d, dtype=np.int64)
    n, k = w.shape
    if w.size and (w.min() < -128 or w.max() > 127):  # (w - zp beyond int8: int16 weights)
        return None
    kp = (k + 3) // 4 * 4
    npairs = (n + 1) // 2
    p = np.zeros((2 * npairs, kp), dtype=np.int64)
    p[:n, :k] = w
    h = 256 * p[1::2] + p[0::2]
    if h.min() < -(1 << 15) or h.max() >= 1 << 15:
        return None
    lo, hi = -128 - int(in_zp), 127 - int(in_zp)
    hw = p[1::2]
    b = np.zeros(npairs, np.int64)
    if bias_hi is not None:  # (an odd N's padding hi row has none)
        bh = np.asarray(bias_hi, dtype=np.int64).reshape(-1)
        b[:len(bh)] = bh
    top = np.maximum(hw * lo, hw * hi).sum(axis=1) + b
    bottom = np.minimum(hw * lo, hw * hi).sum(axis=1) + b
    lim = 1 << (FC_PAIR_SUM_BITS - 1)
    bounded = np.ones(npairs, bool)
    if free_hi is not None:
        f = np.zeros(npairs, bool)
        f[:len(free_hi)] = np.asarray(free_hi, bool)
        bounded = ~f
    if np.any((top >= lim) & bounded) or np.any((bottom < -lim) & bounded):
        return None
    return h


def pack_fc_pairs(w2d, in_zp, free=None, bias=None):
    """tinyaot_fully_connected_fast_w8_s8's W[n][k] int8: rows in pairs (lo, hi) = (2p,
    2p + 1) as _pair_halves's H (one byte a weight); int32 words [group of up to 4
    pairs][quad][half][pair] (half 0: {H0, H2}, 1: {H1, H3}, the column's words; the
    order the kernel's asm loads them in three runs of single LDRs), the last group with
    the pairs left. None when _pair_halves refuses the layer (the kernel starts A at lo's
    bias + 256 * hi's: hi's sum is bounded with its bias; free: per row, a record
    multiplier of 0)."""
    b = None if bias is None else np.asarray(bias, dtype=np.int64).reshape(-1)[1::2]
    h = _pair_halves(w2d, in_zp, b, None if free is None else np.asarray(free)[1::2])
    if h is None:
        return None
    npairs, kp = h.shape
    q = h.reshape(npairs, kp // 4, 4)[..., QUAD_ORDER].reshape(npairs, kp // 4, 2, 2)
    parts = [_words(q[g:g + 4].transpose(1, 2, 0, 3)).reshape(-1) for g in range(0, npairs, 4)]
    return np.concatenate(parts)


def split_records(records):
    """smlal_requant's records ({m, e - 1, R lo, R hi, bias} a channel) split for the
    kernels that read headers apart from biases (tinyaot_fully_connected_fast_w8_s8,
    tinyaot_fully_connected_bits_s8): (rq, bias). rq = {step, headers}: the headers
    {m, e - 1, R lo, R hi} a channel in groups of eight and step the words from one
    group's headers to the next: 32, or 0 when every channel has the same header (a
    per-tensor layer: one group of eight serves every group, 4 bytes a channel, the bias,
    where whole records take 20); channel c's header is at rq[1 + step * (c / 8) + 4 *
    (c % 8)]. bias: the fifth words."""
    r = np.asarray(records, dtype=np.int64).reshape(-1, 5)
    heads = r[:, :4]
    if np.all(heads == heads[0]):
        rq = np.concatenate([[0], np.tile(heads[0], 8)])
    else:
        rq = np.concatenate([[32], heads.reshape(-1)])
    return rq.astype(np.int32), r[:, 4].astype(np.int32)


def fc_pair_records(records):
    """tinyaot_fully_connected_fast_w8_s8's requantization: split_records's (rq, bias)
    with the biases as the pairs' starts: per pair of channels (lo, hi) the sums' starts
    {A, S} = {lo's bias + 256 * hi's mod 2^32, lo's bias} (a missing hi, an odd N's last
    pair: bias 0), so that the kernel's asm loads a group's eight with one LDM in the
    order of its sums' registers."""
    rq, b = split_records(records)
    b = b.astype(np.int64)
    if len(b) % 2:
        b = np.concatenate([b, [0]])
    lo, hi = b[0::2], b[1::2]
    a = (lo + 256 * hi) & 0xFFFFFFFF
    starts = np.stack([np.where(a >= 1 << 31, a - (1 << 32), a), lo], axis=1).reshape(-1)
    return rq, starts.astype(np.int32)


def pack_conv_pairs(w2d, in_zp, bias, free=None):
    """tinyaot_convolve_1x1_w8_s8's W[oc][in_c] int8 (oc % 4 == 0): _pair_halves's H with
    hi's sum bounded with its bias (the kernel starts A at it: pair_records); int32 words
    [group of 2 pairs][quad][half][pair] (half 0: {H0, H2}, 1: {H1, H3}). None when
    _pair_halves refuses the layer (free: per channel, a record multiplier of 0)."""
    b = np.asarray(bias, dtype=np.int64).reshape(-1)
    h = _pair_halves(w2d, in_zp, b[1::2], None if free is None else np.asarray(free)[1::2])
    if h is None:
        return None
    npairs, kp = h.shape
    q = h.reshape(npairs // 2, 2, kp // 4, 4)[..., QUAD_ORDER]  # group, pair, quad, (k0 k2 k1 k3)
    q = q.reshape(npairs // 2, 2, kp // 4, 2, 2).transpose(0, 2, 3, 1, 4)  # group quad half pair
    return _words(q).reshape(-1)


# hi's sums in tinyaot_convolve_1x1_w8_s8 (with their biases): [-2^23, 2^23) (_pair_halves)
PAIR_HI_BOUND = 1 << 23


def pair_records(records, bias):
    """One-SMLAL records {m, e - 1, R lo, R hi, bias} of a pair kernel's channels, each hi
    channel's (odd) fifth word replaced by its pair's start, lo's bias + 256 * hi's bias
    mod 2^32 (tinyaot_convolve_1x1_w8_s8 starts A there, S at lo's bias: A - S is then
    256 times hi's sum with its bias), and its requantization scaled to take that A - S
    as it is: R times 256 and the shift 8 more (MBQM's closed form, numerator and
    denominator times 256; the kernel's sign fix for hi 256 times lo's). None when a hi
    channel's scaled R or high word leaves the 64 / 32 bits, or its shift passes 31, for
    some sum within the kernel's bound (then the layer keeps the int16 conv)."""
    r = np.asarray(records, dtype=np.int64).reshape(-1, 5).copy()
    b = np.asarray(bias, dtype=np.int64).reshape(-1)
    start = (b[0::2] + 256 * b[1::2]) & 0xFFFFFFFF
    r[1::2, 4] = np.where(start >= 1 << 31, start - (1 << 32), start)
    for c in range(1, r.shape[0], 2):
        m, sh = int(r[c, 0]), int(r[c, 1])
        big = ((int(r[c, 3]) << 32) | (int(r[c, 2]) & 0xFFFFFFFF)) * 256
        if sh + 8 > 31 or not -(1 << 63) <= big < 1 << 63:
            return None
        for v in (-256 * PAIR_HI_BOUND, 256 * (PAIR_HI_BOUND - 1)):
            for fix in (1, 0):
                if not -(1 << 63) <= big + v * m - fix * (v < 0) * (1 << 39) < 1 << 63:
                    return None
                if not -(1 << 31) <= (big + v * m - fix * (v < 0) * (1 << 39)) >> 32 < 1 << 31:
                    return None
        r[c, :4] = [m, sh + 8, big & 0xFFFFFFFF, big >> 32]
    r = np.where(r >= 1 << 31, r - (1 << 32), r)
    return r.reshape(-1).astype(np.int32)


def pack_conv_gemm(w2d):
    """tinyaot_convolve_fast_s8's W[oc][k]: the first oc // 4 * 4 rows in groups of four,
    int32 words [group][quad][half][row of the group] (half 0: {k0, k2}, 1: {k1, k3}; the
    order the kernel's 4-channel x 2-pixel block reads them), then the oc % 4 rows left as
    pack_gemm's pairs (an odd last row with a zero row)."""
    w = np.asarray(w2d, dtype=np.int16)
    oc, k = w.shape
    g = oc // 4 * 4
    kp = (k + 3) // 4 * 4
    p = np.zeros((g, kp), dtype=np.int16)
    p[:, :k] = w[:g]
    p = p.reshape(g // 4, 4, kp // 4, 4)[..., QUAD_ORDER].reshape(g // 4, 4, kp // 4, 2, 2)
    parts = [_words(p.transpose(0, 2, 3, 1, 4)).reshape(-1)]
    if g < oc:
        parts.append(pack_gemm(w[g:], 2))
    return np.concatenate(parts)


def pack_depthwise(w_tap_c):
    """W[tap][c] int8 (c % 4 == 0) -> int32 words [quad][tap][2]: one channel
    quad's taps are contiguous, so the kernel reaches them by immediate offsets."""
    w = np.asarray(w_tap_c, dtype=np.int16)
    taps, c = w.shape
    p = w.reshape(taps, c // 4, 4)[..., QUAD_ORDER].reshape(taps, c // 4, 2, 2)
    return _words(p.transpose(1, 0, 2, 3)).reshape(-1)


def conv_column_tails(kh, kw, cin):
    """Does a fast-conv column put its window rows' tails (k_w * in_c % 4 values each)
    after all rows, in whole quads, instead of padding each row? When that takes fewer
    quads (im2col_has_tails, runtime_c/src/internal/tinyaot_im2col_q15.h)."""
    t = kw * cin % 4
    return t != 0 and (kh * t + 3) // 4 < kh


def conv_column_k(kh, kw, cin):
    """The padded K of one fast-conv column (4 * im2col_nquads)."""
    row = kw * cin
    if conv_column_tails(kh, kw, cin):
        return kh * (row // 4 * 4) + (kh * (row % 4) + 3) // 4 * 4
    return kh * ((row + 3) // 4 * 4)


def conv_gemm_weights(w_oihw):
    """Conv weights [oc][ic][kh][kw] -> W[oc][k] in the order tinyaot_convolve_fast_s8's
    im2col writes a column: k = (ky, kx, ic), each ky row zero padded to whole quads,
    or (conv_column_tails) each ky row's whole quads row by row, then every row's last
    k_w * in_c % 4 values in ky order, zeros up to a quad; the im2col stores those
    tails in each quad's memory order (tail_put), which pack_gemm's QUAD_ORDER would
    swap, so they are swapped here first."""
    w = np.asarray(w_oihw).transpose(0, 2, 3, 1)  # oc, kh, kw, ic
    oc, kh, kw, ic = w.shape
    rows = w.reshape(oc, kh, kw * ic)
    body = kw * ic // 4 * 4
    k = conv_column_k(kh, kw, ic)
    if not conv_column_tails(kh, kw, ic):
        out = np.zeros((oc, kh, k // kh), dtype=np.int16)
        out[:, :, :kw * ic] = rows
        return out.reshape(oc, k)
    out = np.zeros((oc, k), dtype=np.int16)
    out[:, :kh * body] = rows[:, :, :body].reshape(oc, -1)
    tails = np.zeros((oc, k - kh * body), dtype=np.int16)
    t = rows[:, :, body:].reshape(oc, -1)
    tails[:, :t.shape[1]] = t
    out[:, kh * body:] = tails.reshape(oc, -1, 4)[..., QUAD_ORDER].reshape(oc, -1)
    return out


def conv_scratch_bytes(kh, kw, cin):
    """tinyaot_convolve_fast_s8_get_buffer_size: two int16 columns."""
    return 2 * conv_column_k(kh, kw, cin) * 2


def conv_pixel_pairs(y_shape):
    """Output pixel pairs of a conv (an odd last pixel alone in its pair)."""
    return (int(np.prod(y_shape)) // y_shape[1] + 1) // 2


# tinyaot_convolve_fast_w8_s8's W8_GROUP_QUADS: layers of at least this many quads widen
# their weights four channels at a time (the group loop's), the others two
W8_GROUP_QUADS = 16


def conv_w8_scratch_bytes(w_shape, block_pairs):
    """tinyaot_convolve_fast_w8_s8_get_buffer_size: the two columns of each of block_pairs
    pixel pairs (4 words per quad) and the widened weights of a channel pair (4) or, from
    W8_GROUP_QUADS quads, of a group of four channels (8)."""
    _, cin, kh, kw = w_shape
    nquads = conv_column_k(kh, kw, cin) // 4
    return (block_pairs + 1 + (nquads >= W8_GROUP_QUADS)) * 4 * nquads * 4


def sparse_density(w2d):
    """The share of nonzero weights of W[oc][k]."""
    w = np.asarray(w2d)
    return float(np.count_nonzero(w)) / max(1, w.size)


def pack_sparse(w2d):
    """W[oc][k] int8 -> tinyaot_convolve_sparse_s8's words: per output channel its nonzero
    count, then (w << 16) | k for each nonzero weight, in k order."""
    w = np.asarray(w2d, dtype=np.int64)
    out = []
    for row in w:
        ks = np.flatnonzero(row)
        out.append(len(ks))
        out.extend(((row[ks] & 0xFFFF) << 16 | ks).tolist())
    u = np.array(out, dtype=np.int64)
    return np.where(u >= 1 << 31, u - (1 << 32), u).astype(np.int64)


# tinyaot_convolve_narrow_s8: two output channels per weight word, w0 + w1 * 2^NARROW_SPLIT;
# a window row of at most NARROW_ROW_MAX taps (its unrolled asm row), a window of at most
# NARROW_K_MAX (its edge copies on the stack: 3x3 on RGB is 27, 5x5 on one channel 25).
NARROW_SPLIT = 21
NARROW_ROW_MAX = 16
NARROW_K_MAX = 32


def narrow_fits(w) -> bool:
    """Can tinyaot_convolve_narrow_s8 run conv weights [oc][ic][kh][kw] (int8)? Channel
    quads, the window's limits, and every channel's sum of raw int8 inputs times its
    weights within +-2^20 (128 * sum |w| < 2^20), so the low channel's sum is exact in the
    low NARROW_SPLIT bits of the 64-bit sum (it starts at 2^20). With NARROW_K_MAX = 32
    every int8 window meets the bound (32 * 128 * 128 = 2^19); it guards larger windows."""
    w = np.asarray(w, dtype=np.int64)
    oc, ic, kh, kw = w.shape
    if oc % 4 or kw * ic > NARROW_ROW_MAX or kh * kw * ic > NARROW_K_MAX:
        return False
    return int(np.abs(w).reshape(oc, -1).sum(axis=1).max()) * 128 < 1 << (NARROW_SPLIT - 1)


def pack_narrow(w):
    """Conv weights [oc][ic][kh][kw] -> tinyaot_convolve_narrow_s8's words: per channel
    quad, per tap in window order (row, column, channel), {w[c0] + w[c1] << 21,
    w[c2] + w[c3] << 21} (int64 values within int32)."""
    w = np.asarray(w, dtype=np.int64)
    oc = w.shape[0]
    taps = w.transpose(0, 2, 3, 1).reshape(oc, -1)  # [oc][k], NHWC window order
    pairs = taps[0::2] + taps[1::2] * (1 << NARROW_SPLIT)  # [oc / 2][k]
    return pairs.reshape(oc // 4, 2, -1).transpose(0, 2, 1).reshape(-1)


def fold_input_zero_point(bias, w2d, in_zp):
    """bias - in_zp * sum_k W[oc][k] (int64): the sums of raw input bytes then equal the
    sums of (input - zero point) plus the bias."""
    w = np.asarray(w2d, dtype=np.int64)
    b = np.zeros(w.shape[0], np.int64) if bias is None else np.asarray(bias, np.int64)
    return b - int(in_zp) * w.sum(axis=1)


def fc_scratch_bytes(k):
    """tinyaot_fully_connected_fast_s8_get_buffer_size: one int16 column of K."""
    return (k + 3) // 4 * 4 * 2


def smlal_requant(mult, shift, bias, zp=0, acc_range=None):
    """Per-channel records {mult, e - 1, R low, R high, bias} for the one-SMLAL
    requantization (tinyaot_mbqm_smlal, tinyaot_requant_fast.h), e = -shift in
    [1, 31], R = 2^30 + 2^(30+e) + zp * 2^(31+e): the output zero point zp rides
    in R's high word, since (h + zp * 2^(e-1)) >> (e-1) = (h >> (e-1)) + zp, so
    the kernels add nothing after the shift. That needs h + zp * 2^(e-1) to be an
    int32 for every accumulator v, h the high word of R + v * m - [v < 0] * 2^31:
    v in [-2^31, 2^31), or in acc_range (per channel: the least and the greatest
    accumulator, the bias included) when the caller knows them. A channel whose
    MBQM is one value c over its range (a multiplier 0, or a bias that dwarfs what
    the weights can add) gets mult 0, e 1 and c in R: its output is c + zp. None
    when a channel fits none of this or a multiplier is outside [0, 2^31): the
    kernels then use the general form."""
    m = np.asarray(mult, dtype=np.int64).reshape(-1)
    e = -np.asarray(shift, dtype=np.int64).reshape(-1)
    b = np.broadcast_to(np.asarray(bias, dtype=np.int64), m.shape)
    if m.size == 0 or np.any(m < 0) or np.any(m >= 1 << 31):
        return None
    z = np.broadcast_to(np.asarray(zp, dtype=np.int64), m.shape)  # (one per record: tests)
    if acc_range is None:
        lo, hi = [-(1 << 31)] * m.size, [(1 << 31) - 1] * m.size
    else:
        lo, hi = ([int(v) for v in np.broadcast_to(np.asarray(r, dtype=np.int64), m.shape)]
                  for r in acc_range)
    from ..numerics.tflite_fixedpoint import multiply_by_quantized_multiplier as mbqm

    words = []
    for c in range(m.size):  # Python integers: v * m passes 2^63
        mc, ec, zc = int(m[c]), int(e[c]), int(z[c])
        if mc == 0:
            ec = 1  # MBQM is 0 for any shift
        elif ec < 1 or ec > 31:
            return None
        const = int(mbqm(lo[c], mc, -ec)) if mc else 0
        if const == int(mbqm(hi[c], mc, -ec)):  # (MBQM is monotone in v)
            mc, ec = 0, 1
        r = (1 << 30) + (1 << (30 + ec))
        rhi = (r >> 32) + (const if mc == 0 else 0)
        # the high word over the range, with the zero point in it
        # (and without the sign fix, which kernels drop after a ReLU: up to 1 more)
        h = [(r + v * mc - (1 << 31) * (v < 0) * fix) >> 32 for v in (lo[c], hi[c])
             for fix in (1, 0)]
        if mc and not all(-(1 << 31) <= x + (zc << (ec - 1)) < 1 << 31 for x in h):
            return None
        words.append([mc, ec - 1, r & 0xFFFFFFFF, rhi + (zc << (ec - 1)), int(b[c])])
    words = np.array(words, dtype=np.int64)
    words = np.where(words >= 1 << 31, words - (1 << 32), words)
    return words.astype(np.int32).reshape(-1)


def float_requant(scale, bias):
    """Per-channel records {bias, float32 bits of scale} for onnxruntime's
    requantization in the fast conv / depthwise kernels (TINYAOT_RQ_FLOAT_SAT,
    tinyaot_requant_fast.h): the kernels start each accumulator at the bias
    and read the scale next to it."""
    s = np.ascontiguousarray(np.asarray(scale, dtype=np.float32).reshape(-1))
    b = np.broadcast_to(np.asarray(bias, dtype=np.int32), s.shape)
    return np.stack([b, s.view(np.int32)], axis=1).reshape(-1)


def add_tables(p):
    """tinyaot_add_fast_s8's compile-time tables for tflite Add parameters p
    (numerics/tflite_fixedpoint.py:add_params): for each input, TFLite's
    rescaled value MBQM((x - zp) << left_shift) of every int8 x (they depend on
    x alone), and the output rescale's one-SMLAL record (None if its shift is
    not negative)."""
    from ..numerics import tflite_fixedpoint as tfp

    x = np.arange(-128, 128, dtype=np.int64)
    luts = []
    for zp, m, s in ((p["a_zp"], p["a_mult"], p["a_shift"]), (p["b_zp"], p["b_mult"], p["b_shift"])):
        v = (x - int(zp)) * (1 << int(p["left_shift"]))
        luts.append(np.asarray(tfp.multiply_by_quantized_multiplier_smaller_than_one_exp(
            v, int(m), int(s)), dtype=np.int64).astype(np.int32))
    # (zero point 0: the add kernel folds its own at run time)
    return luts[0], luts[1], smlal_requant([p["out_mult"]], [p["out_shift"]], [0])


def dequant_table(scale, zp):
    """float(x - zp) * scale for x = -128..127 (numerics/ort_float.py:dequantize,
    the same float32 operations): onnxruntime's DequantizeLinear of every int8."""
    from ..numerics import ort_float as of

    return of.dequantize(np.arange(-128, 128), scale, zp)


def _fma_f32_exact(x, y, z):
    """float32 fma(x, y, z) of float32 operands: the exact value, rounded once
    to nearest even (no double rounding), for normal results."""
    from fractions import Fraction

    v = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    if v == 0:
        return np.float32(0.0)
    a = abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length() - 24
    while a / Fraction(2) ** e >= 2 ** 24:
        e += 1
    while a / Fraction(2) ** e < 2 ** 23:
        e -= 1
    q = a / Fraction(2) ** e
    m = q.numerator // q.denominator
    rem = q - m
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and m % 2 == 1):
        m += 1
    r = np.float32(m * 2.0 ** e)  # m <= 2^24: exact
    return -r if v < 0 else r


def ort_add_tables(p, b_broadcast):
    """tinyaot_add_fast_s8's tables (float32 bits, int32 words) for an ort
    Add with parameters p (ops/add.py, as a dict), or None when the kernel must
    keep the reference path. use_float 1 (DequantizeLinear -> Add ->
    QuantizeLinear): each input's dequantized value float(x - zp) * scale
    (numerics/ort_float.py:dequantize, the same float32 operations).
    use_float 2 (MLAS QLinearAdd, numerics/ort_qlinear_add.py): a's value as
    ORT holds it, float(x + u8_shift), and b's inner fma(float(b + u8_shift),
    r_b, fixed), or for a broadcast b MLAS's unfused fold fixed + b * r_b."""
    x = np.arange(-128, 128)
    if p.get("mode", 1) == 1:
        la = dequant_table(p["a_scale"], p["a_zp"])
        lb = dequant_table(p["b_scale"], p["b_zp"])
    else:
        sh = int(p["u8_shift"])
        fx = (x + sh).astype(np.float32)
        fixed, rb, ra = np.float32(p["qlinear_fixed"]), np.float32(p["b_scale"]), np.float32(p["a_scale"])
        la = fx
        if b_broadcast:
            lb = (fixed + (fx * rb).astype(np.float32)).astype(np.float32)
        else:
            lb = np.array([_fma_f32_exact(v, rb, fixed) for v in fx], dtype=np.float32)
        # MLAS turns t >= 2^31 into the low bound; VCVTR would saturate high: keep t small
        if not np.all(np.isfinite(lb)) or \
                np.abs(la).max() * abs(float(ra)) + np.abs(lb.astype(np.float64)).max() >= 2.0 ** 30:
            return None
    return (np.ascontiguousarray(la, dtype=np.float32).view(np.int32),
            np.ascontiguousarray(lb, dtype=np.float32).view(np.int32))



def pack_gemm_fixed(w2d, params):
    """pack_gemm(w, 4) with each group's requantization inline, in the order
    tinyaot_fully_connected_fast_s8 reads it (TINYAOT_FC_FIXED): per group of
    four rows [B0..B3] (its accumulators' start), the group's weights, then
    [M0..M3, R0..R3] (SMMLAR multiplier and addend; ort_requant_fixed.py).
    params: (N, 3) int (B, M, R); the padding rows get zeros."""
    w = np.asarray(w2d)
    n = w.shape[0]
    groups = (n + 3) // 4
    p = np.zeros((groups * 4, 3), dtype=np.int64)
    p[:n] = np.asarray(params, dtype=np.int64)
    p = p.reshape(groups, 4, 3)
    body = pack_gemm(w, 4).reshape(groups, -1)
    out = np.concatenate([p[:, :, 0], body, p[:, :, 1], p[:, :, 2]], axis=1)
    return out.astype(np.int32).reshape(-1)
