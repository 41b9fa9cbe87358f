/* int8 2-D convolution (groups 1) for --optimize size: int8 weights read in
 * place ([out_c][k_h][k_w][in_c], each row's groups of 4 reordered at compile
 * time for __SXTB16, tinyaot_dot_w8.h), two im2col columns (two output
 * pixels) of int16 (input - zero point, 0 for padding) in the scratch, then
 * 2 channels x 2 pixels per block of exact int32 sums (CMSIS-NN's 2x2 GEMM
 * block) and the fast kernels' requantization (tinyaot_requant_fast.h,
 * one-SMLAL or {bias, scale} records when the layer has them): the same
 * integers as tinyaot_convolve_s8, with no packed weight copy. */
#include "tinyaot_dot_w8.h"
#include "tinyaot_kernels.h"
#include "tinyaot_requant_fast.h"

/* The column stride: k rounded up to even, so the second column is word aligned. */
static int32_t col_stride(const tinyaot_conv_dims_t *d)
{
    return (d->k_h * d->k_w * d->in_c + 1) & ~1;
}

int32_t tinyaot_convolve_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d)
{
    return 2 * col_stride(d) * (int32_t)sizeof(int16_t);
}

/* The im2col column of output pixel pix. */
static void im2col(const tinyaot_conv_dims_t *d, const int8_t *input, int32_t zp, int32_t pix,
                   int16_t *col)
{
    const int32_t cin = d->in_c, oy = pix / d->out_w, ox = pix % d->out_w;
    for (int32_t ky = 0; ky < d->k_h; ++ky) {
        const int32_t iy = oy * d->stride_h - d->pad_top + ky * d->dil_h;
        for (int32_t kx = 0; kx < d->k_w; ++kx, col += cin) {
            const int32_t ix = ox * d->stride_w - d->pad_left + kx * d->dil_w;
            if (iy >= 0 && iy < d->in_h && ix >= 0 && ix < d->in_w) {
                tinyaot_w8_widen(col, input + (iy * d->in_w + ix) * cin, cin, zp);
            } else {
                memset(col, 0, (size_t)cin * sizeof *col);
            }
        }
    }
}

static inline __attribute__((always_inline)) void conv_m(const tinyaot_conv_dims_t *d,
                                                         const tinyaot_rqc_t *r, int32_t zp,
                                                         const int8_t *input, const int8_t *filter,
                                                         int16_t *scratch, int8_t *output, int mode)
{
    const int32_t k = d->k_h * d->k_w * d->in_c, oc_n = d->out_c;
    const int32_t npix = d->out_h * d->out_w;
    int16_t *c0 = scratch, *c1 = scratch + col_stride(d);
    int32_t pix = 0;
    for (; pix + 2 <= npix; pix += 2) {
        im2col(d, input, zp, pix, c0);
        im2col(d, input, zp, pix + 1, c1);
        int8_t *o0 = output + pix * oc_n, *o1 = o0 + oc_n;
        int32_t oc = 0;
        for (; oc + 2 <= oc_n; oc += 2) {
            int32_t s[4];
            tinyaot_dot_w8_2x2(c0, c1, filter + oc * k, filter + (oc + 1) * k, k, s);
            tinyaot_rqc_apply2_m(r, s[0], s[1], oc, o0 + oc, o1 + oc, mode);
            tinyaot_rqc_apply2_m(r, s[2], s[3], oc + 1, o0 + oc + 1, o1 + oc + 1, mode);
        }
        if (oc < oc_n) { /* odd channel count: the last row against both columns */
            const int32_t s0 = tinyaot_dot_w8(c0, filter + oc * k, k, 0);
            const int32_t s1 = tinyaot_dot_w8(c1, filter + oc * k, k, 0);
            tinyaot_rqc_apply2_m(r, s0, s1, oc, o0 + oc, o1 + oc, mode);
        }
    }
    if (pix < npix) { /* odd pixel count: the last column, two rows at a time */
        im2col(d, input, zp, pix, c0);
        int8_t *o0 = output + pix * oc_n;
        int32_t oc = 0;
        for (; oc + 2 <= oc_n; oc += 2) {
            int32_t s[2];
            tinyaot_dot_w8_2x1(c0, filter + oc * k, filter + (oc + 1) * k, k, s);
            o0[oc] = tinyaot_rqc_apply_m(r, s[0], oc, mode);
            o0[oc + 1] = tinyaot_rqc_apply_m(r, s[1], oc + 1, mode);
        }
        if (oc < oc_n) {
            o0[oc] = tinyaot_rqc_apply_m(r, tinyaot_dot_w8(c0, filter + oc * k, k, 0), oc, mode);
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
    const int32_t zp = q->in_zp;
    switch (r.mode) {
    case TINYAOT_RQ_ORT: conv_m(d, &r, zp, input, filter, scratch, output, TINYAOT_RQ_ORT); break;
    case TINYAOT_RQ_TFLITE: conv_m(d, &r, zp, input, filter, scratch, output, TINYAOT_RQ_TFLITE); break;
    case TINYAOT_RQ_SMLAL: conv_m(d, &r, zp, input, filter, scratch, output, TINYAOT_RQ_SMLAL); break;
    case TINYAOT_RQ_SMLAL_SAT:
        conv_m(d, &r, zp, input, filter, scratch, output, TINYAOT_RQ_SMLAL_SAT);
        break;
    default: conv_m(d, &r, zp, input, filter, scratch, output, TINYAOT_RQ_FLOAT_SAT); break;
    }
    return TINYAOT_OK;
}
