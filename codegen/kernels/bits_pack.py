"""Weights in fewer than eight bits for --optimize size (tinyaot_fully_connected_bits_s8).

Trained int8 weights crowd around zero: most of a layer fits in fewer bits, a few
outliers do not (ad01's first layer: 99.0 % of its weights in [-32, 31]). A layer
is stored as one width b for all its weights plus a list of the outliers:

  stream: per row n, ceil(K * b / 32) uint32 words, read from each word's top bit down:
          weight k is the b-bit two's-complement field whose top bit is bit k * b of the
          row counted that way (a field may cross into the next word; the kernel then
          takes one arithmetic shift to sign-extend it), 0 where the weight is an outlier;
  outliers: per row, its count c, then c pairs {k, w} (uint16 each, w as int16).

The sum is exact: the stream's weights plus the outliers' are the int8 weights.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# the widths tried; 8 is the plain int8 layer (no packing)
WIDTHS = range(2, 8)


@dataclass
class BitsWeights:
    bits: int
    stream: np.ndarray    # int32 words (the C array's type; uint32 in the kernel)
    outliers: np.ndarray  # uint16

    @property
    def nbytes(self) -> int:
        return 4 * self.stream.size + 2 * self.outliers.size


def words_per_row(k: int, bits: int) -> int:
    return (k * bits + 31) // 32


def pack_bits(w2d, bits: int) -> BitsWeights:
    """W[n][k] int8 in `bits` bits a weight (the module's layout)."""
    w = np.asarray(w2d, dtype=np.int64)
    n, k = w.shape
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    out = (w < lo) | (w > hi)
    field = np.where(out, 0, w) & ((1 << bits) - 1)
    wpr = words_per_row(k, bits)
    stream = np.zeros((n, wpr), dtype=np.uint64)
    for j in range(k):  # each field's bits into the words it spans, the top bit first
        pos = j * bits
        word, off = pos // 32, pos % 32
        f = field[:, j].astype(np.uint64)
        if off + bits <= 32:
            stream[:, word] |= f << np.uint64(32 - off - bits)
        else:
            stream[:, word] |= f >> np.uint64(off + bits - 32)
            stream[:, word + 1] |= (f << np.uint64(64 - off - bits)) & np.uint64(0xFFFFFFFF)
    outliers = []
    for r in range(n):
        ks = np.flatnonzero(out[r])
        outliers.append(len(ks))
        for j in ks:
            outliers += [int(j), int(w[r, j]) & 0xFFFF]
    s = stream.reshape(-1).astype(np.int64)
    return BitsWeights(bits, np.where(s >= 1 << 31, s - (1 << 32), s).astype(np.int32),
                       np.asarray(outliers, dtype=np.uint16))


def smallest(w2d):
    """The BitsWeights of the width that stores W[n][k] in the fewest bytes, or None when
    none is smaller than one byte a weight (then the int8 kernels keep the layer). K must
    index within uint16."""
    w = np.asarray(w2d)
    if w.dtype != np.int8 or w.ndim != 2 or w.shape[1] > 0xFFFF:
        return None
    n, k = w.shape
    a = w.astype(np.int64)
    best, best_bytes = None, n * k
    for bits in WIDTHS:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        nout = int(((a < lo) | (a > hi)).sum())
        nbytes = 4 * n * words_per_row(k, bits) + 2 * (n + 2 * nout)
        if nbytes < best_bytes:
            best, best_bytes = bits, nbytes
    return None if best is None else pack_bits(w, best)
