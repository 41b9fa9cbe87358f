/* Elementwise int8 Add, as tinyaot_add_s8 computes it (bit-identical), with
 * the per-layer constants hoisted out of the loop and the TFLite fixed-point
 * steps in the cheaper exact forms of tinyaot_requant_fast.h. With the
 * compile-time tables (a_lut, b_lut: each input's rescaled value depends on
 * that int8 alone) an element is two table reads, an add and the one-SMLAL
 * output rescale. */
#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_requant_fast.h"

#include <math.h>

/* gemmlowp RoundingDivideByPOT with mask = 2^e - 1, half = mask >> 1 */
static inline int32_t rdbpot_c(int32_t x, int32_t e, int32_t mask, int32_t half)
{
    const int32_t rem = (int32_t)((uint32_t)x & (uint32_t)mask);
    return tinyaot_fp_asr(x, e) + (int32_t)(rem > half + (int32_t)((uint32_t)x >> 31));
}

/* y (the rounded value + zero point, int32) clamped to [lo, hi]; sat: the
 * whole int8 range (a constant after inlining). */
static inline __attribute__((always_inline)) int8_t clamp_out(int32_t y, int32_t lo, int32_t hi,
                                                              int sat)
{
    return (int8_t)(sat ? __SSAT(y, 8) : tinyaot_fp_clamp(y, lo, hi));
}

/* onnxruntime DequantizeLinear -> Add -> QuantizeLinear (use_float 1):
 * la / lb hold the float32 bits of each int8's dequantized value
 * float(x - zp) * scale; y = round_half_even((fa + fb) / s_y) + zp_y. */
static inline __attribute__((always_inline)) void add_ort_dq(int32_t n, const int32_t *la,
                                                             const int32_t *lb, const int8_t *a,
                                                             const int8_t *b, int32_t b_stride,
                                                             float s, int32_t zp, int32_t lo,
                                                             int32_t hi, int8_t *output, int sat)
{
    for (int32_t i = 0; i < n; ++i) {
        const float v = tinyaot_f32_bits(la[a[i]]) + tinyaot_f32_bits(lb[b[i * b_stride]]);
#if TINYAOT_HAVE_FPU_ASM
        output[i] = clamp_out(tinyaot_round_add_fpu(v / s, zp), lo, hi, sat);
#else
        (void)sat;
        output[i] = tinyaot_quantize_f32(v, s, zp, lo, hi);
#endif
    }
}

/* onnxruntime QLinearAdd (use_float 2, 3): la = float(a + u8_shift), lb = the
 * inner fma(float(b + u8_shift), r_b, fixed) (for a broadcast b, MLAS's
 * unfused fold); y = round_half_even(fma(a, r_a, lb)) saturated to the type
 * ORT ran, - u8_shift, clamped. The compiler gives these tables only when
 * |t| < 2^30 for every input pair (so MLAS's out-of-range case never occurs). */
static inline __attribute__((always_inline)) void add_ort_qlinear(
    int32_t n, const int32_t *la, const int32_t *lb, const int8_t *a, const int8_t *b,
    int32_t b_stride, float ra, int32_t sh, int32_t lo, int32_t hi, int8_t *output, int sat)
{
    for (int32_t i = 0; i < n; ++i) {
        const float t = fmaf(tinyaot_f32_bits(la[a[i]]), ra, tinyaot_f32_bits(lb[b[i * b_stride]]));
#if TINYAOT_HAVE_FPU_ASM
        /* clamp(r, 0, 255) - 128 = clamp(r - 128, -128, 127): one SSAT either way */
        output[i] = clamp_out(__SSAT(tinyaot_round_add_fpu(t, -sh), 8), lo, hi, sat);
#else
        (void)sat;
        const int32_t r = tinyaot_round_even_f32(t < -1024.0f ? -1024.0f : (t > 1024.0f ? 1024.0f : t));
        output[i] = (int8_t)tinyaot_fp_clamp(__SSAT(r - sh, 8), lo, hi);
#endif
    }
}

/* noinline: keeps the tflite loops' register allocation as it was */
static __attribute__((noinline)) void add_ort_tables(int32_t n, const tinyaot_add_params_t *p, const int8_t *a,
                           const int8_t *b, int32_t b_stride, int8_t *output)
{
    const int32_t *la = p->a_lut + 128, *lb = p->b_lut + 128;
    const int32_t lo = p->act_min, hi = p->act_max;
    const int sat = lo <= -128 && hi >= 127;
    if (p->use_float == 1) {
        if (sat) {
            add_ort_dq(n, la, lb, a, b, b_stride, p->out_scale, p->out_zp, lo, hi, output, 1);
        } else {
            add_ort_dq(n, la, lb, a, b, b_stride, p->out_scale, p->out_zp, lo, hi, output, 0);
        }
    } else if (sat) {
        add_ort_qlinear(n, la, lb, a, b, b_stride, p->a_scale, p->u8_shift, lo, hi, output, 1);
    } else {
        add_ort_qlinear(n, la, lb, a, b, b_stride, p->a_scale, p->u8_shift, lo, hi, output, 0);
    }
}

