"""Bit-exact numpy model of TFLite-Micro's integer fixed-point arithmetic.

This is the ``tflite`` numerics of tinyaot: what the TFLite Micro (TFLM)
*reference* kernels compute for int8 models, written from the TFLM / gemmlowp
definitions (not copied).  Sources followed (tensorflow/tflite-micro):

* ``tensorflow/lite/kernels/internal/quantization_util.cc``: QuantizeMultiplier
  and friends, PreprocessSoftmaxScaling, CalculateInputRadius.
* ``tensorflow/lite/kernels/internal/common.{h,cc}``: MultiplyByQuantizedMultiplier
  (the default *double-rounding* build, i.e. ``TFLITE_SINGLE_ROUNDING`` unset /
  0, which is what the TFLM Makefile and Bazel build use), GetReciprocal,
  CountLeadingZeros.
* gemmlowp ``fixedpoint/fixedpoint.h``: SaturatingRoundingDoublingHighMul,
  RoundingDivideByPOT, SaturatingRoundingMultiplyByPOT, Rescale,
  exp_on_negative_values, one_over_one_plus_x_for_x_in_0_1, logistic, tanh.
* ``tensorflow/lite/kernels/kernel_util.cc``: PopulateConvolutionQuantizationParams,
  GetQuantizedConvolutionMultipler, CalculateActivationRangeQuantized.
* ``tensorflow/lite/micro/kernels/{add_common,mul_common,softmax_common,
  logistic_common,tanh}.cc``: the int8 Prepare steps.
* ``tensorflow/lite/kernels/internal/reference/{softmax.h,integer_ops/add.h,
  integer_ops/mul.h,integer_ops/pooling.h,integer_ops/logistic.h,
  integer_ops/tanh.h}``: the int8 evaluation.

Conventions
-----------
* Integer functions take scalars or array-likes, broadcast with numpy rules,
  compute internally in int64, and return ``np.int32`` (or ``np.int8``) arrays;
  a 0-d result is returned as a numpy scalar.
* Where TFLite does plain int32 arithmetic that could overflow (undefined
  behaviour in C++, two's-complement wrap on every Cortex-M compiler in
  practice, e.g. ``x * (1 << left_shift)`` in MultiplyByQuantizedMultiplier or
  ``MBQM(...) + zero_point``), this model **wraps modulo 2^32**, and so does
  ``runtime_c/src/internal/tinyaot_fixedpoint.h`` (without UB).  Where TFLite
  saturates, we saturate.
* Op parameters (add_params, mul_params, softmax_params) are plain dicts whose
  keys match the C parameter structs / argument names (``a_zp, b_zp, out_zp,
  left_shift, a_mult, ...``, ``input_multiplier, input_left_shift,
  diff_min``); the evaluation functions take those dicts (extra keys ignored).
* "Prepare" functions take python floats.  Tensor scales are float32 in the
  flatbuffer / TfLiteTensor, so they are rounded to float32 first and widened
  to double exactly where TFLM does ``static_cast<double>``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

__all__ = [
    "INT32_MIN",
    "INT32_MAX",
    "tflite_round",
    "quantize_multiplier",
    "quantize_multiplier_smaller_than_one_exp",
    "quantize_multiplier_greater_than_one",
    "saturating_rounding_doubling_high_mul",
    "rounding_divide_by_pot",
    "saturating_rounding_multiply_by_pot",
    "multiply_by_quantized_multiplier",
    "multiply_by_quantized_multiplier_smaller_than_one_exp",
    "multiply_by_quantized_multiplier_greater_than_one",
    "count_leading_zeros32",
    "rounding_half_sum",
    "exp_on_interval_between_negative_one_quarter_and_0_excl",
    "exp_on_negative_values",
    "one_over_one_plus_x_for_x_in_0_1",
    "one_minus_x_over_one_plus_x_for_x_in_0_1",
    "gemmlowp_logistic",
    "gemmlowp_tanh",
    "get_reciprocal",
    "calculate_input_radius",
    "preprocess_softmax_scaling",
    "requantize",
    "activation_range_int8",
    "conv_output_multipliers",
    "fc_output_multipliers",
    "add_params",
    "add_int8",
    "mul_params",
    "mul_int8",
    "mean_multiplier",
    "avgpool_round",
    "SOFTMAX_MAX_SAFE_DEPTH",
    "softmax_params",
    "softmax_int8",
    "logistic_params",
    "logistic_int8_table",
    "tanh_params",
    "tanh_int8_table",
]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
_INT8_MIN = -128
_INT8_MAX = 127

# --------------------------------------------------------------------------
# internal int64 helpers (values are always int32-range unless noted)
# --------------------------------------------------------------------------


def _i64(x) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind not in "iub":
        raise TypeError(f"integer input expected, got dtype {a.dtype}")
    a = a.astype(np.int64)
    if a.size and (a.min() < INT32_MIN or a.max() > INT32_MAX):
        raise ValueError("value outside int32 range")
    return a


def _ret32(v: np.ndarray):
    r = np.asarray(v, dtype=np.int64).astype(np.int32)
    return r[()] if r.ndim == 0 else r


def _wrap32(v: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of int64 values to the int32 range."""
    return ((np.asarray(v, dtype=np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _tdiv(n: np.ndarray, d) -> np.ndarray:
    """C/C++ integer division (truncates toward zero); d > 0."""
    n = np.asarray(n, dtype=np.int64)
    q = np.abs(n) // d
    return np.where(n < 0, -q, q)


def _srdhm(a, b):
    # gemmlowp SaturatingRoundingDoublingHighMul<int32_t>
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    overflow = (a == b) & (a == INT32_MIN)
    ab = a * b  # |ab| <= 2^62: fits
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    hi = _tdiv(ab + nudge, 1 << 31)
    return np.where(overflow, INT32_MAX, hi)


def _rdbpot(x, exponent):
    # gemmlowp RoundingDivideByPOT<int32_t>, 0 <= exponent <= 31
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    if e.size and (e.min() < 0 or e.max() > 31):
        raise ValueError("RoundingDivideByPOT exponent must be in [0, 31]")
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(np.int64)
    return (x >> e) + (remainder > threshold).astype(np.int64)


def _sat_mul_pot(x, exponent: int):
    # gemmlowp SaturatingRoundingMultiplyByPOT<Exponent> (compile-time exponent)
    x = np.asarray(x, dtype=np.int64)
    if exponent == 0:
        return x
    if exponent < 0:
        return _rdbpot(x, -exponent)
    threshold = (1 << (31 - exponent)) - 1
    r = x << exponent
    r = np.where(x > threshold, INT32_MAX, r)
    r = np.where(x < -threshold, INT32_MIN, r)
    return r


def _mbqm(x, m, shift):
    # MultiplyByQuantizedMultiplier, double-rounding variant (common.cc #else)
    x = np.asarray(x, dtype=np.int64)
    s = np.asarray(shift, dtype=np.int64)
    left = np.maximum(s, 0)
    right = np.maximum(-s, 0)
    return _rdbpot(_srdhm(_wrap32(x << left), m), right)


def _mbqm_stoe(x, m, left_shift):
    # MultiplyByQuantizedMultiplierSmallerThanOneExp (double rounding)
    return _rdbpot(_srdhm(x, m), -np.asarray(left_shift, dtype=np.int64))


def _mbqm_gto(x, m, left_shift):
    # MultiplyByQuantizedMultiplierGreaterThanOne (double rounding)
    x = np.asarray(x, dtype=np.int64)
    return _srdhm(_wrap32(x << np.asarray(left_shift, dtype=np.int64)), m)


def _clz32(x) -> np.ndarray:
    u = np.asarray(x, dtype=np.int64) & 0xFFFFFFFF
    # frexp is exact for integers < 2^53; exponent == bit length for u > 0
    _, e = np.frexp(u.astype(np.float64))
    return np.where(u == 0, 32, 32 - e.astype(np.int64))


# --------------------------------------------------------------------------
# quantization_util.cc
# --------------------------------------------------------------------------


def tflite_round(x: float) -> int:
    """TfLiteRound (std::round): round half away from zero, exactly, on a double."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError("cannot round a non-finite value")
    ax = abs(x)
    f = math.floor(ax)
    r = f + 1 if (ax - f) >= 0.5 else f  # ax - f is exact for doubles
    return int(-r if x < 0 else r)


def _f32(x: float) -> float:
    """A tensor scale as TFLite stores it (float32), widened back to double."""
    return float(np.float32(x))


def quantize_multiplier(real: float, single_rounding: bool = False) -> tuple[int, int]:
    """Mirror of tflite::QuantizeMultiplier(double, int32_t*, int*).

    frexp on the double, q_fixed = TfLiteRound(q * 2^31) (half away from
    zero), the q_fixed == 2^31 correction (halve, ++shift), and tiny values
    (shift < -31) flushed to (0, 0).

    The ``shift > 30`` saturation to ``(2^31 - 1, 30)`` only exists inside
    ``#if TFLITE_SINGLE_ROUNDING`` in TFLM's quantization_util.cc; the default
    TFLM build is double rounding, so it is off unless ``single_rounding=True``.
    Returns python ints ``(multiplier, shift)``; shift > 0 is a left shift.
    """
    d = float(real)
    if d == 0.0:
        return 0, 0
    if not math.isfinite(d):
        raise ValueError("multiplier must be finite")
    q, shift = math.frexp(d)
    q_fixed = tflite_round(q * float(1 << 31))
    if q_fixed > (1 << 31):  # TFLITE_CHECK
        raise ValueError("QuantizeMultiplier: q_fixed > 2^31")
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if q_fixed > INT32_MAX:  # TFLITE_CHECK_LE
        raise ValueError("QuantizeMultiplier: q_fixed > INT32_MAX")
    if shift < -31:
        shift = 0
        q_fixed = 0
    if single_rounding and shift > 30:
        shift = 30
        q_fixed = (1 << 31) - 1
    return int(q_fixed), int(shift)


def quantize_multiplier_smaller_than_one_exp(real: float) -> tuple[int, int]:
    """Mirror of tflite::QuantizeMultiplierSmallerThanOneExp: requires 0 < real < 1
    (TFLITE_CHECK), returns (multiplier, left_shift) with left_shift <= 0."""
    d = float(real)
    if not (0.0 < d < 1.0):
        raise ValueError(f"QuantizeMultiplierSmallerThanOneExp needs 0 < x < 1, got {d!r}")
    m, s = quantize_multiplier(d)
    if s > 0:
        raise ValueError("QuantizeMultiplierSmallerThanOneExp: shift > 0")
    return m, s


def quantize_multiplier_greater_than_one(real: float) -> tuple[int, int]:
    """Mirror of tflite::QuantizeMultiplierGreaterThanOne: requires real > 1
    (TFLITE_CHECK), returns (multiplier, left_shift) with left_shift >= 0."""
    d = float(real)
    if not d > 1.0:
        raise ValueError(f"QuantizeMultiplierGreaterThanOne needs x > 1, got {d!r}")
    m, s = quantize_multiplier(d)
    if s < 0:
        raise ValueError("QuantizeMultiplierGreaterThanOne: shift < 0")
    return m, s


def calculate_input_radius(
    input_integer_bits: int, input_left_shift: int, total_signed_bits: int = 31
) -> int:
    """Mirror of tflite::CalculateInputRadius (non-TFLITE_EMULATE_FLOAT branch):
    floor(((1 << ib) - 1) * 2^(tsb - ib) / 2^left_shift) evaluated in double."""
    if input_left_shift < 0 or input_left_shift > 62:
        raise ValueError("input_left_shift out of range for CalculateInputRadius")
    max_input_rescaled = (
        1.0
        * float((1 << input_integer_bits) - 1)
        * float(1 << (total_signed_bits - input_integer_bits))
        / float(1 << input_left_shift)
    )
    return int(math.floor(max_input_rescaled))


def preprocess_softmax_scaling(
    beta: float, input_scale: float, input_integer_bits: int, single_rounding: bool = False
) -> tuple[int, int]:
    """Mirror of tflite::PreprocessSoftmaxScaling (non-emulated-float branch):
    min(beta * input_scale * 2^(31 - ib), max_real) then
    QuantizeMultiplierGreaterThanOne.  max_real is 2^31 - 1 (double rounding) or
    2^30 - 1 (TFLITE_SINGLE_ROUNDING).  beta/input_scale are used as given
    (doubles); callers pass float32-widened values like TFLM does."""
    max_real = float((1 << 30) - 1) if single_rounding else float((1 << 31) - 1)
    real = min(float(beta) * float(input_scale) * float(1 << (31 - input_integer_bits)), max_real)
    return quantize_multiplier_greater_than_one(real)


# --------------------------------------------------------------------------
# gemmlowp / common.h primitives (public, vectorized)
# --------------------------------------------------------------------------


def saturating_rounding_doubling_high_mul(a, b):
    """gemmlowp::SaturatingRoundingDoublingHighMul<int32_t> (ARM VQRDMULH):
    (a*b + nudge) / 2^31 with C truncating division, nudge = 2^30 or 1 - 2^30
    by the sign of a*b; INT32_MIN * INT32_MIN saturates to INT32_MAX."""
    return _ret32(_srdhm(_i64(a), _i64(b)))


def rounding_divide_by_pot(x, exponent):
    """gemmlowp::RoundingDivideByPOT<int32_t>: x / 2^exponent rounded to nearest,
    ties away from zero (mask/remainder/threshold formulation), 0 <= exponent <= 31."""
    return _ret32(_rdbpot(_i64(x), _i64(exponent)))


def saturating_rounding_multiply_by_pot(x, exponent: int):
    """gemmlowp::SaturatingRoundingMultiplyByPOT<Exponent>: saturating left shift
    for exponent > 0, RoundingDivideByPOT(x, -exponent) for exponent < 0."""
    return _ret32(_sat_mul_pot(_i64(x), int(exponent)))


def _check_shift(shift):
    s = _i64(shift)
    if s.size and (s.min() < -31 or s.max() > 31):
        raise ValueError("shift must be in [-31, 31]")
    return s


def multiply_by_quantized_multiplier(x, multiplier, shift):
    """tflite::MultiplyByQuantizedMultiplier(int32_t, int32_t, int), TFLM's default
    double-rounding version (common.cc, TFLITE_SINGLE_ROUNDING unset):
    RoundingDivideByPOT(SRDHM(x * (1 << max(shift, 0)), multiplier), max(-shift, 0)).
    ``x * (1 << left_shift)`` wraps modulo 2^32 (as int32 does on Cortex-M)."""
    return _ret32(_mbqm(_i64(x), _i64(multiplier), _check_shift(shift)))


def multiply_by_quantized_multiplier_smaller_than_one_exp(x, multiplier, left_shift):
    """tflite::MultiplyByQuantizedMultiplierSmallerThanOneExp (double rounding):
    RoundingDivideByPOT(SRDHM(x, multiplier), -left_shift), left_shift <= 0."""
    s = _check_shift(left_shift)
    if s.size and s.max() > 0:
        raise ValueError("left_shift must be <= 0")
    return _ret32(_mbqm_stoe(_i64(x), _i64(multiplier), s))


def multiply_by_quantized_multiplier_greater_than_one(x, multiplier, left_shift):
    """tflite::MultiplyByQuantizedMultiplierGreaterThanOne (double rounding):
    SRDHM(x * (1 << left_shift), multiplier), 0 <= left_shift <= 31 (wrapping
    shift).  Used by the int8 softmax."""
    s = _check_shift(left_shift)
    if s.size and s.min() < 0:
        raise ValueError("left_shift must be >= 0")
    return _ret32(_mbqm_gto(_i64(x), _i64(multiplier), s))


def count_leading_zeros32(x):
    """tflite::CountLeadingZeros<uint32_t> of static_cast<uint32_t>(x); 32 for 0."""
    return _ret32(_clz32(_i64(x)))


def rounding_half_sum(a, b):
    """gemmlowp::RoundingHalfSum<int32_t>: (a + b + sign) / 2 in int64, truncating."""
    a = _i64(a)
    b = _i64(b)
    s = a + b
    return _ret32(_tdiv(s + np.where(s >= 0, 1, -1), 2))


def _exp_interval(a):
    a = np.asarray(a, dtype=np.int64)
    constant_term = 1895147668  # exp(-1/8) in Q0.31
    constant_1_over_3 = 715827883
    x = _wrap32(a + (1 << 28))  # a + 1/8
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    x4_over_4 = _rdbpot(x4, 2)
    poly = _rdbpot(_wrap32(_srdhm(_wrap32(x4_over_4 + x3), constant_1_over_3) + x2), 1)
    return _wrap32(constant_term + _srdhm(constant_term, _wrap32(x + poly)))


def exp_on_interval_between_negative_one_quarter_and_0_excl(a):
    """gemmlowp::exp_on_interval_between_negative_one_quarter_and_0_excl for
    FixedPoint<int32_t, 0>: Taylor expansion of exp around -1/8."""
    return _ret32(_exp_interval(_i64(a)))


_EXP_BARREL = (
    (-2, 1672461947),
    (-1, 1302514674),
    (0, 790015084),
    (1, 290630308),
    (2, 39332535),
    (3, 720401),
    (4, 242),
)


def _exp_neg(a, integer_bits: int):
    a = np.asarray(a, dtype=np.int64)
    frac_bits = 31 - integer_bits
    one_quarter = 1 << (frac_bits - 2)
    mask = one_quarter - 1
    a_mod_q_minus_q = (a & mask) - one_quarter
    result = _exp_interval(_sat_mul_pot(a_mod_q_minus_q, integer_bits))  # Rescale<0>
    remainder = _wrap32(a_mod_q_minus_q - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = (remainder >> (frac_bits + exponent)) & 1
            result = np.where(bit != 0, _srdhm(result, multiplier), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, INT32_MAX, result)


def exp_on_negative_values(a, integer_bits: int):
    """gemmlowp::exp_on_negative_values for FixedPoint<int32_t, integer_bits> input,
    FixedPoint<int32_t, 0> output: the quarter-interval polynomial followed by the
    barrel shifter of exp(-2^k) multipliers, the < -32 clamp (integer_bits > 5
    only) and exp(0) = One() = INT32_MAX."""
    if not 1 <= integer_bits <= 29:
        raise ValueError("integer_bits must be in [1, 29]")
    return _ret32(_exp_neg(_i64(a), integer_bits))


def _newton_reciprocal_f2(half_denominator):
    c48_17 = 1515870810  # 48/17 in Q2.29
    cm32_17 = -1010580540  # -32/17 in Q2.29
    one_f2 = 1 << 29
    x = _wrap32(c48_17 + _srdhm(half_denominator, cm32_17))
    for _ in range(3):
        hdx = _srdhm(half_denominator, x)
        one_minus = _wrap32(one_f2 - hdx)
        x = _wrap32(x + _sat_mul_pot(_srdhm(x, one_minus), 2))  # Rescale<2>(F4)
    return x


def _half_sum_one(a):
    s = np.asarray(a, dtype=np.int64) + INT32_MAX
    return _tdiv(s + np.where(s >= 0, 1, -1), 2)


def _one_over_one_plus_x(a):
    x = _newton_reciprocal_f2(_half_sum_one(a))
    return _sat_mul_pot(x, 1)  # Rescale<0>(ExactMulByPot<-1>(x)): F1 -> F0


def _one_minus_x_over_one_plus_x(a):
    x = _newton_reciprocal_f2(_half_sum_one(a))
    return _sat_mul_pot(_wrap32(x - (1 << 29)), 2)  # Rescale<0>(x - F2::One())


def one_over_one_plus_x_for_x_in_0_1(a):
    """gemmlowp::one_over_one_plus_x_for_x_in_0_1 (FixedPoint<int32_t, 0>):
    3 Newton-Raphson steps from 48/17 - 32/17 * d on the half denominator."""
    return _ret32(_one_over_one_plus_x(_i64(a)))


def one_minus_x_over_one_plus_x_for_x_in_0_1(a):
    """gemmlowp::one_minus_x_over_one_plus_x_for_x_in_0_1 (FixedPoint<int32_t, 0>)."""
    return _ret32(_one_minus_x_over_one_plus_x(_i64(a)))


def _logistic(a, integer_bits: int):
    a = np.asarray(a, dtype=np.int64)
    pos = a > 0
    abs_in = np.where(pos, a, _wrap32(-a))
    r_pos = _one_over_one_plus_x(_exp_neg(_wrap32(-abs_in), integer_bits))
    r_neg = _wrap32(INT32_MAX - r_pos)
    return np.where(a == 0, 1 << 30, np.where(pos, r_pos, r_neg))


def _tanh(a, integer_bits: int):
    a = np.asarray(a, dtype=np.int64)
    neg = a < 0
    n = np.where(neg, a, _wrap32(-a))
    # neg_tanh_on_negative_values: exp of ExactMulByPot<1>(n) -> integer_bits + 1
    t = _one_minus_x_over_one_plus_x(_exp_neg(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(neg, _wrap32(-t), t))


def gemmlowp_logistic(a, integer_bits: int):
    """gemmlowp::logistic(FixedPoint<int32_t, integer_bits>) -> FixedPoint<int32_t, 0>."""
    return _ret32(_logistic(_i64(a), integer_bits))


def gemmlowp_tanh(a, integer_bits: int):
    """gemmlowp::tanh(FixedPoint<int32_t, integer_bits>) -> FixedPoint<int32_t, 0>."""
    return _ret32(_tanh(_i64(a), integer_bits))


def _get_reciprocal(x, x_integer_digits: int):
    x = np.asarray(x, dtype=np.int64)
    hpo = _clz32(x)
    num_bits_over_unit = x_integer_digits - hpo
    ux = x & 0xFFFFFFFF
    shifted = np.where(hpo < 32, (ux << np.minimum(hpo, 31)) & 0xFFFFFFFF, 0)
    shifted_sum_minus_one = _wrap32(shifted - (1 << 31))
    return _one_over_one_plus_x(shifted_sum_minus_one), num_bits_over_unit


def get_reciprocal(x, x_integer_digits: int):
    """tflite::GetReciprocal(int32_t x, int x_integer_digits, int* num_bits_over_unit):
    returns (reciprocal raw Q0.31, num_bits_over_unit)."""
    r, n = _get_reciprocal(_i64(x), int(x_integer_digits))
    return _ret32(r), _ret32(n)


# --------------------------------------------------------------------------
# conv / fully-connected requantization
# --------------------------------------------------------------------------


def requantize(acc, mult, shift, out_zp: int, act_min: int, act_max: int):
    """Output stage of reference_integer_ops::ConvPerChannel / DepthwiseConvPerChannel /
    FullyConnected (int8): MultiplyByQuantizedMultiplier(acc, mult[c], shift[c]) +
    output_offset, clamped to [act_min, act_max], cast to int8.

    ``acc`` already includes the bias.  ``mult``/``shift`` broadcast against
    ``acc`` (per-channel on the last, NHWC channel axis, or scalars).  The
    ``+ out_zp`` is int32 and wraps like the C code does."""
    if act_min > act_max:
        raise ValueError("act_min > act_max")
    v = _wrap32(_mbqm(_i64(acc), _i64(mult), _check_shift(shift)) + int(out_zp))
    v = np.minimum(np.maximum(v, int(act_min)), int(act_max))
    r = v.astype(np.int8)
    return r[()] if r.ndim == 0 else r


def requantize_int8_table(in_scale: float, in_zp: int, out_scale: float, out_zp: int,
                          act_min: int = -128, act_max: int = 127):
    """TFLite QUANTIZE int8 -> int8 (quantize_common.cc Prepare + reference_ops::
    Requantize) for all 256 inputs: multiplier from the double ratio of the
    float32 scales, MultiplyByQuantizedMultiplier(x - in_zp) + out_zp, clamped to
    [act_min, act_max] (default: saturated). Index with x + 128."""
    mult, shift = quantize_multiplier(float(np.float64(np.float32(in_scale))
                                            / np.float64(np.float32(out_scale))))
    x = np.arange(-128, 128, dtype=np.int64) - int(in_zp)
    return requantize(x, mult, shift, int(out_zp), act_min, act_max).astype(np.int8)


def activation_range_int8(activation: str, scale: float, zero_point: int) -> tuple[int, int]:
    """tflite::CalculateActivationRangeQuantized for an int8 output: quantize(f) =
    zp + int(TfLiteRound(f / scale)) in float32; activation one of NONE, RELU,
    RELU6, RELU_N1_TO_1 (anything else, e.g. TANH, gives the full range, as TFLM)."""
    qmin, qmax = _INT8_MIN, _INT8_MAX
    s = np.float32(scale)

    def q(f: float) -> int:
        return int(zero_point) + tflite_round(float(np.float32(f) / s))

    act = activation.upper()
    if act == "RELU":
        return max(qmin, q(0.0)), qmax
    if act == "RELU6":
        return max(qmin, q(0.0)), min(qmax, q(6.0))
    if act in ("RELU_N1_TO_1", "RELU1"):
        return max(qmin, q(-1.0)), min(qmax, q(1.0))
    return qmin, qmax


def conv_output_multipliers(input_scale: float, filter_scales, output_scale: float):
    """Per-channel (multiplier, shift) as tflite::PopulateConvolutionQuantizationParams
    (used by TFLM Conv2D / DepthwiseConv2D, and FullyConnected when the filter is
    per-channel): effective = double(input_scale) * double(filter_scale[c]) /
    double(output_scale), all scales float32, evaluated left to right in double,
    then QuantizeMultiplier.  For a per-tensor filter TFLM broadcasts the one
    scale over the output channels (same formula), so a length-1 input gives
    the per-tensor pair.  Returns (int32 array, int32 array), one per scale."""
    fs = np.atleast_1d(np.asarray(filter_scales, dtype=np.float32))
    si = _f32(input_scale)
    so = _f32(output_scale)
    mults = np.empty(fs.shape, dtype=np.int32)
    shifts = np.empty(fs.shape, dtype=np.int32)
    for i, f in enumerate(fs.ravel()):
        m, s = quantize_multiplier(si * float(f) / so)
        mults.flat[i] = m
        shifts.flat[i] = s
    return mults, shifts


def fc_output_multipliers(input_scale: float, filter_scales, output_scale: float):
    """(multiplier, shift) arrays for TFLM FullyConnected (fully_connected_common.cc).

    Per-channel filter (more than one scale): same as conv_output_multipliers.
    Per-tensor filter: GetQuantizedConvolutionMultipler, whose product is taken
    in **float32** before widening: double(float(input_scale * filter_scale)) /
    double(output_scale).  (This differs from Conv's double product in the last
    bits for some scale pairs.)  Returns arrays of length 1 in that case."""
    fs = np.atleast_1d(np.asarray(filter_scales, dtype=np.float32))
    if fs.size > 1:
        return conv_output_multipliers(input_scale, fs, output_scale)
    prod = float(np.float32(np.float32(input_scale) * fs[0]))
    m, s = quantize_multiplier(prod / _f32(output_scale))
    return np.array([m], dtype=np.int32), np.array([s], dtype=np.int32)


# --------------------------------------------------------------------------
# Add / Mul
# --------------------------------------------------------------------------


def add_params(s1: float, zp1: int, s2: float, zp2: int, s_out: float, zp_out: int) -> dict:
    """TFLM CalculateOpDataAdd (add_common.cc) for int8 output: left_shift = 20,
    twice_max_input_scale = 2 * double(max(float s1, float s2)),
    real_in_i = double(s_i) / twice_max, real_out = twice_max /
    ((1 << 20) * double(s_out)), each through QuantizeMultiplierSmallerThanOneExp
    (which TFLITE_CHECKs 0 < real < 1: a ValueError here).

    Returns a dict with the field names of ``tinyaot_add_params_t``:
    ``a_zp, b_zp, out_zp`` (zero points; TFLite's input offsets are their
    negatives), ``left_shift``, ``a_mult, a_shift, b_mult, b_shift, out_mult,
    out_shift`` (python ints)."""
    f1, f2, fo = np.float32(s1), np.float32(s2), np.float32(s_out)
    left_shift = 20
    twice_max = 2.0 * float(max(f1, f2))
    real1 = float(f1) / twice_max
    real2 = float(f2) / twice_max
    real_out = twice_max / (float(1 << left_shift) * float(fo))
    m1, sh1 = quantize_multiplier_smaller_than_one_exp(real1)
    m2, sh2 = quantize_multiplier_smaller_than_one_exp(real2)
    mo, sho = quantize_multiplier_smaller_than_one_exp(real_out)
    return {
        "a_zp": int(zp1),
        "b_zp": int(zp2),
        "out_zp": int(zp_out),
        "left_shift": left_shift,
        "a_mult": m1,
        "a_shift": sh1,
        "b_mult": m2,
        "b_shift": sh2,
        "out_mult": mo,
        "out_shift": sho,
    }


def add_int8(a, b, params: Mapping, act_min: int = -128, act_max: int = 127):
    """reference_integer_ops::AddFunc applied elementwise (Add / AddElementwise /
    BroadcastAdd6DSlow: the per-element math is identical, broadcasting is plain
    numpy broadcasting here).  ``params`` is the dict of add_params (extra keys
    are ignored).  Returns int8."""
    a = _i64(a)
    b = _i64(b)
    p = params
    ls = int(p["left_shift"])
    v1 = _wrap32(_wrap32(a - int(p["a_zp"])) << ls)
    v2 = _wrap32(_wrap32(b - int(p["b_zp"])) << ls)
    sc1 = _mbqm_stoe(v1, int(p["a_mult"]), int(p["a_shift"]))
    sc2 = _mbqm_stoe(v2, int(p["b_mult"]), int(p["b_shift"]))
    raw_sum = _wrap32(sc1 + sc2)
    raw_out = _wrap32(_mbqm_stoe(raw_sum, int(p["out_mult"]), int(p["out_shift"])) + int(p["out_zp"]))
    r = np.minimum(np.maximum(raw_out, int(act_min)), int(act_max)).astype(np.int8)
    return r[()] if r.ndim == 0 else r


def mul_params(s1: float, zp1: int, s2: float, zp2: int, s_out: float, zp_out: int) -> dict:
    """TFLM CalculateOpDataMul (mul_common.cc), int8: real = double(s1) *
    double(s2) / double(s_out) (float32 scales), QuantizeMultiplier.
    Returns a dict ``a_zp, b_zp, out_zp, out_mult, out_shift``."""
    real = _f32(s1) * _f32(s2) / _f32(s_out)
    m, s = quantize_multiplier(real)
    return {"a_zp": int(zp1), "b_zp": int(zp2), "out_zp": int(zp_out), "out_mult": m, "out_shift": s}


def mul_int8(a, b, params: Mapping, act_min: int = -128, act_max: int = 127):
    """reference_integer_ops::MulElementwise / BroadcastMul4DSlow (int8):
    out_zp + MBQM((a - a_zp) * (b - b_zp), out_mult, out_shift), clamped.
    ``params`` is the dict of mul_params."""
    a = _i64(a)
    b = _i64(b)
    p = params
    prod = _wrap32(_wrap32(a - int(p["a_zp"])) * _wrap32(b - int(p["b_zp"])))
    v = _wrap32(int(p["out_zp"]) + _mbqm(prod, int(p["out_mult"]), int(p["out_shift"])))
    r = np.minimum(np.maximum(v, int(act_min)), int(act_max)).astype(np.int8)
    return r[()] if r.ndim == 0 else r


# --------------------------------------------------------------------------
# AveragePool
# --------------------------------------------------------------------------


def mean_multiplier(in_scale: float, out_scale: float, count: int) -> tuple[int, int]:
    """TFLM MEAN of int8 over `count` elements (reduce_common.cc PrepareMeanOrSumHelper and
    reference_ops::QuantizedMeanOrSum): QuantizeMultiplier of double(s_in) / double(s_out),
    then 1 / count folded into it as (multiplier << k) / count, k = floor(log2(count))
    bounded by 32 and 31 + exponent. The kernel computes
    MultiplyByQuantizedMultiplier(sum - zp_in * count, mult, shift) + zp_out."""
    if count <= 0:
        raise ValueError("count must be positive")
    mult, exp = quantize_multiplier(float(np.float64(_f32(in_scale)) / np.float64(_f32(out_scale))))
    k = min(int(count).bit_length() - 1, 32, 31 + exp)
    return int((int(mult) << k) // int(count)), int(exp - k)


def avgpool_round(sum_int32, count):
    """Rounding step of reference_integer_ops::AveragePool (int8/int16):
    acc > 0 ? (acc + count/2) / count : (acc - count/2) / count with C
    truncating division (ties away from zero).  ``sum_int32`` is the raw sum of
    the (un-offset) input values; the caller clamps to the activation range."""
    acc = _i64(sum_int32)
    c = _i64(count)
    if c.size and c.min() <= 0:
        raise ValueError("count must be positive")
    half = c // 2
    num = np.where(acc > 0, acc + half, acc - half)
    q = np.abs(num) // c
    return _ret32(np.where(num < 0, -q, q))


# --------------------------------------------------------------------------
# Softmax (int8 -> int8)
# --------------------------------------------------------------------------

# exponent = num_bits_over_unit + 31 - 8 must be <= 31 (TFLITE_CHECK in
# reference_ops::Softmax).  The row sum of exps in Q12.19 is at most
# depth * 2^19, so any depth <= 511 is guaranteed to pass the check.
SOFTMAX_MAX_SAFE_DEPTH = 511

_SOFTMAX_SCALED_DIFF_INTEGER_BITS = 5
_SOFTMAX_ACCUM_INTEGER_BITS = 12


def softmax_params(
    input_scale: float,
    beta: float = 1.0,
    output_scale: float = 1.0 / 256.0,
    output_zero_point: int = -128,
) -> dict:
    """TFLM SoftmaxPrepare / CalculateSoftmaxParams for int8 in -> int8 out:
    checks output zp == -128 and output scale == 1/256 (exact float compare, as
    TFLM), PreprocessSoftmaxScaling(double(beta), double(input_scale), 5) and
    diff_min = -1.0 * CalculateInputRadius(5, input_left_shift).
    Returns a dict ``input_multiplier, input_left_shift, diff_min``."""
    if int(output_zero_point) != -128:
        raise ValueError("TFLM int8 softmax requires output zero_point == -128")
    if np.float32(output_scale) != np.float32(1.0 / 256.0):
        raise ValueError("TFLM int8 softmax requires output scale == 1/256")
    mult, shift = preprocess_softmax_scaling(
        _f32(beta), _f32(input_scale), _SOFTMAX_SCALED_DIFF_INTEGER_BITS
    )
    diff_min = int(-1.0 * calculate_input_radius(_SOFTMAX_SCALED_DIFF_INTEGER_BITS, shift))
    return {"input_multiplier": mult, "input_left_shift": shift, "diff_min": diff_min}


def softmax_int8(x, params: Mapping, axis: int = -1, clamp_exponent: bool = False):
    """tflite::reference_ops::Softmax<int8_t, int8_t> (the gemmlowp path TFLM's
    softmax.cc uses for int8 in / int8 out; the LUT path is int16-only) along
    ``axis``:

    for each row: diff = x - max; entries with diff >= diff_min contribute
    Rescale<12>(exp_on_negative_values(FixedPoint<5>(MBQM_GreaterThanOne(diff))))
    to an int32 Q12.19 sum (wrapping add); GetReciprocal(sum, 12) gives the
    Q0.31 reciprocal and num_bits_over_unit; each kept entry outputs
    RoundingDivideByPOT(SRDHM(reciprocal, exp), num_bits_over_unit + 23) - 128,
    clamped to int8; entries below diff_min output -128.

    ``params`` is the dict of softmax_params (extra keys are ignored).

    TFLM aborts (TFLITE_CHECK) if the exponent leaves [0, 31] (row sum of exps
    >= 512, only possible for depth > SOFTMAX_MAX_SAFE_DEPTH); this raises
    ValueError, or with ``clamp_exponent=True`` clamps it to 31 like the C
    runtime does."""
    input_multiplier = int(params["input_multiplier"])
    input_left_shift = int(params["input_left_shift"])
    diff_min = int(params["diff_min"])
    a = _i64(x)
    if a.size and (a.min() < _INT8_MIN or a.max() > _INT8_MAX):
        raise ValueError("softmax_int8 input must be int8-valued")
    a = np.moveaxis(a, axis, -1)
    if a.shape[-1] == 0:
        return np.moveaxis(a.astype(np.int8), -1, axis)
    max_in_row = a.max(axis=-1, keepdims=True)
    diff = a - max_in_row
    keep = diff >= diff_min
    rescaled = _mbqm_gto(np.where(keep, diff, 0), input_multiplier, input_left_shift)
    exps = _exp_neg(rescaled, _SOFTMAX_SCALED_DIFF_INTEGER_BITS)
    terms = np.where(keep, _rdbpot(exps, _SOFTMAX_ACCUM_INTEGER_BITS), 0)
    sum_of_exps = _wrap32(terms.sum(axis=-1, keepdims=True))
    shifted_scale, nbou = _get_reciprocal(sum_of_exps, _SOFTMAX_ACCUM_INTEGER_BITS)
    exponent = nbou + 31 - 8
    if exponent.size and (exponent.min() < 0 or exponent.max() > 31):
        if not clamp_exponent:
            raise ValueError(
                "softmax exponent outside [0, 31]: TFLM would abort (TFLITE_CHECK); "
                f"row depth {a.shape[-1]} > {SOFTMAX_MAX_SAFE_DEPTH} is unsupported"
            )
        exponent = np.clip(exponent, 0, 31)
    unsat = _rdbpot(_srdhm(shifted_scale, exps), exponent)
    out = np.clip(_wrap32(unsat + _INT8_MIN), _INT8_MIN, _INT8_MAX)
    out = np.where(keep, out, _INT8_MIN).astype(np.int8)
    return np.moveaxis(out, -1, axis)


# --------------------------------------------------------------------------
# Logistic / Tanh (int8), as 256-entry tables
# --------------------------------------------------------------------------


def _frexp_multiplier(input_scale: float, input_integer_bits: int) -> tuple[int, int, int]:
    # logistic_common.cc / tanh.cc int8 Prepare: NOTE no q == 2^31 correction
    # and no QuantizeMultiplier; plain frexp + TfLiteRound.
    real = _f32(input_scale) * float(1 << (31 - input_integer_bits))
    if not real > 0.0:
        raise ValueError("input scale must be positive")
    q, shift = math.frexp(real)
    mult = tflite_round(q * float(1 << 31))
    if mult > INT32_MAX:
        # static_cast<int32_t>(2^31) is UB in TFLM; unreachable for float32
        # scales (24-bit mantissa keeps q <= 1 - 2^-24).
        raise ValueError("input multiplier overflows int32")
    if shift < 0:
        raise ValueError("input scale too small (negative left shift)")
    radius = calculate_input_radius(input_integer_bits, shift, 31)
    return mult, shift, radius


def logistic_params(input_scale: float) -> tuple[int, int, int]:
    """TFLM CalculateArithmeticOpDataLogistic (logistic_common.cc), int8:
    input_real_multiplier = double(scale) * 2^27, (q, left_shift) = frexp,
    multiplier = int32(TfLiteRound(q * 2^31)), range radius =
    CalculateInputRadius(4, left_shift, 31).  Returns (mult, left_shift, radius)."""
    return _frexp_multiplier(input_scale, 4)


def tanh_params(input_scale: float) -> tuple[int, int, int]:
    """TFLM tanh.cc CalculateArithmeticOpData, int8: same as logistic_params
    (kInputIntegerBits = 4).  Returns (mult, left_shift, radius)."""
    return _frexp_multiplier(input_scale, 4)


_ALL_INT8 = np.arange(-128, 128, dtype=np.int64)


def logistic_int8_table(
    input_scale: float, input_zp: int, output_scale: float, output_zp: int
) -> np.ndarray:
    """reference_integer_ops::Logistic (int8) evaluated on every int8 input.

    Returns ``table`` (int8, length 256) with ``table[v + 128] = Logistic(v)``.
    As in TFLM: output zero point must be -128 (TF_LITE_ENSURE_EQ); the output
    scale is *not* read by TFLM (the kernel hard-codes 2^-8), so it is accepted
    and ignored.  input <= -radius -> -128, input >= radius -> 127, else
    RoundingDivideByPOT(logistic(FixedPoint<4>(MBQM(input, mult, shift))), 23)
    - 128, clamped."""
    del output_scale  # unused by TFLM's int8 Logistic
    if int(output_zp) != -128:
        raise ValueError("TFLM int8 Logistic requires output zero_point == -128")
    mult, shift, radius = logistic_params(input_scale)
    inp = _ALL_INT8 - int(input_zp)
    q4 = _mbqm(np.clip(inp, -radius, radius), mult, shift)
    y = _rdbpot(_logistic(q4, 4), 31 - 8)
    y = np.clip(y - 128, _INT8_MIN, _INT8_MAX)
    y = np.where(inp <= -radius, _INT8_MIN, np.where(inp >= radius, _INT8_MAX, y))
    return y.astype(np.int8)


def tanh_int8_table(
    input_scale: float, input_zp: int, output_scale: float, output_zp: int
) -> np.ndarray:
    """reference_integer_ops::Tanh (int8) evaluated on every int8 input.

    Returns ``table`` (int8, length 256) with ``table[v + 128] = Tanh(v)``.
    TFLM checks neither output scale nor zero point for int8 tanh; the kernel
    hard-codes scale 2^-7, zero point 0.  They are accepted and ignored.
    input <= -radius -> -128, >= radius -> 127, else
    RoundingDivideByPOT(tanh(FixedPoint<4>(MBQM(input, mult, shift))), 24),
    clamped."""
    del output_scale, output_zp  # unused by TFLM's int8 Tanh
    mult, shift, radius = tanh_params(input_scale)
    inp = _ALL_INT8 - int(input_zp)
    q4 = _mbqm(np.clip(inp, -radius, radius), mult, shift)
    y = np.clip(_rdbpot(_tanh(q4, 4), 31 - 7), _INT8_MIN, _INT8_MAX)
    y = np.where(inp <= -radius, _INT8_MIN, np.where(inp >= radius, _INT8_MAX, y))
    return y.astype(np.int8)
