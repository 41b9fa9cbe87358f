/* Depthwise int8 convolution in place, NHWC, channel multiplier 1: the output
 * overwrites the input (MCUNet / TinyEngine style). Channel by channel: copy
 * input channel c (in_h * in_w bytes) to `plane`, then write output channel c.
 * Output element (p, c) is byte p * C + c with p < out_h * out_w <= in_h * in_w,
 * a byte of input channel c, which is already in `plane`; other channels' bytes
 * are not touched. Same arithmetic and requantization as
 * tinyaot_depthwise_conv_s8, so the results are bit-identical. The planner
 * (codegen/planner/depthwise_inplace.py) only uses it when out_c == in_c and
 * the output is no larger than the input. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

int tinyaot_depthwise_conv_inplace_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                      int8_t *data, const int8_t *filter, int8_t *plane)
{
    const int32_t c_n = d->in_c;
    const int32_t in_zp = q->in_zp;
    if (d->out_c != c_n || d->out_h * d->out_w > d->in_h * d->in_w) {
        return TINYAOT_ERR_ARG;
    }
    for (int32_t c = 0; c < c_n; ++c) {
        for (int32_t p = 0; p < d->in_h * d->in_w; ++p) {
            plane[p] = data[p * c_n + c];
        }
        for (int32_t oy = 0; oy < d->out_h; ++oy) {
            const int32_t iy0 = oy * d->stride_h - d->pad_top;
            for (int32_t ox = 0; ox < d->out_w; ++ox) {
                const int32_t ix0 = ox * d->stride_w - d->pad_left;
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
                        acc += ((int32_t)plane[iy * d->in_w + ix] - in_zp) *
                               (int32_t)filter[(ky * d->k_w + kx) * c_n + c];
                    }
                }
                data[(oy * d->out_w + ox) * c_n + c] = tinyaot_requant_channel(q, acc, c);
            }
        }
    }
    return TINYAOT_OK;
}
