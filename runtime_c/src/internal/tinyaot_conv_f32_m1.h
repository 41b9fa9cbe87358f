/* The M=1 pieces of onnxruntime's float Conv, shared by
 * tinyaot_convolve_f32_m1_s8 (plans of M=1 segments only) and
 * tinyaot_convolve_f32_s8 (an M=1 segment among fma tiles, where ORT's
 * threads split M down to one channel): a window's im2col column through the
 * input table, MLAS's M=1 sum (m1_sum, on tinyaot_f32_mlas_sums.h's
 * mlas_m1_sum) and M=1 transpose-B lane dot (m1tb_dot), QuantizeLinear. A
 * channel's weights are [k8] (k rounded up to 8, zero padded), and so is the
 * column (x[k .. k8) = 0.0f). With a single-precision FPU (TINYAOT_M1_ASM)
 * the lane dot is VLDM / VMUL + VADD inline asm (the product rounded, then
 * added, as the C twin's -ffp-contract=off expression does; VMLA would do
 * the same in 3 cycles on the M4 where VMUL and VADD take 1 each), and on
 * Thumb-2 the column's gather is LDRSB + table LDR asm. Internal to
 * runtime_c; built with -ffp-contract=off. */
#ifndef TINYAOT_CONV_F32_M1_H
#define TINYAOT_CONV_F32_M1_H

#include <stdint.h>

#include "tinyaot_f32_mlas_sums.h"
#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

enum { M1_KIND_M1 = 1 }; /* segment kind 1; 2 is m1tb */
enum { RUN_4 = 0, RUN_2 = 1, RUN_1 = 2 }; /* the M=1 transpose-B lane reductions */

#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__OPTIMIZE__) /* -O0: see TINYAOT_HAVE_DSP_ASM */
#define TINYAOT_M1_ASM 1
static const float zero8[8];
#endif

/* The lanes of x[0 .. 8 * n8) . w[0 .. 8 * n8), reduced for `run`. */
static inline float m1tb_dot(const float *x, const float *w, int32_t n8, int32_t run)
{
#ifdef TINYAOT_M1_ASM
    float r;
    __asm__ volatile(
        "vldm %[z], {s16-s23}\n"
        "1:\n\t"
        "vldmia %[x]!, {s0-s7}\n\t"
        "vldmia %[w]!, {s8-s15}\n\t"
        "vmul.f32 s0, s0, s8\n\t"
        "vmul.f32 s1, s1, s9\n\t"
        "vmul.f32 s2, s2, s10\n\t"
        "vmul.f32 s3, s3, s11\n\t"
        "vmul.f32 s4, s4, s12\n\t"
        "vmul.f32 s5, s5, s13\n\t"
        "vmul.f32 s6, s6, s14\n\t"
        "vmul.f32 s7, s7, s15\n\t"
        "vadd.f32 s16, s16, s0\n\t"
        "vadd.f32 s17, s17, s1\n\t"
        "vadd.f32 s18, s18, s2\n\t"
        "vadd.f32 s19, s19, s3\n\t"
        "vadd.f32 s20, s20, s4\n\t"
        "vadd.f32 s21, s21, s5\n\t"
        "vadd.f32 s22, s22, s6\n\t"
        "vadd.f32 s23, s23, s7\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        "cmp %[run], #1\n\t"
        "beq 2f\n\t"
        "bgt 3f\n\t"
        /* run of 4: (((l0 + l1) + l2) + l3) + (((l4 + l5) + l6) + l7) */
        "vadd.f32 s16, s16, s17\n\t"
        "vadd.f32 s20, s20, s21\n\t"
        "vadd.f32 s16, s16, s18\n\t"
        "vadd.f32 s20, s20, s22\n\t"
        "vadd.f32 s16, s16, s19\n\t"
        "vadd.f32 s20, s20, s23\n\t"
        "b 4f\n"
        "2:\n\t" /* run of 2: ((l0 + l2) + (l4 + l6)) + ((l1 + l3) + (l5 + l7)) */
        "vadd.f32 s16, s16, s18\n\t"
        "vadd.f32 s20, s20, s22\n\t"
        "vadd.f32 s17, s17, s19\n\t"
        "vadd.f32 s21, s21, s23\n\t"
        "vadd.f32 s16, s16, s20\n\t"
        "vadd.f32 s20, s17, s21\n\t"
        "b 4f\n"
        "3:\n\t" /* run of 1: ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)) */
        "vadd.f32 s16, s16, s17\n\t"
        "vadd.f32 s18, s18, s19\n\t"
        "vadd.f32 s20, s20, s21\n\t"
        "vadd.f32 s22, s22, s23\n\t"
        "vadd.f32 s16, s16, s18\n\t"
        "vadd.f32 s20, s20, s22\n"
        "4:\n\t"
        "vadd.f32 %[r], s16, s20\n\t"
        : [r] "=t"(r), [x] "+r"(x), [w] "+r"(w), [n] "+r"(n8)
        : [z] "r"(zero8), [run] "r"(run)
        : "memory", "cc", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10",
          "s11", "s12", "s13", "s14", "s15", "s16", "s17", "s18", "s19", "s20", "s21", "s22",
          "s23");
    return r;
#else
    float l[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int32_t i = 0; i < n8; ++i, x += 8, w += 8) {
        for (int32_t j = 0; j < 8; ++j) {
            l[j] = l[j] + x[j] * w[j];
        }
    }
    if (run == RUN_4) {
        return (((l[0] + l[1]) + l[2]) + l[3]) + (((l[4] + l[5]) + l[6]) + l[7]);
    }
    if (run == RUN_2) {
        return ((l[0] + l[2]) + (l[4] + l[6])) + ((l[1] + l[3]) + (l[5] + l[7]));
    }
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
#endif
}

