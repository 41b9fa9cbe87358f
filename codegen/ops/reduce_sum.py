"""reduce_sum: the int8 sum (TFLite SUM) or mean (TFLite MEAN) over a contiguous run of axes.

TFLite Micro's int8 SUM (reduce_common.cc EvalSumHelper -> reference_ops::
QuantizedMeanOrSum with compute_sum): the raw values summed in int32, then
  out = clamp(MBQM(sum - in_zp * count, M, s) + out_zp, -128, 127),
M, s = QuantizeMultiplier(double(s_in) / double(s_out)) (PrepareMeanOrSumHelper); there is no
fused activation. keep_dims changes the output's shape only. Its int8 MEAN is the same
kernel with 1 / count folded into M (numerics/tflite_fixedpoint.mean_multiplier), also when
the input and output quantization are equal (checked against TFLite Micro's interpreter):
a MEAN over H, W of a 4-D tensor is an avgpool (ops/avgpool.py), any other run of axes
(the channels, the time axis of [N, T, C], ...) is this node with attrs["mean"].
The node works on TFLite's row-major layout (a zero-copy view after a spatial layer), the
input seen as [outer][count][inner]: the reduced axes must be one run (axes of size 1 may
lie anywhere), which covers H, W (global sum pooling), the channels, or everything.
Kernel: tinyaot_reduce_sum_s8.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import TinyAotError
from ..kernels.c_format import c_struct
from ..numerics import tflite_fixedpoint as tfp
from .base import Op, Traits, Unsupported

MAX_COUNT = 1 << 23  # 255 * count stays inside int32


@dataclass
class ReduceSumParams:  # tinyaot_reduce_sum_params_t
    CTYPE: ClassVar[str] = "tinyaot_reduce_sum_params_t"
    in_zp: int
    out_zp: int
    mult: int
    shift: int
    act_min: int
    act_max: int


def sum_view(shape, axes):
    """(outer, count, inner) of reducing `axes` of `shape`, or a reason it cannot (a str)."""
    rank = len(shape)
    red = sorted({a % rank for a in axes if shape[a % rank] != 1}) if rank else []
    if not red:
        return int(np.prod(shape, dtype=np.int64)), 1, 1
    lo, hi = red[0], red[-1]
    kept = [a for a in range(lo, hi + 1) if a not in red and shape[a] != 1]
    if kept:
        return (f"axes {sorted(a % rank for a in axes)} of a {list(shape)} tensor are not one "
                "run of axes")
    prod = lambda s: int(np.prod(s, dtype=np.int64))  # noqa: E731
    return prod(shape[:lo]), prod(shape[lo:hi + 1]), prod(shape[hi + 1:])


def lower_tflite(tl, op, mean=False):
    """SUM (or, from ops/avgpool.py, a MEAN not over H, W) over a run of axes."""
    x_idx, ax_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    xs, ys = tuple(tl.tensor(x_idx).shape), tuple(tl.tensor(y_idx).shape)
    axes = [int(a) for a in np.asarray(tl.const(ax_idx, "the axis")).reshape(-1)]
    if any(not -len(xs) <= a < len(xs) for a in axes):
        raise Unsupported(f"axis {axes} is out of range for a {list(xs)} tensor")
    view = sum_view(xs, axes)
    if isinstance(view, str):
        raise Unsupported(view)
    outer, count, inner = view
    if count > MAX_COUNT:
        raise Unsupported(f"sums {count} elements (at most {MAX_COUNT})")
    if int(np.prod(ys, dtype=np.int64)) != outer * inner:
        raise Unsupported(f"output shape {list(ys)} does not match the reduced input")
    tl.emit("reduce_sum", tl.node_name(op), [tl.act(x_idx, "plain")], [tl.new_act(y_idx)],
            {"view": (outer, count, inner), "mean": bool(mean)})


def reduce_sum(x, view, p):
    """reference_ops::QuantizedMeanOrSum (compute_sum) on x seen as [outer][count][inner]."""
    outer, count, inner = view
    s = np.asarray(x, np.int32).reshape(outer, count, inner).sum(axis=1, dtype=np.int64)
    v = tfp.multiply_by_quantized_multiplier((s - p.in_zp * count).astype(np.int32),
                                             p.mult, p.shift)
    return np.clip(np.asarray(v, np.int64) + p.out_zp, p.act_min, p.act_max).astype(np.int32)


class ReduceSum(Op):
    name = "reduce_sum"
    traits = Traits(layout="row_major")
    tflite = {"SUM": lower_tflite}

    def prepare(self, g, n, numerics):
        what = "MEAN" if n.attrs.get("mean") else "SUM"
        if numerics != "tflite":
            raise TinyAotError(f"{what} is lowered for tflite numerics only", model=g.source,
                               node=n.name)
        x, y = g.tensors[n.inputs[0]], g.tensors[n.outputs[0]]
        sx, zx = x.q.scalar()
        sy, zy = y.q.scalar()
        if n.attrs.get("mean"):
            m, s = tfp.mean_multiplier(sx, sy, n.attrs["view"][1])
        else:
            m, s = tfp.quantize_multiplier(float(np.float64(np.float32(sx)) /
                                                 np.float64(np.float32(sy))))
        if not -31 <= s <= 30:
            raise TinyAotError(f"{what}: input scale / output scale ({float(sx) / float(sy):g}) "
                               "is outside TFLite's fixed-point multiplier range",
                               model=g.source, node=n.name)
        return ReduceSumParams(int(zx), int(zy), int(m), int(s), -128, 127)

    def reference(self, g, n, ins, p, numerics):
        y = reduce_sum(ins[0], n.attrs["view"], p)
        return y.reshape(g.tensors[n.outputs[0]].shape)

    def emit(self, em, lid, n, p, info):
        outer, count, inner = n.attrs["view"]
        em.consts.append(c_struct(f"{lid}_p", p))
        info["kernel"] = "tinyaot_reduce_sum_s8"
        em.call(info["kernel"], [str(outer), str(count), str(inner), f"&{lid}_p",
                                 em.ptr(n.inputs[0]), em.ptr(n.outputs[0])])


OP = ReduceSum()
