"""avgpool: the average over 2-D windows of an int8 NCHW tensor.

ONNX AveragePool, GlobalAveragePool and ReduceMean over H, W (keepdims) between
DequantizeLinear and QuantizeLinear. What is averaged how, per numerics:
  ort     onnxruntime's float AveragePool (a float32 sum in window order, / count, then
          QuantizeLinear), or its QLinearAveragePool where ORT fuses the group
          (frontend/ort_facts.py: ort_qlinear; it rounds after adding the zero point);
          a ReduceMean is ORT's float ReduceMean (Eigen's summation order) on its own
          kernel, tinyaot_reduce_mean_hw_f32_s8;
  tflite  TFLite's AveragePool (integer sum, rounded division) when the input and output
          quantization are equal and the node is not a ReduceMean, else TFLite Micro's MEAN
          over H, W (reference_ops::QuantizedMeanOrSum, what the converter writes for a
          global average): MBQM(sum - in_zp * count, multiplier, shift) + out_zp, with
          1 / count folded into the multiplier (numerics/tflite_fixedpoint.mean_multiplier).
TFLite AVERAGE_POOL_2D and MEAN over H, W are lowered here too.
"""
from __future__ import annotations

import numpy as np

from ..errors import TinyAotError
from ..kernels import specialize as spec
from ..kernels.c_format import c_struct
from ..kernels.fast_pack import dequant_table
from ..numerics import ort_float as of
from ..numerics import tflite_fixedpoint as tfp
from ..numerics.quant import act_bounds
from . import pooling as pl
from .base import Op, Pending, Traits, Unsupported, layer_mode
from .reduce_sum import lower_tflite as lower_reduce_tflite
from .requantize import RequantizeParams

F32 = np.float32


def lower_reduce_mean(lw, node, name, attrs, ins, out, shape):
    """ReduceMean over H, W with keepdims: one window over the whole plane."""
    x = lw.act_input(ins[0], name)
    xs = lw.graph.tensors[x].shape
    if len(ins) > 1 and ins[1]:
        axes = [int(v) for v in np.asarray(lw.const(ins[1], name, "axes")).reshape(-1)]
    else:
        axes = list(attrs.get("axes", []))
    if len(xs) != 4 or sorted(a % 4 for a in axes) != [2, 3] or not attrs.get("keepdims", 1):
        raise Unsupported("ReduceMean is supported over H, W of a 4-D tensor, keepdims=1")
    a = {"kernel": tuple(xs[2:]), "strides": (1, 1), "pads": (0, 0, 0, 0),
         "count_include_pad": 0, "reduce_mean": True}
    lw.pending[out] = Pending("avgpool", name, [x], a, shape=shape)


def lower_tflite_mean(tl, op):
    """MEAN over H, W of a 4-D NHWC tensor (keep_dims or not): one window over the plane;
    over any other run of axes, ops/reduce_sum.py's node (the same TFLite arithmetic)."""
    x_idx, ax_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    xt, yt = tl.tensor(x_idx), tl.tensor(y_idx)
    axes = sorted(int(a) % max(len(xt.shape), 1)
                  for a in np.asarray(tl.const(ax_idx, "the axis")).reshape(-1))
    if len(xt.shape) != 4 or axes != [1, 2]:
        lower_reduce_tflite(tl, op, mean=True)
        return
    n, h, w, c = xt.shape
    a = {"kernel": (h, w), "strides": (1, 1), "pads": (0, 0, 0, 0), "count_include_pad": 0,
         "reduce_mean": True, "act_lo": None, "act_hi": None}
    if tuple(yt.shape) not in ((n, 1, 1, c), (n, c)):
        raise Unsupported(f"MEAN output shape {list(yt.shape)} is not [N, C] or [N, 1, 1, C]")
    x = tl.act(x_idx, "nchw")
    if len(yt.shape) == 4:
        tl.emit("avgpool", tl.node_name(op), [x], [tl.new_act(y_idx, "nchw")], a)
        return
    y = tl.new_act(y_idx)
    y4 = tl.like(y, (n, c, 1, 1), f"{y}@nchw")
    tl.emit("avgpool", tl.node_name(op), [x], [y4], a)
    tl.emit("reshape", f"{tl.node_name(op)}@squeeze", [y4], [y])