/* MLAS's M=1 kernel over k0 .. k1 on float weights (mlas_m1_sum). */
static inline float m1_sum(const float *x, const float *w, int32_t k0, int32_t k1, float c)
{
    return mlas_m1_sum(x, w, 0.0f, k0, k1, c, mlas_weight_f32);
}

/* Gather x[k] = tbl[b[taps[k]]], k < kk: a window inside the input. */
static inline void m1_gather(const int8_t *b, const float *tbl, const int32_t *taps, int32_t kk,
                             float *x)
{
#if defined(__thumb2__)
    /* LDR tap, LDRSB, LDR [tbl, q, lsl #2], STR: the float bits through a core register */
    uint32_t o, v, o2, v2;
    __asm__ volatile(
        "tst %[n], #1\n\t" /* an odd k first, then 2 per iteration */
        "beq 2f\n\t"
        "ldr %[o], [%[tp]], #4\n\t"
        "ldrsb %[v], [%[b], %[o]]\n\t"
        "ldr %[v], [%[t], %[v], lsl #2]\n\t"
        "str %[v], [%[x]], #4\n"
        "2:\n\t"
        "asrs %[n], %[n], #1\n\t"
        "beq 3f\n"
        "1:\n\t"
        /* two taps by LDRs, stored by STRs: the LDRSB after an LDR is pipelined,
         * an STR with an immediate offset takes one cycle (LDRD, STRD: three) */
        "ldr %[o], [%[tp]], #4\n\t"
        "ldr %[o2], [%[tp]], #4\n\t"
        "ldrsb %[v], [%[b], %[o]]\n\t"
        "ldrsb %[v2], [%[b], %[o2]]\n\t"
        "ldr %[v], [%[t], %[v], lsl #2]\n\t"
        "ldr %[v2], [%[t], %[v2], lsl #2]\n\t"
        "str %[v2], [%[x], #4]\n\t" "str %[v], [%[x]], #8\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        "3:"
        : [o] "=&r"(o), [v] "=&r"(v), [o2] "=&r"(o2), [v2] "=&r"(v2), [tp] "+r"(taps),
          [x] "+r"(x), [n] "+r"(kk)
        : [b] "r"(b), [t] "r"(tbl)
        : "memory", "cc");
#else
    for (int32_t k = 0; k < kk; ++k) {
        x[k] = tbl[b[taps[k]]];
    }
#endif
}

/* QuantizeLinear of y: with an FPU, VCVTR rounds to nearest even (default
 * FPSCR) and saturates; clamping the integer equals clamping the float
 * first (the bounds are integers). */
static inline int8_t conv_f32_quantize(float y, float scale, int32_t zp, int32_t lo, int32_t hi)
{
#ifdef TINYAOT_F32_CAPTURE /* tests: record the float before QuantizeLinear */
    TINYAOT_F32_CAPTURE(y);
#endif
    return tinyaot_quantize_f32_fpu(y, scale, zp, lo, hi);
}

/* The im2col column of the window at (iy0, ix0) of group g into x[0 .. kk):
 * through the tap offsets when inside the input, else tap by tap with zeros
 * for padding. Not inline (both kernels call it): inlined, it changes the M=1
 * kernel's code and the shared models' instruction counts. */
static void m1_column(const tinyaot_conv_dims_t *d, const float *tbl, const int32_t *taps,
                      const int8_t *input, int32_t g, int32_t iy0, int32_t ix0, int32_t inside,
                      int32_t kk, float *x)
{
    const int32_t cg = d->in_c / d->groups;
    const int8_t *in = input + g * cg;
    if (inside) {
        m1_gather(in + (iy0 * d->in_w + ix0) * d->in_c, tbl, taps, kk, x);
        return;
    }
    for (int32_t c = 0; c < cg; ++c) {
        for (int32_t ky = 0; ky < d->k_h; ++ky) {
            const int32_t iy = iy0 + ky * d->dil_h;
            const int row_in = iy >= 0 && iy < d->in_h;
            for (int32_t kx = 0; kx < d->k_w; ++kx) {
                const int32_t ix = ix0 + kx * d->dil_w;
                *x++ = (row_in && ix >= 0 && ix < d->in_w)
                           ? tbl[in[(iy * d->in_w + ix) * d->in_c + c]]
                           : 0.0f;
            }
        }
    }
}

#endif
