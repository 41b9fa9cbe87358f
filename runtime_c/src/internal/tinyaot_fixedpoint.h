/*
 * tinyaot_fixedpoint.h - TFLite-Micro ("tflite" numerics) integer fixed-point
 * primitives for the tinyaot runtime.
 *
 * Bit-exact with TFLM's reference kernels in the default double-rounding
 * build (TFLITE_SINGLE_ROUNDING unset), and with the numpy model in
 * codegen/numerics/tflite_fixedpoint.py:
 *   - gemmlowp fixedpoint.h: SaturatingRoundingDoublingHighMul,
 *     RoundingDivideByPOT, SaturatingRoundingMultiplyByPOT, exp_on_negative_values,
 *     one_over_one_plus_x_for_x_in_0_1;
 *   - tensorflow/lite/kernels/internal/common.{h,cc}:
 *     MultiplyByQuantizedMultiplier{,SmallerThanOneExp,GreaterThanOne}, GetReciprocal;
 *   - reference_ops::Softmax<int8_t,int8_t>, reference_integer_ops::AddFunc,
 *     MulElementwise, AveragePool rounding, conv/FC output stage.
 *
 * C99, integer only (no float, no libm), static inline, free of undefined
 * behaviour for every int32 operand: where TFLite's int32 arithmetic can
 * overflow (UB in C/C++, two's-complement wrap on Cortex-M in practice) this
 * header wraps modulo 2^32 explicitly through uint32_t; right shifts of
 * negative values are done without relying on implementation-defined >>.
 * Preconditions (as in TFLite): shifts in [-31, 31] for mbqm, RDBPOT
 * exponents in [0, 31].
 *
 * Data-independent control flow: nothing here branches or loops on a data
 * value (signs, saturation, remainders, the row maximum), so one inference
 * executes the same instructions for every input (issue #8; tested exactly on
 * QEMU by tests/firmware/test_models_on_qemu_m4.py and at the instruction level by
 * tests/kernels/test_fixedpoint_branch_free.py). Selections are arithmetic masks or,
 * on Thumb-2, IT-predicated instructions; branches that remain depend only on
 * compile-time parameters (shifts, exponents). TINYAOT_PORTABLE_INTRINSICS
 * forces the portable C forms (the host tests build both).
 */
#ifndef TINYAOT_FIXEDPOINT_H_
#define TINYAOT_FIXEDPOINT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- internal helpers ------------------------------------------------- */

/* Reinterpret the 32 bits of u as two's complement, without the
 * implementation-defined unsigned->signed conversion. */
static inline int32_t tinyaot_fp_s32(uint32_t u) {
  if (u & 0x80000000u) {
    return (int32_t)(-(int32_t)(~u) - 1);
  }
  return (int32_t)u;
}

/* All ones if c (0 or 1) is 1, else 0. */
static inline uint32_t tinyaot_fp_mask(int32_t c) { return 0u - (uint32_t)c; }

/* m ? a : b for a mask m of tinyaot_fp_mask, without a branch. */
static inline int32_t tinyaot_fp_select(uint32_t m, int32_t a, int32_t b) {
  return tinyaot_fp_s32(((uint32_t)a & m) | ((uint32_t)b & ~m));
}

static inline int32_t tinyaot_fp_max(int32_t a, int32_t b) {
  return tinyaot_fp_select(tinyaot_fp_mask(b > a), b, a);
}

static inline int32_t tinyaot_fp_wrap_add(int32_t a, int32_t b) {
  return tinyaot_fp_s32((uint32_t)a + (uint32_t)b);
}

static inline int32_t tinyaot_fp_wrap_sub(int32_t a, int32_t b) {
  return tinyaot_fp_s32((uint32_t)a - (uint32_t)b);
}

/* x * 2^s modulo 2^32, 0 <= s <= 31. */
static inline int32_t tinyaot_fp_wrap_shl(int32_t x, int32_t s) {
  return tinyaot_fp_s32((uint32_t)x << s);
}

