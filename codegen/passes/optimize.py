"""--optimize speed|size: what the compiler trades for flash.

speed (the default) keeps kernel selection as it is: the fast integer kernels
(int16-packed weights, unrolled asm variants) and, under `--numerics ort`,
float weights dequantized at compile time (4 bytes each) for the layers ORT
runs in float.

size keeps every weight as its int8 byte in flash:
* ORT's float conv / Gemm layers run tinyaot_convolve_f32_w8_s8 /
  tinyaot_fully_connected_f32_w8_s8: the same MLAS summation order, weights
  dequantized as they are read (float(q) * scale is exactly DequantizeLinear's
  float32, so the bits equal the speed kernels' and onnxruntime's);
* integer conv / depthwise / FC layers use the portable kernels
  (tinyaot_convolve_s8, tinyaot_depthwise_conv_s8, tinyaot_fully_connected_s8:
  int8 weights, one small loop) instead of the fast ones, with the same
  requantization (tinyaot_requant_channel).
Both cost instructions; the report and `tinyaot profile` give how many.
"""
from __future__ import annotations

import numpy as np

from ..errors import TinyAotError

OPTIMIZE = ("speed", "size")


def check_optimize(value):
    if value not in OPTIMIZE:
        raise TinyAotError(f"unknown --optimize '{value}' (choose from {', '.join(OPTIMIZE)})")
    return value


def optimize_for_size(g):
    """Re-select kernels for the smallest flash (after passes/kernel_select.py)."""
    for n in g.nodes:
        if n.op in ("conv2d", "fully_connected") and n.attrs.get("ort_float"):
            w = g.tensors[n.inputs[1]]
            n.attrs["f32_w8"] = True  # backend/size_kernels.py
            # one dequantized input column (conv) or row (FC) of K floats
            n.attrs["scratch_bytes"] = 4 * int(np.prod(w.shape[1:]))
        elif n.attrs.pop("fast_kernel", None) is not None:
            n.attrs.pop("scratch_bytes", None)  # the portable kernels need none
    return g
