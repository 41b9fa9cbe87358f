/* Depthwise int8 convolution, NHWC, channel multiplier out_c / in_c. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

int tinyaot_depthwise_conv_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                              const int8_t *input, const int8_t *filter, int8_t *output)
{
    const int32_t mult = d->out_c / d->in_c;
    const int32_t in_zp = q->in_zp;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            const int32_t ix0 = ox * d->stride_w - d->pad_left;
            int8_t *out = output + (oy * d->out_w + ox) * d->out_c;
            for (int32_t oc = 0; oc < d->out_c; ++oc) {
                const int32_t ic = oc / mult;
                int32_t acc = 0;
                for (int32_t ky = 0; ky < d->k_h; ++ky) {
                    const int32_t iy = iy0 + ky * d->dil_h;
                    if (iy < 0 || iy >= d->in_h) {
                        continue;
                    }
                    for (int32_t kx = 0; kx < d->k_w; ++kx) {
                        const int32_t ix = ix0 + kx * d->dil_w;
                        if (ix < 0 || ix >= d->in_w) {
                            continue;
                        }
                        acc += ((int32_t)input[(iy * d->in_w + ix) * d->in_c + ic] - in_zp) *
                               (int32_t)filter[(ky * d->k_w + kx) * d->out_c + oc];
                    }
                }
                out[oc] = tinyaot_requant_channel(q, acc, oc);
            }
        }
    }
    return TINYAOT_OK;
}