int tinyaot_add_fast_s8(int32_t n, const tinyaot_add_params_t *p, const int8_t *a,
                        const int8_t *b, int32_t b_stride, int8_t *output)
{
    const int32_t a_zp = p->a_zp, b_zp = p->b_zp, out_zp = p->out_zp;
    const int32_t lo = p->act_min, hi = p->act_max;
    if (p->use_float && p->a_lut && p->b_lut) {
        add_ort_tables(n, p, a, b, b_stride, output);
        return TINYAOT_OK;
    }
    if (p->use_float || p->a_mult < 0 || p->b_mult < 0 || p->out_mult < 0 || p->a_shift > 0 ||
        p->b_shift > 0 || p->out_shift > 0) {
        return tinyaot_add_s8(n, p, a, b, b_stride, output);
    }
    if (p->a_lut && p->b_lut && p->out_rq) {
        const int32_t *la = p->a_lut + 128, *lb = p->b_lut + 128, *r = p->out_rq;
        const int32_t m = r[0], sh = r[1], rhi = r[3];
        const uint32_t rlo = (uint32_t)r[2];
        if (lo <= -128 && hi >= 127 && b_stride == 1 && sh <= 22) {
            /* out_zp folded into the rounding's high word: (h + zp * 2^sh) >> sh =
             * (h >> sh) + zp, and |h| < 2^30 (|sum * m| < 2^62) leaves room for
             * |zp * 2^sh| <= 2^29; fewer live values, so no reloads in the loop */
            const int32_t rz = rhi + (int32_t)((uint32_t)out_zp << sh);
            const int8_t *const end = a + n;
#if TINYAOT_HAVE_DSP_ASM
            /* tinyaot_mbqm_smlal's negative-sum correction (- 2^31 when sum < 0) as
             * AND / SUBS / SBC: no register for its constant, so the loop's 14 values
             * fit the register file */
            if (n > 0) {
                uint32_t x, y, l, h;
                __asm__ volatile("1:\n\t"
                                 "ldrsb %[x], [%[a]], #1\n\t"
                                 "ldrsb %[y], [%[b]], #1\n\t"
                                 "ldr %[x], [%[la], %[x], lsl #2]\n\t"
                                 "ldr %[y], [%[lb], %[y], lsl #2]\n\t"
                                 "add %[x], %[x], %[y]\n\t"
                                 "mov %[l], %[rlo]\n\t"
                                 "mov %[h], %[rz]\n\t"
                                 "smlal %[l], %[h], %[x], %[m]\n\t"
                                 "and %[y], %[x], #0x80000000\n\t"
                                 "subs %[l], %[l], %[y]\n\t"
                                 "sbc %[h], %[h], #0\n\t"
                                 "asr %[h], %[h], %[sh]\n\t"
                                 "ssat %[h], #8, %[h]\n\t"
                                 "strb %[h], [%[o]], #1\n\t"
                                 "cmp %[a], %[end]\n\t"
                                 "bne 1b"
                                 : [a] "+r"(a), [b] "+r"(b), [o] "+r"(output), [x] "=&r"(x),
                                   [y] "=&r"(y), [l] "=&r"(l), [h] "=&r"(h)
                                 : [la] "r"(la), [lb] "r"(lb), [m] "r"(m), [sh] "r"(sh),
                                   [rlo] "r"(rlo), [rz] "r"(rz), [end] "r"(end)
                                 : "cc", "memory");
            }
#else
            while (a < end) { /* (the clamp branch-free: the same count for every input) */
                const int32_t sum = tinyaot_fp_wrap_add(la[*a++], lb[*b++]);
                *output++ = (int8_t)tinyaot_fp_clamp(tinyaot_mbqm_smlal(sum, m, sh, rlo, rz),
                                                     -128, 127);
            }
#endif
        } else if (lo <= -128 && hi >= 127) {
            for (int32_t i = 0; i < n; ++i) {
                const int32_t sum = tinyaot_fp_wrap_add(la[a[i]], lb[b[i * b_stride]]);
                output[i] = (int8_t)__SSAT(tinyaot_mbqm_smlal(sum, m, sh, rlo, rhi) + out_zp, 8);
            }
        } else {
            for (int32_t i = 0; i < n; ++i) {
                const int32_t sum = tinyaot_fp_wrap_add(la[a[i]], lb[b[i * b_stride]]);
                output[i] = (int8_t)tinyaot_fp_clamp(tinyaot_mbqm_smlal(sum, m, sh, rlo, rhi) + out_zp,
                                                     lo, hi);
            }
        }
        return TINYAOT_OK;
    }
    const int32_t ls = p->left_shift;
    const int32_t am = p->a_mult, bm = p->b_mult, om = p->out_mult;
    const int32_t ae = -p->a_shift, be = -p->b_shift, oe = -p->out_shift;
    const int32_t amask = (int32_t)(((uint32_t)1 << ae) - 1u);
    const int32_t bmask = (int32_t)(((uint32_t)1 << be) - 1u);
    const int32_t omask = (int32_t)(((uint32_t)1 << oe) - 1u);
    const int32_t ahalf = amask >> 1, bhalf = bmask >> 1, ohalf = omask >> 1;
    for (int32_t i = 0; i < n; ++i) {
        const int32_t v1 = tinyaot_fp_wrap_shl((int32_t)a[i] - a_zp, ls);
        const int32_t v2 = tinyaot_fp_wrap_shl((int32_t)b[i * b_stride] - b_zp, ls);
        const int32_t s1 = rdbpot_c(tinyaot_srdhm_fast(v1, am), ae, amask, ahalf);
        const int32_t s2 = rdbpot_c(tinyaot_srdhm_fast(v2, bm), be, bmask, bhalf);
        const int32_t sum = tinyaot_fp_wrap_add(s1, s2);
        const int32_t v = tinyaot_fp_wrap_add(rdbpot_c(tinyaot_srdhm_fast(sum, om), oe, omask, ohalf),
                                              out_zp);
        output[i] = (int8_t)tinyaot_fp_clamp(v, lo, hi); /* branch-free: data-independent count */
    }
    return TINYAOT_OK;
}
