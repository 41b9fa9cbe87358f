/* int8 average pooling, NHWC. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

/* onnxruntime's float window sum of one channel, in window order (rows ya..yb,
 * columns xa..xb), each value dequantized by the table (or computed). */
static float window_sum_f32(const tinyaot_pool_params_t *p, const int8_t *src, int32_t rows,
                            int32_t cols)
{
    const int32_t c = p->c, row_step = p->in_w * c;
    float acc = 0.0f;
    if (p->dq_lut) {
        const float *lut = p->dq_lut + 128;
#if defined(__GNUC__)
        __asm__("" : "+r"(lut)); /* keeps lut[*s] one indexed load (GCC re-associates the +128) */
#endif
        for (int32_t y = 0; y < rows; ++y) {
            const int8_t *s = src, *end = src + cols * c;
            while (s != end) {
                acc = acc + lut[*s];
                s += c;
            }
            src += row_step;
        }
        return acc;
    }
    for (int32_t y = 0; y < rows; ++y) {
        for (int32_t x = 0; x < cols; ++x) {
            acc = acc + (float)(src[x * c] - p->in_zp) * p->in_scale;
        }
        src += row_step;
    }
    return acc;
}

int tinyaot_avgpool_s8(const tinyaot_pool_params_t *p, const int8_t *input, int8_t *output)
{
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
        const int32_t y0 = oy * p->stride_h - p->pad_top;
        const int32_t ya = y0 < 0 ? 0 : y0;
        const int32_t yb = (y0 + p->k_h) > p->in_h ? p->in_h : (y0 + p->k_h);
        for (int32_t ox = 0; ox < p->out_w; ++ox) {
            const int32_t x0 = ox * p->stride_w - p->pad_left;
            const int32_t xa = x0 < 0 ? 0 : x0;
            const int32_t xb = (x0 + p->k_w) > p->in_w ? p->in_w : (x0 + p->k_w);
            const int32_t count = p->count_include_pad ? p->k_h * p->k_w : (yb - ya) * (xb - xa);
            int8_t *out = output + (oy * p->out_w + ox) * p->c;
            for (int32_t c = 0; c < p->c; ++c) {
                const int8_t *win = input + (ya * p->in_w + xa) * p->c + c;
                if (p->use_float == 3) {
                    /* onnxruntime QLinearAveragePool: nearbyintf(mean / s + zp); mean_bias
                     * is the zero point shift of a uint8 model (passes/uint8.py). */
                    const float acc = window_sum_f32(p, win, yb - ya, xb - xa);
                    float t = acc / (float)count / p->out_scale + (float)(p->out_zp + p->mean_bias);
                    if (t < -4194304.0f) t = -4194304.0f; /* saturates below; keeps the */
                    if (t > 4194304.0f) t = 4194304.0f;   /* round-to-even trick exact */
                    int32_t r = tinyaot_round_even_f32(t) - p->mean_bias;
                    if (r < p->act_min) r = p->act_min;
                    if (r > p->act_max) r = p->act_max;
                    out[c] = (int8_t)r;
                } else if (p->use_float == 1) {
                    /* onnxruntime: sum of dequantized values in window order, / count. */
                    const float acc = window_sum_f32(p, win, yb - ya, xb - xa);
                    out[c] = tinyaot_quantize_f32(acc / (float)count, p->out_scale, p->out_zp,
                                                  p->act_min, p->act_max);
                } else {
                    /* TFLite: integer sum, rounded division (ties away from zero). */
                    int32_t acc = 0;
                    for (int32_t y = ya; y < yb; ++y) {
                        for (int32_t x = xa; x < xb; ++x) {
                            acc += input[(y * p->in_w + x) * p->c + c];
                        }
                    }
                    if (p->use_float == 2) {
                        /* TFLM MEAN (reference_ops::QuantizedMeanOrSum): the sum less
                         * the input zero points, rescaled with 1 / count folded in. */
                        acc = tinyaot_mbqm(acc - p->in_zp * count, p->mean_mult, p->mean_shift) +
                              p->mean_bias;
                    } else {
                        acc = tinyaot_avgpool_round_tflite(acc, count);
                    }
                    out[c] = (int8_t)tinyaot_fp_clamp(acc, p->act_min, p->act_max);
                }
            }
        }
    }
    return TINYAOT_OK;
}
