"""The prepared parameters of the layers that sum products over a window: conv2d,
conv_transpose and fully_connected (shared; no operator here).

Every such layer computes int32 sums of (x - in_zp) * w and turns them into int8 in one of
four ways, the record's `mode`:
  ORT       onnxruntime's QLinearConv / QGemm: + bias, * float32(s_x * s_w[c] / s_y),
            round half to even, + out_zp (MLAS);
  TFLITE    TFLite Micro: + bias, MultiplyByQuantizedMultiplier(mult[c], shift[c]), + out_zp;
  EPILOGUE  ConvInteger / MatMulInteger (--numerics ort): float32(sum) * scale[c]
            + post_bias[c], QuantizeLinear(out_scale, out_zp) (integer_forms.py);
  FLOAT     a layer onnxruntime keeps in float (DequantizeLinear -> Conv / Gemm /
            ConvTranspose -> QuantizeLinear): float inputs and weights, the float bias,
            MLAS's summation order (each operator's reference).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TinyAotError
from ..numerics import ort_float as of
from ..numerics import tflite_fixedpoint as tfp
from ..numerics.mlas_fc_order import mlas_order
from ..numerics.quant import act_bounds
from .bias_scale import check_bias_scale

F32 = np.float32
ORT, TFLITE, EPILOGUE, FLOAT = "ort", "tflite", "epilogue", "float"


@dataclass
class ConvParams:
    mode: str  # ORT, TFLITE, EPILOGUE or FLOAT (above)
    in_zp: int
    out_zp: int
    act_min: int  # output clamp, in output integers
    act_max: int
    bias: np.ndarray | None = None  # int32 [cout], added to the sums (ORT, TFLITE, EPILOGUE: 0)
    scale: np.ndarray | None = None  # float32 [cout]: ORT's multiplier, EPILOGUE's Mul
    mult: np.ndarray | None = None  # TFLITE: int32 [cout]
    shift: np.ndarray | None = None
    post_bias: np.ndarray | None = None  # EPILOGUE: the Add's float32 [cout]
    in_scale: float = 0.0  # FLOAT
    out_scale: float = 0.0  # FLOAT, EPILOGUE
    bias_f: np.ndarray | None = None  # FLOAT: the dequantized bias, float32 [cout]
    filter_scale: np.ndarray | None = None  # FLOAT: the weights' scale per output channel
    fc_order: str | None = None  # FLOAT fully_connected: MLAS's order (numerics/mlas_fc_order.py)
    k_block: int = 0


def prepare_conv_like(g, n, numerics) -> ConvParams:
    if n.attrs.get("int_epilogue"):  # ConvInteger / MatMulInteger (integer_forms.py)
        return _epilogue(g, n, numerics)
    x = g.tensors[n.inputs[0]]
    w = g.tensors[n.inputs[1]]
    y = g.tensors[n.outputs[0]]
    sx, zx = x.q.scalar()
    sy, zy = y.q.scalar()
    transposed = n.op == "conv_transpose"
    cout = y.shape[1] if transposed else w.shape[0]
    if transposed:  # weights [C_in, C_out/group, ...]: scales along axis 1, repeated per group
        sw = np.tile(np.broadcast_to(w.q.scale.astype(F32), (w.shape[1],)), n.attrs["group"])
    else:
        sw = np.broadcast_to(w.q.scale.astype(F32), (cout,))
    lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    b = n.inputs[2] if len(n.inputs) > 2 else None
    if numerics != "ort":
        check_bias_scale(g, n, sx, sw)
    if numerics == "ort" and (transposed or n.attrs.get("ort_float")):
        # frontend/ort_facts.py: onnxruntime runs this layer in float (ConvTranspose always)
        p = ConvParams(FLOAT, zx, zy, lo, hi, in_scale=sx, out_scale=sy,
                       bias_f=of.float_bias(g.tensors[b] if b else None, cout),
                       filter_scale=np.array(sw))
        if n.op == "fully_connected":
            k = w.shape[1]  # the float Gemm's MLAS order
            p.fc_order, p.k_block = mlas_order(x.size // k, cout, k, n.attrs.get("ort_trans_b", 0))
        return p
    if transposed:
        a = n.attrs
        if a["group"] != 1 or tuple(a["dilations"]) != (1, 1):
            raise TinyAotError(f"tflite numerics: TFLite TRANSPOSE_CONV has no groups and no "
                               f"dilation (this ConvTranspose has group={a['group']}, "
                               f"dilations={list(a['dilations'])})", model=g.source, node=n.name)
    bias = (g.tensors[b].data.astype(np.int32).reshape(-1) if b
            else np.zeros(cout, dtype=np.int32))
    if numerics == "ort":
        # ORT QLinearConv/QGemm: output_scale = X_scale * W_scale / Y_scale, in float32.
        return ConvParams(ORT, zx, zy, lo, hi, bias=bias,
                          scale=((sx * sw).astype(F32) / sy).astype(F32))
    if n.op == "fully_connected":
        # TFLM FullyConnected: a per-tensor filter's scale product is float32.
        mult, shift = tfp.fc_output_multipliers(sx, w.q.scale, sy)
    else:
        mult, shift = tfp.conv_output_multipliers(sx, sw if transposed else w.q.scale, sy)
    return ConvParams(TFLITE, zx, zy, lo, hi, bias=bias,
                      mult=np.broadcast_to(np.asarray(mult, dtype=np.int32), (cout,)).copy(),
                      shift=np.broadcast_to(np.asarray(shift, dtype=np.int32), (cout,)).copy())


def _epilogue(g, n, numerics):
    """onnxruntime's Cast -> Mul(S) -> Add(B) -> QuantizeLinear after the exact
    int32 sum: float32(acc) * S[c], + B[c], round(v / s_y) + zp_y, saturated."""
    stage = n.attrs["int_epilogue"]
    if numerics != "ort":
        raise TinyAotError(f"{n.attrs.get('onnx_op', 'ConvInteger / MatMulInteger')}: only "
                           "--numerics ort (TFLite has no such layer)", model=g.source, node=n.name)
    if stage == "acc":
        raise TinyAotError("the int32 result must be Cast to float before QuantizeLinear",
                           model=g.source, node=n.name)
    x = g.tensors[n.inputs[0]]
    w = g.tensors[n.inputs[1]]
    y = g.tensors[n.outputs[0]]
    cout = w.shape[0]
    sy, zy = y.q.scalar()
    lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    post_scale, post_bias = n.attrs.get("post_scale"), n.attrs.get("post_bias")
    return ConvParams(EPILOGUE, x.q.scalar()[1], zy, lo, hi, bias=np.zeros(cout, np.int32),
                      scale=(post_scale if post_scale is not None else np.ones(cout, F32)).astype(F32),
                      post_bias=(post_bias if post_bias is not None
                                 else np.zeros(cout, F32)).astype(F32),
                      out_scale=F32(sy))


def requantize_sums(acc, p: ConvParams, channel_axis):
    """The int8 output (as int32) of int64 sums `acc` (bias not yet added), channels along
    `channel_axis`, for the integer modes."""
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    acc = acc + p.bias.astype(np.int64).reshape(shape)
    if np.any(acc > 2**31 - 1) or np.any(acc < -2**31):
        raise OverflowError("int32 accumulator overflow")
    acc = acc.astype(np.int32)
    if p.mode == EPILOGUE:
        v = (acc.astype(F32) * p.scale.reshape(shape)).astype(F32)
        v = (v + p.post_bias.reshape(shape)).astype(F32)
        return of.quantize(v, p.out_scale, p.out_zp, p.act_min, p.act_max)
    if p.mode == ORT:
        return of.requantize_acc(acc, p.scale.reshape(shape), p.out_zp, p.act_min, p.act_max)
    assert p.mode == TFLITE, p.mode
    return tfp.requantize(acc, p.mult.reshape(shape), p.shift.reshape(shape),
                          p.out_zp, p.act_min, p.act_max)
