"""256-entry int8 tables for elementwise nonlinearities (the `lut` IR op).

An int8 -> int8 elementwise function has only 256 inputs, so every
nonlinearity (Sigmoid, Tanh, HardSwish, HardSigmoid, LeakyRelu, ...) becomes one
table computed here at compile time, per numerics; the C kernel
(tinyaot_lut_s8) is then exact by construction: out = table[in + 128].

ort:    onnxruntime itself is run on all 256 inputs of the same
        DequantizeLinear -> op -> QuantizeLinear pattern (same attributes,
        same opset, same quantization parameters), so the table holds whatever
        ORT's default session computes for it (its QLinearSigmoid /
        QLinearLeakyRelu lookup tables, or the float MLAS kernel + Q).
tflite: TFLite Micro's int8 kernels, in fixed point:
        Logistic / Tanh (reference_integer_ops, via tflite_fixedpoint),
        HardSwish (reference_ops::HardSwish<int8_t>, hard_swish_common.cc),
        LeakyRelu (reference_ops::QuantizeLeakyRelu, leaky_relu_common.cc).
        TFLite has no HardSigmoid kernel; Elu, Selu, Celu, Softplus, Softsign,
        ThresholdedRelu and Mish have tables under ort only.
"""
from __future__ import annotations

import functools

import numpy as np

from . import tflite_fixedpoint as tfp

LUT_FUNCTIONS = ("Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu",
                 "Elu", "Selu", "Celu", "Softplus", "Softsign", "ThresholdedRelu", "Mish")
ALL_INT8 = np.arange(-128, 128, dtype=np.int32)
F32 = np.float32


class LutError(ValueError):
    """The function cannot be tabulated for these numerics / parameters."""


def lut_table(fn, fn_attrs, opset, in_scale, in_zp, out_scale, out_zp, numerics):
    """int8 table[256] with table[v + 128] = f(v). fn_attrs: tuple of (name, value)."""
    if fn not in LUT_FUNCTIONS:
        raise LutError(f"no table for {fn}")
    attrs = tuple(sorted(dict(fn_attrs).items()))
    args = (fn, attrs, int(opset), float(F32(in_scale)), int(in_zp), float(F32(out_scale)),
            int(out_zp))
    if numerics == "ort":
        return _ort_table(*args).copy()
    if numerics == "tflite":
        return _tflite_table(*args).copy()
    raise LutError(f"unknown numerics {numerics}")


# ---- ort ---------------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _ort_table(fn, attrs, opset, in_scale, in_zp, out_scale, out_zp):
    import onnxruntime as ort
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"], name="dq"),
        helper.make_node(fn, ["xf"], ["yf"], name="f", **dict(attrs)),
        helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"], name="q"),
    ]
    inits = [
        helper.make_tensor("xs", TensorProto.FLOAT, [], [in_scale]),
        helper.make_tensor("xz", TensorProto.INT8, [], [in_zp]),
        helper.make_tensor("ys", TensorProto.FLOAT, [], [out_scale]),
        helper.make_tensor("yz", TensorProto.INT8, [], [out_zp]),
    ]
    graph = helper.make_graph(nodes, "lut", [helper.make_tensor_value_info("x", TensorProto.INT8, [256])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [256])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(opset, 10))])
    model.ir_version = min(model.ir_version, 8)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    y = sess.run(["y"], {"x": ALL_INT8.astype(np.int8)})[0]
    return np.asarray(y, dtype=np.int8).reshape(256)


# ---- tflite ------------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _tflite_table(fn, attrs, opset, in_scale, in_zp, out_scale, out_zp):
    a = dict(attrs)
    if fn == "Sigmoid":
        if out_zp != -128 or F32(out_scale) != F32(1.0 / 256):
            raise LutError("tflite numerics: int8 Sigmoid (TFLite LOGISTIC) output must have "
                           "scale 1/256 and zero point -128")
        return tfp.logistic_int8_table(in_scale, in_zp, out_scale, out_zp)
    if fn == "Tanh":
        if out_zp != 0 or F32(out_scale) != F32(1.0 / 128):
            raise LutError("tflite numerics: int8 Tanh (TFLite TANH) output must have "
                           "scale 1/128 and zero point 0")
        return tfp.tanh_int8_table(in_scale, in_zp, out_scale, out_zp)
    if fn == "HardSwish":
        return hard_swish_int8_table(in_scale, in_zp, out_scale, out_zp)
    if fn == "LeakyRelu":
        return leaky_relu_int8_table(in_scale, in_zp, out_scale, out_zp, a.get("alpha", 0.01))
    raise LutError(f"tflite numerics: no TFLite Micro int8 kernel for {fn} is reproduced "
                   "(TFLite has none, or tinyaot does not follow it yet); use --numerics ort")


# TFLM HardSwish (int8), hard_swish_common.cc HardSwishPrepare +
# reference_ops::HardSwish<int8_t>. All intermediate values are int16.

