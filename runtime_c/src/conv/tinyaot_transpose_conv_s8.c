/* int8 transposed convolution, NHWC, per-channel requantization: TFLite's
 * reference_integer_ops::TransposeConv (int32 sums of (x - zp) * w, + bias,
 * requantize, clamp). TFLite scatters into an int32 buffer of the whole
 * output; this gathers one output pixel at a time into `scratch` (out_c int32
 * accumulators, planned in the arena): the same integer sums, a buffer of one
 * pixel instead of the whole output, and each tap's geometry worked out once
 * per pixel instead of once per output channel. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"
#include "../internal/tinyaot_transpose_conv_tap.h"

int32_t tinyaot_transpose_conv_s8_get_buffer_size(const tinyaot_conv_dims_t *d)
{
    return d->out_c * (int32_t)sizeof(int32_t);
}

int tinyaot_transpose_conv_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                              const int8_t *input, const int8_t *filter, int32_t *scratch,
                              int8_t *output)
{
    const int32_t cin_g = d->in_c / d->groups;
    const int32_t cout_g = d->out_c / d->groups;
    const int32_t in_zp = q->in_zp;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            for (int32_t oc = 0; oc < d->out_c; ++oc) {
                scratch[oc] = 0;
            }
            int32_t tap = -1;
            int32_t pix;
            while (tinyaot_transpose_conv_next_tap(d, oy, ox, &tap, &pix)) {
                const int8_t *pixel = input + pix * d->in_c;
                /* filter [k_h][k_w][out_c][in_c/groups] */
                const int8_t *f = filter + tap * d->out_c * cin_g;
                for (int32_t oc = 0; oc < d->out_c; ++oc, f += cin_g) {
                    const int8_t *in = pixel + (oc / cout_g) * cin_g;
                    int32_t acc = 0;
                    for (int32_t ic = 0; ic < cin_g; ++ic) {
                        acc += ((int32_t)in[ic] - in_zp) * (int32_t)f[ic];
                    }
                    scratch[oc] += acc;
                }
            }
            int8_t *out = output + (oy * d->out_w + ox) * d->out_c;
            for (int32_t oc = 0; oc < d->out_c; ++oc) {
                out[oc] = tinyaot_requant_channel(q, scratch[oc], oc);
            }
        }
    }
    return TINYAOT_OK;
}
