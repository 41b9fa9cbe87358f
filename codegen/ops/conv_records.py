"""The C records the conv-like layers share (no operator here): tinyaot_requant_t,
tinyaot_conv_dims_t and tinyaot_float_conv_t (runtime_c/include/tinyaot_kernels.h), each a
dataclass with the struct's fields in order, and the functions that emit them for a layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..kernels.c_format import c_struct
from ..kernels.fast_pack import float_requant, smlal_requant
from .conv_params import EPILOGUE, ORT, TFLITE, ConvParams


@dataclass
class RequantRecord:  # tinyaot_requant_t; the array fields hold C names or NULL
    CTYPE: ClassVar[str] = "tinyaot_requant_t"
    in_zp: int
    out_zp: int
    act_min: int
    act_max: int
    bias: str = "NULL"
    scale: str = "NULL"
    mult: str = "NULL"
    shift: str = "NULL"
    post_bias: str = "NULL"
    out_scale: float = 0.0
    rq: str = "NULL"


@dataclass
class ConvDims:  # tinyaot_conv_dims_t
    CTYPE: ClassVar[str] = "tinyaot_conv_dims_t"
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    k_h: int
    k_w: int
    stride_h: int
    stride_w: int
    dil_h: int
    dil_w: int
    pad_top: int
    pad_left: int
    groups: int


@dataclass
class FloatConvRecord:  # tinyaot_float_conv_t
    CTYPE: ClassVar[str] = "tinyaot_float_conv_t"
    in_scale: float
    in_zp: int
    out_scale: float
    out_zp: int
    act_min: int
    act_max: int
    filter: str
    filter_scale: str
    bias_f: str


def conv_dims(g, n) -> ConvDims:
    """The geometry of a conv2d / conv_transpose node (NCHW logical shapes)."""
    _, c, h, w = g.tensors[n.inputs[0]].shape
    _, oc, oh, ow = g.tensors[n.outputs[0]].shape
    a = n.attrs
    vals = [h, w, c, oh, ow, oc, *a["kernel"], *a["strides"], *a["dilations"], *a["pads"][:2],
            a["group"]]
    return ConvDims(*(int(v) for v in vals))


def emit_conv_dims(em, lid, n):
    em.consts.append(c_struct(f"{lid}_d", conv_dims(em.g, n)))
    return f"&{lid}_d"


def emit_requant(em, lid, p: ConvParams, fast=False, float_records=False, bias_in_records=False):
    """The C expression of the address of emit_requant_record's struct."""
    return emit_requant_record(em, lid, p, fast, float_records, bias_in_records)[0]


def acc_range(bias, weights):
    """Per output channel, the least and the greatest int32 accumulator a kernel can
    requantize: bias -/+ 256 * sum |w| (|x - in_zp| <= 255; with the input zero point
    folded into the bias, bias - in_zp * sum w, raw int8 inputs add at most 128 * sum |w|).
    A channel whose sums could pass int32 wraps as TFLite's does: any int32 then.
    None without weights."""
    if weights is None:
        return None
    w = np.abs(np.asarray(weights, dtype=np.int64)).reshape(np.shape(weights)[0], -1)
    b = np.broadcast_to(np.asarray(bias, dtype=np.int64), (w.shape[0],))
    span = 256 * w.sum(axis=1)
    lo, hi = b - span, b + span
    wraps = (lo < -(1 << 31)) | (hi > (1 << 31) - 1)
    return np.where(wraps, -(1 << 31), lo), np.where(wraps, (1 << 31) - 1, hi)


def emit_requant_record(em, lid, p: ConvParams, fast=False, float_records=False,
                        bias_in_records=False, weights=None, staging=None):
    """The layer's tinyaot_requant_t (and its arrays); returns the C expression of its address
    and the RequantRecord (what a fast kernel will read: kernels/specialize.py).
    `fast` (a fast kernel's): also the one-SMLAL records when every channel allows
    (fast_pack.smlal_requant); `float_records` (fast conv / depthwise, ort, whole int8
    range): the {bias, scale} records (fast_pack.float_requant); `bias_in_records`
    (kernels that read only the records when there are some: the size kernels, the fast
    conv and depthwise kernels): no separate bias array then. `weights` (the layer's,
    [out channels][...]): they bound the accumulators, so that more layers' records can
    hold the output zero point (fast_pack.smlal_requant). `staging` (the emitter's, for a
    layer with staged weights): the kernel reads the records from their copy in the arena."""
    assert p.mode in (ORT, TFLITE, EPILOGUE), p.mode
    words = None  # the records, emitted where the speed build always had them
    if p.mode == ORT:
        if float_records and p.act_min <= -128 and p.act_max >= 127:
            words = float_requant(p.scale, p.bias)
    elif p.mode == TFLITE and fast:
        words = smlal_requant(p.mult, p.shift, p.bias, p.out_zp, acc_range(p.bias, weights))
    r = RequantRecord(p.in_zp, p.out_zp, p.act_min, p.act_max)
    if words is None or not bias_in_records:
        r.bias = em.const("int32_t", f"{lid}_bias", p.bias)
    if p.mode in (ORT, EPILOGUE):
        r.scale = em.const("float", f"{lid}_scale", p.scale)
        if p.mode == EPILOGUE:  # ConvInteger / MatMulInteger: float(acc) * scale + post_bias, Q
            r.post_bias = em.const("float", f"{lid}_post_bias", p.post_bias)
            r.out_scale = p.out_scale
    elif words is None:
        r.mult = em.const("int32_t", f"{lid}_mult", p.mult)
        r.shift = em.const("int32_t", f"{lid}_shift", p.shift)
    if words is not None:  # with TFLITE they hold mult and shift too
        r.rq = em.const("int32_t", f"{lid}_rq", words, align=8)
        if staging is not None:  # (the emitter's: the copy's expression, or the array)
            r.rq = staging.copy(r.rq)
    em.consts.append(c_struct(f"{lid}_q", r))
    return f"&{lid}_q", r


def emit_records_requant(em, lid, p: ConvParams, weights=None, staging=None):
    """emit_requant_record for the kernels that read only the per-channel records when a
    layer has them (the size kernels, tinyaot_convolve_fast_w8_s8, tinyaot_convolve_sparse_s8):
    the fast kernels' records (one-SMLAL under tflite, {bias, scale} under ort over the whole
    int8 range) and no separate bias array; a tflite layer with a negative multiplier gets
    no records (the general form)."""
    if p.mode == TFLITE and np.any(np.asarray(p.mult) < 0):
        return emit_requant_record(em, lid, p)
    return emit_requant_record(em, lid, p, fast=True, float_records=True, bias_in_records=True,
                               weights=weights, staging=staging)


def emit_float_layer(em, lid, p: ConvParams, filt):
    """`<lid>_fp`, the tinyaot_float_conv_t of an onnxruntime float layer (FLOAT mode):
    the weights' scale per output channel and the float bias as arrays; `filt` the
    int8 weights' C name ("0" for a kernel that reads its own packed float weights)."""
    scale = em.const("float", f"{lid}_ws", p.filter_scale)
    bias = em.const("float", f"{lid}_bf", p.bias_f)
    em.consts.append(c_struct(f"{lid}_fp", FloatConvRecord(
        p.in_scale, p.in_zp, p.out_scale, p.out_zp, p.act_min, p.act_max, filt, scale, bias)))
    return f"&{lid}_fp"
