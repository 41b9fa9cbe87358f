/* int8 max pooling, NHWC; padding never wins. */
#include "../internal/tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

int tinyaot_maxpool_s8(const tinyaot_pool_params_t *p, const int8_t *input, int8_t *output)
{
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
        const int32_t y0 = oy * p->stride_h - p->pad_top;
        const int32_t ya = y0 < 0 ? 0 : y0;
        const int32_t yb = (y0 + p->k_h) > p->in_h ? p->in_h : (y0 + p->k_h);
        for (int32_t ox = 0; ox < p->out_w; ++ox) {
            const int32_t x0 = ox * p->stride_w - p->pad_left;
            const int32_t xa = x0 < 0 ? 0 : x0;
            const int32_t xb = (x0 + p->k_w) > p->in_w ? p->in_w : (x0 + p->k_w);
            int8_t *out = output + (oy * p->out_w + ox) * p->c;
            for (int32_t c = 0; c < p->c; ++c) {
                int32_t m = -128;
                for (int32_t y = ya; y < yb; ++y) {
                    for (int32_t x = xa; x < xb; ++x) {
                        const int32_t v = input[(y * p->in_w + x) * p->c + c];
                        m = tinyaot_fp_max(m, v); /* no branch on the data */
                    }
                }
                out[c] = (int8_t)tinyaot_fp_clamp(m, p->act_min, p->act_max);
            }
        }
    }
    return TINYAOT_OK;
}
