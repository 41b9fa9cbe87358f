/* Fast int8 2-D convolution (groups == 1): partial im2col of two output
 * pixels into int16 columns (../internal/tinyaot_im2col_q15.h,
 * shared with tinyaot_convolve_fast_w8_s8), then an __SMLAD GEMM of four
 * output channels x two pixels per block (the out_c % 4 channels left: two)
 * against compile-time packed int16 weights (tinyaot_fast_kernels.h,
 * fast_pack.pack_conv_gemm; the GEMM cores are ../internal/tinyaot_gemm_q15.h's:
 * DSP inline asm, or C on the portable intrinsics). This file: the scratch
 * size and the loops over pixel pairs, one inlined copy per requantization
 * mode. */
/* the one-SMLAL sign fix where this model's layers need it (tinyaot_requant_fast.h) */
#define TINYAOT_RQ_FIX_BIT TINYAOT_SPEC_FIX_CONV
#include "../internal/tinyaot_specialize.h"
#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_gemm_q15.h"

/* What this build compiles (tinyaot_specialize.h); constants. */
#define CONV_HAS_MODE(m) TINYAOT_SPEC_HAS(TINYAOT_SPEC_CONV_MODES, m)
#define CONV_HAS_REM(r) TINYAOT_SPEC_HAS(TINYAOT_SPEC_CONV_REMS, r)
#define CONV_HAS_KIND(k) TINYAOT_SPEC_HAS(TINYAOT_SPEC_CONV_KINDS, k)
/* the modes tinyaot_convolve_fast_s8's own loops serve (the record modes have theirs) */
#define CONV_LOOP_MODES                                                                            \
    (TINYAOT_SPEC_CONV_MODES & ((1u << TINYAOT_RQ_ORT) | (1u << TINYAOT_RQ_TFLITE) |               \
                                (1u << TINYAOT_RQ_SMLAL)))

#include "../internal/tinyaot_im2col_q15.h"

/* A 1x1 stride-1 unpadded convolution: pixel p's column is the in_c bytes at
 * input + p * in_c. */
static inline __attribute__((always_inline)) int is_pointwise(const tinyaot_conv_dims_t *d)
{
    return d->k_h == 1 && d->k_w == 1 && d->stride_h == 1 && d->stride_w == 1 &&
           d->pad_top == 0 && d->pad_left == 0 && d->in_h == d->out_h && d->in_w == d->out_w;
}

int32_t tinyaot_convolve_fast_s8_get_buffer_size(const tinyaot_conv_dims_t *d)
{
    return 2 * 4 * im2col_nquads(d) * (int32_t)sizeof(int16_t);
}

/* All output pixels, two at a time, in requantization mode `mode` with the
 * nquads % 8, constants (the two saturating record modes; the other modes
 * keep tinyaot_convolve_fast_s8's own loops, which choose per pixel pair). */
