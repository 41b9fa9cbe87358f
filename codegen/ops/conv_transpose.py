"""conv_transpose: ONNX ConvTranspose, 2-D on NHWC (1-D as [N, C, 1, L]), weights
[C_in, C_out/group, kH, kW].

Output pixel o gets input pixel i through tap t when o = i*s - pad_head + t*d; the output
size is the IR tensor's (output_padding / output_shape only change it and the pads).
  ort:    onnxruntime runs a QDQ ConvTranspose in float (its optimizer does not fuse it):
          per group an SGEMM (MLAS: fma over the group's input channels, from zero) gives
          every (out channel, kh, kw, iy, ix) contribution; col2im adds them into a zeroed
          output in (kh, kw) order; then the bias; then QuantizeLinear
          (tinyaot_transpose_conv_f32_s8).
  tflite: reference_integer_ops::TransposeConv: int32 sums of (x + input_offset) * w over
          all taps, + bias, MultiplyByQuantizedMultiplier per channel, + output zero point,
          clamp (tinyaot_transpose_conv_s8; no groups, no dilation).
Both kernels keep one output pixel's accumulators in an arena scratch.
"""
from __future__ import annotations

import numpy as np

from ..numerics import ort_float as of
from ..numerics.ort_float import fma_f32
from .base import Op, Pending, Traits, Unsupported
from .conv_lowering import WEIGHT_TYPES, layer_weights, reshape_to_2d
from .conv_params import FLOAT, ConvParams, prepare_conv_like, requantize_sums
from .conv_records import emit_conv_dims, emit_float_layer, emit_requant
from .tflite_filters import tflite_bias, tflite_weights, tflite_window

F32 = np.float32


# ---- ONNX attributes -------------------------------------------------------------------

class AttrError(ValueError):
    pass


def conv_transpose_geometry(attrs, in_hw, w_hw):
    """ConvTranspose attributes -> dict(kernel, strides, dilations, pads (heads..., tails...),
    output_padding, out_hw), as onnxruntime's ComputeTransposePadAndOutputShape:
      * output_shape given: total = max(0, (in-1)*s + output_padding + (k-1)*d + 1 - out)
        (and an output_shape onnxruntime rejects is rejected);
      * else auto_pad SAME_UPPER / SAME_LOWER: total = max(0, the same with out = in*s);
      * in both cases SAME_UPPER puts the larger half of an odd total at the tail,
        anything else (NOTSET, SAME_LOWER, VALID) at the head (the ONNX spec's rule;
        checked against onnxruntime's outputs, tests/ops/test_conv_transpose.py);
      * VALID: no padding; NOTSET: the `pads` attribute.
    The output size is (in-1)*s + output_padding + (k-1)*d + 1 - head - tail, or
    output_shape when given. Only the head pads reach the kernels."""
    nd = len(in_hw)
    kernel = tuple(int(v) for v in attrs.get("kernel_shape", w_hw))
    if kernel != tuple(w_hw):
        raise AttrError(f"kernel_shape {list(kernel)} does not match the weights {list(w_hw)}")
    strides = _ints(attrs, "strides", nd, 1)
    dil = _ints(attrs, "dilations", nd, 1)
    adj = _ints(attrs, "output_padding", nd, 0)
    if min(strides) < 1 or min(dil) < 1:
        raise AttrError("strides and dilations must be >= 1")
    for i in range(nd):  # onnxruntime's (and the ONNX spec's) bound
        if not 0 <= adj[i] < max(strides[i], dil[i]):
            raise AttrError(f"output_padding {list(adj)} must be >= 0 and less than "
                            "max(stride, dilation) on every axis")
    auto = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    if auto not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise AttrError(f"unknown auto_pad '{auto}'")
    pads = list(_ints(attrs, "pads", 2 * nd, 0)) if auto == "NOTSET" else [0] * (2 * nd)
    if min(pads) < 0:
        raise AttrError("negative pads are not supported")
    out_shape = attrs.get("output_shape")
    if out_shape is not None:
        out_shape = [int(v) for v in out_shape][-nd:]
        if len(out_shape) != nd:
            raise AttrError(f"output_shape needs {nd} spatial sizes")
    out_hw = []
    for i in range(nd):
        natural = (in_hw[i] - 1) * strides[i] + adj[i] + (kernel[i] - 1) * dil[i] + 1
        if out_shape is not None:
            total = max(0, natural - out_shape[i])
            big, small = total - total // 2, total // 2
            pads[i], pads[nd + i] = (small, big) if auto == "SAME_UPPER" else (big, small)
            # onnxruntime refuses an output_shape its forward convolution would not map
            # back onto the input (e.g. more than stride - 1 rows beyond the natural size)
            back = (out_shape[i] + total - adj[i] - (kernel[i] - 1) * dil[i] - 1) // strides[i] + 1
            if back != in_hw[i]:
                raise AttrError(f"output_shape {out_shape} is inconsistent with the input size "
                                f"{list(in_hw)}, kernel, strides and output_padding")
            out_hw.append(out_shape[i])
            continue
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            total = max(0, natural - in_hw[i] * strides[i])
            big, small = total - total // 2, total // 2
            pads[i], pads[nd + i] = (small, big) if auto == "SAME_UPPER" else (big, small)
        out_hw.append(natural - pads[i] - pads[nd + i])
    if min(out_hw) < 1:
        raise AttrError(f"output size {out_hw} is empty")
    return {"kernel": kernel, "strides": strides, "dilations": dil, "pads": tuple(pads),
            "output_padding": adj, "out_hw": tuple(out_hw)}


