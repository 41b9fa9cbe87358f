/* Fast int8 2-D convolution (groups == 1): partial im2col of two output
 * pixels into int16 columns, then a 2x2-blocked __SMLAD GEMM against
 * compile-time packed int16 weights (tinyaot_fast_kernels.h). */
#include "tinyaot_fast_kernels.h"
#include "tinyaot_gemm_q15.h"

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

static void im2col_pixel(const tinyaot_conv_dims_t *d, const int8_t *input, int32_t p,
                         tinyaot_colw_t *c)
{
    const int32_t oy = p / d->out_w;
    const int32_t ox = p - oy * d->out_w;
    const int32_t iy0 = oy * d->stride_h - d->pad_top;
    const int32_t ix0 = ox * d->stride_w - d->pad_left;
    const int32_t cin = d->in_c;
    int32_t kx_lo = 0, kx_hi = d->k_w;
    if (d->dil_w == 1) {
        if (ix0 < 0) {
            kx_lo = -ix0 < d->k_w ? -ix0 : d->k_w;
        }
        if (ix0 + d->k_w > d->in_w) {
            kx_hi = d->in_w - ix0 > kx_lo ? d->in_w - ix0 : kx_lo;
        }
    }
    for (int32_t ky = 0; ky < d->k_h; ++ky) {
        const int32_t iy = iy0 + ky * d->dil_h;
        if (iy < 0 || iy >= d->in_h) {
            tinyaot_colw_zeros(c, padded_row(d));
            continue;
        }
        const int8_t *row = input + (int32_t)iy * d->in_w * cin;
        if (d->dil_w == 1 && kx_lo == 0 && kx_hi == d->k_w && (c->k & 3) == 0 &&
            d->k_w * cin >= 4) {
            tinyaot_colw_bytes_pad4(c, row + ix0 * cin, d->k_w * cin);
        } else if (d->dil_w == 1) {
            tinyaot_colw_zeros(c, kx_lo * cin);
            tinyaot_colw_bytes(c, row + (ix0 + kx_lo) * cin, (kx_hi - kx_lo) * cin);
            tinyaot_colw_zeros(c, (d->k_w - kx_hi) * cin);
        } else {
            for (int32_t kx = 0; kx < d->k_w; ++kx) {
                const int32_t ix = ix0 + kx * d->dil_w;
                if (ix < 0 || ix >= d->in_w) {
                    tinyaot_colw_zeros(c, cin);
                } else {
                    tinyaot_colw_bytes(c, row + ix * cin, cin);
                }
            }
        }
        tinyaot_colw_pad4(c);
    }
    tinyaot_colw_finish(c);
}

int tinyaot_convolve_fast_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                             const int8_t *input, const int32_t *packed_weights,
                             uint32_t *scratch, int8_t *output)
{
    if (d->groups != 1) {
        return TINYAOT_ERR_ARG;
    }
    const int32_t nquads = d->k_h * padded_row(d) / 4;
    const int32_t npix = d->out_h * d->out_w;
    const int32_t out_c = d->out_c;
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    tinyaot_colw_t c;
    int32_t p = 0;
    for (; p + 1 < npix; p += 2) {
        tinyaot_colw_init(&c, scratch, 4, q->in_zp);
        im2col_pixel(d, input, p, &c);
        tinyaot_colw_init(&c, scratch + 2, 4, q->in_zp);
        im2col_pixel(d, input, p + 1, &c);
        tinyaot_gemm_2col(scratch, nquads, packed_weights, out_c, &rq, output + p * out_c,
                          output + (p + 1) * out_c);
    }
    if (p < npix) {
        tinyaot_colw_init(&c, scratch, 2, q->in_zp);
        im2col_pixel(d, input, p, &c);
        tinyaot_gemm_1col(scratch, nquads, packed_weights, out_c, &rq, output + p * out_c);
    }
    return TINYAOT_OK;
}
