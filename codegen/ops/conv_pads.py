"""ONNX pads / auto_pad of a 2-D window: Conv, ConvInteger, AveragePool, MaxPool (no operator)."""
from __future__ import annotations

import math


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