/* floor(x / 2^s) (arithmetic shift right), 0 <= s <= 31, with no branch: one
 * inference must cost the same for every input, and GCC does not always turn a
 * two-way form (x >= 0 ? x >> s : ~(~x >> s)) into one ASR (it left a branch on
 * the sign in some inlined copies for Cortex-M3). GCC and Clang define >> of a
 * negative int as sign extension (the manuals' implementation-defined
 * behavior): one ASR; elsewhere ~(~x >> s) for a negative x by an XOR with its
 * sign mask. */
static inline int32_t tinyaot_fp_asr(int32_t x, int32_t s) {
#if defined(__GNUC__)
  return x >> s;
#else
  const uint32_t m = 0u - ((uint32_t)x >> 31);
  return tinyaot_fp_s32((((uint32_t)x ^ m) >> s) ^ m);
#endif
}

/* v < lo ? lo : (v > hi ? hi : v), exactly (also for lo > hi). On Thumb-2 a
 * fixed 6-instruction IT sequence: compilers turn the C ternary into a branch
 * when it is inlined into a larger loop body. */
static inline int32_t tinyaot_fp_clamp(int32_t v, int32_t lo, int32_t hi) {
#if defined(__GNUC__) && defined(__thumb2__) && !defined(TINYAOT_PORTABLE_INTRINSICS)
  __asm__("cmp %0, %1\n\t"
          "ite lt\n\t"
          "movlt %0, %1\n\t"
          "cmpge %0, %2\n\t" /* only when v >= lo; else the flags stay "lt" */
          "it gt\n\t"
          "movgt %0, %2"
          : "+r"(v)
          : "r"(lo), "r"(hi)
          : "cc");
  return v;
#else
  const uint32_t below = tinyaot_fp_mask(v < lo);
  const uint32_t above = tinyaot_fp_mask(v > hi) & ~below;
  return tinyaot_fp_select(below, lo, tinyaot_fp_select(above, hi, v));
#endif
}

/* tflite::CountLeadingZeros<uint32_t>; 32 for 0. */
static inline int32_t tinyaot_fp_clz32(uint32_t x) {
#if (defined(__GNUC__) || defined(__clang__)) && !defined(TINYAOT_PORTABLE_INTRINSICS)
  /* one CLZ instruction on Armv7-M (which defines clz(0) = 32) */
  return x ? (int32_t)__builtin_clz((unsigned int)x) : 32;
#else
  /* binary search without branches or loops on x */
  uint32_t n = 0u, s;
  s = (uint32_t)((x >> 16) == 0u) << 4; n += s; x <<= s;
  s = (uint32_t)((x >> 24) == 0u) << 3; n += s; x <<= s;
  s = (uint32_t)((x >> 28) == 0u) << 2; n += s; x <<= s;
  s = (uint32_t)((x >> 30) == 0u) << 1; n += s; x <<= s;
  s = (uint32_t)((x >> 31) == 0u); n += s; x <<= s;
  n += (uint32_t)((x >> 31) == 0u); /* x == 0: 31 + 1 */
  return (int32_t)n;
#endif
}

/* ---- gemmlowp / common.h primitives ----------------------------------- */

/* gemmlowp::SaturatingRoundingDoublingHighMul<int32_t> (ARM VQRDMULH).
 * gemmlowp: trunc((ab + nudge) / 2^31), nudge = 2^30 if ab >= 0 else 1 - 2^30.
 * For ab < 0, y = ab + 1 - 2^30 < 0 and trunc(y / 2^31) = floor((y + 2^31 - 1)
 * / 2^31) = floor((ab + 2^30) / 2^31): one formula for both signs, no branch
 * (SMLAL and two shifts on Cortex-M). The only overflow, a = b = INT32_MIN
 * (2^31), saturates to INT32_MAX by subtracting 1. The low 32 bits of the
 * logical shift are those of the arithmetic one: the quotient fits in 32 bits. */
