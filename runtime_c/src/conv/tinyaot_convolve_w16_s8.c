/* General 2-D convolution, NHWC, grouped (depthwise too), int16 weights:
 * the layers whose weights minus their zero point leave int8 (uint8 weights,
 * asymmetric int8 weights: values in [-255, 255]) and that have no fast
 * kernel. The same sums as tinyaot_convolve_s8, exact in int32. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

int tinyaot_convolve_w16_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                            const int8_t *input, const int16_t *filter, int8_t *output)
{
    const int32_t cin_g = d->in_c / d->groups;
    const int32_t cout_g = d->out_c / d->groups;
    const int32_t in_zp = q->in_zp;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            const int32_t ix0 = ox * d->stride_w - d->pad_left;
            int8_t *out = output + ((int32_t)oy * d->out_w + ox) * d->out_c;
            for (int32_t oc = 0; oc < d->out_c; ++oc) {
                const int32_t g = oc / cout_g;
                const int16_t *f = filter + (int32_t)oc * d->k_h * d->k_w * cin_g;
                int32_t acc = 0;
                for (int32_t ky = 0; ky < d->k_h; ++ky) {
                    const int32_t iy = iy0 + ky * d->dil_h;
                    if (iy < 0 || iy >= d->in_h) {
                        continue; /* padding holds the zero point: contributes 0 */
                    }
                    for (int32_t kx = 0; kx < d->k_w; ++kx) {
                        const int32_t ix = ix0 + kx * d->dil_w;
                        if (ix < 0 || ix >= d->in_w) {
                            continue;
                        }
                        const int8_t *in = input + ((int32_t)iy * d->in_w + ix) * d->in_c + g * cin_g;
                        const int16_t *fk = f + (ky * d->k_w + kx) * cin_g;
                        for (int32_t ic = 0; ic < cin_g; ++ic) {
                            acc += ((int32_t)in[ic] - in_zp) * (int32_t)fk[ic];
                        }
                    }
                }
                out[oc] = tinyaot_requant_channel(q, acc, oc);
            }
        }
    }
    return TINYAOT_OK;
}
