/* Fast int8 depthwise convolution (channel multiplier 1, in_c % 4 == 0):
 * four channels at a time, inputs widened with the zero point folded in by
 * __SXTAB16, products accumulated by __SMLABB / __SMLATT against packed
 * int16 weights (tinyaot_fast_kernels.h). 3x3 undilated windows that lie
 * inside the input take an unrolled path (inline asm on DSP cores).
 *
 * This file holds the loops over output pixels and the dispatch on the
 * requantization mode (one inlined copy of the loops per mode); the rest
 * sits in parts it includes (one translation unit):
 *   tinyaot_depthwise_conv_fast_s8_quad.inc  one channel quad's taps and
 *       requantization: DSP inline asm, or C twins on tinyaot_intrinsics.h;
 *   tinyaot_depthwise_conv_fast_s8_3x3.inc   3x3 undilated windows: whole
 *       rows inside the input, and the windows cut by its edges. */
#include <string.h>

#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_gemm_q15.h"
#include "../internal/tinyaot_specialize.h"

/* Is mode m's copy of the loops compiled (tinyaot_specialize.h)? A constant. */
#define DW_HAS_MODE(m) TINYAOT_SPEC_HAS(TINYAOT_SPEC_DW_MODES, m)

#include "tinyaot_depthwise_conv_fast_s8_quad.inc"
#include "tinyaot_depthwise_conv_fast_s8_3x3.inc"

/* One output pixel (all channels) over the taps [ky_lo, ky_hi) x [kx_lo, kx_hi)
 * that lie inside the input: one dw_line per kernel row (or one line down the
 * column for k_w == 1 kernels). */
static inline __attribute__((always_inline)) void dw_pixel(
    const tinyaot_conv_dims_t *d, const tinyaot_rqc_t *rq, const int8_t *input,
    const uint32_t *wbase, int32_t iy0, int32_t ix0, int32_t ky_lo, int32_t ky_hi, uint32_t off,
    int8_t *out, int mode)
{
    const int32_t ch = d->in_c, nq = ch >> 2, k_w = d->k_w, in_w = d->in_w;
    const int32_t dil_w = d->dil_w, dil_h = d->dil_h;
    const int32_t wquad = 2 * d->k_h * k_w; /* words per channel quad */
    int32_t kx_lo = 0, kx_hi = k_w;
    while (kx_lo < kx_hi && ix0 + kx_lo * dil_w < 0) ++kx_lo;
    while (kx_hi > kx_lo && ix0 + (kx_hi - 1) * dil_w >= in_w) --kx_hi;
    int32_t nky = ky_hi - ky_lo, nkx = kx_hi - kx_lo;
    const int32_t rstep = dil_h * in_w * ch;
    int32_t lstep = dil_w * ch, wrstep = 2 * k_w;
    if (k_w == 1) { /* the column is the line (none if the column is outside) */
        nkx = nkx > 0 ? nky : 0;
        nky = nkx > 0 ? 1 : 0;
        lstep = rstep;
    }
    if (dw_rec_mode(mode) && d->k_h == 3 && k_w == 3 && dil_w == 1 && dil_h == 1) {
        const int8_t *s3 = input + ((iy0 + ky_lo) * in_w + ix0 + kx_lo) * ch;
        if (mode == TINYAOT_RQ_FLOAT_SAT
                ? dw3x3_border_fsat(s3, wbase, nq, in_w * ch, off, rq->rq, rq->zp, out, ky_lo,
                                    ky_hi, kx_lo, kx_hi)
                : dw3x3_border_sat(s3, wbase, nq, in_w * ch, off, rq->rq, rq->zp, out, ky_lo,
                                   ky_hi, kx_lo, kx_hi)) {
            return;
        }
    }
    const int8_t *s0 = input + ((iy0 + ky_lo * dil_h) * in_w + ix0 + kx_lo * dil_w) * ch;
    const uint32_t *w0 = wbase + (ky_lo * k_w + kx_lo) * 2;
    const int32_t *p = rq->rq;
    for (int32_t j = 0; j < nq; ++j) {
        uint32_t acc[4] = {0u, 0u, 0u, 0u};
        if (dw_rec_mode(mode)) { /* start at the biases */
            dw_bias4(p, acc, mode);
        }
        if (nkx > 0) {
            const int8_t *s = s0;
            const uint32_t *w = w0;
            for (int32_t ky = 0; ky < nky; ++ky) {
                dw_line(s, w, nkx, lstep, off, acc);
                s += rstep;
                w += wrstep;
            }
        }
        s0 += 4;
        w0 += wquad;
        if (dw_rec_mode(mode)) {
            dw_rq4(acc, p, rq->zp, out, mode);
            p += 4 * TINYAOT_RQ_WORDS(mode);
        } else {
            for (int32_t i = 0; i < 4; ++i) {
                out[i] = tinyaot_rqc_apply_m(rq, tinyaot_fp_s32(acc[i]), 4 * j + i, mode);
            }
        }
        out += 4;
    }
}

