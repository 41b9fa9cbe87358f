"""Resize (nearest, bilinear over H, W) in numpy, both numerics, from the specs.

ort:    onnxruntime's CPU Resize. Nearest: the source index of each output row
        / column from get_original_coordinate + nearest_mode, in float32.
        Bilinear runs in float (ORT 1.32 keeps DequantizeLinear -> Resize ->
        QuantizeLinear for linear mode): SetupUpsampleBilinear's clamped
        coordinates, weights dx1 = |x - x1|, dx2 = |x - x2| (0.5 each when
        x1 == x2), y = (dx2*dy2)*X11 + (dx1*dy2)*X21 + (dx2*dy1)*X12 +
        (dx1*dy1)*X22 summed left to right in float32, then QuantizeLinear.
tflite: TFLite's reference RESIZE_NEAREST_NEIGHBOR (GetNearestNeighbor) and
        int8 RESIZE_BILINEAR (ResizeBilinearInteger: 10-bit fixed-point
        coordinates, 20-bit products, rounding half away from zero), with the
        align_corners / half_pixel_centers flags.

The per-axis functions give the tables codegen/ops/resize.py prepares; ort_bilinear
and tflite_bilinear apply them to a logical NCHW tensor.
"""
from __future__ import annotations

import math

import numpy as np

from . import ort_float as of

F32 = np.float32


class ResizeModeError(ValueError):
    """An ONNX mode with no TFLite equivalent."""


# ---- onnxruntime ------------------------------------------------------------
def ort_original(ctm, x, scale, length_resized, length_original):
    """get_original_coordinate, float32."""
    x, scale = F32(x), F32(scale)
    if ctm == "half_pixel":
        return F32(F32(F32(x + F32(0.5)) / scale) - F32(0.5))
    if ctm == "pytorch_half_pixel":
        if length_resized <= 1:
            return F32(0.0)
        return F32(F32(F32(x + F32(0.5)) / scale) - F32(0.5))
    if ctm == "asymmetric":
        return F32(x / scale)
    if ctm == "tf_half_pixel_for_nn":
        return F32(F32(x + F32(0.5)) / scale)
    if ctm == "align_corners":
        if length_resized == 1:
            return F32(0.0)
        return F32(F32(x * F32(length_original - 1)) / F32(length_resized - 1))
    raise ValueError(ctm)


# onnxruntime 1.32 takes a coordinate within ~1e-6 of k + 0.5 as a tie (measured: 4
# float32 ulps below 2.5 round up with round_prefer_ceil, 5 do not; 2 ulps above round
# down with round_prefer_floor; at 20.5 one ulp (1.9e-6) is no longer a tie).
TIE_EPS = 1e-6


def _nearest_pixel(mode, v):
    v = float(F32(v))
    if mode == "floor":
        return math.floor(v)
    if mode == "ceil":
        return math.ceil(v)
    fl = math.floor(v)
    if abs((v - fl) - 0.5) < TIE_EPS:  # a tie
        return fl if mode == "round_prefer_floor" else fl + 1
    return int(math.floor(v + 0.5))


def ort_nearest_axis(ctm, nearest_mode, scale, n_in, n_out):
    if F32(scale) == F32(1.0):  # onnxruntime maps the axis one to one, whatever the mode
        return np.arange(n_out, dtype=np.int32)
    idx = []
    for o in range(n_out):
        v = _nearest_pixel(nearest_mode, ort_original(ctm, o, scale, n_out, n_in))
        idx.append(min(max(v, 0), n_in - 1))
    return np.asarray(idx, dtype=np.int32)


def ort_bilinear_axis(ctm, scale, n_in, n_out):
    """(i1, i2, d1, d2): source indices and float32 weights (d2 weighs i1)."""
    i1, i2, d1, d2 = [], [], [], []
    for o in range(n_out):
        v = F32(o) if F32(scale) == F32(1.0) else ort_original(ctm, o, scale, n_out, n_in)
        v = F32(max(F32(0.0), min(v, F32(n_in - 1))))
        a = min(int(v), n_in - 1)
        b = min(a + 1, n_in - 1)
        w1, w2 = F32(abs(v - F32(a))), F32(abs(v - F32(b)))
        if a == b:
            w1 = w2 = F32(0.5)
        i1.append(a)
        i2.append(b)
        d1.append(w1)
        d2.append(w2)
    return (np.asarray(i1, np.int32), np.asarray(i2, np.int32), np.asarray(d1, F32),
            np.asarray(d2, F32))


