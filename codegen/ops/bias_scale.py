"""The int32 bias of a conv / fully-connected layer must have scale s_x * s_w.

Integer kernels (TFLite's, and onnxruntime's QLinearConv / QGemm) add the
int32 bias to the int32 accumulator as it is: that is only the model's
DequantizeLinear(bias) when the bias scale is the accumulator's scale,
s_x * s_w[c] per output channel. `--numerics tflite` assumes it, so a model
whose bias scale differs by more than the float32 rounding of that product
is rejected, naming the node and the bias tensor. (`--numerics ort` needs no
check: onnxruntime either fuses the layer and adds the raw int32 too, or
keeps it in float with the bias's own scale; frontend/ort_facts.py asks which,
and tinyaot follows.)
"""
from __future__ import annotations

import numpy as np

from ..errors import TinyAotError


def check_bias_scale(g, n, in_scale, filter_scales):
    """filter_scales: float32, one per output channel."""
    b = n.inputs[2] if len(n.inputs) > 2 else None
    if not b:
        return
    bt = g.tensors[b]
    if np.any(bt.q.zero_point != 0):
        raise TinyAotError("tflite numerics: the int32 bias must have zero point 0",
                           model=g.source, node=n.name, tensor=b)
    want = np.float64(in_scale) * np.asarray(filter_scales, dtype=np.float64)
    have = np.broadcast_to(bt.q.scale.astype(np.float64), want.shape)
    # one float32 ulp of the product: any correctly rounded float32 product passes
    tol = np.spacing(want.astype(np.float32)).astype(np.float64)
    bad = np.flatnonzero(np.abs(have - want) > tol)
    if bad.size:
        c = int(bad[0])
        raise TinyAotError(
            f"tflite numerics: bias scale {have[c]:.9g} (channel {c}) is not input scale x "
            f"weight scale = {want[c]:.9g}; TFLite adds the int32 bias unscaled, so the result "
            "would not be this model's (requantize the bias with that scale)",
            model=g.source, node=n.name, tensor=b)
