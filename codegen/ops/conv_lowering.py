"""ONNX attribute and weight checks the conv-like lowerings share (no operator here)."""
from __future__ import annotations

import numpy as np

from ..ir import QParams
from .base import Unsupported


WEIGHT_TYPES = ("int8", "uint8")


def layer_weights(lw, w, channel_axis, name, wide=True):
    """The weights of a conv / fully-connected layer, int8 or uint8 (quantize_static's
    QUInt8 weights), quantized per tensor or along `channel_axis`, any zero point. The
    kernels multiply by symmetric weights, so the zero point is subtracted here: w - zp
    with zero point 0 has the same real values and the same integer products (exact).
    It is stored as int8 when it fits, else (uint8 weights whose zero point is not 128,
    asymmetric int8 weights: values in [-255, 255]) as int16, which the conv / FC
    kernels that widen weights to int16 take as they are; the layers without such a
    kernel run tinyaot_convolve_w16_s8 (ops/conv2d.py). `wide` False (ConvTranspose,
    whose kernels read int8 weights): refused when w - zp does not fit int8.
    -> the IR tensor's name (w itself when already symmetric int8)."""
    wt = lw.graph.tensors[w]
    if wt.q.per_channel and wt.q.axis != channel_axis:
        raise Unsupported(f"weights quantized along axis {wt.q.axis}, expected {channel_axis}")
    zp = wt.q.zero_point.astype(np.int32)
    if wt.dtype == "int8" and not np.any(zp):
        return w
    shape = [1] * wt.data.ndim
    if wt.q.per_channel:
        shape[channel_axis] = -1
    d = wt.data.astype(np.int32) - zp.reshape(shape)
    dtype = "int8" if d.min() >= -128 and d.max() <= 127 else "int16"
    if dtype == "int16" and not wide:
        raise Unsupported(
            f"{wt.dtype} weights '{wt.name}' minus their zero point span [{d.min()}, {d.max()}], "
            "more than int8 holds, and this layer's kernels read int8 weights: quantize the "
            "weights symmetrically (int8 with zero point 0, or uint8 with zero point 128; "
            "quantize_static extra_options WeightSymmetric=True)")
    q = QParams(wt.q.scale, np.zeros_like(wt.q.zero_point, dtype=np.int32), wt.q.axis)
    t = lw.add_int_tensor(f"{w}@{name}", d.shape, dtype, q, np.ascontiguousarray(d.astype(dtype)))
    # the zero point of the weights' int8 form (uint8 weights: w - 128), what onnxruntime's
    # int8-weight kernels pair (reference/x86_saturation.py)
    t.weight_zp = zp.reshape(-1) - (128 if wt.dtype == "uint8" else 0)
    return t.name


def reshape_to_2d(lw, x, name):
    """The activation [N, C, L] as [N, C, 1, L] (a zero-copy reshape emitted once per tensor):
    a 1-D conv runs as a 2-D one of unit height."""
    xt = lw.graph.tensors[x]
    fresh = f"{x}@2d" not in lw.graph.tensors
    x4 = lw.add_int_tensor(f"{x}@2d", xt.shape[:2] + (1, xt.shape[2]), xt.dtype, xt.q)
    if fresh:
        lw.emit("reshape", f"{name}@2d", [x], [x4.name])
    return x4.name

