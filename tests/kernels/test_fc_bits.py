"""tinyaot_fully_connected_bits_s8 (--optimize size: weights in 2 to 7 bits, outliers apart;
codegen/kernels/bits_pack.py): the packing read back bit by bit from its description, and
the kernel against the numpy FC oracle (ops/fully_connected.py: fully_connected_int) on the
host under UBSan: widths 2 to 7, fields that cross words, rows with and without outliers,
outliers at -128 and 127, per-tensor and per-channel headers, outputs where the
requantization's sign fix decides, more than one input row; what it cannot do it refuses.
Whole models (ad01 under tflite, its size build) are test_optimize_size's."""
from __future__ import annotations

import numpy as np
import pytest

from codegen.kernels.bits_pack import BitsWeights, pack_bits, smallest, words_per_row
from codegen.kernels.fast_pack import smlal_requant, split_records
from tests.helpers.requant_cases import requant_fields


def _unpack(packed: BitsWeights, n, k):
    """W[n][k] from the module's description: each row's words as one bit string, each
    word's top bit first; field j the b bits from j * b, two's complement; then the
    outliers {k, w} of each row after its count."""
    b, wpr = packed.bits, words_per_row(k, packed.bits)
    words = packed.stream.view(np.uint32).reshape(n, wpr)
    w = np.zeros((n, k), np.int64)
    for r in range(n):
        s = "".join(format(int(x), "032b") for x in words[r])
        for j in range(k):
            f = int(s[j * b:(j + 1) * b], 2)
            w[r, j] = f - (1 << b) if f >> (b - 1) else f
    ol, i = packed.outliers.astype(np.int64), 0
    for r in range(n):
        c = int(ol[i])
        for e in range(c):
            j, v = int(ol[i + 1 + 2 * e]), int(ol[i + 2 + 2 * e])
            assert w[r, j] == 0, "an outlier's field is 0"
            w[r, j] = v - 65536 if v >= 32768 else v
        i += 1 + 2 * c
    assert i == len(ol)
    return w


def _weights(rng, n, k, bits, outliers):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    w = rng.integers(lo, hi + 1, (n, k))
    if outliers:
        m = rng.random((n, k)) < outliers
        w[m] = rng.choice([-128, 127, hi + 1, lo - 1, -100, 90], m.sum())
        w[0, :] = np.clip(w[0, :], lo, hi)  # a row without any
    return w.astype(np.int8)


def test_packing_reads_back():
    rng = np.random.default_rng(3)
    for bits in range(2, 8):
        for n, k in ((3, 1), (2, 31), (4, 33), (5, 64), (2, 97)):
            w = _weights(rng, n, k, bits, 0.05)
            p = pack_bits(w, bits)
            assert p.stream.size == n * words_per_row(k, bits)
            np.testing.assert_array_equal(_unpack(p, n, k), w, err_msg=f"{bits} bits {n}x{k}")


def test_smallest_width():
    rng = np.random.default_rng(4)
    assert smallest(rng.integers(-128, 128, (16, 64)).astype(np.int8)) is None  # int8's own
    w = rng.integers(-8, 8, (16, 64)).astype(np.int8)
    p = smallest(w)
    assert p.bits == 4 and p.nbytes == 16 * 8 * 4 + 2 * 16  # 8 words a row, 16 counts
    w[3, 5] = 100  # one outlier costs 4 bytes, a wider field 64 bits a row
    assert smallest(w).bits == 4
    assert smallest(w.astype(np.int16)) is None


def _layer(rng, rows, k, n, bits, outliers=0.03, per_tensor=False, small=False):
    from codegen.ops.fully_connected import fully_connected_int
    in_zp = int(rng.integers(-128, 128))
    x = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    w = _weights(rng, n, k, bits, outliers)
    q, p = requant_fields(rng, n, in_zp, "tflite")
    if per_tensor:
        p.mult = q["mult"] = np.full(n, q["mult"][0], np.int32)
    if small:  # sums within +-90 at e = 1: the sign fix decides about half the negatives
        x = rng.integers(-8, 9, (rows, k)).astype(np.int8)
        in_zp = q["in_zp"] = p.in_zp = 0
        p.bias = q["bias"] = rng.integers(-20, 21, n).astype(np.int32)
        e = 1
    else:
        acc = (x.astype(np.int64) - in_zp) @ w.astype(np.int64).T + q["bias"]
        e = int(np.ceil(np.log2(max(float(np.abs(acc).max()), 1.0) / 90.0))) + 1
    p.shift = q["shift"] = np.full(n, -min(max(e, 1), 31), np.int32)
    records = smlal_requant(q["mult"], q["shift"], q["bias"], p.out_zp)
    assert records is not None
    q["rq"], q["bias"] = split_records(records)
    assert q["rq"][0] == (0 if per_tensor or n == 1 else 32)
    return q, x, pack_bits(w, bits), fully_connected_int(x, w, p)


def _cases():
    rng = np.random.default_rng(11)
    out = []
    for bits in range(2, 8):
        for rows, k, n in ((1, 640, 9), (2, 37, 5), (1, 1, 3), (3, 128, 16)):
            out.append((f"{bits}b {rows}x{k}x{n}",) + _layer(rng, rows, k, n, bits))
        out.append((f"{bits}b per tensor",) + _layer(rng, 2, 50, 20, bits, per_tensor=True))
        out.append((f"{bits}b no outliers",) + _layer(rng, 1, 70, 6, bits, outliers=0))
    out.append(("e 1",) + _layer(rng, 2, 16, 16, 3, per_tensor=True, small=True))
    out.append(("e 1 per channel",) + _layer(rng, 2, 16, 16, 5, small=True))
    return out


def test_fc_bits_equal_the_numpy_oracle_on_the_host():
    from tests.helpers import kernels_cffi as kf
    rng = np.random.default_rng(2)
    assert kf.kernels().call("tinyaot_fully_connected_bits_s8_get_buffer_size", 37) == 80
    for label, q, x, packed, want in _cases():
        rows, k = x.shape
        n = want.shape[1]
        got = kf.fully_connected_bits_s8(rows, k, n, q, x, packed, rng)
        np.testing.assert_array_equal(got.reshape(rows, n), want, err_msg=label)
        assert want.size < 8 or len(np.unique(want)) >= min(want.size // 3, 8), label


def test_fc_bits_refuse_what_they_cannot_do():
    from tests.helpers import kernels_cffi as kf
    rng = np.random.default_rng(5)
    q, x, packed, _ = _layer(rng, 1, 16, 8, 4)
    for bits in (1, 8):
        with pytest.raises(AssertionError, match="returned -1"):
            kf.fully_connected_bits_s8(1, 16, 8, q, x, BitsWeights(bits, packed.stream,
                                                                   packed.outliers), rng)
    q["act_min"] = -100  # a clamped range: not the saturating one-SMLAL mode
    with pytest.raises(AssertionError, match="returned -1"):
        kf.fully_connected_bits_s8(1, 16, 8, q, x, packed, rng)
