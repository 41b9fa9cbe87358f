/* int8 2-D convolution (groups 1) for --optimize size: int8 weights read in
 * place ([out_c][k_h][k_w][in_c], the layout of tinyaot_convolve_s8), one
 * im2col column of the output pixel as int16 (input - zero point, 0 for
 * padding) in the scratch, then per output channel one exact int32 sum
 * (tinyaot_dot_w8) and tinyaot_rqc_apply (tinyaot_requant_channel's results,
 * branch-free, tinyaot_requant_fast.h): the same integers as
 * tinyaot_convolve_s8 and the fast kernels, with no packed weight copy and
 * one small loop. */
#include "tinyaot_dot_w8.h"
#include "tinyaot_kernels.h"
#include "tinyaot_requant_fast.h"

int32_t tinyaot_convolve_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d)
{
    return d->k_h * d->k_w * d->in_c * (int32_t)sizeof(int16_t);
}

/* scratch: *_get_buffer_size bytes, 4-byte aligned (planned in the arena). */
int tinyaot_convolve_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                           const int8_t *input, const int8_t *filter, int16_t *scratch,
                           int8_t *output)
{
    if (d->groups != 1) {
        return TINYAOT_ERR_ARG;
    }
    const int32_t cin = d->in_c, k = d->k_h * d->k_w * cin;
    const tinyaot_rqc_t r = tinyaot_rqc(q);
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            int32_t i = 0;
            for (int32_t ky = 0; ky < d->k_h; ++ky) {
                const int32_t iy = oy * d->stride_h - d->pad_top + ky * d->dil_h;
                for (int32_t kx = 0; kx < d->k_w; ++kx) {
                    const int32_t ix = ox * d->stride_w - d->pad_left + kx * d->dil_w;
                    const int inside = iy >= 0 && iy < d->in_h && ix >= 0 && ix < d->in_w;
                    const int8_t *x = input + (inside ? (iy * d->in_w + ix) * cin : 0);
                    for (int32_t c = 0; c < cin; ++c, ++i) {
                        scratch[tinyaot_w8_slot(i, k)] =
                            (int16_t)(inside ? (int32_t)x[c] - q->in_zp : 0);
                    }
                }
            }
            int8_t *out = output + (oy * d->out_w + ox) * d->out_c;
            for (int32_t oc = 0; oc < d->out_c; ++oc) {
                out[oc] = tinyaot_rqc_apply(&r, tinyaot_dot_w8(scratch, filter + oc * k, k, 0), oc);
            }
        }
    }
    return TINYAOT_OK;
}
