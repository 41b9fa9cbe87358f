"""onnxruntime's float fully connected layer (Gemm / MatMul), bit for bit.

ORT 1.32 on x86-64 runs a float Gemm/MatMul through MlasGemm (sgemm.cpp);
which MLAS kernel sums the products -- and so the rounding order -- depends
on the row count M of the activation, on transB and on N:

* "gemv4" -- M == 1, B not transposed (MatMul, Gemm transB=0; MLAS M1
  kernel): C starts as the bias (Gemm beta=1; +0 without one), then k in
  groups of 4, 2, 1: part = ((p0 + p1) + p2) + p3 with every product
  rounded (no fma), C = part + C.
* "lanes8" -- M == 1 with transB=1 (MLAS M1 TransposeB kernel), or N == 1
  with B not transposed (MLAS swaps A and B into the same kernel): 8 lanes,
  lane j sums round(x * w) over k = j mod 8 from +0; then a reduction tree
  whose shape depends on the output's place in blocks of 4 (then a 2 and a
  1 remainder) of the outputs (rows when N == 1); then + bias.
* "kblock" -- otherwise (M > 1): the general SGEMM, fma chains from zero
  over K in blocks (StrideK: 128, doubled while StrideN (128) > 16 and
  StrideN / 2 >= N, when N < K), each block's sum added to C, C starting
  as the bias. Single-threaded: ORT's thread split of N can change StrideK.
"""
from __future__ import annotations

import numpy as np

from .ort_float import fma_f32

F32 = np.float32

GEMV4, LANES8, KBLOCK = "gemv4", "lanes8", "kblock"
ORDER_CODE = {GEMV4: 0, LANES8: 1, KBLOCK: 2}  # tinyaot_float_fc_t.order


def mlas_order(m, n, k, trans_b):
    """(order, k_block) of MlasGemm for an [m, k] x [k, n] product."""
    if m == 1:
        return (LANES8 if trans_b else GEMV4), k
    if n == 1 and not trans_b:
        return LANES8, k
    stride_n, stride_k = 128, 128
    if n < k:
        while stride_n > 16 and stride_n // 2 >= n:
            stride_n //= 2
            stride_k *= 2
    return KBLOCK, min(stride_k, k)


def _gemv4(xf, wf, bias):
    """xf [K], wf [N, K] -> [N]."""
    k = xf.shape[0]
    total = bias.astype(F32).copy()
    c = 0
    for size in [4] * (k // 4) + [2] * (k % 4 // 2) + [1] * (k % 2):
        part = (xf[c] * wf[:, c]).astype(F32)
        for d in range(c + 1, c + size):
            part = (part + (xf[d] * wf[:, d]).astype(F32)).astype(F32)
        total = (part + total).astype(F32)
        c += size
    return total


def _lanes(xf, wf):
    """[R, K] x [R, K] elementwise -> [R, 8] lane sums of rounded products."""
    lanes = np.zeros((xf.shape[0], 8), F32)
    for k in range(xf.shape[1]):
        p = (xf[:, k] * wf[:, k]).astype(F32)
        lanes[:, k % 8] = (lanes[:, k % 8] + p).astype(F32)
    return lanes


def _add(*v):
    out = v[0]
    for x in v[1:]:
        out = F32(out + x)
    return out


def reduce_lanes(lane, pos, count):
    """MLAS M1 TransposeB reduction of one output's 8 lanes; the tree depends on
    whether output `pos` of `count` is in a block of 4, the 2- or the 1-remainder."""
    a = [F32(v) for v in lane]
    if pos < count - count % 4:     # 4-output block: transposed, adds down the rows
        return F32(_add(a[0], a[1], a[2], a[3]) + _add(a[4], a[5], a[6], a[7]))
    if count % 4 >= 2 and pos < count - count % 2:  # pair: unpck adds, then halves
        return F32(_add(a[0] + a[2], a[4] + a[6]) + _add(a[1] + a[3], a[5] + a[7]))
    return F32(_add(a[0] + a[1], a[2] + a[3]) + _add(a[4] + a[5], a[6] + a[7]))  # hadd twice


def _kblock(xf, wf, bias, block):
    """xf [M, K], wf [N, K] -> [M, N]: fma chain per K block, added onto C = bias."""
    m, k = xf.shape
    total = np.broadcast_to(bias.astype(F32), (m, wf.shape[0])).copy()
    for k0 in range(0, k, block):
        part = np.zeros_like(total)
        for kk in range(k0, min(k, k0 + block)):
            part = fma_f32(part, xf[:, kk:kk + 1], wf[:, kk][None])
        total = (part + total).astype(F32)
    return total


def fc_float(xf, wf, bias, order, k_block):
    """float32 [M, N] of ORT's Gemm(xf [M, K], wf [N, K]^T) + bias in MLAS order."""
    xf = np.asarray(xf, F32)
    wf = np.asarray(wf, F32)
    bias = np.asarray(bias, F32)
    m, n = xf.shape[0], wf.shape[0]
    if order == GEMV4:
        return np.stack([_gemv4(xf[r], wf, bias) for r in range(m)])
    if order == LANES8:
        out = np.zeros((m, n), F32)
        if m == 1:
            lanes = _lanes(np.broadcast_to(xf, wf.shape), wf)
            for j in range(n):
                out[0, j] = F32(reduce_lanes(lanes[j], j, n) + bias[j])
        else:  # N == 1: the rows take the outputs' place
            lanes = _lanes(xf, np.broadcast_to(wf, xf.shape))
            for r in range(m):
                out[r, 0] = F32(reduce_lanes(lanes[r], r, m) + bias[0])
        return out
    return _kblock(xf, wf, bias, k_block)
