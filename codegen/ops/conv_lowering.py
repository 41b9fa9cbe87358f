"""ONNX attribute and weight checks the conv-like lowerings share (no operator here)."""
from __future__ import annotations

import numpy as np

from .base import Unsupported


def check_weight_q(wt, channel_axis):
    """Symmetric weights, quantized per tensor or along the output channels' axis."""
    if wt.q.per_channel and wt.q.axis != channel_axis:
        raise Unsupported(f"weights quantized along axis {wt.q.axis}, expected {channel_axis}")
    if np.any(wt.q.zero_point != 0):
        raise Unsupported("weights with a non-zero zero point (asymmetric weights)")


def reshape_to_2d(lw, x, name):
    """The activation [N, C, L] as [N, C, 1, L] (a zero-copy reshape emitted once per tensor):
    a 1-D conv runs as a 2-D one of unit height."""
    xt = lw.graph.tensors[x]
    fresh = f"{x}@2d" not in lw.graph.tensors
    x4 = lw.add_int_tensor(f"{x}@2d", xt.shape[:2] + (1, xt.shape[2]), xt.dtype, xt.q)
    if fresh:
        lw.emit("reshape", f"{name}@2d", [x], [x4.name])
    return x4.name