def ort_bilinear(x, ax_h, ax_w, in_scale, in_zp, out_scale, out_zp, lo=-128, hi=127):
    y1, y2, dy1, dy2 = ax_h
    x1, x2, dx1, dx2 = ax_w
    xf = of.dequantize(x, in_scale, in_zp)
    rows1, rows2 = xf[:, :, y1, :], xf[:, :, y2, :]
    x11, x21 = rows1[..., x1], rows1[..., x2]
    x12, x22 = rows2[..., x1], rows2[..., x2]
    DX1, DX2 = dx1[None, None, None, :], dx2[None, None, None, :]
    DY1, DY2 = dy1[None, None, :, None], dy2[None, None, :, None]
    acc = ((DX2 * DY2).astype(F32) * x11).astype(F32)
    acc = (acc + ((DX1 * DY2).astype(F32) * x21).astype(F32)).astype(F32)
    acc = (acc + ((DX2 * DY1).astype(F32) * x12).astype(F32)).astype(F32)
    acc = (acc + ((DX1 * DY1).astype(F32) * x22).astype(F32)).astype(F32)
    return of.quantize(acc, out_scale, out_zp, lo, hi)


# ---- TFLite -----------------------------------------------------------------
def tflite_flags(mode, ctm, nearest_mode, n_out_h, n_out_w):
    """ONNX modes -> TFLite (align_corners, half_pixel_centers), or ResizeModeError."""
    if mode == "nearest":
        if ctm == "asymmetric" and nearest_mode == "floor":
            return False, False
        if (ctm, nearest_mode) in (("tf_half_pixel_for_nn", "floor"),
                                   ("half_pixel", "round_prefer_ceil")):
            return False, True
        if ctm == "align_corners" and nearest_mode == "round_prefer_ceil":
            return True, False
        raise ResizeModeError(
            f"tflite numerics: nearest Resize with coordinate_transformation_mode={ctm}, "
            f"nearest_mode={nearest_mode} has no TFLite RESIZE_NEAREST_NEIGHBOR equivalent "
            "(asymmetric+floor, tf_half_pixel_for_nn+floor, half_pixel+round_prefer_ceil, "
            "align_corners+round_prefer_ceil)")
    if ctm == "asymmetric":
        return False, False
    if ctm == "align_corners":
        return True, False
    if ctm == "half_pixel" or (ctm == "pytorch_half_pixel" and min(n_out_h, n_out_w) > 1):
        return False, True
    raise ResizeModeError(f"tflite numerics: linear Resize with coordinate_transformation_mode="
                          f"{ctm} has no TFLite RESIZE_BILINEAR equivalent")


def tflite_nearest_axis(n_in, n_out, align_corners, half_pixel):
    """GetNearestNeighbor for every output index."""
    if align_corners and n_out > 1:
        scale = F32(F32(n_in - 1) / F32(n_out - 1))
    else:
        scale = F32(F32(n_in) / F32(n_out))
    off = F32(0.5) if half_pixel else F32(0.0)
    idx = []
    for o in range(n_out):
        v = float(F32(F32(F32(o) + off) * scale))
        i = int(math.floor(v + 0.5)) if align_corners else math.floor(v)  # TfLiteRound, v >= 0
        i = min(i, n_in - 1)
        if half_pixel:
            i = max(0, i)
        idx.append(i)
    return np.asarray(idx, dtype=np.int32)


def _cdiv(a, b):
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def tflite_bilinear_axis(n_in, n_out, align_corners, half_pixel):
    """(i0, i1, frac): ComputeInterpolationValuesInteger per output index;
    frac = scaled - 1024 * i0 (the weight of i1, in 1/1024)."""
    s10 = _cdiv(1024 * n_in + n_out // 2, n_out)
    if align_corners and n_out > 1:
        s10 = _cdiv(1024 * (n_in - 1) + (n_out - 1) // 2, n_out - 1)
    i0, i1, fr = [], [], []
    for o in range(n_out):
        v = o * s10 + (s10 // 2 - 512 if half_pixel else 0)
        lo = max(_cdiv(v, 1024), 0)
        hi = min(_cdiv(v + 1023, 1024), n_in - 1)
        i0.append(lo)
        i1.append(hi)
        fr.append(v - 1024 * lo)
    return np.asarray(i0, np.int32), np.asarray(i1, np.int32), np.asarray(fr, np.int32)


def tflite_bilinear(x, ax_h, ax_w):
    y0, y1, fy = ax_h
    x0, x1, fx = ax_w
    x = np.asarray(x, dtype=np.int64)
    r0, r1 = x[:, :, y0, :], x[:, :, y1, :]
    FY = fy.astype(np.int64)[None, None, :, None]
    FX = fx.astype(np.int64)[None, None, None, :]
    acc = (r0[..., x0] * (1024 - FY) * (1024 - FX) + r1[..., x0] * FY * (1024 - FX)
           + r0[..., x1] * (1024 - FY) * FX + r1[..., x1] * FY * FX)
    rnd = np.where(acc > 0, 1 << 19, -(1 << 19))
    v = acc + rnd
    return (np.sign(v) * (np.abs(v) >> 20)).astype(np.int32)  # C division: toward zero

