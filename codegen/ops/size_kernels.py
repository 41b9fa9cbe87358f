"""The --optimize size layers of conv2d and fully_connected (shared; no operator here).

size keeps every weight as its int8 byte in flash:
* ORT's float conv / Gemm layers run tinyaot_convolve_f32_w8_s8 /
  tinyaot_fully_connected_f32_w8_s8: the same MLAS summation order, weights
  dequantized as they are read (float(q) * scale is exactly DequantizeLinear's
  float32, so the bits equal the speed kernels' and onnxruntime's);
* integer conv (groups 1), depthwise and FC layers that have a fast kernel under
  --optimize speed (int16-packed weights, unrolled asm variants) run
  tinyaot_convolve_w8_s8 / tinyaot_depthwise_conv_w8_s8 / tinyaot_fully_connected_w8_s8
  instead: int8 weights read in place, rows reordered at compile time (conv: two int16
  columns in the scratch, 2x2 blocks of SXTB16 + SMLAD; FC: 4 outputs per block;
  depthwise: 4 channels per word); the sums are exact integers and the requantization
  gives tinyaot_requant_channel's results, so the outputs are the same.
"""
from __future__ import annotations

import numpy as np

from ..kernels.conv_f32_pack import segment_words
from ..kernels.fast_pack import QUAD_ORDER
from ..numerics.mlas_fc_order import ORDER_CODE
from .conv_records import emit_float_layer, emit_records_requant


def select_size(g, n):
    """Turn the layer's --optimize speed choice (attrs "ort_float", "fast_kernel") into
    its --optimize size kernel: attrs "f32_w8" or "int_w8", and their scratch. Weights
    that are int16 (w - zp beyond int8: ops/conv_lowering.py) keep the speed kernel,
    which reads int16 weights (the size kernels read int8 bytes)."""
    w = g.tensors[n.inputs[1]]
    if w.dtype != "int8":
        return
    if n.attrs.get("ort_float"):
        n.attrs["f32_w8"] = True
        # dequantized input columns of K floats: 4 pixels (conv), one row (FC)
        cols = 4 if n.op == "conv2d" else 1
        n.attrs["scratch_bytes"] = 4 * cols * int(np.prod(w.shape[1:]))
    elif n.attrs.get("fast_kernel"):
        kind = n.attrs["int_w8"] = n.attrs.pop("fast_kernel")
        n.attrs.pop("scratch_bytes", None)
        if kind in ("conv", "fc"):  # int16: two im2col columns (conv) or one row (FC)
            k4 = (int(np.prod(w.shape[1:])) + 3) // 4 * 4
            n.attrs["scratch_bytes"] = 2 * k4 * (2 if kind == "conv" else 1)


def w8_pack(w2d, group=2):
    """W[out][k] int8 -> the bytes tinyaot_dot_w8.h reads, still one per weight
    (plus zeros up to k4, k rounded up to 4): rows in groups of `group` (2:
    the conv's pairs, one LDRD; 4: the FC's, one LDM), per group of 4 values
    each row's 4 bytes in turn, as w0, w2, w1, w3 so that __SXTB16 /
    __SXTB16_ROR8 give the pairs {w0, w1}, {w2, w3}; the rows left over
    follow as a pair (group 4), then a single row."""
    w = np.asarray(w2d, dtype=np.int8)
    rows, k = w.shape
    k4 = (k + 3) // 4 * 4
    p = np.zeros((rows, k4), dtype=np.int8)
    p[:, :k] = w
    p = p.reshape(rows, k4 // 4, 4)[..., QUAD_ORDER]
    parts, r = [], 0
    while r < rows:
        g = next(g for g in (group, 2, 1) if r + g <= rows)
        parts.append(p[r:r + g].transpose(1, 0, 2).reshape(-1))
        r += g
    return np.concatenate(parts)


def _float_params(em, lid, w, p):
    """`<lid>_fp` (tinyaot_float_conv_t) with the int8 weights as [out][k]."""
    filt = em.const("int8_t", f"{lid}_w", w.data.reshape(w.shape[0], -1), align=4)
    return emit_float_layer(em, lid, p, filt)


def emit_conv_w8(em, lid, n, p, info, dims):
    x, w, y = (em.g.tensors[t] for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
    fp = _float_params(em, lid, w, p)
    words, nseg = segment_words(x.shape, y.shape, n.attrs)
    seg = em.const("int32_t", f"{lid}_seg", words)
    info["kernel"] = "tinyaot_convolve_f32_w8_s8"
    em.call(info["kernel"], [dims, fp, seg, str(nseg), em.ptr(x.name), em.scratch(n, "float"),
                             em.ptr(y.name)])


def emit_fc_w8(em, lid, n, p, info, rows):
    x, w, y = (em.g.tensors[t] for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
    nout, k = w.shape
    fp = _float_params(em, lid, w, p)
    info["kernel"] = "tinyaot_fully_connected_f32_w8_s8"
    em.call(info["kernel"], [str(rows), str(k), str(nout), str(ORDER_CODE[p.fc_order]),
                             str(p.k_block), fp, em.ptr(x.name), em.scratch(n, "float"),
                             em.ptr(y.name)])


def emit_conv_int_w8(em, lid, n, p, info, dims):
    x, w, y = (em.g.tensors[t] for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
    q, _ = emit_records_requant(em, lid, p, w.data)
    if n.attrs["int_w8"] == "depthwise":  # [k_h][k_w][c], no scratch
        filt = em.const("int8_t", f"{lid}_w", w.data[:, 0].transpose(1, 2, 0), align=4)
        info["kernel"] = "tinyaot_depthwise_conv_w8_s8"
        em.call(info["kernel"], [dims, q, em.ptr(x.name), filt, em.ptr(y.name)])
        return
    filt = em.const("int8_t", f"{lid}_w",
                    w8_pack(w.data.transpose(0, 2, 3, 1).reshape(w.shape[0], -1)), align=4)
    info["kernel"] = "tinyaot_convolve_w8_s8"
    em.call(info["kernel"], [dims, q, em.ptr(x.name), filt, em.scratch(n, "int16_t"),
                             em.ptr(y.name)])


def emit_fc_int_w8(em, lid, n, p, info, rows):
    x, w, y = (em.g.tensors[t] for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
    nout, k = w.shape
    q, _ = emit_records_requant(em, lid, p, w.data)
    filt = em.const("int8_t", f"{lid}_w", w8_pack(w.data, 4), align=4)
    info["kernel"] = "tinyaot_fully_connected_w8_s8"
    em.call(info["kernel"], [str(rows), str(k), str(nout), q, em.ptr(x.name), filt,
                             em.scratch(n, "int16_t"), em.ptr(y.name)])
