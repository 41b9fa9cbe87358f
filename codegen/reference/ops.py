"""Integer kernels in numpy, on logical (ONNX, NCHW) layouts.

Each function gets the prepared parameters of codegen.prepare and returns
the integer output tensor.
"""
from __future__ import annotations

import numpy as np

from ..numerics import ort_float as of

F32 = np.float32


def add(a, b, p, numerics):
    if numerics == "ort" and p.get("mode") == 2:  # onnxruntime QLinearAdd (MLAS)
        from ..numerics.ort_qlinear_add import qlinear_add
        return qlinear_add(a, b, p)
    if numerics == "ort":
        fa = of.dequantize(a, p["a_scale"], p["a_zp"])
        fb = of.dequantize(b, p["b_scale"], p["b_zp"])
        return of.quantize((fa + fb).astype(F32), p["out_scale"], p["out_zp"], p["act_min"], p["act_max"])
    from ..numerics import tflite_fixedpoint as tfp
    return tfp.add_int8(a, b, p, p["act_min"], p["act_max"])


def _pool_windows(x, attrs, pad_value):
    n, c, h, w = x.shape
    kh, kw = attrs["kernel"]
    sh, sw = attrs["strides"]
    t, l, b, r = attrs["pads"]
    oh = (h + t + b - kh) // sh + 1
    ow = (w + l + r - kw) // sw + 1
    return n, c, h, w, kh, kw, sh, sw, t, l, oh, ow


def avgpool(x, attrs, p, numerics):
    n, c, h, w, kh, kw, sh, sw, t, l, oh, ow = _pool_windows(x, attrs, 0)
    out = np.zeros((n, c, oh, ow), dtype=np.int32)
    cip = attrs.get("count_include_pad", 0)
    if numerics == "ort":
        xf = of.dequantize(x, p["in_scale"], p["in_zp"])
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * sh - t, j * sw - l
            ha, hb = max(h0, 0), min(h0 + kh, h)
            wa, wb = max(w0, 0), min(w0 + kw, w)
            count = kh * kw if cip else (hb - ha) * (wb - wa)
            if numerics == "ort":
                # ORT's float pooling: sequential float32 sum over the window, / count.
                acc = np.zeros((n, c), dtype=F32)
                for y in range(ha, hb):
                    for z in range(wa, wb):
                        acc = (acc + xf[:, :, y, z]).astype(F32)
                mean = (acc / F32(count)).astype(F32)
                if p.get("qlinear"):  # QLinearAveragePool: nearbyintf(mean / s + zp)
                    zr = p["out_zp"] + p.get("mean_bias", 0)
                    v = np.rint((mean / F32(p["out_scale"])).astype(F32) + F32(zr)) - p.get("mean_bias", 0)
                    out[:, :, i, j] = np.clip(v, p["act_min"], p["act_max"])
                    continue
                out[:, :, i, j] = of.quantize(mean, p["out_scale"], p["out_zp"], p["act_min"], p["act_max"])
            else:
                from ..numerics import tflite_fixedpoint as tfp
                s = x[:, :, ha:hb, wa:wb].astype(np.int32).sum(axis=(2, 3))
                if "mean_mult" in p:  # TFLite MEAN: rescale the raw sum
                    v = tfp.multiply_by_quantized_multiplier(s, p["mean_mult"], p["mean_shift"])
                    v = v + p["mean_bias"]
                else:
                    v = tfp.avgpool_round(s, count)
                out[:, :, i, j] = np.clip(v, p["act_min"], p["act_max"])
    return out


def maxpool(x, attrs, p, numerics):
    n, c, h, w, kh, kw, sh, sw, t, l, oh, ow = _pool_windows(x, attrs, 0)
    out = np.zeros((n, c, oh, ow), dtype=np.int32)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * sh - t, j * sw - l
            win = x[:, :, max(h0, 0):min(h0 + kh, h), max(w0, 0):min(w0 + kw, w)]
            out[:, :, i, j] = win.max(axis=(2, 3))
    return np.clip(out, p["act_min"], p["act_max"])


def qlinear_softmax_table(x_scale, d):
    """onnxruntime QLinearSoftmax's float table: e[k] = exp((k - 255 + b) * s), k = 255 - (max - x)."""
    import math
    bs = math.log(float(F32(np.finfo(np.float32).max) / F32(d)))
    bs = max(0.0, bs - 5.0) / float(x_scale)
    return np.array([math.exp((k - 255 + bs) * float(x_scale)) for k in range(256)]).astype(F32)


def qlinear_softmax(x, p):
    """onnxruntime QLinearSoftmax (C: runtime_c/src/tinyaot_softmax_qlinear_s8.c)."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.int32)
    e = p["table"][255 - (rows.max(axis=1, keepdims=True) - rows)]
    s = np.zeros((rows.shape[0], 1), dtype=F32)
    for k in range(rows.shape[1]):
        s = (s + e[:, k:k + 1]).astype(F32)
    q = np.rint(((e * F32(p["y_mult"])).astype(F32) / s).astype(F32)).astype(np.int64)
    v = q + p["out_zp"]
    if p["u8"]:
        out = np.minimum(v, 127)
    else:
        out = np.minimum(v, 255).astype(np.uint8).astype(np.int8)
    return out.astype(np.int32).reshape(x.shape)


def softmax(x, p, numerics):
    """Softmax over the last axis."""
    if numerics == "ort" and p.get("qlinear"):
        return qlinear_softmax(x, p)
    if numerics == "ort":
        xf = of.dequantize(x, p["in_scale"], p["in_zp"])
        m = xf.max(axis=-1, keepdims=True)
        e = of.expf((xf - m).astype(F32))
        s = np.zeros(e.shape[:-1] + (1,), dtype=F32)
        for k in range(e.shape[-1]):
            s = (s + e[..., k:k + 1]).astype(F32)
        y = (e / s).astype(F32)
        return of.quantize(y, p["out_scale"], p["out_zp"])
    from ..numerics import tflite_fixedpoint as tfp
    rows = x.reshape(-1, x.shape[-1])
    out = np.stack([tfp.softmax_int8(r, p) for r in rows])
    return out.reshape(x.shape)