static inline __attribute__((always_inline)) int conv_pixels(const tinyaot_conv_dims_t *d,
                                                              const tinyaot_rqc_t *rq,
                                                              const int8_t *input,
                                                              const int32_t *packed_weights,
                                                              uint32_t *scratch, int8_t *output,
                                                              int32_t in_zp, int mode, int rem)
{
    const int32_t nquads = im2col_nquads(d);
    const int32_t npix = d->out_h * d->out_w;
    const int32_t out_c = d->out_c, out_w = d->out_w;
    const uint32_t off = tinyaot_pack16(-in_zp, -in_zp);
    int32_t oy = 0, ox = 0; /* of pixel p */
    int32_t p = 0;
#define TINYAOT_CONV_GEMM2(O0, O1)                                                                 \
    tinyaot_gemm_2col_m(scratch, nquads, packed_weights, out_c, rq, O0, O1, mode, rem)
    const int pointwise = is_pointwise(d);
    if (!CONV_HAS_KIND(pointwise ? TINYAOT_SPEC_KIND_POINTWISE : TINYAOT_SPEC_KIND_IM2COL)) {
        return TINYAOT_ERR_NOT_BUILT; /* (a constant test when both kinds are compiled) */
    }
    /* With the DSP asm an odd last pixel goes in a pair with the one before it,
     * whose outputs are stored again, the same bytes (a conv's output never
     * overlaps its input: planner/check.py): the group loop's asm takes less than
     * the one-column C dot (tinyaot_dot_4x1, its sums in memory) for the lone
     * pixel alone. The pairs' loops take it (one copy of their code). */
    const int32_t end = TINYAOT_HAVE_DSP_ASM && npix > 1 ? npix : npix - 1;
    if (CONV_HAS_KIND(TINYAOT_SPEC_KIND_POINTWISE) && pointwise) {
        const int32_t cin = d->in_c;
        for (; p < end; p += 2) {
            p -= p + 1 == npix; /* the odd last pixel: with the one before it */
            widen_pixel_pair(input + p * cin, cin, scratch, off, in_zp);
            TINYAOT_CONV_GEMM2(output + p * out_c, output + (p + 1) * out_c);
        }
        oy = p / out_w;
        ox = p - oy * out_w;
    }
    /* (none left after the pointwise loop but the last odd pixel) */
    for (; CONV_HAS_KIND(TINYAOT_SPEC_KIND_IM2COL) && p < end; p += 2) {
        if (p + 1 == npix) { /* the odd last pixel: with the one before it */
            --p;
            if (ox > 0) {
                --ox;
            } else {
                ox = out_w - 1;
                --oy;
            }
        }
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
    if (p < npix) {
        im2col_pixel_1(d, input, oy, ox, scratch, off, in_zp);
        if (mode == TINYAOT_RQ_FLOAT_SAT) {
            tinyaot_gemm_1col_float_sat(scratch, nquads, packed_weights, out_c, rq,
                                        output + p * out_c);
        } else {
            tinyaot_gemm_1col(scratch, nquads, packed_weights, out_c, rq, output + p * out_c,
                              1u << mode);
        }
    }
#undef TINYAOT_CONV_GEMM2
    return TINYAOT_OK;
}

/* conv_pixels with nquads % 8 as a constant (tinyaot_dot_2x2_p); a
 * remainder this build does not compile: TINYAOT_ERR_NOT_BUILT. */
static inline __attribute__((always_inline)) int conv_pixels_rem(
    const tinyaot_conv_dims_t *d, const tinyaot_rqc_t *rq, const int8_t *input,
    const int32_t *packed_weights, uint32_t *scratch, int8_t *output, int32_t in_zp, int mode)
{
#define TINYAOT_CONV_REM(R)                                                                        \
    case R:                                                                                        \
        if (CONV_HAS_REM(R))                                                                       \
            return conv_pixels(d, rq, input, packed_weights, scratch, output, in_zp, mode, R);     \
        break
    switch ((im2col_nquads(d)) & 7) {
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
    return TINYAOT_ERR_NOT_BUILT;
}

/* The saturating record modes, each in a function of its own: its own copy
 * of the parameters, so the loops keep them in registers, and the other
 * modes' loops stay as small as they were. onnxruntime {bias, scale}
 * records (tinyaot_rqc_records): */
static __attribute__((noinline)) int conv_float_sat(const tinyaot_conv_dims_t *d,
                                                     const tinyaot_requant_t *q,
                                                     const int8_t *input,
                                                     const int32_t *packed_weights,
                                                     uint32_t *scratch, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc_records(q);
    return conv_pixels_rem(d, &rq, input, packed_weights, scratch, output, q->in_zp,
                           TINYAOT_RQ_FLOAT_SAT);
}

/* TFLite one-SMLAL records over the whole int8 range (TINYAOT_RQ_SMLAL_SAT): */
static __attribute__((noinline)) int conv_smlal_sat(const tinyaot_conv_dims_t *d,
                                                     const tinyaot_rqc_t *rq_in,
                                                     const int8_t *input,
                                                     const int32_t *packed_weights,
                                                     uint32_t *scratch, int8_t *output,
                                                     int32_t in_zp)
{
    const tinyaot_rqc_t rq = *rq_in;
    return conv_pixels_rem(d, &rq, input, packed_weights, scratch, output, in_zp,
                           TINYAOT_RQ_SMLAL_SAT);
}

int tinyaot_convolve_fast_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                             const int8_t *input, const int32_t *packed_weights,
                             uint32_t *scratch, int8_t *output)
{
    if (d->groups != 1) {
        return TINYAOT_ERR_ARG;
    }
    if (!tinyaot_rq_fix_built(q)) {
        return TINYAOT_ERR_NOT_BUILT; /* the sign fix it needs is not compiled */
    }
    if ((!is_pointwise(d) || ((d->out_h * d->out_w) & 1)) && !im2col_built(d)) {
        return TINYAOT_ERR_NOT_BUILT; /* its columns' kind is not compiled */
    }
    if (tinyaot_rq_float_records(q)) { /* onnxruntime, {bias, scale} records */
        if (!CONV_HAS_MODE(TINYAOT_RQ_FLOAT_SAT)) {
            return TINYAOT_ERR_NOT_BUILT;
        }
        return conv_float_sat(d, q, input, packed_weights, scratch, output);
    }
    const int32_t nquads = im2col_nquads(d);
    const int32_t npix = d->out_h * d->out_w;
    const int32_t out_c = d->out_c, out_w = d->out_w;
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    const int32_t in_zp = q->in_zp;
    if (rq.mode == TINYAOT_RQ_SMLAL_SAT) {
        if (!CONV_HAS_MODE(TINYAOT_RQ_SMLAL_SAT)) {
            return TINYAOT_ERR_NOT_BUILT;
        }
        return conv_smlal_sat(d, &rq, input, packed_weights, scratch, output, in_zp);
    }
    if (!TINYAOT_SPEC_HAS(CONV_LOOP_MODES, rq.mode) ||
        !CONV_HAS_KIND(is_pointwise(d) ? TINYAOT_SPEC_KIND_POINTWISE : TINYAOT_SPEC_KIND_IM2COL)) {
        return TINYAOT_ERR_NOT_BUILT;
    }
    const uint32_t off = tinyaot_pack16(-in_zp, -in_zp);
    int32_t oy = 0, ox = 0; /* of pixel p */
    int32_t p = 0;
    if (CONV_HAS_KIND(TINYAOT_SPEC_KIND_POINTWISE) && is_pointwise(d)) {
        const int32_t cin = d->in_c;
        for (; p + 1 < npix; p += 2) {
            widen_pixel_pair(input + p * cin, cin, scratch, off, in_zp);
            tinyaot_gemm_2col(scratch, nquads, packed_weights, out_c, &rq, output + p * out_c,
                              output + (p + 1) * out_c, CONV_LOOP_MODES);
        }
        oy = p / out_w;
        ox = p - oy * out_w;
    }
    for (; CONV_HAS_KIND(TINYAOT_SPEC_KIND_IM2COL) && p + 1 < npix; p += 2) {
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
                          output + (p + 1) * out_c, CONV_LOOP_MODES);
    }
    if (p < npix) {
        im2col_pixel_1(d, input, oy, ox, scratch, off, in_zp);
        tinyaot_gemm_1col(scratch, nquads, packed_weights, out_c, &rq, output + p * out_c,
                          CONV_LOOP_MODES);
    }
    return TINYAOT_OK;
}
