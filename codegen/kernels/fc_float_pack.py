"""Compile-time data of the float FC kernel (tinyaot_fully_connected_f32_s8):
dequantized weights packed in the order the kernel reads them, the input's
DequantizeLinear as a table, the scratch size."""
from __future__ import annotations

import numpy as np

from ..numerics import ort_float as of
from ..numerics.mlas_fc_order import GEMV4

F32 = np.float32


def pack_fc_float(wf, order):
    """wf [N, K] float32 -> flat float32. GEMV4: blocks of 8 outputs, then one
    of 4 when N % 8 >= 4, each as [k group][output][4] then each output's
    k % 4 tail; leftover outputs row-major. Other orders: row-major."""
    wf = np.asarray(wf, F32)
    if order != GEMV4:
        return wf.reshape(-1)
    n, k = wf.shape
    g4 = k // 4 * 4
    starts = [(o, 8) for o in range(0, n - n % 8, 8)]
    if n % 8 >= 4:
        starts.append((n - n % 8, 4))
    parts = []
    for o, nb in starts:
        blk = wf[o:o + nb]
        parts.append(blk[:, :g4].reshape(nb, k // 4, 4).transpose(1, 0, 2).reshape(-1))
        parts.append(blk[:, g4:].reshape(-1))
    parts.append(wf[n - n % 4:].reshape(-1))
    return np.concatenate(parts).astype(F32)


def input_table(scale, zp):
    """DequantizeLinear of every int8 q, indexed by q's byte ((uint8_t)q)."""
    q = np.arange(256, dtype=np.uint8).view(np.int8)
    return of.dequantize(q, scale, zp).astype(F32)


def fc_float_scratch_bytes(k):
    """tinyaot_fully_connected_f32_s8_get_buffer_size: one dequantized input row."""
    return 4 * int(k)