static inline __attribute__((always_inline)) void dw_run(const tinyaot_conv_dims_t *d,
                                                         const tinyaot_rqc_t *rq,
                                                         const int8_t *input,
                                                         const uint32_t *wbase, uint32_t off,
                                                         int8_t *output, int mode)
{
    const int32_t ch = d->in_c, nq = ch >> 2;
    const int32_t in_w = d->in_w, in_h = d->in_h, k_h = d->k_h;
    const int32_t dil_h = d->dil_h, sw = d->stride_w;
    /* 3x3 undilated: outputs whose window is inside the row are ox in [x_a, x_b) */
    const int32_t fast3 = d->k_h == 3 && d->k_w == 3 && d->dil_h == 1 && d->dil_w == 1;
    int32_t x_a = 0, x_b = 0;
    if (fast3 && in_w - 3 + d->pad_left >= 0) {
        x_a = (d->pad_left + sw - 1) / sw;
        x_b = (in_w - 3 + d->pad_left) / sw + 1;
        if (x_b > d->out_w) x_b = d->out_w;
        if (x_a > x_b) x_a = x_b;
    }
    int8_t *out = output;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        int32_t ky_lo = 0, ky_hi = k_h;
        while (ky_lo < ky_hi && iy0 + ky_lo * dil_h < 0) ++ky_lo;
        while (ky_hi > ky_lo && iy0 + (ky_hi - 1) * dil_h >= in_h) --ky_hi;
        int32_t ox = 0;
        if (fast3 && ky_lo == 0 && ky_hi == 3) {
            for (; ox < x_a; ++ox) {
                dw_pixel(d, rq, input, wbase, iy0, ox * sw - d->pad_left, 0, 3, off, out, mode);
                out += ch;
            }
            if (dw_rec_mode(mode) && ox < x_b) {
                const int8_t *s3 = input + (iy0 * in_w + ox * sw - d->pad_left) * ch;
                if (mode == TINYAOT_RQ_FLOAT_SAT) {
                    dw3x3_row_fsat(s3, wbase, nq, in_w * ch, off, rq->rq, rq->zp, out, x_b - ox,
                                   sw * ch);
                } else {
                    dw3x3_row_sat(s3, wbase, nq, in_w * ch, off, rq->rq, rq->zp, out, x_b - ox,
                                  sw * ch);
                }
                out += (x_b - ox) * ch;
                ox = x_b;
            }
        }
        for (; ox < d->out_w; ++ox) {
            dw_pixel(d, rq, input, wbase, iy0, ox * sw - d->pad_left, ky_lo, ky_hi, off, out, mode);
            out += ch;
        }
    }
}

/* onnxruntime layers with {bias, scale} records, apart from the other modes'
 * copies (their code and register allocation stay as they were). */
static __attribute__((noinline)) void dw_run_float_sat(const tinyaot_conv_dims_t *d,
                                                       const tinyaot_requant_t *q,
                                                       const int8_t *input, const uint32_t *wbase,
                                                       uint32_t off, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc_records(q);
    dw_run(d, &rq, input, wbase, off, output, TINYAOT_RQ_FLOAT_SAT);
}

/* The modes of tinyaot_rqc, one inlined copy of the loops each. */
static __attribute__((noinline)) int dw_fixed(const tinyaot_conv_dims_t *d,
                                               const tinyaot_requant_t *q, const int8_t *input,
                                               const uint32_t *wbase, uint32_t off, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    /* a mode not compiled (tinyaot_specialize.h): TINYAOT_ERR_NOT_BUILT */
#define DW_MODE_CASE(M)                                                                            \
    if (DW_HAS_MODE(M)) {                                                                          \
        dw_run(d, &rq, input, wbase, off, output, M);                                              \
        return TINYAOT_OK;                                                                         \
    }                                                                                              \
    break
    switch (rq.mode) {
    case TINYAOT_RQ_ORT: DW_MODE_CASE(TINYAOT_RQ_ORT);
    case TINYAOT_RQ_TFLITE: DW_MODE_CASE(TINYAOT_RQ_TFLITE);
    case TINYAOT_RQ_SMLAL: DW_MODE_CASE(TINYAOT_RQ_SMLAL);
    default: DW_MODE_CASE(TINYAOT_RQ_SMLAL_SAT);
    }
#undef DW_MODE_CASE
    return TINYAOT_ERR_NOT_BUILT;
}

int tinyaot_depthwise_conv_fast_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                   const int8_t *input, const int32_t *packed_weights,
                                   int8_t *output)
{
    const int32_t ch = d->in_c;
    if (d->out_c != ch || (ch & 3) != 0) {
        return TINYAOT_ERR_ARG;
    }
    const uint32_t off = tinyaot_pack16(-q->in_zp, -q->in_zp);
    const uint32_t *wbase = (const uint32_t *)(const void *)packed_weights;
    if (tinyaot_rqc_records(q).mode == TINYAOT_RQ_FLOAT_SAT) {
        if (!DW_HAS_MODE(TINYAOT_RQ_FLOAT_SAT)) {
            return TINYAOT_ERR_NOT_BUILT;
        }
        dw_run_float_sat(d, q, input, wbase, off, output);
        return TINYAOT_OK;
    }
    if ((TINYAOT_SPEC_DW_MODES & 0xfu) == 0u) {
        return TINYAOT_ERR_NOT_BUILT;
    }
    return dw_fixed(d, q, input, wbase, off, output);
}
