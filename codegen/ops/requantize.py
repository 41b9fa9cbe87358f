"""requantize / clamp: int8 -> int8 with a change of quantization and/or a clamp.

`requantize` is QuantizeLinear(DequantizeLinear(x)) with other parameters; `clamp` is a Relu or
Clip that could not be fused into the op before it (its input is a graph input, a data-movement
op's output, ...). Both run tinyaot_requantize_s8, elementwise and in place:
  mode 0: the clamp alone (same quantization),
  mode 1: onnxruntime's DequantizeLinear -> QuantizeLinear in float32,
  mode 2: TFLite's fixed-point requantization (QuantizeMultiplier of s_in / s_out).
ONNX Relu and Clip are recognised here: after a pending op they become its output clamp.
TFLite RELU and RELU6 are clamps (RELU6 in the input's quantization, as TFLM's kernel), a
QUANTIZE from int8 to int8 a requantize (a QUANTIZE of a float model input is the model's
boundary, frontend/tflite/lower.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..kernels.c_format import c_struct
from ..numerics import ort_float as of
from ..numerics import tflite_fixedpoint as tfp
from ..numerics.quant import act_bounds
from .base import ANY, Op, Pending, Traits, Unsupported


@dataclass
class RequantizeParams:  # tinyaot_requantize_params_t
    CTYPE: ClassVar[str] = "tinyaot_requantize_params_t"
    mode: int  # 0: clamp only, 1: float requantize (ort), 2: fixed point (tflite)
    in_zp: int
    out_zp: int
    act_min: int
    act_max: int
    in_scale: float = 0.0  # mode 1
    out_scale: float = 0.0
    mult: int = 0  # mode 2
    shift: int = 0


def clip_bounds(lw, node, attrs, name):
    """Clip's (min, max) in real units; None where absent."""
    lo = hi = None
    if lw.opset < 11:
        lo = attrs.get("min")
        hi = attrs.get("max")
    else:
        if len(node.input) > 1 and node.input[1]:
            lo = _clip_scalar(lw, node.input[1], name, "Clip min")
        if len(node.input) > 2 and node.input[2]:
            hi = _clip_scalar(lw, node.input[2], name, "Clip max")
    return lo, hi


def _clip_scalar(lw, x, name, what):
    v = np.asarray(lw.const(x, name, what))
    if v.size != 1 or v.dtype.kind not in "fiu":
        raise lw.err(f"{what} must be one number, got shape {list(v.shape)} {v.dtype}",
                     node=name, tensor=x)
    return float(v.reshape(-1)[0])


def lower_relu_clip(lw, node, name, attrs, ins, out, shape):
    """Relu / Clip: the clamp of the pending op it follows, or a clamp of its own."""
    lo, hi = 0.0, None
    if node.op_type == "Clip":
        lo, hi = clip_bounds(lw, node, attrs, name)
    x = ins[0]
    if x in lw.pending and lw.pending[x].fuses_clamp:
        p = lw.pending.pop(x)
        p.tensors.append(x)
    else:  # its own clamp, on the integers behind x or on x quantized later (Deferred)
        p = Pending("clamp", name, [lw.exact_input(x, name)], {}, shape=shape, commutes=ANY)
    if lo is not None:
        p.act_lo = lo if p.act_lo is None else max(p.act_lo, lo)
    if hi is not None:
        p.act_hi = hi if p.act_hi is None else min(p.act_hi, hi)
    lw.pending[out] = p


def tflite_relu(lo, hi, same_q):
    """RELU / RELU6 -> a clamp to [lo, hi] in real units; same_q: TFLM clamps in the
    input's quantization (its RELU6 has no rescaling)."""
    def lower(tl, op):
        x_idx, y_idx = tl.inp(op, 0), op.outputs[0]
        tl.check_int8(op, x_idx, y_idx)
        if same_q and not tl.same_q(x_idx, y_idx):
            raise Unsupported("input and output quantization differ")
        lay = tl.layout_of(x_idx)
        x = tl.act(x_idx, lay)
        tl.emit("clamp", tl.node_name(op), [x], [tl.new_act(y_idx, lay)],
                {"act_lo": lo, "act_hi": hi})
    return lower


def lower_tflite_quantize(tl, op):
    """QUANTIZE of an int8 / uint8 activation: a requantization."""
    x_idx, y_idx = tl.inp(op, 0), op.outputs[0]
    xt, yt = tl.tensor(x_idx), tl.tensor(y_idx)
    if yt.dtype not in ("int8", "uint8"):
        raise Unsupported(f"QUANTIZE to {yt.dtype} is not supported")
    if xt.dtype not in ("int8", "uint8"):
        raise Unsupported(f"QUANTIZE of a {xt.dtype} tensor inside the graph is not supported")
    lay = tl.layout_of(x_idx)
    x = tl.act(x_idx, lay)
    tl.emit("requantize", tl.node_name(op), [x], [tl.new_act(y_idx, lay)],
            {"act_lo": None, "act_hi": None})


class Requantize(Op):
    traits = Traits(layout="elementwise", inplace=(0,))

    def __init__(self, name, onnx=None, tflite=None):
        self.name = name
        self.onnx = onnx or {}
        self.tflite = tflite or {}

    def prepare(self, g, n, numerics):
        x = g.tensors[n.inputs[0]]
        y = g.tensors[n.outputs[0]]
        sx, zx = x.q.scalar()
        sy, zy = y.q.scalar()
        lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
        if x.q.same_as(y.q):
            return RequantizeParams(0, zx, zy, lo, hi)
        if numerics == "ort":
            return RequantizeParams(1, zx, zy, lo, hi, in_scale=sx, out_scale=sy)
        m, s = tfp.quantize_multiplier(float(np.float64(sx) / np.float64(sy)))
        return RequantizeParams(2, zx, zy, lo, hi, mult=m, shift=s)

    def reference(self, g, n, ins, p, numerics):
        x = ins[0]
        if p.mode == 0:
            return np.clip(x.astype(np.int32), p.act_min, p.act_max)
        if p.mode == 1:
            xf = of.dequantize(x, p.in_scale, p.in_zp)
            return of.quantize(xf, p.out_scale, p.out_zp, p.act_min, p.act_max)
        acc = x.astype(np.int32) - p.in_zp
        return tfp.requantize(acc, np.int32(p.mult), np.int32(p.shift), p.out_zp,
                              p.act_min, p.act_max)

    def emit(self, em, lid, n, p, info):
        t = em.g.tensors[n.inputs[0]]
        em.consts.append(c_struct(f"{lid}_p", p))
        info["kernel"] = "tinyaot_requantize_s8"
        em.call("tinyaot_requantize_s8", [str(t.size), f"&{lid}_p", em.ptr(n.inputs[0]),
                                          em.ptr(n.outputs[0])])


OPS = (Requantize("requantize", tflite={"QUANTIZE": lower_tflite_quantize}),
       Requantize("clamp", {"Relu": lower_relu_clip, "Clip": lower_relu_clip},
                  {"RELU": tflite_relu(0.0, None, False), "RELU6": tflite_relu(0.0, 6.0, True)}))
