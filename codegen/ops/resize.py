"""resize: ONNX Resize (opset 11+) of an int8 NCHW tensor over H and W.

Supported: mode nearest (any coordinate_transformation_mode but tf_crop_and_resize, any
nearest_mode) or linear (bilinear), scales or sizes given as constants. The per-axis float32
scale is kept exactly as onnxruntime uses it (scales given: that value; sizes given:
float(out) / float(in)); prepare turns it into index and weight tables from the chosen
oracle (numerics/resize.py): onnxruntime's float Resize, or TFLite's RESIZE_NEAREST_NEIGHBOR
/ int8 RESIZE_BILINEAR with the ONNX modes they have. The kernels run NHWC (traits
"spatial") and only read the tables. TFLite RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR are
lowered here too, as the ONNX modes that compute the same coordinates.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import ClassVar

import numpy as np

from ..errors import TinyAotError
from ..kernels.c_format import c_struct
from ..numerics import resize as rr
from ..numerics.quant import act_bounds, requant_table
from .base import ANY, Op, Pending, Traits, Unsupported
from .physical import int32_array

F32 = np.float32
CTMS = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn"}
NEAREST_MODES = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}


class ResizeUnsupported(ValueError):
    pass


def resize_attrs(attrs, opset, in_shape, out_shape, scales, sizes):
    """The `resize` IR node's attributes; scales / sizes: the constant inputs (numpy) or None."""
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


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    nearest = attrs.get("mode", "nearest") == "nearest"
    # nearest copies elements: it commutes with quantization, its input may be a float
    # result still pending (quantized with the output's parameters)
    x = lw.exact_input(ins[0], name) if nearest else lw.act_input(ins[0], name)
    ins = list(ins) + [""] * 4

    def const_or_none(i, what):
        return np.asarray(lw.const(ins[i], name, f"Resize {what}")) if ins[i] else None
    try:
        a = resize_attrs(attrs, lw.opset, lw.shape_of(ins[0], name), shape,
                         const_or_none(2, "scales"), const_or_none(3, "sizes"))
    except ResizeUnsupported as e:
        raise Unsupported(str(e)) from None
    except ValueError as e:
        raise lw.err(str(e), node=name, tensor=out) from None
    lw.pending[out] = Pending("resize", name, [x], a, shape=shape,
                              commutes=ANY if nearest else None)


@dataclass
class ResizeNearestParams:  # tinyaot_resize_nearest_s8's tables
    y_idx: np.ndarray  # int32[out_h]: the input row of each output row
    x_idx: np.ndarray  # int32[out_w]
    table: np.ndarray | None  # int8[256]: requantization and clamp of each copied element


@dataclass
class ResizeBilinearParams:  # tinyaot_resize_bilinear_params_t
    CTYPE: ClassVar[str] = "tinyaot_resize_bilinear_params_t"
    batches: int
    in_h: int
    in_w: int
    c: int
    out_h: int
    out_w: int
    mode: int  # 0: onnxruntime float, 1: TFLite integer
    y0: np.ndarray  # int32[out_h]: the two source rows of each output row
    y1: np.ndarray
    x0: np.ndarray  # int32[out_w]: the two source columns of each output column
    x1: np.ndarray
    fy0: np.ndarray | None  # mode 0: float32 weights of y0, y1, x0, x1
    fy1: np.ndarray | None
    fx0: np.ndarray | None
    fx1: np.ndarray | None
    wy: np.ndarray | None  # mode 1: int32 weight of y1 / x1, in 1/1024
    wx: np.ndarray | None
    in_scale: float  # mode 0
    out_scale: float
    in_zp: int
    out_zp: int
    act_min: int
    act_max: int
    table: np.ndarray | None  # mode 1: int8[256] requantization after, or None


# (align_corners, half_pixel_centers) -> the ONNX coordinate_transformation_mode and
# nearest_mode that TFLite's kernel computes
TFLITE_NEAREST = {(False, False): ("asymmetric", "floor"),
                  (False, True): ("tf_half_pixel_for_nn", "floor"),
                  (True, False): ("align_corners", "round_prefer_ceil")}
TFLITE_BILINEAR = {(False, False): "asymmetric", (True, False): "align_corners",
                   (False, True): "half_pixel"}


def lower_tflite(tl, op):
    """RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR(input, size): the output size from the
    file, the scales as float32(out) / float32(in)."""
    x_idx, y_idx = tl.inp(op, 0), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    xt, yt = tl.tensor(x_idx), tl.tensor(y_idx)
    if len(xt.shape) != 4:
        raise Unsupported("resize needs a 4-D input")
    key = (bool(op.options.get("align_corners", False)),
           bool(op.options.get("half_pixel_centers", False)))
    if all(key):
        raise Unsupported("align_corners and half_pixel_centers together")
    if op.builtin == "RESIZE_NEAREST_NEIGHBOR":
        mode, (ctm, nearest) = "nearest", TFLITE_NEAREST[key]
    else:
        mode, ctm, nearest = "linear", TFLITE_BILINEAR[key], "round_prefer_floor"
    scales = tuple(float(F32(F32(o) / F32(i))) for o, i in zip(yt.shape[1:3], xt.shape[1:3]))
    x = tl.act(x_idx, "nchw")
    tl.emit("resize", tl.node_name(op), [x], [tl.new_act(y_idx, "nchw")],
            {"mode": mode, "ctm": ctm, "nearest_mode": nearest, "scales": scales,
             "act_lo": None, "act_hi": None})