def _ints(attrs, key, n, default):
    v = attrs.get(key)
    if v is None:
        return (default,) * n
    v = tuple(int(x) for x in v)
    if len(v) != n:
        raise AttrError(f"{key} must have {n} values, has {len(v)}")
    return v


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    """ConvTranspose on [N, C, H, W] (or [N, C, L] as [N, C, 1, L] between two zero-copy
    reshapes) -> one conv_transpose IR node."""
    x = lw.act_input(ins[0], name)
    w = layer_weights(lw, lw.weight_input(ins[1], name, WEIGHT_TYPES), 1, name, wide=False)
    b = lw.weight_input(ins[2], name, "int32") if len(ins) > 2 and ins[2] else None
    xt, wt = lw.graph.tensors[x], lw.graph.tensors[w]
    rank = len(xt.shape)
    if rank not in (3, 4) or len(wt.shape) != rank:
        raise Unsupported("only 1-D and 2-D ConvTranspose (3-D or 4-D tensors) is supported")
    group = int(attrs.get("group", 1))
    cin = xt.shape[1]
    if group < 1 or cin % group or wt.shape[0] != cin:
        raise lw.err(f"weights {list(wt.shape)} do not fit {cin} input channels in "
                     f"{group} group(s)", node=name, tensor=w)
    try:
        geo = conv_transpose_geometry(attrs, xt.shape[2:], wt.shape[2:])
    except AttrError as e:
        raise lw.err(str(e), node=name) from None
    want = (xt.shape[0], wt.shape[1] * group) + geo["out_hw"]
    if tuple(shape) != want:
        raise lw.err(f"output shape {list(shape)} from ONNX shape inference differs from "
                     f"{list(want)} (onnxruntime's ConvTranspose arithmetic)",
                     node=name, tensor=out)
    if rank == 3:  # 1-D: everything gets a unit H
        x = reshape_to_2d(lw, x, name)
        w4 = wt.shape[:2] + (1, wt.shape[2])
        w = lw.add_int_tensor(f"{w}@2d", w4, wt.dtype, wt.q,
                              np.ascontiguousarray(wt.data.reshape(w4))).name
        p = geo["pads"]
        geo.update(kernel=(1,) + geo["kernel"], strides=(1,) + geo["strides"],
                   dilations=(1,) + geo["dilations"], pads=(0, p[0], 0, p[1]),
                   output_padding=(0,) + geo["output_padding"])
        shape = (shape[0], shape[1], 1, shape[2])
    a = {k: geo[k] for k in ("kernel", "strides", "dilations", "pads", "output_padding")}
    a["group"] = group
    if rank == 3:
        a["conv1d_out"] = True
    lw.pending[out] = Pending("conv_transpose", name, [x, w, b], a, shape=tuple(shape))


# ---- TFLite ---------------------------------------------------------------------------------

