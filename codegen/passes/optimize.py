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
* integer conv (groups 1), depthwise and FC layers that kernel_select gave a
  fast kernel (int16-packed weights, unrolled asm variants) run
  tinyaot_convolve_w8_s8 / tinyaot_depthwise_conv_w8_s8 /
  tinyaot_fully_connected_w8_s8 instead: int8 weights read in place, rows
  reordered at compile time (conv: two int16 columns in the scratch, 2x2
  blocks of SXTB16 + SMLAD; FC: 4 outputs per block; depthwise: 4 channels
  per word); the sums are exact
  integers and the requantization gives tinyaot_requant_channel's results,
  so the outputs are the same;
* Add runs tinyaot_add_s8 without the fast kernel's 256-entry tables
  (ops/add.py).
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
            # dequantized input columns of K floats: 4 pixels (conv), one row (FC)
            cols = 4 if n.op == "conv2d" else 1
            n.attrs["scratch_bytes"] = 4 * cols * int(np.prod(w.shape[1:]))
        elif n.attrs.get("fast_kernel"):
            w = g.tensors[n.inputs[1]]
            kind = n.attrs["int_w8"] = n.attrs.pop("fast_kernel")  # backend/size_kernels.py
            n.attrs.pop("scratch_bytes", None)
            if kind in ("conv", "fc"):  # int16: two im2col columns (conv) or one row (FC)
                k4 = (int(np.prod(w.shape[1:])) + 3) // 4 * 4
                n.attrs["scratch_bytes"] = 2 * k4 * (2 if kind == "conv" else 1)
    return g
