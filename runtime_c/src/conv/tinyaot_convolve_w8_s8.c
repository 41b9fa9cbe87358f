/* int8 2-D convolution (groups 1) for --optimize size: int8 weights read in
 * place ([out_c][k_h][k_w][in_c] rows, padded to k4 and paired at compile time
 * for LDRD + __SXTB16, tinyaot_dot_w8.h), two output pixels' im2col columns
 * of int16 (input - zero point, 0 for padding) interleaved in the scratch,
 * then 2 channels x 2 pixels per block of exact int32 sums (CMSIS-NN's 2x2
 * GEMM block) and the fast kernels' requantization (tinyaot_requant_fast.h:
 * one-SMLAL or {bias, scale} records when the layer has them): the same
 * integers as tinyaot_convolve_s8, with no int16 weight copy. */
#include "../internal/tinyaot_dot_w8.h"
#include "../internal/tinyaot_gemm_q15.h"
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant_fast.h"

static int32_t k4_of(const tinyaot_conv_dims_t *d)
{
    return (d->k_h * d->k_w * d->in_c + 3) & ~3;
}

int32_t tinyaot_convolve_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d)
{
    return 2 * k4_of(d) * (int32_t)sizeof(int16_t);
}

/* The im2col column of output pixel pix, interleaved (starting at col). */
static void im2col(const tinyaot_conv_dims_t *d, const int8_t *input, int32_t zp, int32_t pix,
                   int16_t *col)
{
    const int32_t cin = d->in_c, oy = pix / d->out_w, ox = pix % d->out_w;
    int32_t i = 0;
    for (int32_t ky = 0; ky < d->k_h; ++ky) {
        const int32_t iy = oy * d->stride_h - d->pad_top + ky * d->dil_h;
        for (int32_t kx = 0; kx < d->k_w; ++kx, i += cin) {
            const int32_t ix = ox * d->stride_w - d->pad_left + kx * d->dil_w;
            if (iy >= 0 && iy < d->in_h && ix >= 0 && ix < d->in_w) {
                tinyaot_w8_widen(col, i, input + (iy * d->in_w + ix) * cin, cin, zp, 2);
            } else {
                tinyaot_w8_zero(col, i, cin, 2);
            }
        }
    }
    tinyaot_w8_zero(col, i, k4_of(d) - i, 2);
}

/* Channels oc, oc + 1 of the two pixels (s = {oc o0, oc o1, oc+1 o0, oc+1 o1}); the two
 * whole-int8-range record modes through the fast kernels' asm blocks. */
static inline __attribute__((always_inline)) void requant_22(const tinyaot_rqc_t *r, int32_t s[4],
                                                             int32_t oc, int8_t *o0, int8_t *o1,
                                                             int mode)
{
    const int32_t *p = r->rq;
    switch (mode) {
    case TINYAOT_RQ_SMLAL_SAT: { /* the fast kernels' asm block: records {.., bias} */
        p += 5 * oc;
        const uint32_t acc[4] = {(uint32_t)(s[0] + p[4]), (uint32_t)(s[1] + p[4]),
                                 (uint32_t)(s[2] + p[9]), (uint32_t)(s[3] + p[9])};
        tinyaot_rq_2x2_sat(acc, p, o0, o1);
        break;
    }
    case TINYAOT_RQ_FLOAT_SAT: { /* records {bias, scale} */
        p += 2 * oc;
        const uint32_t acc[4] = {(uint32_t)(s[0] + p[0]), (uint32_t)(s[1] + p[0]),
                                 (uint32_t)(s[2] + p[2]), (uint32_t)(s[3] + p[2])};
        tinyaot_rqf_2x2_sat(acc, p, r->zp, o0, o1);
        break;
    }
    default:
        tinyaot_w8_rq2(r, s[0], s[1], oc, o0, o1, TINYAOT_W8_RQ_ANY);
        tinyaot_w8_rq2(r, s[2], s[3], oc + 1, o0 + 1, o1 + 1, TINYAOT_W8_RQ_ANY);
        break;
    }
}

/* One copy of the loops, the record mode switched per block (a few instructions
 * against the block's 4 k multiplies; a copy per mode costs 1.8 KB of code for 4 %
 * fewer instructions), so the code stays small. */
static void conv(const tinyaot_conv_dims_t *d, const tinyaot_rqc_t *r, int32_t zp,
                 const int8_t *input, const int8_t *filter, int16_t *scratch, int8_t *output)
{
    const int mode = r->mode == TINYAOT_RQ_SMLAL_SAT || r->mode == TINYAOT_RQ_FLOAT_SAT
                         ? r->mode
                         : TINYAOT_W8_RQ_ANY;
    const int32_t k4 = k4_of(d), q4 = k4 / 4, oc_n = d->out_c;
    const int32_t npix = d->out_h * d->out_w;
    for (int32_t pix = 0; pix < npix; pix += 2) {
        /* an odd last pixel is computed twice (its column in both slots), stored once */
        const int32_t pix1 = pix + 1 < npix ? pix + 1 : pix;
        im2col(d, input, zp, pix, scratch);
        im2col(d, input, zp, pix1, scratch + 2);
        int8_t *o0 = output + pix * oc_n, *o1 = output + pix1 * oc_n;
        const int8_t *w = filter;
        int32_t oc = 0;
        for (; oc + 2 <= oc_n; oc += 2, w += 2 * k4) {
            int32_t s[4];
            tinyaot_dot_w8_22(scratch, w, q4, s);
            requant_22(r, s, oc, o0 + oc, o1 + oc, mode);
        }
        if (oc < oc_n) { /* odd channel count: the last row alone */
            int32_t s[2];
            tinyaot_dot_w8_12(scratch, w, q4, s);
            tinyaot_w8_rq2(r, s[0], s[1], oc, o0 + oc, o1 + oc, mode);
        }
    }
}

/* scratch: *_get_buffer_size bytes, 4-byte aligned (planned in the arena). */
int tinyaot_convolve_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                           const int8_t *input, const int8_t *filter, int16_t *scratch,
                           int8_t *output)
{
    if (d->groups != 1) {
        return TINYAOT_ERR_ARG;
    }
    const tinyaot_rqc_t r = tinyaot_rqc_records(q);
    conv(d, &r, q->in_zp, input, filter, scratch, output);
    return TINYAOT_OK;
}