static inline int32_t tinyaot_srdhm(int32_t a, int32_t b) {
  const uint64_t p = (uint64_t)((int64_t)a * (int64_t)b) + ((uint64_t)1 << 30);
  const uint32_t sat = (uint32_t)(a == INT32_MIN) & (uint32_t)(b == INT32_MIN);
  return tinyaot_fp_s32((uint32_t)(p >> 31) - sat);
}

/* gemmlowp::RoundingDivideByPOT<int32_t>: x / 2^exponent, round to nearest,
 * ties away from zero; 0 <= exponent <= 31. */
static inline int32_t tinyaot_rdbpot(int32_t x, int32_t exponent) {
  const uint32_t mask = ((uint32_t)1 << exponent) - 1u;
  const uint32_t remainder = (uint32_t)x & mask;
  const uint32_t threshold = (mask >> 1) + ((uint32_t)x >> 31); /* + 1 if x < 0 */
  return tinyaot_fp_asr(x, exponent) + (int32_t)(remainder > threshold);
}

/* gemmlowp::SaturatingRoundingMultiplyByPOT<e>, -31 <= e <= 30. */
static inline int32_t tinyaot_fp_srmpot(int32_t x, int32_t e) {
  int32_t threshold, r;
  if (e == 0) return x; /* e is a constant at every call site */
  if (e < 0) return tinyaot_rdbpot(x, -e);
  threshold = (int32_t)(((uint32_t)1 << (31 - e)) - 1u);
  r = tinyaot_fp_wrap_shl(x, e);
  r = tinyaot_fp_select(tinyaot_fp_mask(x > threshold), INT32_MAX, r);
  return tinyaot_fp_select(tinyaot_fp_mask(x < -threshold), INT32_MIN, r);
}

/* tflite::MultiplyByQuantizedMultiplier(int32_t, int32_t, int), double
 * rounding: RDBPOT(SRDHM(x * 2^max(shift,0), m), max(-shift,0)).
 * -31 <= shift <= 31; x * 2^left wraps modulo 2^32. */
static inline int32_t tinyaot_mbqm(int32_t x, int32_t multiplier, int32_t shift) {
  const int32_t left_shift = shift > 0 ? shift : 0;
  const int32_t right_shift = shift > 0 ? 0 : -shift;
  return tinyaot_rdbpot(tinyaot_srdhm(tinyaot_fp_wrap_shl(x, left_shift), multiplier),
                        right_shift);
}

/* tflite::MultiplyByQuantizedMultiplierSmallerThanOneExp (double rounding),
 * -31 <= left_shift <= 0. */
static inline int32_t tinyaot_mbqm_smaller_than_one_exp(int32_t x, int32_t multiplier,
                                                        int32_t left_shift) {
  return tinyaot_rdbpot(tinyaot_srdhm(x, multiplier), -left_shift);
}

/* tflite::MultiplyByQuantizedMultiplierGreaterThanOne (double rounding),
 * 0 <= left_shift <= 31; x * 2^left_shift wraps modulo 2^32. */
static inline int32_t tinyaot_mbqm_greater_than_one(int32_t x, int32_t multiplier,
                                                    int32_t left_shift) {
  return tinyaot_srdhm(tinyaot_fp_wrap_shl(x, left_shift), multiplier);
}

/* Conv / DepthwiseConv / FullyConnected int8 output stage:
 * clamp(MBQM(acc, mult, shift) + zp, lo, hi). acc includes the bias. */
static inline int8_t tinyaot_requant_tflite(int32_t acc, int32_t mult, int32_t shift,
                                            int32_t zp, int32_t lo, int32_t hi) {
  const int32_t v = tinyaot_fp_wrap_add(tinyaot_mbqm(acc, mult, shift), zp);
  return (int8_t)tinyaot_fp_clamp(v, lo, hi);
}

/* reference_integer_ops::AveragePool rounding: sum / count, ties away from
 * zero (acc > 0 ? (acc + count/2) / count : (acc - count/2) / count).
 * count > 0; the caller clamps. */
