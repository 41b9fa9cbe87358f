/* The loops of the portable reference convolution (NHWC, grouped, any stride,
 * dilation and padding), for int8 weights (tinyaot_convolve_s8) and int16
 * weights (tinyaot_convolve_w16_s8: weights minus their zero point beyond
 * int8). `wide` is a constant at each call, so each kernel compiles one loop
 * on its own weight type: exact int32 sums, then the channel's requantization. */
#ifndef TINYAOT_CONV_REF_H
#define TINYAOT_CONV_REF_H

#include <stdint.h>

#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

static inline __attribute__((always_inline)) int32_t tinyaot_conv_ref_w(const void *filter,
                                                                        int32_t i, int wide)
{
    return wide ? (int32_t)((const int16_t *)filter)[i] : (int32_t)((const int8_t *)filter)[i];
}

static inline __attribute__((always_inline)) void tinyaot_conv_ref(const tinyaot_conv_dims_t *d,
                                                                   const tinyaot_requant_t *q,
                                                                   const int8_t *input,
                                                                   const void *filter, int wide,
                                                                   int8_t *output)
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
                /* weight element size 1 << wide bytes */
                const char *f = (const char *)filter + (((int32_t)oc * d->k_h * d->k_w * cin_g) << wide);
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
                        const void *fk = f + (((ky * d->k_w + kx) * cin_g) << wide);
                        for (int32_t ic = 0; ic < cin_g; ++ic) {
                            acc += ((int32_t)in[ic] - in_zp) * tinyaot_conv_ref_w(fk, ic, wide);
                        }
                    }
                }
                out[oc] = tinyaot_requant_channel(q, acc, oc);
            }
        }
    }
}

#endif