def eigen_sum_f32(v):
    """Eigen's vectorized float sum (redux_vec_linear, 4-float packets, SSE / NEON),
    as onnxruntime's ReduceMean/ReduceSum run it on a contiguous row: two packet
    accumulators over 8-element steps, one more packet, a horizontal
    (a0 + a2) + (a1 + a3), then the scalar tail in order."""
    v = np.asarray(v, dtype=F32)
    n = v.shape[-1]
    if n < 4:
        s = v[..., 0]
        for i in range(1, n):
            s = (s + v[..., i]).astype(F32)
        return s
    a1, a2 = n // 4 * 4, n // 8 * 8
    p0 = v[..., 0:4]
    if a1 > 4:
        p1 = v[..., 4:8]
        for i in range(8, a2, 8):
            p0 = (p0 + v[..., i:i + 4]).astype(F32)
            p1 = (p1 + v[..., i + 4:i + 8]).astype(F32)
        p0 = (p0 + p1).astype(F32)
        if a1 > a2:
            p0 = (p0 + v[..., a2:a2 + 4]).astype(F32)
    s = ((p0[..., 0] + p0[..., 2]).astype(F32) + (p0[..., 1] + p0[..., 3]).astype(F32)).astype(F32)
    for i in range(a1, n):
        s = (s + v[..., i]).astype(F32)
    return s


def reduce_mean_hw_ort(x, p):
    """onnxruntime's float ReduceMean over H, W (DQ -> ReduceMean -> Q), x NCHW."""
    n, c, h, w = x.shape
    xf = of.dequantize(x, p.in_scale, p.in_zp).reshape(n, c, h * w)
    mean = (eigen_sum_f32(xf) / F32(h * w)).astype(F32)
    y = of.quantize(mean, p.out_scale, p.out_zp, p.act_min, p.act_max)
    return y.reshape(n, c, 1, 1)


def avgpool(x, attrs, p):
    """The average of every window of NCHW x, as p.use_float says."""
    n, c, h, w, kh, kw, sh, sw, t, l, oh, ow = pl.windows(x, attrs)
    out = np.zeros((n, c, oh, ow), dtype=np.int32)
    cip = attrs.get("count_include_pad", 0)
    ort = p.use_float in (pl.ORT_FLOAT, pl.ORT_QLINEAR)
    if ort:
        xf = of.dequantize(x, p.in_scale, p.in_zp)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * sh - t, j * sw - l
            ha, hb = max(h0, 0), min(h0 + kh, h)
            wa, wb = max(w0, 0), min(w0 + kw, w)
            count = kh * kw if cip else (hb - ha) * (wb - wa)
            if ort:
                # ORT's float pooling: sequential float32 sum over the window, / count.
                acc = np.zeros((n, c), dtype=F32)
                for y in range(ha, hb):
                    for z in range(wa, wb):
                        acc = (acc + xf[:, :, y, z]).astype(F32)
                mean = (acc / F32(count)).astype(F32)
                if p.use_float == pl.ORT_QLINEAR:  # QLinearAveragePool: nearbyintf(mean / s + zp)
                    zr = p.out_zp + p.mean_bias
                    v = np.rint((mean / F32(p.out_scale)).astype(F32) + F32(zr)) - p.mean_bias
                    out[:, :, i, j] = np.clip(v, p.act_min, p.act_max)
                    continue
                out[:, :, i, j] = of.quantize(mean, p.out_scale, p.out_zp, p.act_min, p.act_max)
            else:
                s = x[:, :, ha:hb, wa:wb].astype(np.int32).sum(axis=(2, 3))
                if p.use_float == pl.TFLITE_MEAN:  # TFLite MEAN: rescale the sum less the zps
                    v = tfp.multiply_by_quantized_multiplier(s - p.in_zp * count, p.mean_mult,
                                                             p.mean_shift)
                    v = v + p.mean_bias
                else:
                    v = tfp.avgpool_round(s, count)
                out[:, :, i, j] = np.clip(v, p.act_min, p.act_max)
    return out


