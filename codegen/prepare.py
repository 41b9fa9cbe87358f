"""Compile-time preparation of every kernel's parameters, per numerics.

Like TFLite Micro's Prepare: all multipliers, shifts, float scales and clamp
bounds are computed here, once, and both the numpy reference and the C
emitter consume the result. Nothing is computed at run time.

numerics:
  "ort"    - what onnxruntime computes: float32 requantization,
             round half to even (MLAS), scale products in float32.
  "tflite" - TFLite Micro integer reference: 31-bit multipliers and shifts,
             double rounding, ties away from zero.
"""
from __future__ import annotations

import numpy as np

from . import ops
from .errors import TinyAotError
from .ir import Graph, Node
from .numerics.quant import act_bounds

NUMERICS = ("ort", "tflite")
F32 = np.float32


def prepare_node(g: Graph, n: Node, numerics: str) -> dict:
    op = ops.find(n.op)  # an operator module (codegen/ops/) prepares its own layer
    if op is not None:
        return op.prepare(g, n, numerics)
    fn = _PREPARE.get(n.op)
    if fn is None:
        return {}
    return fn(g, n, numerics)


def _conv_like(g, n, numerics):
    if n.attrs.get("int_epilogue"):  # ConvInteger / MatMulInteger (frontend/integer_ops.py)
        return _integer_epilogue(g, n, numerics)
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
    p = {"in_zp": zx, "out_zp": zy}
    p["act_min"], p["act_max"] = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    b = n.inputs[2] if len(n.inputs) > 2 else None
    if numerics != "ort":
        from .bias_scale import check_bias_scale
        check_bias_scale(g, n, sx, sw)
    if transposed and numerics == "ort":
        # onnxruntime's float ConvTranspose (reference/conv_transpose.py)
        from .numerics.ort_float import float_bias
        p.update(in_scale=sx, out_scale=sy, bias_f=float_bias(g.tensors[b] if b else None, cout),
                 filter_scale=np.broadcast_to(w.q.scale.astype(F32), (w.shape[1],)).copy())
        return p
    if transposed:
        a = n.attrs
        if a["group"] != 1 or tuple(a["dilations"]) != (1, 1):
            raise TinyAotError(f"tflite numerics: TFLite TRANSPOSE_CONV has no groups and no "
                               f"dilation (this ConvTranspose has group={a['group']}, "
                               f"dilations={list(a['dilations'])})", model=g.source, node=n.name)
    if numerics == "ort" and n.op == "fully_connected" and n.attrs.get("ort_float"):
        from .numerics.mlas_fc_order import mlas_order  # the float Gemm's MLAS order
        k = w.shape[1]
        p["fc_order"], p["k_block"] = mlas_order(x.size // k, cout, k,
                                                 n.attrs.get("ort_trans_b", 0))
    if numerics == "ort":
        # ORT QLinearConv/QGemm: output_scale = X_scale * W_scale / Y_scale, in float32.
        p["scale"] = ((sx * sw).astype(F32) / sy).astype(F32)
        p["in_scale"], p["out_scale"] = sx, sy
    else:
        from .numerics import tflite_fixedpoint as tfp
        if n.op == "fully_connected":
            # TFLM FullyConnected: a per-tensor filter's scale product is float32.
            mult, shift = tfp.fc_output_multipliers(sx, w.q.scale, sy)
        else:
            mult, shift = tfp.conv_output_multipliers(sx, sw if transposed else w.q.scale, sy)
        p["mult"] = np.broadcast_to(np.asarray(mult, dtype=np.int32), (cout,)).copy()
        p["shift"] = np.broadcast_to(np.asarray(shift, dtype=np.int32), (cout,)).copy()
    p["bias"] = (g.tensors[b].data.astype(np.int32).reshape(-1) if b
                 else np.zeros(cout, dtype=np.int32))
    return p


def _integer_epilogue(g, n, numerics):
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
    p = {"in_zp": x.q.scalar()[1], "out_zp": zy, "bias": np.zeros(cout, np.int32)}
    p["act_min"], p["act_max"] = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    one = np.ones(cout, F32)
    p["scale"] = (n.attrs["post_scale"] if n.attrs.get("post_scale") is not None else one).astype(F32)
    p["post_bias"] = (n.attrs["post_bias"] if n.attrs.get("post_bias") is not None
                      else np.zeros(cout, F32)).astype(F32)
    p["out_scale"] = F32(sy)
    return p


_PREPARE = {
    "conv2d": _conv_like,
    "conv_transpose": _conv_like,
    "fully_connected": _conv_like,
}


def _matmul(g, n, numerics):
    """MatMul of two int8 activations. ort: QLinearMatMul when ORT fuses it (int32
    accumulation with both zero points, float32(sa*sb/sy) requantization), else
    ORT's float MatMul (fma over k, QuantizeLinear); tflite: TFLM BATCH_MATMUL."""
    a, b = (g.tensors[i] for i in n.inputs)
    y = g.tensors[n.outputs[0]]
    sa, za = a.q.scalar()
    sb, zb = b.q.scalar()
    sy, zy = y.q.scalar()
    p = {"a_zp": int(za), "b_zp": int(zb), "out_zp": int(zy)}
    p["act_min"], p["act_max"] = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
    if numerics == "ort":
        fused = n.attrs.get("ort_fused", False)  # frontend/ort_facts.py
        p.update(mode=1 if fused else 2, a_scale=F32(sa), b_scale=F32(sb), out_scale=F32(sy),
                 scale=F32(F32(F32(sa) * F32(sb)) / F32(sy)))
    else:
        from .numerics import tflite_fixedpoint as tfp
        real = float(F32(sa)) * float(F32(sb)) / float(F32(sy))
        m, s = tfp.quantize_multiplier(real)
        p.update(mode=0, mult=int(m), shift=int(s))
    return p


_PREPARE["matmul"] = _matmul
