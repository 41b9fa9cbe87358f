"""The pads of a 2-D window (no operator): ONNX pads / auto_pad (Conv, ConvInteger,
AveragePool, MaxPool) and TFLite SAME / VALID (CONV_2D, DEPTHWISE_CONV_2D, the pools)."""
from __future__ import annotations

import math

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


def tflite_pads(padding, in_hw, kernel, strides, dilations, out_hw):
    """TFLite padding (0 SAME, 1 VALID) -> (top, left, bottom, right), as TFLite's
    ComputePaddingHeightWidth: SAME puts the odd pixel at the bottom / right. The output
    size the file gives must be the one the padding implies."""
    pads = []
    for n, k, s, d, o in zip(in_hw, kernel, strides, dilations, out_hw):
        eff = (k - 1) * d + 1
        want = (n + s - 1) // s if padding == 0 else (n - eff + s) // s
        if o != want:
            raise Unsupported(f"output size {o} does not match {'SAME' if padding == 0 else 'VALID'}"
                              f" padding ({want})")
        total = max((o - 1) * s + eff - n, 0) if padding == 0 else 0
        pads.append((total // 2, total - total // 2))
    return (pads[0][0], pads[1][0], pads[0][1], pads[1][1])
