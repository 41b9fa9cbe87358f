"""What avgpool and maxpool share (no operator here): the ONNX pooling window, the
kernels' tinyaot_pool_params_t and its C emission.

ONNX AveragePool / MaxPool give a 2-D window (kernel_shape, strides, pads or auto_pad,
count_include_pad); GlobalAveragePool, GlobalMaxPool and ReduceMean over H, W are one window
over the whole plane. Both kernels take one record whose mode field (use_float) says which
arithmetic the average runs; maxpool leaves it 0.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from ..kernels.c_format import c_struct
from .base import SAME, Deferred, Pending, Unsupported
from .conv_pads import conv_pads, tflite_pads
from .onnx_move import integer_sources

# tinyaot_pool_params_t.use_float
TFLITE_ROUNDED = 0  # TFLite AveragePool: the rounded integer mean (also maxpool: unused)
ORT_FLOAT = 1  # onnxruntime's float AveragePool, then QuantizeLinear
TFLITE_MEAN = 2  # TFLite MEAN: (sum - in_zp * count) * multiplier >> shift + bias
ORT_QLINEAR = 3  # onnxruntime's QLinearAveragePool: round(mean / s + zp)


@dataclass
class PoolParams:  # tinyaot_pool_params_t
    CTYPE: ClassVar[str] = "tinyaot_pool_params_t"
    in_h: int
    in_w: int
    c: int
    out_h: int
    out_w: int
    k_h: int
    k_w: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_left: int
    count_include_pad: int
    act_min: int
    act_max: int
    use_float: int  # TFLITE_ROUNDED, ORT_FLOAT, TFLITE_MEAN or ORT_QLINEAR
    in_scale: float = 0.0  # ORT_FLOAT, ORT_QLINEAR
    out_scale: float = 0.0
    in_zp: int = 0
    out_zp: int = 0
    mean_mult: int = 0  # TFLITE_MEAN
    mean_shift: int = 0
    mean_bias: int = 0  # TFLITE_MEAN; ORT_QLINEAR: the uint8 shift of ORT's zero point
    dq_lut: str = "NULL"  # C: the dequantization table (emit), ORT_FLOAT and ORT_QLINEAR


def pool_params(g, n, act_min, act_max, use_float, **quant) -> PoolParams:
    """The record of node n: its geometry from the IR, the rest as given."""
    x = g.tensors[n.inputs[0]]
    y = g.tensors[n.outputs[0]]
    a = n.attrs
    _, c, h, w = x.shape
    _, _, oh, ow = y.shape
    return PoolParams(h, w, c, oh, ow, a["kernel"][0], a["kernel"][1], a["strides"][0],
                      a["strides"][1], a["pads"][0], a["pads"][1],
                      int(a.get("count_include_pad", 0)), act_min, act_max, use_float, **quant)


def lower_window(lw, node, name, attrs, ins, out, shape, x=None):
    """AveragePool / MaxPool / GlobalAveragePool / GlobalMaxPool -> (input, IR attrs) of one
    2-D window; x: the input already resolved (default: the activation behind ins[0])."""
    x = lw.act_input(ins[0], name) if x is None else x
    xs = lw.shape_of(ins[0], name) if isinstance(x, Deferred) else lw.graph.tensors[x].shape
    if len(xs) != 4:
        raise Unsupported("only 2-D pooling is supported")
    if node.op_type == "ReduceMax":  # over H, W with keepdims: a GlobalMaxPool
        if len(ins) > 1 and ins[1]:
            axes = [int(v) for v in np.asarray(lw.const(ins[1], name, "axes")).reshape(-1)]
        else:
            axes = list(attrs.get("axes", []))
        if sorted(a % 4 for a in axes) != [2, 3] or not attrs.get("keepdims", 1):
            raise Unsupported("ReduceMax is supported over H, W of a 4-D tensor, keepdims=1")
    if node.op_type in ("GlobalAveragePool", "GlobalMaxPool", "ReduceMax"):
        k, s, pads = tuple(xs[2:]), (1, 1), (0, 0, 0, 0)
        cip = 0
    else:
        if attrs.get("ceil_mode", 0):
            raise Unsupported("ceil_mode=1 is not supported")
        k = tuple(attrs["kernel_shape"])
        s = tuple(attrs.get("strides", (1, 1)))
        if tuple(attrs.get("dilations", (1, 1))) != (1, 1):
            raise Unsupported("dilated pooling is not supported")
        pads = conv_pads(attrs, xs[2:], k, s, (1, 1), shape[2:])
        cip = int(attrs.get("count_include_pad", 0))
    return x, {"kernel": k, "strides": s, "pads": pads, "count_include_pad": cip}


def lower_pool(kind):
    """The ONNX lowering function of IR op `kind` (avgpool)."""
    def lower(lw, node, name, attrs, ins, out, shape):
        x, a = lower_window(lw, node, name, attrs, ins, out, shape)
        lw.pending[out] = Pending(kind, name, [x], a, shape=shape)
    return lower


def lower_tflite_pool(kind):
    """The TFLite lowering of AVERAGE_POOL_2D / MAX_POOL_2D as IR op `kind`."""
    def lower(tl, op):
        x_idx, y_idx = tl.inp(op, 0), op.outputs[0]
        tl.check_int8(op, x_idx, y_idx)
        xt, yt = tl.tensor(x_idx), tl.tensor(y_idx)
        if len(xt.shape) != 4:
            raise Unsupported("pooling needs a 4-D input")
        o = op.options
        kernel = (int(o.get("filter_height", 1)), int(o.get("filter_width", 1)))
        strides = (int(o.get("stride_h", 1)), int(o.get("stride_w", 1)))
        pads = tflite_pads(o.get("padding", 0), xt.shape[1:3], kernel, strides, (1, 1),
                           yt.shape[1:3])
        a = {"kernel": kernel, "strides": strides, "pads": pads, "count_include_pad": 0,
             **tl.act_attrs(op)}
        x = tl.act(x_idx, "nchw")
        tl.emit(kind, tl.node_name(op), [x], [tl.new_act(y_idx, "nchw")], a)
    return lower


def lower_max(lw, node, name, attrs, ins, out, shape):
    """MaxPool / GlobalMaxPool: the maximum commutes with quantization (it is monotonic), so
    its input may be a float result still pending, or the integers themselves (ONNX
    MaxPool of an int8 tensor: the output keeps the input's quantization)."""
    ints = integer_sources(lw, ins[:1], name)
    if ints is not None:
        x, a = lower_window(lw, node, name, attrs, ins, out, shape, ints[0].name)
        lw.add_int_tensor(out, shape, ints[0].dtype, ints[0].q)
        lw.emit("maxpool", name, [x], [out], a)
        return
    x, a = lower_window(lw, node, name, attrs, ins, out, shape, lw.exact_input(ins[0], name))
    lw.pending[out] = Pending("maxpool", name, [x], a, shape=shape, commutes=SAME)


def windows(x, attrs):
    """Geometry of the pooling windows over NCHW x."""
    n, c, h, w = x.shape
    kh, kw = attrs["kernel"]
    sh, sw = attrs["strides"]
    t, l, b, r = attrs["pads"]
    oh = (h + t + b - kh) // sh + 1
    ow = (w + l + r - kw) // sw + 1
    return n, c, h, w, kh, kw, sh, sw, t, l, oh, ow


def emit_pool(em, lid, n, p, info, kernel, dq_lut=None):
    """`<lid>_p` and the kernel call; dq_lut: the dequantization table's values, if any."""
    if dq_lut is not None:
        p = replace(p, dq_lut=em.const("float", f"{lid}_dq", dq_lut))
    em.consts.append(c_struct(f"{lid}_p", p))
    info["kernel"] = kernel
    em.call(kernel, [f"&{lid}_p", em.ptr(n.inputs[0]), em.ptr(n.outputs[0])])
