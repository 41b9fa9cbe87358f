/* The int16 columns ("im2col") of the fast conv kernels
 * (tinyaot_convolve_fast_s8, tinyaot_convolve_fast_w8_s8: the same columns).
 * A column is k_h rows of k_w * in_c values minus the input zero point,
 * zero where the window leaves the input, each row padded to whole quads;
 * two pixels' columns interleave per quad (im2col_pixel) so one GEMM pass
 * serves both, a last odd pixel gets a lone column (im2col_pixel_1).
 * widen_run_st widens 8 bytes a pass: DSP inline asm (LDR, SXTAB16, STRD)
 * with TINYAOT_HAVE_DSP_ASM, else the same words through __SXTAB16 in C.
 * Static functions: each including kernel compiles its own copy, as it did
 * when they were part of one file. */
#ifndef TINYAOT_IM2COL_Q15_H
#define TINYAOT_IM2COL_Q15_H

#include <stdint.h>

#include "tinyaot_gemm_q15.h"
#include "tinyaot_kernels.h"

/* tinyaot_widen_run with st a compile-time constant and 8 bytes per pass
 * (one loop test per two quads; the stores become STRDs). */
static inline __attribute__((always_inline)) uint32_t *widen_run_st(const int8_t *src, int32_t n,
                                                                    uint32_t *dst, int32_t st,
                                                                    uint32_t off, int32_t in_zp)
{
    const int8_t *end8 = src + (n & ~7);
#if TINYAOT_HAVE_DSP_ASM
    /* 10 instructions per 8 bytes (GCC's C: 14 to 16, no post-indexed STRD) */
#define TINYAOT_WIDEN8(STEP)                                                                       \
    "1:\n\t"                                                                                       \
    "ldr %[x0], [%[s]], #4\n\t"                                                                    \
    "ldr %[x1], [%[s]], #4\n\t"                                                                    \
    "sxtab16 %[a], %[off], %[x0]\n\t"                                                              \
    "sxtab16 %[b], %[off], %[x0], ror #8\n\t"                                                      \
    "strd %[a], %[b], [%[d]], #" STEP "\n\t"                                                       \
    "sxtab16 %[a], %[off], %[x1]\n\t"                                                              \
    "sxtab16 %[b], %[off], %[x1], ror #8\n\t"                                                      \
    "strd %[a], %[b], [%[d]], #" STEP "\n\t"                                                       \
    "cmp %[s], %[e]\n\t"                                                                           \
    "bne 1b"
    if (src != end8) {
        uint32_t x0, x1, a, b;
        if (st == 4) {
            __asm__ volatile(TINYAOT_WIDEN8("16")
                             : [s] "+r"(src), [d] "+r"(dst), [x0] "=&r"(x0), [x1] "=&r"(x1),
                               [a] "=&r"(a), [b] "=&r"(b)
                             : [e] "r"(end8), [off] "r"(off)
                             : "cc", "memory");
        } else {
            __asm__ volatile(TINYAOT_WIDEN8("8")
                             : [s] "+r"(src), [d] "+r"(dst), [x0] "=&r"(x0), [x1] "=&r"(x1),
                               [a] "=&r"(a), [b] "=&r"(b)
                             : [e] "r"(end8), [off] "r"(off)
                             : "cc", "memory");
        }
    }
#undef TINYAOT_WIDEN8
#else
    while (src != end8) {
        uint32_t x0, x1;
        memcpy(&x0, src, 4);
        memcpy(&x1, src + 4, 4);
        dst[0] = __SXTAB16(off, x0);
        dst[1] = __SXTAB16_ROR8(off, x0);
        dst[st] = __SXTAB16(off, x1);
        dst[st + 1] = __SXTAB16_ROR8(off, x1);
        dst += 2 * st;
        src += 8;
    }
#endif
    if (n & 4) { /* one more quad, no loop */
        uint32_t x;
        memcpy(&x, src, 4);
        dst[0] = __SXTAB16(off, x);
        dst[1] = __SXTAB16_ROR8(off, x);
        dst += st;
        src += 4;
    }
    return (n & 3) ? tinyaot_widen_run(src, n & 3, dst, st, off, in_zp) : dst;
}

/* n zero quads at dst, st words apart. */
static inline __attribute__((always_inline)) uint32_t *zero_quads(uint32_t *dst, int32_t n,
                                                                  int32_t st)
{
    for (int32_t k = 0; k < n; ++k) {
        dst[0] = 0u;
        dst[1] = 0u;
        dst += st;
    }
    return dst;
}

/* The column of output pixel (oy, ox): k_h rows of k_w * in_c values (zero
 * where the window leaves the input), each row padded to whole quads; st is
 * a constant at each (inlined) call. */
