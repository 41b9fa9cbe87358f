"""Compile-time weights of tinyaot_convolve_winograd_s8: Winograd F(2x2, 3x3) in integers.

The kernel multiplies, per 2x2 output tile and position of its 4x4 transformed input
V = B^T d B, the transformed weights U = G g G^T. G holds halves, so the weights are
transformed with 2G instead (U' = 4 U, integers); the output transform A^T M A is then
exactly 4 times the direct convolution's sum, which the kernel divides out. Matrices as in
Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks" (2016), F(2x2, 3x3).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .fast_pack import pack_gemm

G2 = np.array([[2, 0, 0], [1, 1, 1], [1, -1, 1], [0, 0, 2]], dtype=np.int64)  # 2G
BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.int64)
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.int64)

MAX_IN_C = 192  # the kernel's bound: 9 * in_c * 1020 * 1152 < 2^31


def transform_weights(w_oihw):
    """U' = (2G) g (2G)^T per output and input channel: [oc][ic][4][4] int64."""
    w = np.asarray(w_oihw, dtype=np.int64)
    return np.einsum("ik,ockl,jl->ocij", G2, w, G2)


def fits(w_oihw, cin):
    """Can the kernel run these 3x3 weights exactly (int16 U', int32 sums)?"""
    if cin % 4 or cin > MAX_IN_C:
        return False
    u = np.abs(transform_weights(w_oihw)).max(initial=0)
    return u <= 32767 and 9 * cin * 1020 * int(u) < 1 << 31


def pack_winograd(w_oihw):
    """int32 words: per output channel pair, per position (row-major in the 4x4), the
    fast GEMM's packed quads of U' over the input channels (fast_pack.pack_gemm)."""
    u = transform_weights(w_oihw)
    oc, ic = u.shape[:2]
    pairs = (oc + 1) // 2
    per_pos = [pack_gemm(u[:, :, i, j]).reshape(pairs, -1) for i in range(4) for j in range(4)]
    return np.stack(per_pos, axis=1).reshape(-1)


def scratch_bytes(cin):
    """tinyaot_convolve_winograd_s8_get_buffer_size: one tile pair's transformed input,
    16 positions x cin / 4 quads x 4 words."""
    return 16 * 4 * (cin // 4) * 4


def consume_bands(d):
    """A layer (ConvDims d) run on tinyaot_convolve_winograd_s8 with no scratch of its own, as
    two bands of output rows: [(band dims, input offset, output offset, where the band's
    scratch is: ("output" or "input", byte offset)), ...], or None when the layer is too small.
    The second band starts at the first even output row r0 whose input rows begin at least
    one scratch (s bytes) into the input: its scratch is the input's first s bytes, which no
    row it reads holds. The first band writes the output's rows before r0, which must end
    before the output's last s bytes (from a word boundary): its scratch."""
    s = scratch_bytes(d.in_c)
    row_in, row_out = d.in_w * d.in_c, d.out_w * d.out_c
    tail = (d.out_h * row_out - s) & ~3
    for r0 in range(2, d.out_h, 2):
        iy = r0 - d.pad_top  # the second band's first input row
        if iy * row_in >= s:
            break
    else:
        return None
    if r0 * row_out > tail:
        return None
    return [(replace(d, out_h=r0), 0, 0, ("output", tail)),
            (replace(d, in_h=d.in_h - iy, out_h=d.out_h - r0, pad_top=0), iy * row_in,
             r0 * row_out, ("input", 0))]
