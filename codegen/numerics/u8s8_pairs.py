"""onnxruntime's uint8 x int8 sums on x86-64 without VNNI: int16 pair saturation.

On x86-64 onnxruntime runs a QDQ int8 model's integer layers on uint8 activations (its
QDQS8ToU8 rewrite: u = x + 128) and int8 weights. MLAS's AVX2 and AVX-512BW kernels for
those layers (QGEMM: QGemm, QLinearMatMul, QLinearConv's im2col path; the symmetric conv
kernel: QLinearConv with int8 weights and channel counts it takes) multiply with
VPMADDUBSW, which adds the two products of each pair of adjacent k (k = 2j, 2j + 1 of
the packed K order) into one int16 with signed saturation, before VPMADDWD widens the
pairs to int32. A pair whose sum leaves [-32768, 32767] is clipped, so the int32 sum
differs from the exact one. CPUs with VNNI (VPDPBUSD: AVX-VNNI, AVX512-VNNI) and
onnxruntime on Arm sum exactly, and so does tinyaot: these functions only tell whether
and where the reference saturates, and what it computes then.

K order: QLinearConv runs channels last, each group's K is (ky, kx, c) with c fastest
(im2col, or the symmetric kernel's 4-channel blocks at each kernel position, which give
the same pairs since it needs c % 4 == 0); QGemm / QLinearMatMul's K is the row.
The raw uint8 value of a padded tap is the input zero point (as the kernels read it).
MLAS pads K to a multiple of 4 with zero bytes, so an odd K's last pair is one product.
Depthwise layers (one input and one output channel per group) run MLAS's depthwise
kernels, which widen to 16 / 32 bits first and are exact.
"""
from __future__ import annotations

import numpy as np

I16_MIN, I16_MAX = -32768, 32767
ROWS_PER_CHUNK = 2048  # rows of A per numpy chunk (bounds the [rows, N, K/2] temporary)


def can_saturate(w):
    """False if no uint8 input can saturate a pair of these int8 weights ([N, K]):
    255 * (positive part) and 255 * (negative part) of every pair stay in int16."""
    w = _padded(np.asarray(w, dtype=np.int64))
    pos = np.clip(w, 0, None)
    neg = np.clip(w, None, 0)
    hi = 255 * (pos[:, 0::2] + pos[:, 1::2])
    lo = 255 * (neg[:, 0::2] + neg[:, 1::2])
    return bool(hi.max(initial=0) > I16_MAX or lo.min(initial=0) < I16_MIN)


def pair_delta(a_u8, w):
    """(delta [M, N], saturated pairs) for A [M, K] (raw uint8 values) times W [N, K]
    (int8): delta = sum over pairs of (int16-saturated pair sum - exact pair sum), what
    MLAS's VPMADDUBSW kernels add to the exact int32 sum."""
    a = _padded(np.asarray(a_u8, dtype=np.int64))
    w = _padded(np.asarray(w, dtype=np.int64))
    m, n = a.shape[0], w.shape[0]
    delta = np.zeros((m, n), dtype=np.int64)
    count = 0
    if m == 0 or not can_saturate(w):
        return delta, 0
    we, wo = w[:, 0::2], w[:, 1::2]
    for r in range(0, m, ROWS_PER_CHUNK):
        ae, ao = a[r:r + ROWS_PER_CHUNK, None, 0::2], a[r:r + ROWS_PER_CHUNK, None, 1::2]
        pairs = ae * we[None] + ao * wo[None]  # [rows, N, K/2]
        clipped = np.clip(pairs, I16_MIN, I16_MAX)
        delta[r:r + ROWS_PER_CHUNK] = (clipped - pairs).sum(axis=2)
        count += int(np.count_nonzero(clipped != pairs))
    return delta, count


def _padded(x):
    """x [..., K] with K padded to even by a zero column (MLAS's zero padding of K)."""
    if x.shape[-1] % 2 == 0:
        return x
    return np.concatenate([x, np.zeros(x.shape[:-1] + (1,), dtype=x.dtype)], axis=-1)