def lower_tflite(tl, op):
    """TRANSPOSE_CONV(output_shape, filter [O, KH, KW, I], input[, bias]) -> conv_transpose,
    weights [I, O, KH, KW]. TFLM pads as the forward convolution from the output back to the
    input would (ComputePaddingHeightWidth on the output size): the odd pixel at the tail."""
    w_idx, x_idx, b_idx, y_idx = tl.inp(op, 1), tl.inp(op, 2), tl.inp(op, 3), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    xt, wt, yt = tl.tensor(x_idx), tl.tensor(w_idx), tl.tensor(y_idx)
    if len(xt.shape) != 4 or len(wt.shape) != 4 or wt.shape[3] != xt.shape[3]:
        raise Unsupported("TRANSPOSE_CONV needs 4-D tensors and a filter of the input's channels")
    same = op.options.get("padding", 0) == 0
    kernel = tuple(wt.shape[1:3])
    strides, _ = tflite_window(op)
    pads = []
    for n_out, n_in, k, s in zip(yt.shape[1:3], xt.shape[1:3], kernel, strides):
        want = (n_out + s - 1) // s if same else (n_out - k + s) // s
        if want != n_in:
            raise Unsupported(f"input size {n_in} does not match the output size {n_out}")
        total = max((n_in - 1) * s + k - n_out, 0) if same else 0
        pads.append((total // 2, total - total // 2))
    w = tflite_weights(tl, op, w_idx, 0, lambda d: d.transpose(3, 0, 1, 2), 1)
    a = {"kernel": kernel, "strides": strides, "dilations": (1, 1),
         "pads": (pads[0][0], pads[1][0], pads[0][1], pads[1][1]), "output_padding": (0, 0),
         "group": 1, **tl.act_attrs(op)}
    x = tl.act(x_idx, "nchw")
    b = tflite_bias(tl, op, b_idx, x, w, wt.shape[0])
    tl.emit("conv_transpose", tl.node_name(op), [x, w, b], [tl.new_act(y_idx, "nchw")], a)


# ---- the numpy oracle --------------------------------------------------------------------

def _taps(n_in, n_out, k, stride, pad, dil):
    """Per tap: (input slice, output slice) of the pixels it connects, or None."""
    out = []
    for t in range(k):
        off = t * dil - pad  # out = in*stride + off
        lo = max(0, -(off // stride))
        hi = min(n_in - 1, (n_out - 1 - off) // stride)
        out.append(None if hi < lo else
                   (slice(lo, hi + 1), slice(lo * stride + off, hi * stride + off + 1, stride)))
    return out


def tap_blocks(x_shape, w_shape, attrs, out_hw):
    """(kh, kw, group input channels, group output channels, input pixels, output
    pixels) for every tap in (kh, kw) order -- col2im's order -- and group."""
    _, _, h, wd = x_shape
    cin, og, kh, kw = w_shape
    g = attrs["group"]
    cg = cin // g
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    t, l = attrs["pads"][:2]
    rows = _taps(h, out_hw[0], kh, sh, t, dh)
    cols = _taps(wd, out_hw[1], kw, sw, l, dw)
    for i, ry in enumerate(rows):
        for j, rx in enumerate(cols):
            if ry is None or rx is None:
                continue
            for gi in range(g):
                yield (i, j, slice(gi * cg, (gi + 1) * cg), slice(gi * og, (gi + 1) * og),
                       (ry[0], rx[0]), (ry[1], rx[1]))


def conv_transpose_acc(x, w, in_zp, attrs, out_hw):
    """int64 sums of (x - zp) * w, NCHW [n, C_out, oh, ow]."""
    acc = np.zeros((x.shape[0], w.shape[1] * attrs["group"]) + tuple(out_hw), dtype=np.int64)
    xv = x.astype(np.int64) - in_zp
    w64 = w.astype(np.int64)
    for i, j, ci, co, src, dst in tap_blocks(x.shape, w.shape, attrs, out_hw):
        xs = xv[(slice(None), ci) + src]
        acc[(slice(None), co) + dst] += np.einsum("nchw,co->nohw", xs, w64[ci, :, i, j])
    return acc


def conv_transpose_int(x, w, attrs, p: ConvParams, out_hw):
    """The integer kernel (TFLite TRANSPOSE_CONV): sums, then p's requantization."""
    return requantize_sums(conv_transpose_acc(x, w, p.in_zp, attrs, out_hw), p, 1)


def sgemm_column(xs, wk, gemv):
    """MLAS SGEMM's value of sum over c of xs[:, c] * wk[c] (xs [n, K, ...], wk [K, M])
    -> [n, M, ...]. A general GEMM (x86 AVX512F/FMA3 kernels) takes K in blocks
    of 128 (MLAS_SGEMM_STRIDEK): fma chain from zero per block, each block's sum
    then added to the previous. With a 1-pixel input (GEMM N == 1) MLAS uses its
    M=1 kernel instead: products rounded, summed in groups of four
    ((p0 + p1) + p2) + p3, each group's sum added to the total; a tail of two
    and then one the same way."""
    k = xs.shape[1]
    shape = (xs.shape[0], wk.shape[1]) + xs.shape[2:]
    wb = [wk[c].reshape((1, -1) + (1,) * (xs.ndim - 2)) for c in range(k)]
    xb = [xs[:, c:c + 1] for c in range(k)]
    total = None
    if gemv:
        c = 0
        for size in [4] * (k // 4) + [2] * (k % 4 // 2) + [1] * (k % 2):
            part = (xb[c] * wb[c]).astype(F32)
            for d in range(c + 1, c + size):
                part = (part + (xb[d] * wb[d]).astype(F32)).astype(F32)
            total = part if total is None else (part + total).astype(F32)
            c += size
        return np.broadcast_to(total, shape).astype(F32)
    for k0 in range(0, k, 128):
        part = np.zeros(shape, dtype=F32)
        for c in range(k0, min(k, k0 + 128)):
            part = fma_f32(part, xb[c], wb[c])
        total = part if total is None else (part + total).astype(F32)
    return total


def conv_transpose_f32(x, w, attrs, in_scale, in_zp, w_scale, bias_f, out_hw):
    """The float32 output of onnxruntime's ConvTranspose (bias included), NCHW; w_scale
    along the weights' axis 1 (C_out / group), bias_f per output channel."""
    xf = of.dequantize(x, in_scale, in_zp)
    wf = (w.astype(F32) * np.asarray(w_scale, F32).reshape(1, -1, 1, 1)).astype(F32)
    y = np.zeros((x.shape[0], w.shape[1] * attrs["group"]) + tuple(out_hw), dtype=F32)
    gemv = x.shape[2] * x.shape[3] == 1  # GEMM N (input pixels) == 1
    for i, j, ci, co, src, dst in tap_blocks(x.shape, w.shape, attrs, out_hw):
        col = sgemm_column(xf[(slice(None), ci) + src], wf[ci, :, i, j], gemv)
        y[(slice(None), co) + dst] = (y[(slice(None), co) + dst] + col).astype(F32)
    return (y + np.asarray(bias_f, F32).reshape(1, -1, 1, 1)).astype(F32)


# ---- C ----------------------------------------------------------------------------------

def conv_transpose_filter(w, group):
    """ONNX ConvTranspose weights [C_in, C_out/group, kH, kW] -> [kH][kW][C_out][C_in/group],
    the order tinyaot_transpose_conv_*_s8 read (input channels contiguous)."""
    cin, og, kh, kw = w.shape
    cg = cin // group
    # [g, cg, og, kh, kw] -> [kh, kw, g, og, cg]
    return np.ascontiguousarray(w.reshape(group, cg, og, kh, kw).transpose(3, 4, 0, 2, 1)
                                .reshape(kh, kw, group * og, cg))


def transpose_conv_scratch_bytes(out_c):
    """tinyaot_transpose_conv_s8_get_buffer_size / ..._f32_s8_get_buffer_size: one
    output pixel's accumulators (int32 or float)."""
    return 4 * out_c


class ConvTranspose(Op):
    name = "conv_transpose"
    traits = Traits(layout="spatial")
    onnx = {"ConvTranspose": lower_onnx}
    tflite = {"TRANSPOSE_CONV": lower_tflite}

    def select(self, g, n, optimize):
        # one output pixel's accumulators (both numerics, both --optimize modes)
        n.attrs["scratch_bytes"] = transpose_conv_scratch_bytes(g.tensors[n.outputs[0]].shape[1])

    def prepare(self, g, n, numerics):
        return prepare_conv_like(g, n, numerics)

    def reference(self, g, n, ins, p, numerics):
        out_hw = g.tensors[n.outputs[0]].shape[2:]
        if p.mode == FLOAT:
            w = g.tensors[n.inputs[1]].data
            y = conv_transpose_f32(ins[0], w, n.attrs, p.in_scale, p.in_zp,
                                   p.filter_scale[:w.shape[1]], p.bias_f, out_hw)
            return of.quantize(y, p.out_scale, p.out_zp, p.act_min, p.act_max)
        return conv_transpose_int(ins[0], ins[1], n.attrs, p, out_hw)

    def emit(self, em, lid, n, p, info):
        x = em.g.tensors[n.inputs[0]]
        w = em.g.tensors[n.inputs[1]]
        y = em.g.tensors[n.outputs[0]]
        dims = emit_conv_dims(em, lid, n)
        info["macs"] = int(x.size * w.shape[1] * w.shape[2] * w.shape[3])
        filt = em.const("int8_t", f"{lid}_w", conv_transpose_filter(w.data, n.attrs["group"]),
                        align=4)
        scratch = em.scratch(n)
        if p.mode == FLOAT:
            fp = emit_float_layer(em, lid, p, filt)
            info["kernel"] = "tinyaot_transpose_conv_f32_s8"
            em.call(info["kernel"], [dims, fp, em.ptr(x.name), f"(float *)(void *){scratch}",
                                     em.ptr(y.name)])
            return
        q = emit_requant(em, lid, p)
        info["kernel"] = "tinyaot_transpose_conv_s8"
        em.call(info["kernel"], [dims, q, em.ptr(x.name), filt, f"(int32_t *)(void *){scratch}",
                                 em.ptr(y.name)])


OP = ConvTranspose()