class Resize(Op):
    name = "resize"
    traits = Traits(layout="spatial")
    onnx = {"Resize": lower_onnx}
    tflite = {"RESIZE_NEAREST_NEIGHBOR": lower_tflite, "RESIZE_BILINEAR": lower_tflite}

    def prepare(self, g, n, numerics):
        x = g.tensors[n.inputs[0]]
        y = g.tensors[n.outputs[0]]
        a = n.attrs
        if x.dtype != "int8" or y.dtype != "int8":
            raise TinyAotError("Resize: only int8 input and output are supported",
                               model=g.source, node=n.name)
        nb, c, h, w = x.shape
        _, _, oh, ow = y.shape
        sh, sw = a["scales"]
        lo, hi = act_bounds(numerics, y, a.get("act_lo"), a.get("act_hi"))
        dims = dict(batches=nb, in_h=h, in_w=w, c=c, out_h=oh, out_w=ow)
        if numerics == "ort":
            if a["mode"] == "nearest":
                return ResizeNearestParams(
                    rr.ort_nearest_axis(a["ctm"], a["nearest_mode"], sh, h, oh),
                    rr.ort_nearest_axis(a["ctm"], a["nearest_mode"], sw, w, ow),
                    requant_table(x, y, numerics, lo, hi))
            if a.get("ort_int8"):  # frontend/ort_facts.py: ORT dropped the DQ/Q around it
                raise TinyAotError("onnxruntime runs this linear Resize on int8 directly; its "
                                   "integer bilinear kernel is not implemented in tinyaot",
                                   model=g.source, node=n.name)
            sx, zx = x.q.scalar()
            sy, zy = y.q.scalar()
            # (i1, i2, d1, d2) per axis: d2 weighs i1, d1 weighs i2
            y0, y1, fy1, fy0 = rr.ort_bilinear_axis(a["ctm"], sh, h, oh)
            x0, x1, fx1, fx0 = rr.ort_bilinear_axis(a["ctm"], sw, w, ow)
            return ResizeBilinearParams(
                **dims, mode=0, y0=y0, y1=y1, x0=x0, x1=x1, fy0=fy0, fy1=fy1, fx0=fx0, fx1=fx1,
                wy=None, wx=None, in_scale=F32(sx), out_scale=F32(sy), in_zp=int(zx),
                out_zp=int(zy), act_min=lo, act_max=hi, table=None)
        try:
            align, half = rr.tflite_flags(a["mode"], a["ctm"], a["nearest_mode"], oh, ow)
        except rr.ResizeModeError as e:
            raise TinyAotError(str(e), model=g.source, node=n.name) from None
        table = requant_table(x, y, numerics, lo, hi)
        if a["mode"] == "nearest":
            return ResizeNearestParams(rr.tflite_nearest_axis(h, oh, align, half),
                                       rr.tflite_nearest_axis(w, ow, align, half), table)
        y0, y1, wy = rr.tflite_bilinear_axis(h, oh, align, half)
        x0, x1, wx = rr.tflite_bilinear_axis(w, ow, align, half)
        return ResizeBilinearParams(
            **dims, mode=1, y0=y0, y1=y1, x0=x0, x1=x1, fy0=None, fy1=None, fx0=None, fx1=None,
            wy=wy, wx=wx, in_scale=0.0, out_scale=0.0, in_zp=0, out_zp=0, act_min=lo,
            act_max=hi, table=table)

    def reference(self, g, n, ins, p, numerics):
        x = np.asarray(ins[0], dtype=np.int32)
        if isinstance(p, ResizeNearestParams):
            y = x[:, :, p.y_idx, :][..., p.x_idx]
        elif p.mode == 0:
            return rr.ort_bilinear(x, (p.y0, p.y1, p.fy1, p.fy0), (p.x0, p.x1, p.fx1, p.fx0),
                                   p.in_scale, p.in_zp, p.out_scale, p.out_zp, p.act_min,
                                   p.act_max)
        else:
            y = rr.tflite_bilinear(x, (p.y0, p.y1, p.wy), (p.x0, p.x1, p.wx))
        if p.table is not None:
            y = p.table[y + 128].astype(np.int32)
        return y

    def emit(self, em, lid, n, p, info):
        x = em.g.tensors[n.inputs[0]]
        y = em.g.tensors[n.outputs[0]]
        table = "NULL" if p.table is None else em.const("int8_t", f"{lid}_table", p.table)
        if isinstance(p, ResizeNearestParams):
            nb, c, h, w = x.shape
            _, _, oh, ow = y.shape
            info["kernel"] = "tinyaot_resize_nearest_s8"
            em.call("tinyaot_resize_nearest_s8", [
                int32_array(em, f"{lid}_d", [nb, h, w, c, oh, ow]),
                em.const("int32_t", f"{lid}_yi", p.y_idx), em.const("int32_t", f"{lid}_xi", p.x_idx),
                table, em.ptr(x.name), em.ptr(y.name)])
            return
        arrays = {"table": table}  # the record's arrays -> their const names, in flash order
        if p.mode == 0:
            arrays.update((k, em.const("float", f"{lid}_{k}", getattr(p, k)))
                          for k in ("fy0", "fy1", "fx0", "fx1"))
        else:
            arrays.update((k, em.const("int32_t", f"{lid}_{k}", getattr(p, k))) for k in ("wy", "wx"))
        arrays.update((k, em.const("int32_t", f"{lid}_{k}", getattr(p, k)))
                      for k in ("y0", "y1", "x0", "x1"))
        pointers = {f.name: arrays.get(f.name, "NULL") for f in fields(p)
                    if f.type.startswith("np.ndarray")}
        em.consts.append(c_struct(f"{lid}_p",
                                  replace(p, **pointers)))
        info["kernel"] = "tinyaot_resize_bilinear_s8"
        info["macs"] = int(y.size * 4)
        em.call("tinyaot_resize_bilinear_s8", [f"&{lid}_p", em.ptr(x.name), em.ptr(y.name)])


OP = Resize()
