"""maxpool: the maximum over 2-D windows of an int8 NCHW tensor (ONNX MaxPool, GlobalMaxPool,
ReduceMax over H, W, TFLite MAX_POOL_2D).

Exact in both numerics: the input's and output's quantization must be equal, so the
maximum of the integers is the integer of the maximum; a fused Relu / Clip clamps it. Where
the ONNX QuantizeLinear after it has other parameters, the front end runs it on the input's
and requantizes after (frontend/qdq_lowering.py); a float result still pending before it (a
Conv's) is quantized with the output's parameters (the maximum commutes with quantization).
"""
from __future__ import annotations

import numpy as np

from ..errors import TinyAotError
from ..numerics.quant import act_bounds
from . import pooling as pl
from .base import Op, Traits


def maxpool(x, attrs, p):
    n, c, h, w, kh, kw, sh, sw, t, l, oh, ow = pl.windows(x, attrs)
    out = np.zeros((n, c, oh, ow), dtype=np.int32)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * sh - t, j * sw - l
            win = x[:, :, max(h0, 0):min(h0 + kh, h), max(w0, 0):min(w0 + kw, w)]
            out[:, :, i, j] = win.max(axis=(2, 3))
    return np.clip(out, p.act_min, p.act_max)


class MaxPool(Op):
    name = "maxpool"
    traits = Traits(layout="spatial")
    onnx = {"MaxPool": pl.lower_max, "GlobalMaxPool": pl.lower_max, "ReduceMax": pl.lower_max}
    tflite = {"MAX_POOL_2D": pl.lower_tflite_pool("maxpool")}

    def prepare(self, g, n, numerics):
        x = g.tensors[n.inputs[0]]
        y = g.tensors[n.outputs[0]]
        if not x.q.same_as(y.q):
            raise TinyAotError("MaxPool input and output quantization differ",
                               model=g.source, node=n.name)
        lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
        return pl.pool_params(g, n, lo, hi, pl.TFLITE_ROUNDED)  # no arithmetic: mode unused

    def reference(self, g, n, ins, p, numerics):
        return maxpool(ins[0], n.attrs, p)

    def emit(self, em, lid, n, p, info):
        pl.emit_pool(em, lid, n, p, info, "tinyaot_maxpool_s8")


OP = MaxPool()
