"""ONNX attribute and weight checks the conv-like lowerings share (no operator here)."""
from __future__ import annotations

import math

import numpy as np

from .base import Unsupported


def conv_pads(attrs, in_hw, kernel, strides, dil, out_hw):
    """ONNX pads / auto_pad -> (top, left, bottom, right)."""
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", "") or auto is None:
        p = list(attrs.get("pads", (0, 0, 0, 0)))
        if len(p) != 4:
            raise ValueError("pads must have 4 values for 2-D")
        return (int(p[0]), int(p[1]), int(p[2]), int(p[3]))
    if auto == "VALID":
        return (0, 0, 0, 0)
    pads = []
    for i in range(2):
        out = math.ceil(in_hw[i] / strides[i])
        eff_k = (kernel[i] - 1) * dil[i] + 1
        total = max(0, (out - 1) * strides[i] + eff_k - in_hw[i])
        small = total // 2
        big = total - small
        pads.append((big, small) if auto == "SAME_LOWER" else (small, big))
    return (pads[0][0], pads[1][0], pads[0][1], pads[1][1])


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