static inline __attribute__((always_inline)) void im2col_pixel_st(
    const tinyaot_conv_dims_t *d, const int8_t *input, int32_t oy, int32_t ox, uint32_t *dst,
    int32_t st, uint32_t off, int32_t in_zp)
{
    const int32_t cin = d->in_c, k_w = d->k_w, in_w = d->in_w;
    const int32_t row = k_w * cin, prow = (row + 3) & ~3;
    const int32_t iy0 = oy * d->stride_h - d->pad_top;
    const int32_t ix0 = ox * d->stride_w - d->pad_left;
    const int inside_x = d->dil_w == 1 && ix0 >= 0 && ix0 + k_w <= in_w;
    if (inside_x && d->dil_h == 1 && iy0 >= 0 && iy0 + d->k_h <= d->in_h) {
        /* the whole window inside the input (most pixels): k_h runs of `row` bytes,
         * a row of the input apart, and nothing else to decide */
        const int8_t *src = input + (iy0 * in_w + ix0) * cin;
        const int32_t rstep = in_w * cin;
        for (int32_t ky = d->k_h; ky > 0; --ky, src += rstep) {
            dst = widen_run_st(src, row, dst, st, off, in_zp);
        }
        return;
    }
    /* undilated with whole quads per input pixel: a window crossing the left /
     * right edge is zero quads, one run, zero quads */
    const int quad_px = d->dil_w == 1 && (cin & 3) == 0;
    const int32_t kx_lo = ix0 < 0 ? (-ix0 < k_w ? -ix0 : k_w) : 0;
    const int32_t kx_hi = in_w - ix0 < k_w ? (in_w - ix0 > kx_lo ? in_w - ix0 : kx_lo) : k_w;
    for (int32_t ky = 0; ky < d->k_h; ++ky) {
        const int32_t iy = iy0 + ky * d->dil_h;
        if (iy < 0 || iy >= d->in_h) {
            dst = zero_quads(dst, prow / 4, st);
            continue;
        }
        const int8_t *src = input + iy * in_w * cin;
        if (inside_x) {
            dst = widen_run_st(src + ix0 * cin, row, dst, st, off, in_zp);
            continue;
        }
        if (quad_px) {
            dst = zero_quads(dst, kx_lo * cin / 4, st);
            if (kx_hi > kx_lo) {
                dst = widen_run_st(src + (ix0 + kx_lo) * cin, (kx_hi - kx_lo) * cin, dst, st, off,
                                   in_zp);
            }
            dst = zero_quads(dst, (k_w - kx_hi) * cin / 4, st);
            continue;
        }
        /* the window crosses the left / right edge (or is dilated): value by value,
         * kx in [kx_lo, kx_hi) inside the row (undilated: one contiguous run) */
        {
            int32_t v[4]; /* each written before its quad is stored */
            int32_t k = 0;
            for (int32_t kx = 0; kx < k_w; ++kx) {
                const int32_t ix = ix0 + kx * d->dil_w;
                int32_t n = cin;
                const int8_t *px = src;
                if (ix < 0 || ix >= in_w) {
                    n = 0;
                } else if (d->dil_w == 1) { /* the rest of the run at once */
                    px = src + ix * cin;
                    n = (in_w - ix < k_w - kx ? in_w - ix : k_w - kx) * cin;
                    kx += n / cin - 1;
                } else {
                    px = src + ix * cin;
                }
                if (n == 0) {
                    for (int32_t c = 0; c < cin; ++c) {
                        v[k & 3] = 0;
                        if ((++k & 3) == 0) {
                            tinyaot_put_quad(dst, v[0], v[1], v[2], v[3]);
                            dst += st;
                        }
                    }
                }
                for (int32_t i = 0; i < n; ++i) {
                    v[k & 3] = px[i] - in_zp;
                    if ((++k & 3) == 0) {
                        tinyaot_put_quad(dst, v[0], v[1], v[2], v[3]);
                        dst += st;
                    }
                }
            }
            if (k & 3) { /* zeros up to the quad (written out: a loop becomes a memset call) */
                const int32_t r = k & 3;
                tinyaot_put_quad(dst, v[0], r > 1 ? v[1] : 0, r > 2 ? v[2] : 0, 0);
                dst += st;
            }
        }
    }
}

/* One column of a two-column buffer (quads 4 words apart) / of a lone column. */
static __attribute__((noinline)) void im2col_pixel(const tinyaot_conv_dims_t *d,
                                                   const int8_t *input, int32_t oy, int32_t ox,
                                                   uint32_t *dst, uint32_t off, int32_t in_zp)
{
    im2col_pixel_st(d, input, oy, ox, dst, 4, off, in_zp);
}

static __attribute__((noinline, unused)) void im2col_pixel_1(const tinyaot_conv_dims_t *d,
                                                     const int8_t *input, int32_t oy, int32_t ox,
                                                     uint32_t *dst, uint32_t off, int32_t in_zp)
{
    im2col_pixel_st(d, input, oy, ox, dst, 2, off, in_zp);
}

#endif