static inline int32_t tinyaot_avgpool_round_tflite(int32_t sum, int32_t count) {
  /* (sum +- count/2) / count == q + (|r| >= ceil(count/2)) * sign(r) with
   * q, r the truncated quotient and remainder: the exact value also where
   * sum +- count/2 would overflow (UB in TFLite), and no branch on sum. */
  const int32_t q = sum / count;
  const int32_t r = sum - q * count; /* |r| < count */
  const int32_t up = count - count / 2;
  return q + (int32_t)(r >= up) - (int32_t)(-r >= up);
}

/* reference_integer_ops::AddFunc (int8), with the ArithmeticParams of TFLM's
 * CalculateOpDataAdd: left_shift = 20 and the three multiplier/shift pairs of
 * codegen/numerics/tflite_fixedpoint.py:add_params.  Takes zero points (the
 * TFLite input offsets are -a_zp, -b_zp); x and y are int8 values. */
static inline int8_t tinyaot_add_tflite_s8(int32_t x, int32_t y, int32_t a_zp, int32_t b_zp,
                                           int32_t out_zp, int32_t left_shift, int32_t a_mult,
                                           int32_t a_shift, int32_t b_mult, int32_t b_shift,
                                           int32_t out_mult, int32_t out_shift, int32_t act_min,
                                           int32_t act_max) {
  const int32_t v1 = tinyaot_fp_wrap_shl(tinyaot_fp_wrap_sub(x, a_zp), left_shift);
  const int32_t v2 = tinyaot_fp_wrap_shl(tinyaot_fp_wrap_sub(y, b_zp), left_shift);
  const int32_t s1 = tinyaot_mbqm_smaller_than_one_exp(v1, a_mult, a_shift);
  const int32_t s2 = tinyaot_mbqm_smaller_than_one_exp(v2, b_mult, b_shift);
  const int32_t raw_sum = tinyaot_fp_wrap_add(s1, s2);
  const int32_t raw_out =
      tinyaot_fp_wrap_add(tinyaot_mbqm_smaller_than_one_exp(raw_sum, out_mult, out_shift), out_zp);
  return (int8_t)tinyaot_fp_clamp(raw_out, act_min, act_max);
}

/* reference_integer_ops::MulElementwise (int8): out_zp + MBQM((x - a_zp) *
 * (y - b_zp), out_mult, out_shift), clamped; parameters of mul_params. */
static inline int8_t tinyaot_mul_tflite_s8(int32_t x, int32_t y, int32_t a_zp, int32_t b_zp,
                                           int32_t out_zp, int32_t out_mult, int32_t out_shift,
                                           int32_t act_min, int32_t act_max) {
  /* |(x - a_zp) * (y - b_zp)| <= 2^16 for int8 values; wraps otherwise. */
  const int32_t prod = tinyaot_fp_s32((uint32_t)tinyaot_fp_wrap_sub(x, a_zp) *
                                      (uint32_t)tinyaot_fp_wrap_sub(y, b_zp));
  const int32_t v = tinyaot_fp_wrap_add(out_zp, tinyaot_mbqm(prod, out_mult, out_shift));
  return (int8_t)tinyaot_fp_clamp(v, act_min, act_max);
}

/* ---- gemmlowp transcendental helpers ---------------------------------- */

/* gemmlowp::exp_on_interval_between_negative_one_quarter_and_0_excl, Q0.31. */
static inline int32_t tinyaot_fp_exp_on_interval_neg_quarter_0(int32_t a) {
  const int32_t constant_term = 1895147668;     /* exp(-1/8) */
  const int32_t constant_1_over_3 = 715827883;  /* 1/3 */
  const int32_t x = tinyaot_fp_wrap_add(a, (int32_t)1 << 28);
  const int32_t x2 = tinyaot_srdhm(x, x);
  const int32_t x3 = tinyaot_srdhm(x2, x);
  const int32_t x4 = tinyaot_srdhm(x2, x2);
  const int32_t x4_over_4 = tinyaot_rdbpot(x4, 2);
  const int32_t poly = tinyaot_rdbpot(
      tinyaot_fp_wrap_add(tinyaot_srdhm(tinyaot_fp_wrap_add(x4_over_4, x3), constant_1_over_3), x2),
      1);
  return tinyaot_fp_wrap_add(constant_term,
                           tinyaot_srdhm(constant_term, tinyaot_fp_wrap_add(x, poly)));
}