def _sat16(v):
    return np.clip(v, -32768, 32767)


def _tdiv(n, d):
    q = np.abs(n) // d
    return np.where(n < 0, -q, q)


def _srdhm16(a, b):
    """gemmlowp::SaturatingRoundingDoublingHighMul<int16_t>."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    hi = _tdiv(ab + nudge, 1 << 15)
    hi = ((hi + 32768) & 0xFFFF) - 32768  # static_cast<int16_t>
    return np.where((a == b) & (a == -32768), 32767, hi)


def _sdhm16(a, b):
    """tflite SaturatingDoublingHighMul(int16_t, int16_t): truncating."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    hi = _tdiv(a * b, 1 << 15)
    hi = ((hi + 32768) & 0xFFFF) - 32768
    return np.where((a == b) & (a == -32768), 32767, hi)


def _rdbpot16(x, e):
    x = np.asarray(x, dtype=np.int64)
    mask = (1 << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0)
    return (x >> e) + (rem > thr)


def _sat_left_shift16(x, amount):
    return _sat16(np.asarray(x, dtype=np.int64) * (1 << amount))


def _downscale_to_int16(m32):
    """tflite DownScaleInt32ToInt16Multiplier."""
    if m32 >= 2**31 - 1 - (1 << 15):
        return 32767
    return (m32 + (1 << 15)) >> 16


def hard_swish_params(in_scale, in_zp, out_scale, out_zp):
    s_in = F32(in_scale)
    hires = F32(F32(1.0 / 128.0) * s_in)
    reluish_scale = F32(3.0 / 32768.0)
    out_m32, out_exp = tfp.quantize_multiplier(float(F32(hires / F32(out_scale))))
    rel_m32, rel_exp = tfp.quantize_multiplier(float(F32(hires / reluish_scale)))
    if out_exp > 0:
        raise LutError("tflite numerics: HardSwish output multiplier exponent > 0 "
                       "(TF_LITE_ENSURE in TFLM's HardSwishPrepare)")
    return {"in_zp": int(in_zp), "out_zp": int(out_zp),
            "out_mult16": _downscale_to_int16(out_m32), "out_exp": int(out_exp),
            "reluish_mult16": _downscale_to_int16(rel_m32), "reluish_exp": int(rel_exp)}


def hard_swish_int8_table(in_scale, in_zp, out_scale, out_zp):
    p = hard_swish_params(in_scale, in_zp, out_scale, out_zp)
    v = ALL_INT8.astype(np.int64) - p["in_zp"]  # int16
    hires = v * (1 << 7)  # |v| <= 255: fits int16
    preshift_out = _srdhm16(hires, p["out_mult16"])
    rel = hires
    if p["reluish_exp"] > 0:
        rel = _sat_left_shift16(rel, p["reluish_exp"] - 1)
    rel = _srdhm16(rel, p["reluish_mult16"])
    if p["reluish_exp"] > 0:
        rel = _sat_left_shift16(rel, 1)
    if p["reluish_exp"] < 0:
        rel = _rdbpot16(rel, -p["reluish_exp"])
    rel = (rel + (1 << 15)) >> 1
    rel = ((rel + 32768) & 0xFFFF) - 32768  # stored back into an int16
    pre = _sdhm16(rel, preshift_out)
    out = _rdbpot16(pre, -p["out_exp"]) + p["out_zp"]
    out = ((out + 32768) & 0xFFFF) - 32768  # int16 output_value
    return np.clip(out, -128, 127).astype(np.int8)


def leaky_relu_params(in_scale, in_zp, out_scale, out_zp, alpha):
    """TFLM LeakyReluPrepare (leaky_relu_common.cc): double(s_in) * double(alpha) /
    double(s_out) and double(s_in) / double(s_out), each through QuantizeMultiplier
    (older TFLM formed them in float32, which can differ by one multiplier step)."""
    s_in, s_out = float(F32(in_scale)), float(F32(out_scale))
    ma, sa = tfp.quantize_multiplier(s_in * float(F32(alpha)) / s_out)
    mi, si = tfp.quantize_multiplier(s_in / s_out)
    return {"in_zp": int(in_zp), "out_zp": int(out_zp), "mult_alpha": ma, "shift_alpha": sa,
            "mult_identity": mi, "shift_identity": si}


def leaky_relu_int8_table(in_scale, in_zp, out_scale, out_zp, alpha):
    p = leaky_relu_params(in_scale, in_zp, out_scale, out_zp, alpha)
    v = ALL_INT8 - p["in_zp"]
    pos = tfp.multiply_by_quantized_multiplier(v, p["mult_identity"], p["shift_identity"])
    neg = tfp.multiply_by_quantized_multiplier(v, p["mult_alpha"], p["shift_alpha"])
    out = p["out_zp"] + np.where(v >= 0, pos.astype(np.int64), neg.astype(np.int64))
    return np.clip(out, -128, 127).astype(np.int8)