class AvgPool(Op):
    name = "avgpool"
    traits = Traits(layout="spatial")
    onnx = {"AveragePool": pl.lower_pool("avgpool"), "GlobalAveragePool": pl.lower_pool("avgpool"),
            "ReduceMean": lower_reduce_mean}
    tflite = {"AVERAGE_POOL_2D": pl.lower_tflite_pool("avgpool"), "MEAN": lower_tflite_mean}

    def prepare(self, g, n, numerics):
        x = g.tensors[n.inputs[0]]
        y = g.tensors[n.outputs[0]]
        sx, zx = x.q.scalar()
        sy, zy = y.q.scalar()
        lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
        if numerics == "ort" and n.attrs.get("reduce_mean"):  # tinyaot_reduce_mean_hw_f32_s8
            return RequantizeParams(1, zx, zy, lo, hi, in_scale=sx, out_scale=sy)
        if numerics == "ort":
            if n.attrs.get("ort_qlinear"):  # frontend/ort_facts.py: round(mean / s + zp)
                # the zero point ORT's kernel adds: uint8 (int8 + 128) if it ran on uint8
                bias = int(n.attrs.get("ort_zp_shift", 0)) or int(getattr(y, "zp_shift", 0))
                return pl.pool_params(g, n, lo, hi, pl.ORT_QLINEAR, in_scale=sx, out_scale=sy,
                                      in_zp=zx, out_zp=zy, mean_bias=bias)
            return pl.pool_params(g, n, lo, hi, pl.ORT_FLOAT, in_scale=sx, out_scale=sy,
                                  in_zp=zx, out_zp=zy)
        p = pl.pool_params(g, n, lo, hi, pl.TFLITE_ROUNDED, in_zp=zx, out_zp=zy)
        if not x.q.same_as(y.q) or n.attrs.get("reduce_mean"):
            # TFLite has no rescaling AveragePool; the converter emits MEAN over H, W, whose
            # int8 kernel (reference_ops::QuantizedMeanOrSum) rescales, also when the
            # quantization is the same
            a = n.attrs
            if tuple(a["kernel"]) != tuple(x.shape[2:]) or any(a["pads"]):
                raise TinyAotError("tflite numerics: AveragePool with different input and "
                                   "output quantization must be global (TFLite MEAN)",
                                   model=g.source, node=n.name)
            p.use_float = pl.TFLITE_MEAN
            p.mean_bias = int(zy)  # the kernel subtracts in_zp * count from the sum first
            p.mean_mult, p.mean_shift = tfp.mean_multiplier(sx, sy, x.shape[2] * x.shape[3])
        if n.attrs.get("count_include_pad"):
            raise TinyAotError("tflite numerics: AveragePool with count_include_pad=1",
                               model=g.source, node=n.name)
        return p

    def reference(self, g, n, ins, p, numerics):
        if isinstance(p, RequantizeParams):  # onnxruntime's float ReduceMean
            return reduce_mean_hw_ort(ins[0], p)
        return avgpool(ins[0], n.attrs, p)

    def emit(self, em, lid, n, p, info):
        if isinstance(p, RequantizeParams):  # onnxruntime's float ReduceMean
            nb, c, h, w = em.g.tensors[n.inputs[0]].shape
            em.consts.append(c_struct(f"{lid}_p", p))
            info["kernel"] = "tinyaot_reduce_mean_hw_f32_s8"
            em.call(info["kernel"], [str(nb), str(h * w), str(c), f"&{lid}_p",
                                     em.ptr(n.inputs[0]), em.ptr(n.outputs[0])])
            return
        dq = None
        if p.use_float in (pl.ORT_FLOAT, pl.ORT_QLINEAR):  # every int8's DequantizeLinear
            dq = dequant_table(p.in_scale, p.in_zp)
        if layer_mode(em, n) == "speed":  # its four-channel passes (code a size build saves)
            em.specialize({spec.POOL_KINDS: 1 << spec.POOL_QUADS})
        pl.emit_pool(em, lid, n, p, info, "tinyaot_avgpool_s8", dq)


OP = AvgPool()
