/* The int16 columns ("im2col") of the fast conv kernels
 * (tinyaot_convolve_fast_s8, tinyaot_convolve_fast_w8_s8: the same columns).
 * A column is k_h rows of k_w * in_c values minus the input zero point,
 * zero where the window leaves the input, in whole quads; two pixels'
 * columns interleave per quad (im2col_pixel) so one GEMM pass serves both,
 * a last odd pixel gets a lone column (im2col_pixel_1).
 * A window row of k_w * in_c bytes that is not whole quads (a 3x3 conv on
 * 3 channels: 9) is not padded (that would waste a quad's tail in every
 * row): the column is the rows' whole quads, row by row, then all rows'
 * tail values (t = row % 4 each) packed in quads after them
 * (im2col_tails_st, when that saves quads: im2col_has_tails;
 * codegen/kernels/fast_pack.py:conv_gemm_weights orders the weights
 * alike): 3x3x3 is 7 quads, not 9.
 * widen_run_st (tinyaot_gemm_q15.h, with widen_pixel_pair: the pair kernels
 * use them without the rest of this header and its specialization) widens
 * 8 bytes a pass: DSP inline asm (LDR, SXTAB16, STRD) with
 * TINYAOT_HAVE_DSP_ASM, else the same words through __SXTAB16 in C.
 * Static functions: each including kernel compiles its own copy, as it did
 * when they were part of one file. */
#ifndef TINYAOT_IM2COL_Q15_H
#define TINYAOT_IM2COL_Q15_H

#include <stdint.h>

#include "tinyaot_gemm_q15.h"
#include "tinyaot_kernels.h"
#include "tinyaot_specialize.h"

/* Does conv d's column put its rows' tails after all rows (im2col_tails_st)?
 * When that takes fewer quads than padding each row: k_h > 1 rows with
 * t = k_w * in_c % 4 > 0, and the k_h * t tails fit in fewer than k_h quads. */
static inline int im2col_has_tails(const tinyaot_conv_dims_t *d)
{
    const int32_t t = (d->k_w * d->in_c) & 3;
    return t != 0 && ((d->k_h * t + 3) >> 2) < d->k_h;
}

/* im2col_has_tails in a build that compiles the tails (a constant 0 otherwise:
 * such a layer is refused by im2col_built). */
static inline int im2col_tails(const tinyaot_conv_dims_t *d)
{
    return TINYAOT_SPEC_HAS(TINYAOT_SPEC_IM2COL, TINYAOT_SPEC_IM2COL_TAILS) && im2col_has_tails(d);
}

/* Are the columns conv d needs compiled in this build (TINYAOT_SPEC_IM2COL)? */
static inline int im2col_built(const tinyaot_conv_dims_t *d)
{
    return im2col_has_tails(d) ? TINYAOT_SPEC_HAS(TINYAOT_SPEC_IM2COL, TINYAOT_SPEC_IM2COL_TAILS)
                               : TINYAOT_SPEC_HAS(TINYAOT_SPEC_IM2COL, TINYAOT_SPEC_IM2COL_QUADS);
}

/* The quads of one column: each row's whole quads, then the rows' tails
 * (k_h * (row % 4) values) in whole quads, or each row padded to whole
 * quads (im2col_has_tails; one row, as the pointwise path widens it). */
