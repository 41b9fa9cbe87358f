/* onnxruntime's float Conv on dequantized int8, bit for bit.
 *
 * MLAS runs such a Conv as im2col + SGEMM with fused multiply-adds, one
 * accumulator per output, K in (channel, ky, kx) order; the bias is added
 * after. fmaf() and this loop order reproduce those roundings exactly.
 * Padding contributes fma(0, w, acc) == acc, so it is skipped. */
#include <math.h>

#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

int tinyaot_convolve_f32_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                            const int8_t *input, int8_t *output)
{
    const int32_t cin_g = d->in_c / d->groups;
    const int32_t cout_g = d->out_c / d->groups;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            const int32_t ix0 = ox * d->stride_w - d->pad_left;
            int8_t *out = output + (oy * d->out_w + ox) * d->out_c;
            for (int32_t oc = 0; oc < d->out_c; ++oc) {
                const int32_t g = oc / cout_g;
                const int8_t *f = p->filter + oc * d->k_h * d->k_w * cin_g;
                const float ws = p->filter_scale[oc];
                float acc = 0.0f;
                for (int32_t ic = 0; ic < cin_g; ++ic) {
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
                            const int32_t xq = input[(iy * d->in_w + ix) * d->in_c + g * cin_g + ic];
                            const float x = (float)(xq - p->in_zp) * p->in_scale;
                            acc = fmaf(x, (float)f[(ky * d->k_w + kx) * cin_g + ic] * ws, acc);
                        }
                    }
                }
                acc = acc + p->bias_f[oc];
                out[oc] = tinyaot_quantize_f32(acc, p->out_scale, p->out_zp, p->act_min, p->act_max);
            }
        }
    }
    return TINYAOT_OK;
}
