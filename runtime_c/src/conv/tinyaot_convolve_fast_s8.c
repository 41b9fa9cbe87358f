/* Fast int8 2-D convolution (groups == 1): partial im2col of two output
 * pixels into int16 columns, then a 2x2-blocked __SMLAD GEMM against
 * compile-time packed int16 weights (tinyaot_fast_kernels.h). */
#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_gemm_q15.h"

/* Logical K of one column: k_h rows of k_w * in_c, each row padded to a
 * multiple of 4 when k_w * in_c is not one (so every row starts a quad). */
static int32_t padded_row(const tinyaot_conv_dims_t *d)
{
    return (d->k_w * d->in_c + 3) & ~3;
}

int32_t tinyaot_convolve_fast_s8_get_buffer_size(const tinyaot_conv_dims_t *d)
{
    return 2 * d->k_h * padded_row(d) * (int32_t)sizeof(int16_t);
}

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

static __attribute__((noinline)) void im2col_pixel_1(const tinyaot_conv_dims_t *d,
                                                     const int8_t *input, int32_t oy, int32_t ox,
                                                     uint32_t *dst, uint32_t off, int32_t in_zp)
{
    im2col_pixel_st(d, input, oy, ox, dst, 2, off, in_zp);
}

/* All output pixels, two at a time, in requantization mode `mode` with the
 * nquads % 8, constants (the two saturating record modes; the other modes
 * keep tinyaot_convolve_fast_s8's own loops, which choose per pixel pair). */
static inline __attribute__((always_inline)) void conv_pixels(const tinyaot_conv_dims_t *d,
                                                              const tinyaot_rqc_t *rq,
                                                              const int8_t *input,
                                                              const int32_t *packed_weights,
                                                              uint32_t *scratch, int8_t *output,
                                                              int32_t in_zp, int mode, int rem)
{
    const int32_t nquads = d->k_h * padded_row(d) / 4;
    const int32_t npix = d->out_h * d->out_w;
    const int32_t out_c = d->out_c, out_w = d->out_w;
    const uint32_t off = tinyaot_pack16(-in_zp, -in_zp);
    int32_t oy = 0, ox = 0; /* of pixel p */
    int32_t p = 0;
#define TINYAOT_CONV_GEMM2(O0, O1)                                                                 \
    tinyaot_gemm_2col_m(scratch, nquads, packed_weights, out_c, rq, O0, O1, mode, rem)
    if (d->k_h == 1 && d->k_w == 1 && d->stride_h == 1 && d->stride_w == 1 && d->pad_top == 0 &&
        d->pad_left == 0 && d->in_h == d->out_h && d->in_w == d->out_w) {
        /* pointwise: pixel p's column is the in_c bytes at input + p * in_c */
        const int32_t cin = d->in_c;
        for (; p + 1 < npix; p += 2) {
            widen_run_st(input + p * cin, cin, scratch, 4, off, in_zp);
            widen_run_st(input + (p + 1) * cin, cin, scratch + 2, 4, off, in_zp);
            TINYAOT_CONV_GEMM2(output + p * out_c, output + (p + 1) * out_c);
        }
        oy = p / out_w;
        ox = p - oy * out_w;
    }
    for (; p + 1 < npix; p += 2) {
        im2col_pixel(d, input, oy, ox, scratch, off, in_zp);
        if (++ox == out_w) {
            ox = 0;
            ++oy;
        }
        im2col_pixel(d, input, oy, ox, scratch + 2, off, in_zp);
        if (++ox == out_w) {
            ox = 0;
            ++oy;
        }
        TINYAOT_CONV_GEMM2(output + p * out_c, output + (p + 1) * out_c);
    }
#undef TINYAOT_CONV_GEMM2
    if (p < npix) {
        im2col_pixel_1(d, input, oy, ox, scratch, off, in_zp);
        if (mode == TINYAOT_RQ_FLOAT_SAT) {
            tinyaot_gemm_1col_float_sat(scratch, nquads, packed_weights, out_c, rq,
                                        output + p * out_c);
        } else {
            tinyaot_gemm_1col(scratch, nquads, packed_weights, out_c, rq, output + p * out_c);
        }
    }
}

