"""ONNX Resize (opset 11+) -> the `resize` IR node's attributes.

Supported: 4-D NCHW input resized over H and W only, mode nearest (any
coordinate_transformation_mode but tf_crop_and_resize, any nearest_mode) or
linear (bilinear), scales or sizes given as constants. The per-axis float32
scale is kept exactly as onnxruntime uses it (scales given: that value;
sizes given: float(out) / float(in)); prepare.py turns it into index and
weight tables per numerics.
"""
from __future__ import annotations

import numpy as np

CTMS = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn"}
NEAREST_MODES = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}


class ResizeUnsupported(ValueError):
    pass


def resize_attrs(attrs, opset, in_shape, out_shape, scales, sizes):
    """scales / sizes: the constant inputs (numpy) or None."""
    if opset < 11:
        raise ResizeUnsupported("Resize before opset 11 is not supported (re-export with opset >= 11)")
    mode = attrs.get("mode", "nearest")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    nearest = attrs.get("nearest_mode", "round_prefer_floor")
    if mode not in ("nearest", "linear"):
        raise ResizeUnsupported(f"Resize mode '{mode}' is not supported (nearest, linear)")
    if ctm == "tf_crop_and_resize":
        raise ResizeUnsupported("Resize with tf_crop_and_resize (ROI crop) is not supported")
    if ctm not in CTMS:
        raise ResizeUnsupported(f"coordinate_transformation_mode '{ctm}' is not supported")
    if mode == "linear" and ctm == "tf_half_pixel_for_nn":
        raise ResizeUnsupported("linear Resize with tf_half_pixel_for_nn is not supported")
    if mode == "nearest" and nearest not in NEAREST_MODES:
        raise ResizeUnsupported(f"nearest_mode '{nearest}' is not supported")
    if int(attrs.get("antialias", 0)):
        raise ResizeUnsupported("Resize with antialias=1 is not supported")
    if int(attrs.get("exclude_outside", 0)):
        raise ResizeUnsupported("Resize with exclude_outside=1 is not supported")
    if attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise ResizeUnsupported("Resize keep_aspect_ratio_policy other than stretch")
    if len(in_shape) != 4:
        raise ResizeUnsupported("Resize of a non 4-D (NCHW) tensor is not supported")
    axes = [int(a) % 4 for a in attrs.get("axes", range(4))]
    full_scales = [np.float32(1.0)] * 4
    full_sizes = list(in_shape)
    if sizes is not None and np.asarray(sizes).size:
        for a, v in zip(axes, np.asarray(sizes).reshape(-1)):
            full_sizes[a] = int(v)
        full_scales = [np.float32(np.float32(o) / np.float32(i)) for o, i in zip(full_sizes, in_shape)]
    elif scales is not None and np.asarray(scales).size:
        for a, v in zip(axes, np.asarray(scales, dtype=np.float32).reshape(-1)):
            full_scales[a] = np.float32(v)
        if any(not np.isfinite(s) or s <= 0 for s in full_scales):
            raise ResizeUnsupported("Resize scales must be finite and > 0")
        full_sizes = [int(np.float32(s) * np.float32(i)) for s, i in zip(full_scales, in_shape)]
    else:
        raise ResizeUnsupported("Resize needs constant scales or sizes")
    if min(full_sizes) <= 0:
        raise ValueError(f"Resize output {full_sizes} is empty")
    if full_sizes[:2] != list(in_shape[:2]):
        raise ResizeUnsupported("Resize of the N or C axis is not supported (only H, W)")
    if tuple(full_sizes) != tuple(out_shape):
        raise ValueError(f"Resize output {full_sizes} differs from the model's {list(out_shape)}")
    return {"mode": mode, "ctm": ctm, "nearest_mode": nearest,
            "scales": (float(full_scales[2]), float(full_scales[3]))}