static inline int32_t im2col_nquads(const tinyaot_conv_dims_t *d)
{
    const int32_t row = d->k_w * d->in_c;
    return im2col_has_tails(d) ? d->k_h * (row >> 2) + ((d->k_h * (row & 3) + 3) >> 2)
                               : d->k_h * ((row + 3) >> 2);
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

/* Value x at logical position p of a column whose quads are st words apart
 * (each quad's words {k0, k2}, {k1, k3}, element 0 in the low half, as
 * tinyaot_put_quad writes them; the kernels' targets are little-endian). */
static inline __attribute__((always_inline)) void col_put(uint32_t *col, int32_t p, int32_t st,
                                                          int32_t x)
{
    const int16_t h = (int16_t)x;
    memcpy((char *)(col + (p >> 2) * st + (p & 1)) + ((p >> 1) & 1) * 2, &h, 2);
}

/* Tail value number s into the tail quads at tq: the tails fill each quad's
 * two words in memory order (halves k0, k2, k1, k3 of the logical quad;
 * fast_pack.conv_gemm_weights orders their weights alike). */
static inline __attribute__((always_inline)) void tail_put(uint32_t *tq, int32_t s, int32_t st,
                                                           int32_t x)
{
    const int16_t h = (int16_t)x;
    memcpy((char *)(tq + (s >> 2) * st) + (s & 3) * 2, &h, 2);
}

/* The most tail values (k_h * (row % 4)) the whole-window path gathers on the
 * stack; the longest window row the edge path builds there. */
#define TINYAOT_IM2COL_TAILS_MAX 28
#define TINYAOT_IM2COL_ROW_MAX 64

/* k_h rows of body + t bytes (t 1..3), rstep apart, all inside the input,
 * into a pair's column (quads 4 words apart): each row's body widened into
 * quads at dst, its tails stored in order (int16) straight into the tail
 * quad at tq when there is one, else gathered on the stack and copied as
 * whole quads; the last quad zero padded. A function of its own: its few
 * live values stay in registers. */
static __attribute__((noinline, unused)) void tails_inside_4(const int8_t *src, int32_t rstep,
                                                             int32_t k_h, int32_t body,
                                                             int32_t t, uint32_t *dst,
                                                             uint32_t *tq, uint32_t off,
                                                             int32_t in_zp)
{
    uint32_t tb[TINYAOT_IM2COL_TAILS_MAX / 2 + 2];
    const int32_t ntail = k_h * t;
    const int direct = ntail <= 4;
    char *tp = (char *)tb;
    if (direct) {
        tp = (char *)tq;
        tq[0] = 0u; /* the quad's padding, the tails then stored over it */
        tq[1] = 0u;
    }
#if TINYAOT_HAVE_DSP_ASM
    /* per row: the body a quad a pass (6 instructions), each tail byte LDRB +
     * SXTAB16 (its low half, minus the zero point) + STRH */
    (void)in_zp;
    uint32_t x, a, b, n;
    const int32_t nq = body >> 2, rnext = rstep - body;
#define TINYAOT_TAIL1(I) "ldrb %[x], [%[s], #" I "]\n\t"                                              \
                         "sxtab16 %[a], %[off], %[x]\n\t"                                          \
                         "strh %[a], [%[tp]], #2\n\t"
#define TINYAOT_TAILS_ASM(TAILS)                                                                   \
    __asm__ volatile("1:\n\t"                                                                     \
                     "movs %[n], %[nq]\n\t"                                                       \
                     "beq 3f\n\t"                                                                 \
                     "2:\n\t"                                                                     \
                     "ldr %[x], [%[s]], #4\n\t"                                                   \
                     "sxtab16 %[a], %[off], %[x]\n\t"                                             \
                     "sxtab16 %[b], %[off], %[x], ror #8\n\t"                                     \
                     "strd %[a], %[b], [%[d]], #16\n\t"                                           \
                     "subs %[n], %[n], #1\n\t"                                                    \
                     "bne 2b\n\t"                                                                 \
                     "3:\n\t" TAILS "add %[s], %[s], %[rn]\n\t"                                    \
                     "subs %[kh], %[kh], #1\n\t"                                                  \
                     "bne 1b"                                                                     \
                     : [s] "+r"(src), [d] "+r"(dst), [tp] "+r"(tp), [kh] "+r"(k_h),             \
                       [n] "=&r"(n), [x] "=&r"(x), [a] "=&r"(a), [b] "=&r"(b)                   \
                     : [nq] "r"(nq), [rn] "r"(rnext), [off] "r"(off)                            \
                     : "cc", "memory")
    switch (t) {
    case 1: TINYAOT_TAILS_ASM(TINYAOT_TAIL1("0")); break;
    case 2: TINYAOT_TAILS_ASM(TINYAOT_TAIL1("0") TINYAOT_TAIL1("1")); break;
    default: TINYAOT_TAILS_ASM(TINYAOT_TAIL1("0") TINYAOT_TAIL1("1") TINYAOT_TAIL1("2")); break;
    }
#undef TINYAOT_TAILS_ASM
#undef TINYAOT_TAIL1
#else
    for (; k_h > 0; --k_h, src += rstep) {
        dst = widen_run_st(src, body, dst, 4, off, in_zp);
        for (int32_t j = 0; j < t; ++j, tp += 2) {
            const int16_t h = (int16_t)(src[body + j] - in_zp);
            memcpy(tp, &h, 2);
        }
    }
#endif
    if (!direct) {
        const uint32_t zero = 0u; /* the last quad's padding (at most 3 values) */
        memcpy(tp, &zero, 4);
        memcpy(tp + 4, &zero, 2);
        for (const uint32_t *w = tb; (const char *)w < tp; w += 2, tq += 4) {
            tq[0] = w[0];
            tq[1] = w[1];
        }
    }
}

/* A window crossing the input's edge (or dilated, or with more tails than
 * the stack gathers), and a lone column: row by row, tails value by value
 * (zero outside). Few pixels take it: one function, st at run time. */
static __attribute__((noinline, unused)) void im2col_tails_edge(
    const tinyaot_conv_dims_t *d, const int8_t *input, int32_t iy0, int32_t ix0, uint32_t *dst,
    int32_t st, uint32_t off, int32_t in_zp)
{
    const int32_t cin = d->in_c, k_w = d->k_w, in_w = d->in_w;
    const int32_t row = k_w * cin, body = row & ~3, t = row & 3;
    const int32_t ntail = d->k_h * t;
    uint32_t *const tq = dst + d->k_h * (body >> 2) * st; /* the tail quads */
    const int inside_x = d->dil_w == 1 && ix0 >= 0 && ix0 + k_w <= in_w;
    uint32_t *const col = dst;
    zero_quads(tq, (ntail + 3) >> 2, st);
    int32_t s = 0; /* the row's first tail value */
    for (int32_t ky = 0; ky < d->k_h; ++ky, s += t) {
        const int32_t iy = iy0 + ky * d->dil_h;
        if (iy < 0 || iy >= d->in_h) {
            dst = zero_quads(dst, body >> 2, st);
            continue;
        }
        const int8_t *src = input + iy * in_w * cin;
        if (inside_x) {
            src += ix0 * cin;
            dst = widen_run_st(src, body, dst, st, off, in_zp);
            for (int32_t j = 0; j < t; ++j) {
                tail_put(tq, s + j, st, src[body + j] - in_zp);
            }
            continue;
        }
        if (d->dil_w == 1 && row <= TINYAOT_IM2COL_ROW_MAX) {
            /* the row crosses the left / right edge: its bytes, the zero point outside */
            int8_t rb[TINYAOT_IM2COL_ROW_MAX + 4] __attribute__((aligned(4)));
            for (int32_t i = 0, ix = ix0; i < row; ++ix) {
                const int in = ix >= 0 && ix < in_w;
                for (int32_t c = 0; c < cin; ++c, ++i) {
                    rb[i] = in ? src[ix * cin + c] : (int8_t)in_zp;
                }
            }
            dst = widen_run_st(rb, body, dst, st, off, in_zp);
            for (int32_t j = 0; j < t; ++j) {
                tail_put(tq, s + j, st, rb[body + j] - in_zp);
            }
            continue;
        }
        /* dilated: value by value */
        const int32_t p0 = ky * body;
        dst = zero_quads(dst, body >> 2, st);
        for (int32_t kx = 0; kx < k_w; ++kx) {
            const int32_t ix = ix0 + kx * d->dil_w;
            if (ix < 0 || ix >= in_w) {
                continue;
            }
            for (int32_t c = 0; c < cin; ++c) {
                const int32_t i = kx * cin + c;
                const int32_t x = src[ix * cin + c] - in_zp;
                if (i < body) {
                    col_put(col, p0 + i, st, x);
                } else {
                    tail_put(tq, s + i - body, st, x);
                }
            }
        }
    }
}

/* The column of output pixel (oy, ox) when its window rows have tails
 * (im2col_has_tails): per row its whole quads, and its t = row % 4 last
 * values to the tail quads after all rows (zero where the window leaves the
 * input; the last tail quad zero padded). A pair's column wholly inside the
 * input: tails_inside_4; else (and a lone column, once a conv) the edge path.
 * The empty asm after each call keeps it a call: a tail call's frame would
 * be counted on top of this one's by the stack bound (driver/stack.py). */
static inline __attribute__((always_inline)) void im2col_tails_st(
    const tinyaot_conv_dims_t *d, const int8_t *input, int32_t oy, int32_t ox, uint32_t *dst,
    int32_t st, uint32_t off, int32_t in_zp)
{
    const int32_t cin = d->in_c, k_w = d->k_w, in_w = d->in_w;
    const int32_t iy0 = oy * d->stride_h - d->pad_top;
    const int32_t ix0 = ox * d->stride_w - d->pad_left;
    const int32_t row = k_w * cin, body = row & ~3, t = row & 3;
    if (st == 4 && d->dil_w == 1 && d->dil_h == 1 && ix0 >= 0 && ix0 + k_w <= in_w && iy0 >= 0 &&
        iy0 + d->k_h <= d->in_h && d->k_h * t <= TINYAOT_IM2COL_TAILS_MAX) {
        tails_inside_4(input + (iy0 * in_w + ix0) * cin, in_w * cin, d->k_h, body, t, dst,
                       dst + d->k_h * (body >> 2) * st, off, in_zp);
    } else {
        im2col_tails_edge(d, input, iy0, ix0, dst, st, off, in_zp);
    }
    __asm__ volatile("" ::: "memory");
}

/* The column of a window whose rows are at most one quad (k_w * in_c <= 4,
 * undilated) and which one edge of the input cuts (the input row is a word or
 * more: not both), kx in [kx_lo, kx_hi) inside: per row, the input row's first
 * (left edge) or last (right edge) word shifted into place and the zero point's
 * bytes (they widen to 0, as the padding's values) in the rest; a quarter of the
 * value-by-value loop's cycles (kws01's first conv: 10x4 on one channel, two of
 * its five output columns cut). Compiled where a layer has such rows
 * (TINYAOT_SPEC_IM2COL_WORD); a function of its own, so the two im2col_pixel
 * copies do not each inline it. */
static __attribute__((noinline, unused)) void im2col_word_rows(
    const tinyaot_conv_dims_t *d, const int8_t *input, int32_t iy0, int32_t ix0, int32_t kx_lo,
    int32_t kx_hi, uint32_t *dst, int32_t st, uint32_t off, int32_t in_zp)
{
    const int32_t cin = d->in_c, in_w = d->in_w;
    const uint32_t zpw = (uint32_t)(uint8_t)in_zp * 0x01010101u;
    const int32_t n = (kx_hi - kx_lo) * cin; /* the values inside, 0 to 3 */
    const int left = ix0 < 0;
    /* the left edge: row bytes 0 .. n - 1 to kx_lo * cin ..; the right: the last n
     * to 0 .. (no shifts, an empty mask: no values inside) */
    const uint32_t lsh = left && n > 0 ? 8u * (uint32_t)(kx_lo * cin) : 0u;
    const uint32_t rsh = !left && n > 0 ? 8u * (uint32_t)(4 - n) : 0u;
    const uint32_t mask = n > 0 ? (0xffffffffu >> (32u - 8u * (uint32_t)n)) << lsh : 0u;
    const int8_t *src = input + (left ? 0 : in_w * cin - 4);
    for (int32_t ky = 0; ky < d->k_h; ++ky) {
        const int32_t iy = iy0 + ky * d->dil_h;
        uint32_t x = zpw;
        if (iy >= 0 && iy < d->in_h) {
            memcpy(&x, src + iy * in_w * cin, 4);
            x = (((x << lsh) >> rsh) & mask) | (zpw & ~mask);
        }
        dst[0] = __SXTAB16(off, x);
        dst[1] = __SXTAB16_ROR8(off, x);
        dst += st;
    }
}

/* The column of output pixel (oy, ox): k_h rows of k_w * in_c values (zero
 * where the window leaves the input), each row whole quads (else
 * im2col_tails_st); st is a constant at each (inlined) call. */
static inline __attribute__((always_inline)) void im2col_pixel_st(
    const tinyaot_conv_dims_t *d, const int8_t *input, int32_t oy, int32_t ox, uint32_t *dst,
    int32_t st, uint32_t off, int32_t in_zp)
{
    if (im2col_tails(d)) {
        im2col_tails_st(d, input, oy, ox, dst, st, off, in_zp);
        return;
    }
    if (!TINYAOT_SPEC_HAS(TINYAOT_SPEC_IM2COL, TINYAOT_SPEC_IM2COL_QUADS)) {
        return; /* (the kernels refuse such a layer: im2col_built) */
    }
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
    /* undilated rows of at most one quad, input rows of at least a word: a window
     * crossing an edge crosses only one (the input is wider than it) */
    const int word_row = TINYAOT_SPEC_HAS(TINYAOT_SPEC_IM2COL, TINYAOT_SPEC_IM2COL_WORD) &&
                         d->dil_w == 1 && row <= 4 && in_w * cin >= 4;
    const int32_t kx_lo = ix0 < 0 ? (-ix0 < k_w ? -ix0 : k_w) : 0;
    const int32_t kx_hi = in_w - ix0 < k_w ? (in_w - ix0 > kx_lo ? in_w - ix0 : kx_lo) : k_w;
    if (word_row && !inside_x) {
        im2col_word_rows(d, input, iy0, ix0, kx_lo, kx_hi, dst, st, off, in_zp);
        return;
    }
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