/* conv_pixels with nquads % 8 as a constant (tinyaot_dot_2x2_p). */
static inline __attribute__((always_inline)) void conv_pixels_rem(
    const tinyaot_conv_dims_t *d, const tinyaot_rqc_t *rq, const int8_t *input,
    const int32_t *packed_weights, uint32_t *scratch, int8_t *output, int32_t in_zp, int mode)
{
#define TINYAOT_CONV_REM(R)                                                                        \
    case R: conv_pixels(d, rq, input, packed_weights, scratch, output, in_zp, mode, R); break
    switch ((d->k_h * padded_row(d) / 4) & 7) {
        TINYAOT_CONV_REM(0);
        TINYAOT_CONV_REM(1);
        TINYAOT_CONV_REM(2);
        TINYAOT_CONV_REM(3);
        TINYAOT_CONV_REM(4);
        TINYAOT_CONV_REM(5);
        TINYAOT_CONV_REM(6);
        default: TINYAOT_CONV_REM(7);
    }
#undef TINYAOT_CONV_REM
}

/* The saturating record modes, each in a function of its own: its own copy
 * of the parameters, so the loops keep them in registers, and the other
 * modes' loops stay as small as they were. onnxruntime {bias, scale}
 * records (tinyaot_rqc_records): */
static __attribute__((noinline)) void conv_float_sat(const tinyaot_conv_dims_t *d,
                                                     const tinyaot_requant_t *q,
                                                     const int8_t *input,
                                                     const int32_t *packed_weights,
                                                     uint32_t *scratch, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc_records(q);
    conv_pixels_rem(d, &rq, input, packed_weights, scratch, output, q->in_zp, TINYAOT_RQ_FLOAT_SAT);
}

/* TFLite one-SMLAL records over the whole int8 range (TINYAOT_RQ_SMLAL_SAT): */
static __attribute__((noinline)) void conv_smlal_sat(const tinyaot_conv_dims_t *d,
                                                     const tinyaot_rqc_t *rq_in,
                                                     const int8_t *input,
                                                     const int32_t *packed_weights,
                                                     uint32_t *scratch, int8_t *output,
                                                     int32_t in_zp)
{
    const tinyaot_rqc_t rq = *rq_in;
    conv_pixels_rem(d, &rq, input, packed_weights, scratch, output, in_zp, TINYAOT_RQ_SMLAL_SAT);
}

int tinyaot_convolve_fast_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                             const int8_t *input, const int32_t *packed_weights,
                             uint32_t *scratch, int8_t *output)
{
    if (d->groups != 1) {
        return TINYAOT_ERR_ARG;
    }
    if (tinyaot_rq_float_records(q)) { /* onnxruntime, {bias, scale} records */
        conv_float_sat(d, q, input, packed_weights, scratch, output);
        return TINYAOT_OK;
    }
    const int32_t nquads = d->k_h * padded_row(d) / 4;
    const int32_t npix = d->out_h * d->out_w;
    const int32_t out_c = d->out_c, out_w = d->out_w;
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    const int32_t in_zp = q->in_zp;
    if (rq.mode == TINYAOT_RQ_SMLAL_SAT) {
        conv_smlal_sat(d, &rq, input, packed_weights, scratch, output, in_zp);
        return TINYAOT_OK;
    }
    const uint32_t off = tinyaot_pack16(-in_zp, -in_zp);
    int32_t oy = 0, ox = 0; /* of pixel p */
    int32_t p = 0;
    if (d->k_h == 1 && d->k_w == 1 && d->stride_h == 1 && d->stride_w == 1 && d->pad_top == 0 &&
        d->pad_left == 0 && d->in_h == d->out_h && d->in_w == d->out_w) {
        /* pointwise: pixel p's column is the in_c bytes at input + p * in_c */
        const int32_t cin = d->in_c;
        for (; p + 1 < npix; p += 2) {
            widen_run_st(input + p * cin, cin, scratch, 4, off, in_zp);
            widen_run_st(input + (p + 1) * cin, cin, scratch + 2, 4, off, in_zp);
            tinyaot_gemm_2col(scratch, nquads, packed_weights, out_c, &rq, output + p * out_c,
                              output + (p + 1) * out_c);
        }
        oy = p / out_w;
        ox = p - oy * out_w;
    }
    for (; p + 1 < npix; p += 2) {
        im2col_pixel(d, input, oy, ox, scratch, off, in_zp);
        if (++ox == out_w) {
            ox = 0;
            ++oy;
        }
        im2col_pixel(d, input, oy, ox, scratch + 2, off, in_zp);
        if (++ox == out_w) {
            ox = 0;
            ++oy;
        }
        tinyaot_gemm_2col(scratch, nquads, packed_weights, out_c, &rq, output + p * out_c,
                          output + (p + 1) * out_c);
    }
    if (p < npix) {
        im2col_pixel_1(d, input, oy, ox, scratch, off, in_zp);
        tinyaot_gemm_1col(scratch, nquads, packed_weights, out_c, &rq, output + p * out_c);
    }
    return TINYAOT_OK;
}