static inline int32_t tinyaot_fp_exp_barrel(int32_t result, int32_t remainder,
                                          int32_t integer_bits, int32_t exponent,
                                          int32_t multiplier) {
  if (integer_bits > exponent) { /* constants after inlining */
    const int32_t shift_amount = 31 - integer_bits + exponent;
    const uint32_t bit = ((uint32_t)remainder >> shift_amount) & 1u;
    /* both sides computed, one kept: no branch on the remainder bit */
    return tinyaot_fp_select(0u - bit, tinyaot_srdhm(result, multiplier), result);
  }
  return result;
}

/* gemmlowp::exp_on_negative_values: input FixedPoint<int32_t, integer_bits>
 * (a <= 0), output Q0.31.  1 <= integer_bits <= 29. */
static inline int32_t tinyaot_fp_exp_on_negative_values(int32_t a, int32_t integer_bits) {
  const int32_t frac_bits = 31 - integer_bits;
  const int32_t one_quarter = (int32_t)1 << (frac_bits - 2);
  const int32_t mask = one_quarter - 1;
  const int32_t a_mod_q_minus_q =
      tinyaot_fp_wrap_sub((int32_t)((uint32_t)a & (uint32_t)mask), one_quarter);
  const int32_t remainder = tinyaot_fp_wrap_sub(a_mod_q_minus_q, a);
  int32_t result =
      tinyaot_fp_exp_on_interval_neg_quarter_0(tinyaot_fp_srmpot(a_mod_q_minus_q, integer_bits));
  result = tinyaot_fp_exp_barrel(result, remainder, integer_bits, -2, 1672461947);
  result = tinyaot_fp_exp_barrel(result, remainder, integer_bits, -1, 1302514674);
  result = tinyaot_fp_exp_barrel(result, remainder, integer_bits, 0, 790015084);
  result = tinyaot_fp_exp_barrel(result, remainder, integer_bits, 1, 290630308);
  result = tinyaot_fp_exp_barrel(result, remainder, integer_bits, 2, 39332535);
  result = tinyaot_fp_exp_barrel(result, remainder, integer_bits, 3, 720401);
  result = tinyaot_fp_exp_barrel(result, remainder, integer_bits, 4, 242);
  if (integer_bits > 5) {
    const int32_t clamp = -((int32_t)1 << (36 - integer_bits));
    result = tinyaot_fp_select(tinyaot_fp_mask(a < clamp), 0, result);
  }
  return tinyaot_fp_select(tinyaot_fp_mask(a == 0), INT32_MAX, result);
}

/* One Newton-Raphson step of one_over_one_plus_x_for_x_in_0_1 (Q2.29). */
static inline int32_t tinyaot_fp_newton_step(int32_t x, int32_t half_denominator) {
  const int32_t hdx = tinyaot_srdhm(half_denominator, x);
  const int32_t one_minus = tinyaot_fp_wrap_sub((int32_t)1 << 29, hdx);
  return tinyaot_fp_wrap_add(x, tinyaot_fp_srmpot(tinyaot_srdhm(x, one_minus), 2));
}

/* gemmlowp::one_over_one_plus_x_for_x_in_0_1, Q0.31 in and out. */
static inline int32_t tinyaot_fp_one_over_one_plus_x_for_x_in_0_1(int32_t a) {
  /* RoundingHalfSum(a, One) = trunc((sum + (sum >= 0 ? 1 : -1)) / 2)
   * = floor((sum + (sum >= 0)) / 2); fits in int32 (sum in [-1, 2^32 - 2]). */
  const int64_t sum = (int64_t)a + (int64_t)INT32_MAX;
  const uint64_t t = (uint64_t)sum + 1u - (uint64_t)(sum < 0);
  const int32_t half_denominator = tinyaot_fp_s32((uint32_t)(t >> 1));
  const int32_t c48_over_17 = 1515870810;     /* Q2.29 */
  const int32_t cneg32_over_17 = -1010580540; /* Q2.29 */
  int32_t x = tinyaot_fp_wrap_add(c48_over_17, tinyaot_srdhm(half_denominator, cneg32_over_17));
  /* the three Newton-Raphson steps, written out (straight-line code) */
  x = tinyaot_fp_newton_step(x, half_denominator);
  x = tinyaot_fp_newton_step(x, half_denominator);
  x = tinyaot_fp_newton_step(x, half_denominator);
  return tinyaot_fp_srmpot(x, 1);
}

