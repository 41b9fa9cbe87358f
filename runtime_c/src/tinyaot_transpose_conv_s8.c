/* int8 transposed convolution, NHWC, per-channel requantization: TFLite's
 * reference_integer_ops::TransposeConv (int32 sums of (x - zp) * w, + bias,
 * requantize, clamp), computed per output pixel. */
#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"
#include "tinyaot_transpose_conv_tap.h"

int tinyaot_transpose_conv_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                              const int8_t *input, const int8_t *filter, int8_t *output)
{
    const int32_t cin_g = d->in_c / d->groups;
    const int32_t cout_g = d->out_c / d->groups;
    const int32_t in_zp = q->in_zp;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            int8_t *out = output + (oy * d->out_w + ox) * d->out_c;
            for (int32_t oc = 0; oc < d->out_c; ++oc) {
                const int32_t g = oc / cout_g;
                int32_t acc = 0;
                for (int32_t ky = 0; ky < d->k_h; ++ky) {
                    const int32_t iy = tinyaot_transpose_conv_tap(oy, ky, d->pad_top, d->dil_h,
                                                                  d->stride_h, d->in_h);
                    if (iy < 0) {
                        continue;
                    }
                    for (int32_t kx = 0; kx < d->k_w; ++kx) {
                        const int32_t ix = tinyaot_transpose_conv_tap(ox, kx, d->pad_left, d->dil_w,
                                                                      d->stride_w, d->in_w);
                        if (ix < 0) {
                            continue;
                        }
                        const int8_t *in = input + (iy * d->in_w + ix) * d->in_c + g * cin_g;
                        /* filter [k_h][k_w][out_c][in_c/groups] */
                        const int8_t *f = filter + ((ky * d->k_w + kx) * d->out_c + oc) * cin_g;
                        for (int32_t ic = 0; ic < cin_g; ++ic) {
                            acc += ((int32_t)in[ic] - in_zp) * (int32_t)f[ic];
                        }
                    }
                }
                out[oc] = tinyaot_requant_channel(q, acc, oc);
            }
        }
    }
    return TINYAOT_OK;
}
