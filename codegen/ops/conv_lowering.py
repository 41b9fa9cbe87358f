"""ONNX attribute and weight checks the conv-like lowerings share (no operator here)."""
from __future__ import annotations

import numpy as np

from ..ir import QParams
from .base import Unsupported


WEIGHT_TYPES = ("int8", "uint8")


def check_weight_q(wt, channel_axis):
    """Symmetric weights, quantized per tensor or along the output channels' axis."""
    if wt.q.per_channel and wt.q.axis != channel_axis:
        raise Unsupported(f"weights quantized along axis {wt.q.axis}, expected {channel_axis}")
    if np.any(wt.q.zero_point != 0) or wt.dtype != "int8":
        raise Unsupported("weights with a non-zero zero point (asymmetric weights)")


def layer_weights(lw, w, channel_axis, name, data=None):
    """The weights of a conv / fully-connected layer: int8 or uint8 (quantize_static's
    QUInt8 weights), quantized per tensor or along the output channels' axis, any zero
    point. `data`: the values in the layer's own order (default the constant's), the
    channels then along `channel_axis`. When every w - zp fits int8, that is the weight
    (zero point 0: every kernel runs it, exactly); otherwise the integers keep their zero
    point and the layer runs a kernel that subtracts it (conv2d / fully_connected select).
    -> the IR tensor's name."""
    wt = lw.graph.tensors[w]
    if wt.q.per_channel and wt.q.axis != channel_axis:
        raise Unsupported(f"weights quantized along axis {wt.q.axis}, expected {channel_axis}")
    own = data is not None
    data = np.asarray(wt.data if data is None else data)
    zp = wt.q.zero_point.astype(np.int32)
    if not np.any(zp) and wt.dtype == "int8" and not own:
        return w
    shape = [1] * data.ndim
    if wt.q.per_channel:
        shape[channel_axis] = -1
    d = data.astype(np.int32) - zp.reshape(shape)
    if d.min() >= -128 and d.max() <= 127:  # w - zp as int8: the symmetric form, exact
        q = QParams(wt.q.scale, np.zeros_like(wt.q.zero_point, dtype=np.int32), wt.q.axis)
        return lw.add_int_tensor(f"{w}@{name}", d.shape, "int8", q,
                                 np.ascontiguousarray(d.astype(np.int8))).name
    if not own:
        return w
    return lw.add_int_tensor(f"{w}@{name}", data.shape, wt.dtype, wt.q,
                             np.ascontiguousarray(data)).name


def weight_zero_points(w, cout):
    """The weights' zero point per output channel (int32 [cout]), all 0 when symmetric."""
    return np.broadcast_to(w.q.zero_point.astype(np.int32), (cout,)).copy()


def weight_values(w):
    """w - zero point (int32), the channels along axis 0: what the layer multiplies by."""
    shape = [-1] + [1] * (w.data.ndim - 1)
    return w.data.astype(np.int32) - weight_zero_points(w, w.shape[0]).reshape(shape)


def reshape_to_2d(lw, x, name):
    """The activation [N, C, L] as [N, C, 1, L] (a zero-copy reshape emitted once per tensor):
    a 1-D conv runs as a 2-D one of unit height."""
    xt = lw.graph.tensors[x]
    fresh = f"{x}@2d" not in lw.graph.tensors
    x4 = lw.add_int_tensor(f"{x}@2d", xt.shape[:2] + (1, xt.shape[2]), xt.dtype, xt.q)
    if fresh:
        lw.emit("reshape", f"{name}@2d", [x], [x4.name])
    return x4.name

