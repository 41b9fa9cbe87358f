"""The constant operands of the TFLite conv-like builtins (no operator here): the int8
filter of CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV and FULLY_CONNECTED rearranged into the
IR's weight layout, and their int32 bias."""
from __future__ import annotations

import numpy as np

from ..ir import QParams
from .base import Unsupported


def tflite_weights(tl, op, idx, axis_tfl, to_ir, ir_axis):
    """Constant int8 filter idx -> an IR constant (data rearranged by `to_ir`), its
    per-channel scales (TFLite axis `axis_tfl`) along IR axis `ir_axis`."""
    t = tl.tensor(idx)
    data = tl.const(idx, "the filter")
    if t.dtype != "int8":
        raise Unsupported(f"filter '{t.name}' is {t.dtype}; only int8 filters are supported")
    q = tl.qparams(t, "filter")
    if q is None:
        raise Unsupported(f"filter '{t.name}' has no quantization parameters")
    if np.any(q.zero_point != 0):
        raise Unsupported(f"filter '{t.name}' has a non-zero zero point (asymmetric weights)")
    if q.per_channel:
        if q.axis != axis_tfl or q.scale.size != data.shape[axis_tfl]:
            raise Unsupported(f"filter '{t.name}' is quantized along axis {q.axis}, expected "
                              f"{axis_tfl}")
        q = QParams(q.scale, q.zero_point, ir_axis)
    return tl.add_const(f"{tl.names[idx]}@{tl.node_name(op)}", to_ir(data), "int8", q)


def tflite_bias(tl, op, idx, x, w, cout):
    """Constant int32 bias idx (-1: none) of a layer with IR input x and weights w."""
    if idx < 0:
        return None
    t = tl.tensor(idx)
    data = tl.const(idx, "the bias")
    if t.dtype != "int32":
        raise Unsupported(f"bias '{t.name}' is {t.dtype}; only int32 biases are supported")
    if data.size != cout:
        raise Unsupported(f"bias '{t.name}' has {data.size} values for {cout} output channels")
    q = tl.qparams(t, "bias")
    if q is None:  # TFLite adds the raw int32; give it the accumulator's scale
        xq, wq = tl.graph.tensors[x].q, tl.graph.tensors[w].q
        scale = (np.float32(xq.scale[0]) * wq.scale.astype(np.float32)).astype(np.float32)
        q = QParams(scale, np.zeros(scale.size, np.int32), 0 if scale.size > 1 else None)
    elif q.per_channel:
        q = QParams(q.scale, q.zero_point, 0)
    return tl.add_const(f"{tl.names[idx]}@{tl.node_name(op)}",
                        data.reshape(-1).astype(np.int32), "int32", q)


def tflite_window(op):
    """(strides, dilations) of a conv / pool builtin's options."""
    o = op.options
    return ((int(o.get("stride_h", 1)), int(o.get("stride_w", 1))),
            (int(o.get("dilation_h_factor", 1)), int(o.get("dilation_w_factor", 1))))