/* ---- Softmax int8 -> int8 (one row) ------------------------------------ */

/* tflite::reference_ops::Softmax<int8_t, int8_t> on one row of n values, with
 * output scale 1/256 and zero point -128 (what TFLM requires), and the
 * prepare-time input_multiplier / input_left_shift / diff_min of
 * PreprocessSoftmaxScaling(beta, input_scale, 5) / CalculateInputRadius.
 *
 * TFLM aborts (TFLITE_CHECK) when the output exponent leaves [0, 31], which
 * needs a row sum of exps >= 512, i.e. n > 511; here the exponent is clamped
 * to 31 instead (codegen should reject such rows).
 *
 * Every element goes through the same steps: those below diff_min compute an
 * exp that is then masked out (TFLM skips them), so the cost is the same for
 * every input row. */
static inline void tinyaot_softmax_tflite_row_s8(const int8_t *in, int8_t *out, int32_t n,
                                                 int32_t input_multiplier,
                                                 int32_t input_left_shift, int32_t diff_min) {
  int32_t i;
  int32_t max_in_row = -128;
  uint32_t sum_of_exps = 0u; /* Q12.19, wrapping like the int32 sum in TFLM */
  int32_t headroom_plus_one;
  int32_t exponent;
  int32_t shifted_scale;
  uint32_t shifted_sum;

  if (n <= 0) return;
  for (i = 0; i < n; ++i) {
    max_in_row = tinyaot_fp_max(max_in_row, (int32_t)in[i]);
  }
  for (i = 0; i < n; ++i) {
    const int32_t input_diff = (int32_t)in[i] - max_in_row;
    const uint32_t keep = tinyaot_fp_mask(input_diff >= diff_min);
    const int32_t rescaled =
        tinyaot_mbqm_greater_than_one(input_diff, input_multiplier, input_left_shift);
    const int32_t e = tinyaot_fp_exp_on_negative_values(rescaled, 5);
    sum_of_exps += (uint32_t)tinyaot_rdbpot(e, 12) & keep; /* Rescale<12>, e >= 0 */
  }

  /* GetReciprocal(sum_of_exps, 12, &num_bits_over_unit) */
  headroom_plus_one = tinyaot_fp_clz32(sum_of_exps);
  /* headroom_plus_one == 32 only for a zero sum, which any shift leaves 0 */
  shifted_sum = sum_of_exps << (headroom_plus_one & 31);
  shifted_scale = tinyaot_fp_one_over_one_plus_x_for_x_in_0_1(
      tinyaot_fp_s32(shifted_sum - 0x80000000u));
  exponent = tinyaot_fp_clamp((12 - headroom_plus_one) + 31 - 8, 0, 31);

  for (i = 0; i < n; ++i) {
    const int32_t input_diff = (int32_t)in[i] - max_in_row;
    const uint32_t keep = tinyaot_fp_mask(input_diff >= diff_min);
    const int32_t rescaled =
        tinyaot_mbqm_greater_than_one(input_diff, input_multiplier, input_left_shift);
    const int32_t e = tinyaot_fp_exp_on_negative_values(rescaled, 5);
    const int32_t unsat = tinyaot_rdbpot(tinyaot_srdhm(shifted_scale, e), exponent);
    const int32_t v = tinyaot_fp_clamp(tinyaot_fp_wrap_add(unsat, -128), -128, 127);
    out[i] = (int8_t)tinyaot_fp_select(keep, v, -128);
  }
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TINYAOT_FIXEDPOINT_H_ */
