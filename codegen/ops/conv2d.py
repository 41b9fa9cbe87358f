"""conv2d: ONNX Conv on NHWC (1-D as [N, C, 1, L]), grouped and depthwise too; weights
[C_out, C_in/group, kH, kW], symmetric, per tensor or per output channel.

The layer's kernel is chosen here (`select`), in one place:
  ort_float (frontend/ort_facts.py: onnxruntime keeps the layer in float):
      speed: tinyaot_convolve_f32_s8 (MLAS's summation order, kernels/conv_f32_pack.py;
             tinyaot_convolve_f32_m1_s8 when the order has no fma tile), or
             tinyaot_convolve_f32_b8_s8 (int8 weights dequantized a block of channels at
             a time) where planner/float_conv_blocks.py finds a block that costs no arena;
      size:  tinyaot_convolve_f32_w8_s8 (int8 weights in flash, size_kernels.py);
  ConvInteger's epilogue (integer_forms.py): the portable integer kernels;
  otherwise, integer: groups 1 -> the fast conv (int16-packed weights, im2col scratch),
      but with at most W8_PIXELS output pixels its int8 weights stay bytes in flash on
      tinyaot_convolve_fast_w8_s8 where planner/w8_columns.py finds its columns cost no
      arena; a 3x3 stride-1 one with more pixels: tinyaot_convolve_winograd_s8 where
      planner/winograd.py finds its scratch costs no arena; a pointwise one with at most
      SPARSE_DENSITY nonzero weights (both modes): tinyaot_convolve_sparse_s8, its nonzero
      weights alone; under speed and tflite, a pointwise one of at least PAIRS_MIN_QUADS
      quads that _pairs allows (also where the few-pixel kernel was chosen):
      tinyaot_convolve_1x1_w8_s8, int8 weights two channels to an int16 lane (one pixel:
      tinyaot_fully_connected_fast_w8_s8 where fully_connected.fc_pairs allows); a narrow input (1-3 channels, window rows not whole quads: the
      first layer of image models) with at most NARROW_OUT_C outputs under speed:
      tinyaot_convolve_narrow_s8 where fast_pack.narrow_fits admits its weights;
      depthwise with channels % 4 == 0 -> the fast depthwise; under --optimize size both
      run on int8 weights read in place (size_kernels.py); any other layer, or one the
      planner runs in place (planner/depthwise_inplace.py), the portable kernels; with
      int16 weights (w - zp beyond int8, conv_lowering.py) the fast kernels as they are
      (they widen weights to int16), under --optimize size too, and for the layers that
      have none tinyaot_convolve_w16_s8.
The requantization is the record's mode (conv_params.py).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from ..kernels import specialize as spec
from ..kernels.c_format import c_struct
from ..kernels.conv_f32_pack import (block_scratch_bytes, blocks_candidate, has_fma,
                                     packed_weights, plan_fields, scratch_bytes,
                                     segment_words)
from ..kernels import winograd_pack as wino
from ..kernels.fast_pack import (conv_gemm_weights, conv_scratch_bytes, conv_w8_scratch_bytes,
                                 fold_input_zero_point, narrow_fits, pack_conv_gemm,
                                 pack_conv_pairs, pack_depthwise, pack_narrow, pack_sparse,
                                 pair_records, smlal_requant, sparse_density)
from ..numerics import ort_float as of
from ..numerics import u8s8_pairs as u8s8
from ..numerics.mlas_conv_order import node_segments, run_segments
from ..numerics.ort_float import float_weights
from . import integer_forms
from .base import Op, Pending, Traits, Unsupported
from .conv_lowering import WEIGHT_TYPES, layer_weights, reshape_to_2d
from .conv_pads import conv_pads, tflite_pads
from .conv_params import FLOAT, TFLITE, ConvParams, prepare_conv_like, requantize_sums
from .conv_records import (RequantRecord, acc_range, conv_dims, emit_conv_dims,
                           emit_float_layer, emit_records_requant, emit_requant,
                           emit_requant_record)
from .fully_connected import emit_fc_pairs, fc_pairs
from .size_kernels import emit_conv_int_w8, emit_conv_w8, select_size
from .tflite_filters import tflite_bias, tflite_weights, tflite_window

F32 = np.float32

# --optimize speed: an integer conv (groups 1) with at most this many output pixels may
# keep its weights as int8 bytes in flash instead of the fast kernel's int16 copy, on
# tinyaot_convolve_fast_w8_s8 (planner/w8_columns.py: where its columns cost no arena).
# Each weight then feeds few MACs, so the widened copy doubles the layer's flash for a small
# saving in cycles (ResNet's and MobileNet's late layers hold most of their weights); with
# 64 the MLPerf Tiny images fit in 0.8x TFLite Micro's where their weights allow
# (docs/results.md). A layer with fewer than W8_MIN_WEIGHTS weights keeps the int16 copy:
# the bytes it would save are fewer than the int8 kernel's own code.
W8_PIXELS = 64
W8_MIN_WEIGHTS = 2048

# --optimize speed: a fast conv, depthwise, narrow or Winograd layer with at least this many
# output pixels reads each weight (and record) at least 8 times (Winograd: once per pair of
# 2x2 tiles): it is a candidate to read them from a copy in free arena bytes
# (planner/staged_weights.py), which on parts with flash wait states removes most of its
# data stalls for about one cycle per byte copied.
STAGE_MIN_PIXELS = 16
# per-channel record words the copy makes room for: fast_pack.smlal_requant's 5 (tflite;
# fast_pack.float_requant's 2 under ort)
STAGE_RECORD_WORDS = 5

# An integer pointwise conv whose weights are at most this share nonzero runs
# tinyaot_convolve_sparse_s8 (both --optimize modes): only the nonzero weights are stored
# (4 bytes each) and multiplied (about 3.5 cycles per nonzero weight and pixel on a
# Cortex-M4, against 1.2 to 1.5 per MAC for the dense fast kernel).
SPARSE_DENSITY = 0.25

# tinyaot_convolve_1x1_w8_s8 (int8 weights, two channels per int16 lane) for tflite pointwise
# layers of at least this many quads of input channels: it saves 2 cycles a quad on the
# int16 group loop and spends about 17 a group of 4 channels x 2 pixels on recovering the
# hi channels' sums and entering its straight quads.
PAIRS_MIN_QUADS = 10

# A conv on 1-3 input channels with at most this many outputs runs
# tinyaot_convolve_narrow_s8 (--optimize speed): 1.375 cycles per MAC on a Cortex-M4 and
# no column, against the fast conv's ~1.1 per MAC plus a column of ~150 cycles per pixel
# (3x3 on RGB) shared by the output channels. At 8 outputs the narrow kernel is 14 % faster
# (the VWW MobileNet's first layer), at 16 they are even (ResNet-8's first layer) and the
# fast conv keeps it.
NARROW_OUT_C = 8

# An ORT float conv (--optimize speed) with at least this many weights may keep them int8
# in flash on tinyaot_convolve_f32_b8_s8 (planner/float_conv_blocks.py): 3 bytes saved per
# weight, 768 here, more than the kernel's own code (360 B on a Cortex-M4); below it the
# float weights cost less flash than the kernel would.
F32_B8_MIN_WEIGHTS = 256


@dataclass
class ConvF32Plan:  # tinyaot_conv_f32_plan_t
    CTYPE: ClassVar[str] = "tinyaot_conv_f32_plan_t"
    table: str
    weights: str
    segments: str
    taps: str
    nseg: int
    k: int
    tiles: int
    padded: int


# ---- ONNX ----------------------------------------------------------------------------------

def lower_onnx(lw, node, name, attrs, ins, out, shape):
    x = lw.act_input(ins[0], name)
    if len(lw.graph.tensors[x].shape) == 3:
        return _lower_conv1d(lw, ins, out, name, attrs, shape)
    w = layer_weights(lw, lw.weight_input(ins[1], name, WEIGHT_TYPES), 0, name)
    b = lw.bias_input(ins[2], name, x, w) if len(ins) > 2 and ins[2] else None
    wt = lw.graph.tensors[w]
    xs = lw.graph.tensors[x].shape
    if len(xs) != 4:
        raise Unsupported("only 2-D convolution (4-D tensors) is supported")
    kshape = tuple(attrs.get("kernel_shape", wt.shape[2:]))
    strides = tuple(attrs.get("strides", (1, 1)))
    dil = tuple(attrs.get("dilations", (1, 1)))
    pads = conv_pads(attrs, xs[2:], kshape, strides, dil, shape[2:])
    a = {"kernel": kshape, "strides": strides, "dilations": dil, "pads": pads,
         "group": int(attrs.get("group", 1))}
    lw.pending[out] = Pending("conv2d", name, [x, w, b], a, shape=shape)


def _lower_conv1d(lw, ins, out, name, attrs, shape):
    """Conv on [N, C, L]: a conv2d on [N, C, 1, L] between two zero-copy reshapes."""
    x = lw.act_input(ins[0], name)
    w = layer_weights(lw, lw.weight_input(ins[1], name, WEIGHT_TYPES), 0, name)
    b = lw.bias_input(ins[2], name, x, w) if len(ins) > 2 and ins[2] else None
    xt, wt = lw.graph.tensors[x], lw.graph.tensors[w]
    if len(wt.shape) != 3:
        raise Unsupported("1-D Conv weights must be [O, I, K]")
    x4 = reshape_to_2d(lw, x, name)
    w4 = lw.add_int_tensor(f"{w}@2d", wt.shape[:2] + (1, wt.shape[2]), wt.dtype, wt.q,
                           np.ascontiguousarray(wt.data.reshape(wt.shape[:2] + (1, wt.shape[2]))))
    w4.weight_zp = wt.weight_zp
    k = int(tuple(attrs.get("kernel_shape", wt.shape[2:]))[0])
    s = int(tuple(attrs.get("strides", (1,)))[0])
    d = int(tuple(attrs.get("dilations", (1,)))[0])
    a2 = {"auto_pad": attrs.get("auto_pad", "NOTSET")}
    if "pads" in attrs:
        p = list(attrs["pads"])
        a2["pads"] = (0, p[0], 0, p[1])
    pads = conv_pads(a2, (1, xt.shape[2]), (1, k), (1, s), (1, d), (1, shape[2]))
    a = {"kernel": (1, k), "strides": (1, s), "dilations": (1, d), "pads": pads,
         "group": int(attrs.get("group", 1)), "conv1d_out": True}
    lw.pending[out] = Pending("conv2d", name, [x4, w4.name, b], a,
                              shape=(shape[0], shape[1], 1, shape[2]))


# ---- TFLite -------------------------------------------------------------------------------

def lower_tflite_conv(tl, op):
    """CONV_2D(input, filter [O, KH, KW, I/group], bias): grouped when the input has more
    channels than the filter."""
    x_idx, w_idx, b_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), tl.inp(op, 2), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    xt, wt = tl.tensor(x_idx), tl.tensor(w_idx)
    if len(xt.shape) != 4 or len(wt.shape) != 4:
        raise Unsupported("CONV_2D needs 4-D input and filter")
    cin, fin = xt.shape[3], wt.shape[3]
    if fin <= 0 or cin % fin:
        raise Unsupported(f"input channels {cin} are not a multiple of the filter's {fin}")
    w = tflite_weights(tl, op, w_idx, 0, lambda d: d.transpose(0, 3, 1, 2), 0)
    _emit_tflite(tl, op, x_idx, w, b_idx, y_idx, cin // fin, wt.shape[0])


def lower_tflite_depthwise(tl, op):
    """DEPTHWISE_CONV_2D(input, filter [1, KH, KW, C*M], bias): any depth multiplier M."""
    x_idx, w_idx, b_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), tl.inp(op, 2), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    xt, wt, yt = tl.tensor(x_idx), tl.tensor(w_idx), tl.tensor(y_idx)
    if len(xt.shape) != 4 or len(wt.shape) != 4 or wt.shape[0] != 1:
        raise Unsupported("DEPTHWISE_CONV_2D needs a 4-D input and a [1, H, W, C] filter")
    cin, cout = xt.shape[3], wt.shape[3]
    if cout % cin or yt.shape[3] != cout:
        raise Unsupported(f"{cout} output channels are not a multiple of {cin} input channels")
    # [1, KH, KW, C*M] -> [C*M, 1, KH, KW]: output channel c*M + m reads input channel c
    w = tflite_weights(tl, op, w_idx, 3, lambda d: d[0].transpose(2, 0, 1)[:, None], 0)
    _emit_tflite(tl, op, x_idx, w, b_idx, y_idx, cin, cout)


def _emit_tflite(tl, op, x_idx, w, b_idx, y_idx, group, cout):
    xt, yt = tl.tensor(x_idx), tl.tensor(y_idx)
    kernel = tuple(tl.graph.tensors[w].shape[2:])
    strides, dil = tflite_window(op)
    pads = tflite_pads(op.options.get("padding", 0), xt.shape[1:3], kernel, strides, dil,
                       yt.shape[1:3])
    a = {"kernel": kernel, "strides": strides, "dilations": dil, "pads": pads, "group": group,
         **tl.act_attrs(op)}
    x = tl.act(x_idx, "nchw")
    b = tflite_bias(tl, op, b_idx, x, w, cout)
    tl.emit("conv2d", tl.node_name(op), [x, w, b], [tl.new_act(y_idx, "nchw")], a)


# ---- the numpy oracle ------------------------------------------------------------------------

def conv2d_acc(x, w, in_zp, strides, pads, dil, group):
    """int64 sums of (x - zp_x) * w for NCHW x, OIHW w (weight zp 0)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    t, l, b, r = pads
    xp = np.full((n, c, h + t + b, wd + l + r), in_zp, dtype=np.int64)
    xp[:, :, t:t + h, l:l + wd] = x
    xp -= in_zp
    sh, sw = strides
    dh, dw = dil
    oh = (h + t + b - (dh * (kh - 1) + 1)) // sh + 1
    ow = (wd + l + r - (dw * (kw - 1) + 1)) // sw + 1
    og = o // group
    acc = np.zeros((n, o, oh, ow), dtype=np.int64)
    w64 = w.astype(np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
            for gi in range(group):
                pg = patch[:, gi * cg:(gi + 1) * cg]
                wg = w64[gi * og:(gi + 1) * og, :, i, j]
                acc[:, gi * og:(gi + 1) * og] += np.einsum("nchw,oc->nohw", pg, wg)
    return acc


def conv2d_int(x, w, attrs, p: ConvParams):
    """The integer kernels: exact sums, then p's requantization (ORT, TFLITE, EPILOGUE)."""
    acc = conv2d_acc(x, w, p.in_zp, attrs["strides"], attrs["pads"], attrs["dilations"],
                     attrs["group"])
    return requantize_sums(acc, p, 1)


def conv2d_u8s8_delta(x, w, attrs, in_zp):
    """What onnxruntime's QLinearConv adds to the exact sums on x86-64 without VNNI
    (numerics/u8s8_pairs.py): (delta [N, O, OH, OW], saturated pairs). x NCHW int8 (the
    uint8 values onnxruntime runs on are x + 128), w OIHW. Depthwise layers: exact."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    group = attrs["group"]
    t, l, b, r = attrs["pads"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilations"]
    oh = (h + t + b - (dh * (kh - 1) + 1)) // sh + 1
    ow = (wd + l + r - (dw * (kw - 1) + 1)) // sw + 1
    delta = np.zeros((n, o, oh, ow), dtype=np.int64)
    og = o // group
    wk = np.asarray(w).transpose(0, 2, 3, 1).reshape(o, -1)  # K = (ky, kx, c)
    if cg == 1 and og == 1 or not any(u8s8.can_saturate(wk[gi * og:(gi + 1) * og])
                                      for gi in range(group)):
        return delta, 0
    xp = np.full((n, c, h + t + b, wd + l + r), in_zp + 128, dtype=np.int64)
    xp[:, :, t:t + h, l:l + wd] = np.asarray(x, dtype=np.int64) + 128
    count = 0
    for gi in range(group):
        # im2col of the group, channels last: K = (ky, kx, c), c fastest
        taps = [xp[:, gi * cg:(gi + 1) * cg, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                   j * dw: j * dw + sw * (ow - 1) + 1: sw]
                for i in range(kh) for j in range(kw)]
        cols = np.stack(taps, axis=1).transpose(0, 3, 4, 1, 2).reshape(n * oh * ow, -1)
        d, k = u8s8.pair_delta(cols, wk[gi * og:(gi + 1) * og])
        delta[:, gi * og:(gi + 1) * og] = d.reshape(n, oh, ow, og).transpose(0, 3, 1, 2)
        count += k
    return delta, count


def conv2d_f32(x, wt, bias_f, attrs, in_scale, in_zp):
    """The float32 output of onnxruntime's Conv (bias included, before QuantizeLinear),
    NCHW: per group im2col in (c, ky, kx) order and MLAS's summation order
    (numerics/mlas_conv_order.py; it depends on ORT's intra-op thread count,
    attrs["ort_threads"], default 1). wt: the int8 weight tensor (its scales)."""
    xf = of.dequantize(x, in_scale, in_zp)
    wf = float_weights(wt)
    n, c, h, w = xf.shape
    o, cg, kh, kw = wf.shape
    t, l, b, r = attrs["pads"]
    sh, sw = attrs["strides"]
    dh, dw = attrs["dilations"]
    group = attrs["group"]
    xp = np.zeros((n, c, h + t + b, w + l + r), dtype=F32)
    xp[:, :, t:t + h, l:l + w] = xf
    oh = (h + t + b - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + l + r - (dw * (kw - 1) + 1)) // sw + 1
    og = o // group
    segs = node_segments(x.shape, (n, o, oh, ow), attrs, attrs.get("ort_threads", 1))
    y = np.zeros((n, o, oh, ow), dtype=F32)
    for bi in range(n):
        for gi in range(group):
            cols = np.zeros((cg * kh * kw, oh * ow), dtype=F32)
            for ci in range(cg):
                for i in range(kh):
                    for j in range(kw):
                        cols[(ci * kh + i) * kw + j] = xp[bi, gi * cg + ci,
                                                          i * dh: i * dh + sh * (oh - 1) + 1: sh,
                                                          j * dw: j * dw + sw * (ow - 1) + 1: sw].reshape(-1)
            wm = wf[gi * og:(gi + 1) * og].reshape(og, -1)
            y[bi, gi * og:(gi + 1) * og] = run_segments(cols, wm, segs).reshape(og, oh, ow)
    return (y + np.asarray(bias_f, F32).reshape(1, -1, 1, 1)).astype(F32)


def conv2d_float(x, wt, attrs, p: ConvParams):
    """onnxruntime's float Conv (DQ -> Conv -> Q), bit for bit (FLOAT mode)."""
    y = conv2d_f32(x, wt, p.bias_f, attrs, p.in_scale, p.in_zp)
    return of.quantize(y, p.out_scale, p.out_zp, p.act_min, p.act_max)


# ---- C -------------------------------------------------------------------------------------

def _depthwise(g, n):
    x, w = g.tensors[n.inputs[0]], g.tensors[n.inputs[1]]
    group = n.attrs["group"]
    return group == x.shape[1] and group > 1 and w.shape[1] == 1


def _in_place(em, n):
    """Did the plan put a node flagged inplace_depthwise's output on its input?"""
    bx, by = em.plan.where[n.inputs[0]], em.plan.where[n.outputs[0]]
    return (bool(n.attrs.get("inplace_depthwise")) and bx.external is None
            and by.external is None and bx.offset == by.offset)


def _emit_float(em, lid, n, p, info, dims, w):
    """tinyaot_convolve_f32_s8 and its plan (kernels/conv_f32_pack.py); with the planner's
    "f32_block_tiles" (planner/float_conv_blocks.py), tinyaot_convolve_f32_b8_s8: the same
    plan, int8 weights in the layer record."""
    x, y = em.g.tensors[n.inputs[0]], em.g.tensors[n.outputs[0]]
    block = n.attrs.get("f32_block_tiles") if n.attrs.get("f32_blocks_candidate") else None
    f = plan_fields(x.shape, y.shape, w, n.attrs, p.in_scale, p.in_zp, int8=bool(block))
    st = em.staging(n)  # planner/staged_weights.py: the input table and float weights
    if block:
        filt = em.const("int8_t", f"{lid}_wp", f["weights"], align=4)  # report: weights
        fp = emit_float_layer(em, lid, p, filt)
        weights = "0"
    else:
        fp = emit_float_layer(em, lid, p, "0")  # output quantization and bias; weights in the plan
        weights = em.const("float", f"{lid}_wp", f["weights"], align=8)  # report: weights
    segments = em.const("int32_t", f"{lid}_seg", f["segments"])
    table = st.copy(em.const("float", f"{lid}_xt", f["table"]))
    if not block and st.fits(weights):  # (or the table alone)
        weights = st.copy(weights)
    taps = em.const("int32_t", f"{lid}_taps", f["taps"])
    plan = ConvF32Plan(table, weights, segments, taps, f["nseg"], f["k"], f["tiles"], f["padded"])
    em.consts.append(c_struct(f"{lid}_pl", plan))
    if block:
        info["kernel"] = "tinyaot_convolve_f32_b8_s8"
        em.call(info["kernel"], [dims, fp, f"&{lid}_pl", str(block), em.ptr(x.name),
                                 em.scratch(n, "float"), em.ptr(y.name)])
        return
    # plans with no fma tile (depthwise, one pixel: MLAS's M=1 kernels) have their own kernel
    info["kernel"] = "tinyaot_convolve_f32_s8" if f["tiles"] else "tinyaot_convolve_f32_m1_s8"
    em.call(info["kernel"], [dims, fp, f"&{lid}_pl", em.ptr(x.name), em.scratch(n, "float"),
                             em.ptr(y.name)])


def _emit_fast(em, lid, n, p, info, dims, w):
    """The fast conv / depthwise kernels (runtime_c/include/tinyaot_fast_kernels.h)."""
    if p.mode == TFLITE and np.any(np.asarray(p.mult) < 0):
        raise NotImplementedError("fast kernels need non-negative multipliers")
    # the records alone when there are some: these kernels read no other bias then
    st = em.staging(n)  # planner/staged_weights.py: records and weights read from the arena
    q, rec = emit_requant_record(em, lid, p, fast=True, float_records=True, bias_in_records=True,
                                 weights=w.data, staging=st)
    x, y = n.inputs[0], n.outputs[0]
    if n.attrs["fast_kernel"] == "depthwise":
        em.specialize(spec.depthwise_uses(rec, conv_dims(em.g, n)))
        filt = st.copy(em.const("int32_t", f"{lid}_wp", _depthwise_words(w), align=8))
        info["kernel"] = "tinyaot_depthwise_conv_fast_s8"
        em.specialize(spec.rq_fix_uses(info["kernel"], rec))
        em.call(info["kernel"], [dims, q, em.ptr(x), filt, em.ptr(y)])
        return
    scratch = em.scratch(n, "uint32_t")
    filt = st.copy(em.const("int32_t", f"{lid}_wp", _gemm_words(w), align=8))
    info["kernel"] = "tinyaot_convolve_fast_s8"
    em.specialize(spec.conv_uses(rec, conv_dims(em.g, n)))
    em.specialize(spec.rq_fix_uses(info["kernel"], rec))
    em.call(info["kernel"], [dims, q, em.ptr(x), filt, scratch, em.ptr(y)])


def _pointwise(n):
    """A 1x1 stride-1 unpadded conv, groups 1."""
    a = n.attrs
    return (tuple(a["kernel"]) == (1, 1) and tuple(a["strides"]) == (1, 1)
            and not any(a["pads"]) and a["group"] == 1)


def _pairs(n, p, w, y):
    """(pack_conv_pairs's words, its records: fast_pack.pair_records) when the layer takes
    tinyaot_convolve_1x1_w8_s8: a 1x1 stride-1 unpadded conv, out_c % 4 == 0, at least
    PAIRS_MIN_QUADS quads of input channels, tflite over the whole int8 range with one-SMLAL
    records for every channel, its pairs' sums within the kernel's bound; else None. (A
    one-pixel layer that
    fully_connected.fc_pairs allows runs as a fully connected row instead: the conv kernel
    would compute its pixel twice.)"""
    if (p.mode != TFLITE or p.act_min > -128 or p.act_max < 127 or not _pointwise(n)
            or y.shape[1] % 4 or (w.shape[1] + 3) // 4 < PAIRS_MIN_QUADS
            or w.dtype != "int8" or np.any(np.asarray(p.mult) < 0)):
        return None
    records = smlal_requant(p.mult, p.shift, p.bias, p.out_zp, acc_range(p.bias, w.data))
    if records is None:
        return None
    free = records.reshape(-1, 5)[:, 0] == 0  # outputs that do not depend on the sum
    words = pack_conv_pairs(w.data.reshape(w.shape[0], -1), p.in_zp, p.bias, free)
    if words is None:
        return None
    paired = pair_records(records, p.bias)  # hi's scaled for A - S (None: out of range)
    return None if paired is None else (words, paired)


def _pairs_candidate(n, w, y):
    """Will emission likely run this layer on tinyaot_convolve_1x1_w8_s8 (_pairs: what can
    be told before the layer's parameters exist)? A tflite pointwise conv (the front end
    marks every conv under --numerics ort with ort_float) of PAIRS_MIN_QUADS quads or more
    on int8 weights, out_c % 4 == 0, more than one pixel. Such a layer stays a "conv" for
    the planner rather than a conv_w8 (whose column blocks it would not use): its weights
    and records are then staged in free arena bytes where there are some (the int16
    kernel's size; the pairs take less)."""
    return ("ort_float" not in n.attrs and _pointwise(n) and w.dtype == "int8"
            and y.shape[1] % 4 == 0 and (w.shape[1] + 3) // 4 >= PAIRS_MIN_QUADS
            and y.size > y.shape[1])


def _emit_pairs(em, lid, n, p, info, dims, words, records):
    """tinyaot_convolve_1x1_w8_s8: its weights and its records (fast_pack.pair_records: the
    pairs' starts in the hi channels' bias words, their requantization scaled by 256),
    staged where the planner gave the layer
    a block (the int16 kernel's size: these take less)."""
    st = em.staging(n)
    r = RequantRecord(p.in_zp, p.out_zp, p.act_min, p.act_max)
    r.rq = st.copy(em.const("int32_t", f"{lid}_rq", records, align=8))
    em.consts.append(c_struct(f"{lid}_q", r))
    filt = st.copy(em.const("int32_t", f"{lid}_wp", words, align=8))
    info["kernel"] = "tinyaot_convolve_1x1_w8_s8"
    em.specialize(spec.rq_fix_uses(info["kernel"], r))
    em.call(info["kernel"], [dims, f"&{lid}_q", em.ptr(n.inputs[0]), filt,
                             em.scratch(n, "uint32_t"), em.ptr(n.outputs[0])])


def _gemm_words(w):
    """The fast conv's weights (int16 pairs in words, kernels/fast_pack.py)."""
    return pack_conv_gemm(conv_gemm_weights(w.data))


def _depthwise_words(w):
    """The fast depthwise kernel's weights, [k_h][k_w][c] packed by channel quad."""
    wt = w.data[:, 0].transpose(1, 2, 0)
    return pack_depthwise(wt.reshape(-1, wt.shape[-1]))


def _offer_staging(n, sizes):
    """The layer's staged-block sizes for planner/staged_weights.py, when it has any."""
    if sizes:
        n.attrs["stage_candidate"] = sizes


def _float_stage_candidate(n, x, w, y):
    """The sizes an onnxruntime float conv's staged block may take, largest first: its
    input table (256 floats, read at random by the input bytes) and packed float weights,
    or the table alone (where the weights do not fit, or the planner runs the layer on
    int8 weights it dequantizes into its own scratch: planner/float_conv_blocks.py);
    none with too few output pixels (STAGE_MIN_PIXELS)."""
    if y.size // y.shape[1] < STAGE_MIN_PIXELS:
        return []
    table = 256 * 4
    if n.attrs.get("f32_block_tiles"):
        return [table]
    words, _ = segment_words(x.shape, y.shape, n.attrs)
    packed, _, _ = packed_weights(w, n.attrs["group"], compact=not has_fma(words))
    return [table + -(-packed.size * 4 // 8) * 8, table]


def _stage_candidate(n, w, y):
    """[the bytes a fast layer's weights and records take in a staged block], or none when
    the layer reads each weight too few times for the copy to pay (STAGE_MIN_PIXELS)."""
    if y.size // y.shape[1] < STAGE_MIN_PIXELS or w.data is None:
        return []
    words = {"conv": _gemm_words, "depthwise": _depthwise_words,
             "narrow": lambda w: pack_narrow(w.data),
             "winograd": lambda w: wino.pack_winograd(w.data)}[n.attrs["fast_kernel"]](w)
    return [sum(-(-nbytes // 8) * 8 for nbytes in (words.size * 4,
                                                    y.shape[1] * STAGE_RECORD_WORDS * 4))]


def _fold_fits(g, n, w):
    """Does the layer's bias stay int32 with the input zero point folded in (bias - zp *
    sum w, |zp| <= 128)? The kernels that fold it (sparse, narrow) are chosen only then,
    so emission never meets a bias they cannot hold."""
    b = g.tensors[n.inputs[2]] if len(n.inputs) > 2 and n.inputs[2] else None
    if b is None:
        return True
    if b.dtype != "int32" or b.data is None:
        return False
    w2d = np.abs(w.data.astype(np.int64)).reshape(w.shape[0], -1)
    return int(np.abs(b.data.astype(np.int64)).max()) + 128 * int(w2d.sum(axis=1).max()) < 1 << 31


def _sparse(g, n, w):
    """An integer pointwise conv with int8 weights sparse enough (SPARSE_DENSITY) for
    tinyaot_convolve_sparse_s8."""
    a = n.attrs
    if not (tuple(a["kernel"]) == (1, 1) and tuple(a["strides"]) == (1, 1)
            and not any(a["pads"]) and w.dtype == "int8" and w.data is not None
            and w.shape[1] <= 65536):
        return False
    return sparse_density(w.data) <= SPARSE_DENSITY and _fold_fits(g, n, w)


def _emit_folded(em, lid, n, p, info, dims, kernel, words, suffix):
    """A kernel that reads the records alone, the input zero point folded into their bias
    (_fold_fits), its weights as words `<lid><suffix>`; returns the RequantRecord."""
    w = em.g.tensors[n.inputs[1]]
    bias = fold_input_zero_point(p.bias, w.data.reshape(w.shape[0], -1), p.in_zp)
    assert np.all(np.abs(bias) < 1 << 31), f"{kernel}: folded bias outside int32 (_fold_fits)"
    st = em.staging(n)  # narrow: planner/staged_weights.py
    q, rec = emit_records_requant(em, lid, replace(p, bias=bias.astype(np.int32)), w.data, st)
    filt = st.copy(em.const("int32_t", f"{lid}{suffix}", words, align=4))
    info["kernel"] = kernel
    em.specialize(spec.rq_fix_uses(kernel, rec))
    em.call(kernel, [dims, q, em.ptr(n.inputs[0]), f"(const uint32_t *)(const void *){filt}",
                     em.ptr(n.outputs[0])])
    return rec


def _emit_sparse(em, lid, n, p, info, dims, w):
    """tinyaot_convolve_sparse_s8: the nonzero weights, the input zero point in the bias."""
    _emit_folded(em, lid, n, p, info, dims, "tinyaot_convolve_sparse_s8",
                 pack_sparse(w.data.reshape(w.shape[0], -1)), "_w")


def _narrow(g, n, x, w):
    """An integer conv on an input of 1-3 channels whose window rows are not whole quads
    (3x3 on RGB: 9 values) and at most NARROW_OUT_C outputs, undilated, that
    tinyaot_convolve_narrow_s8 can run: the fast conv's column costs about as much as its
    GEMM when few channels share it."""
    a = n.attrs
    cin, kw = x.shape[1], a["kernel"][1]
    return (cin <= 3 and (kw * cin) % 4 != 0 and w.shape[0] <= NARROW_OUT_C
            and tuple(a["dilations"]) == (1, 1)
            and x.dtype == "int8" and w.dtype == "int8" and w.data is not None
            and narrow_fits(w.data) and _fold_fits(g, n, w))


def _emit_narrow(em, lid, n, p, info, dims, w):
    """tinyaot_convolve_narrow_s8: channel pairs packed in words, the input zero point in
    the bias."""
    rec = _emit_folded(em, lid, n, p, info, dims, "tinyaot_convolve_narrow_s8",
                       pack_narrow(w.data), "_wp")
    em.specialize(spec.narrow_uses(rec))


def _winograd(n, x, w, y):
    """An integer 3x3 stride-1 conv tinyaot_convolve_winograd_s8 can run (--optimize speed,
    more than W8_PIXELS output pixels: its weights take 16/9 of the int16 fast kernel's flash)."""
    a = n.attrs
    return (tuple(a["kernel"]) == (3, 3) and tuple(a["strides"]) == (1, 1)
            and tuple(a["dilations"]) == (1, 1) and w.dtype == "int8" and w.data is not None
            and y.size // y.shape[1] > W8_PIXELS and wino.fits(w.data, x.shape[1]))


def _at(ptr, off):
    """C expression of the address `off` bytes past `ptr` (an arena expression)."""
    return f"({ptr} + {off})" if off else ptr


def _emit_winograd(em, lid, n, p, info, dims, w):
    """tinyaot_convolve_winograd_s8: the transformed weights (kernels/winograd_pack.py)."""
    st = em.staging(n)  # planner/staged_weights.py: records and weights read from the arena
    q, rec = emit_records_requant(em, lid, p, w.data, st)
    filt = st.copy(em.const("int32_t", f"{lid}_wp", wino.pack_winograd(w.data), align=8))
    info["kernel"] = "tinyaot_convolve_winograd_s8"
    em.specialize(spec.winograd_uses(rec, conv_dims(em.g, n)))
    x, y = em.ptr(n.inputs[0]), em.ptr(n.outputs[0])
    if dims is None:  # no scratch of its own: two bands, each's in bytes of x or y that are
        # free while it runs (planner/winograd.py: x dies here)
        for k, (d, x_off, y_off, (where, s_off)) in enumerate(
                wino.consume_bands(conv_dims(em.g, n)), 1):
            em.consts.append(c_struct(f"{lid}_d{k}", d))
            s = f"(uint32_t *)(void *){_at(x if where == 'input' else y, s_off)}"
            em.call(info["kernel"], [f"&{lid}_d{k}", q, _at(x, x_off), filt, s, _at(y, y_off)])
        return
    em.call(info["kernel"], [dims, q, x, filt, em.scratch(n, "uint32_t"), y])


def _emit_fast_w8(em, lid, n, p, info, dims, w):
    """tinyaot_convolve_fast_w8_s8: int8 weights [oc][kq], in the columns' order."""
    q, rec = emit_records_requant(em, lid, p, w.data)
    filt = em.const("int8_t", f"{lid}_w", conv_gemm_weights(w.data).astype(np.int8), align=4)
    info["kernel"] = "tinyaot_convolve_fast_w8_s8"
    em.specialize(spec.conv_w8_uses(rec, conv_dims(em.g, n)))
    em.call(info["kernel"], [dims, q, em.ptr(n.inputs[0]), filt, str(n.attrs["w8_block_pairs"]),
                             em.scratch(n, "uint32_t"), em.ptr(n.outputs[0])])


class Conv2d(Op):
    name = "conv2d"
    traits = Traits(layout="spatial", align=8)
    onnx = {"Conv": lower_onnx, "ConvInteger": integer_forms.lower_onnx}
    tflite = {"CONV_2D": lower_tflite_conv, "DEPTHWISE_CONV_2D": lower_tflite_depthwise}

    def select(self, g, n, optimize):
        for k in ("fast_kernel", "int_w8", "f32_w8", "scratch_bytes", "w8_columns",
                  "winograd_candidate", "f32_blocks_candidate", "stage_candidate"):  # not
            # "w8_block_pairs", "winograd", "f32_block_tiles" nor "staged_bytes": the planner's
            # decisions (planner/w8_columns.py, planner/winograd.py,
            # planner/float_conv_blocks.py, planner/staged_weights.py)
            n.attrs.pop(k, None)  # chosen afresh
        x, w, y = (g.tensors[t] for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
        if n.attrs.get("ort_float"):  # pixel columns + one tile
            n.attrs["scratch_bytes"] = scratch_bytes(x.shape, w.shape, y.shape, n.attrs)
            if optimize == "speed":
                _offer_staging(n, _float_stage_candidate(n, x, w, y))
            if (optimize == "speed" and w.size >= F32_B8_MIN_WEIGHTS
                    and blocks_candidate(x.shape, y.shape, n.attrs)):
                n.attrs["f32_blocks_candidate"] = True  # planner/float_conv_blocks.py decides
                block = n.attrs.get("f32_block_tiles")  # the planner's: no arena cost
                if block:
                    n.attrs["scratch_bytes"] = block_scratch_bytes(x.shape, w.shape, y.shape,
                                                                   n.attrs, block)
        elif not n.attrs.get("int_epilogue"):  # ConvInteger (float epilogue): portable kernels
            cin, cout = x.shape[1], y.shape[1]
            kh, kw = n.attrs["kernel"]
            if n.attrs["group"] == 1 and _sparse(g, n, w):
                n.attrs["fast_kernel"] = "sparse"  # the same kernel under --optimize size
                return
            if n.attrs["group"] == 1 and optimize == "speed" and _narrow(g, n, x, w):
                n.attrs["fast_kernel"] = "narrow"  # no scratch
                _offer_staging(n, _stage_candidate(n, w, y))
                return
            if n.attrs["group"] == 1:
                n.attrs["fast_kernel"] = "conv"
                n.attrs["scratch_bytes"] = conv_scratch_bytes(kh, kw, cin)
                if optimize == "speed" and _winograd(n, x, w, y):
                    n.attrs["winograd_candidate"] = True  # planner/winograd.py decides
                    if n.attrs.get("winograd"):
                        n.attrs["fast_kernel"] = "winograd"
                        n.attrs["scratch_bytes"] = (0 if n.attrs["winograd"] == "consume"
                                                    else wino.scratch_bytes(cin))
                if (optimize == "speed" and w.dtype == "int8" and y.size // cout <= W8_PIXELS
                        and w.size >= W8_MIN_WEIGHTS and not _pairs_candidate(n, w, y)):
                    n.attrs["w8_columns"] = True  # a candidate of planner/w8_columns.py
                    block = n.attrs.get("w8_block_pairs")  # the planner's: no arena cost
                    if block:
                        n.attrs["fast_kernel"] = "conv_w8"
                        n.attrs["scratch_bytes"] = conv_w8_scratch_bytes(w.shape, block)
            elif _depthwise(g, n) and cout == cin and cin % 4 == 0:
                n.attrs["fast_kernel"] = "depthwise"
            if optimize == "speed" and n.attrs.get("fast_kernel") in ("conv", "depthwise",
                                                                       "winograd"):
                _offer_staging(n, _stage_candidate(n, w, y))
        if optimize == "size":
            select_size(g, n)

    def prepare(self, g, n, numerics):
        return prepare_conv_like(g, n, numerics)

    def reference(self, g, n, ins, p, numerics):
        if p.mode == FLOAT:
            return conv2d_float(ins[0], g.tensors[n.inputs[1]], n.attrs, p)
        return conv2d_int(ins[0], ins[1], n.attrs, p)

    def emit(self, em, lid, n, p, info):
        w = em.g.tensors[n.inputs[1]]
        x = em.g.tensors[n.inputs[0]]
        y = em.g.tensors[n.outputs[0]]
        kh, kw = n.attrs["kernel"]
        info["macs"] = int(y.size * kh * kw * (w.shape[1]))
        if n.attrs.get("winograd") == "consume" and n.attrs.get("fast_kernel") == "winograd":
            return _emit_winograd(em, lid, n, p, info, None, w)  # its bands' dims
        if (n.attrs.get("fast_kernel") in ("conv", "conv_w8") and _pointwise(n)
                and y.size == y.shape[1]):  # one pixel: a fully connected row, int8 pairs?
            w2d = w.data.reshape(w.shape[0], -1)
            rows = fc_pairs(w2d, p)
            if rows is not None:
                return emit_fc_pairs(em, lid, n, p, info, 1, w2d, rows)
        dims = emit_conv_dims(em, lid, n)
        if n.attrs.get("f32_w8"):  # --optimize size
            return emit_conv_w8(em, lid, n, p, info, dims)
        if n.attrs.get("fast_kernel") == "sparse":  # mostly zero weights (SPARSE_DENSITY)
            return _emit_sparse(em, lid, n, p, info, dims, w)
        if n.attrs.get("fast_kernel") == "narrow":  # 1-3 input channels
            return _emit_narrow(em, lid, n, p, info, dims, w)
        if n.attrs.get("fast_kernel") == "winograd":  # 3x3 stride 1 (planner/winograd.py)
            return _emit_winograd(em, lid, n, p, info, dims, w)
        if n.attrs.get("fast_kernel") in ("conv", "conv_w8"):  # pointwise: int8 pairs?
            pairs = _pairs(n, p, w, y)
            if pairs is not None:
                return _emit_pairs(em, lid, n, p, info, dims, *pairs)
        if n.attrs.get("fast_kernel") == "conv_w8":  # few pixels (W8_PIXELS), columns in the arena
            return _emit_fast_w8(em, lid, n, p, info, dims, w)
        if n.attrs.get("int_w8") and not _in_place(em, n):  # --optimize size, integer conv
            return emit_conv_int_w8(em, lid, n, p, info, dims)
        if n.attrs.get("ort_float"):
            return _emit_float(em, lid, n, p, info, dims, w)
        if n.attrs.get("fast_kernel") in ("conv", "depthwise"):
            return _emit_fast(em, lid, n, p, info, dims, w)
        q = emit_requant(em, lid, p)
        if w.dtype == "int16":  # w - zp beyond int8 (conv_lowering.py), no fast kernel
            filt = em.const("int16_t", f"{lid}_w", w.data.transpose(0, 2, 3, 1), align=4)
            info["kernel"] = "tinyaot_convolve_w16_s8"
            em.call(info["kernel"], [dims, q, em.ptr(x.name), filt, em.ptr(y.name)])
            return
        if _depthwise(em.g, n):
            filt = em.const("int8_t", f"{lid}_w", w.data[:, 0].transpose(1, 2, 0), align=4)
            if _in_place(em, n):  # planner/depthwise_inplace.py
                info["kernel"] = "tinyaot_depthwise_conv_inplace_s8"
                em.call(info["kernel"], [dims, q, em.ptr(x.name), filt, em.scratch(n)])
                return
            info["kernel"] = "tinyaot_depthwise_conv_s8"
        else:
            filt = em.const("int8_t", f"{lid}_w", w.data.transpose(0, 2, 3, 1), align=4)
            info["kernel"] = "tinyaot_convolve_s8"
        em.call(info["kernel"], [dims, q, em.ptr(x.name), filt, em.ptr(y.name)])


OP = Conv2d()
