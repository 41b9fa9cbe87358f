/* int8 average pooling, NHWC. */
#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

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
                if (p->use_float == 3) {
                    /* onnxruntime QLinearAveragePool: nearbyintf(mean / s + zp); mean_bias
                     * is the zero point shift of a uint8 model (passes/uint8.py). */
                    float acc = 0.0f;
                    for (int32_t y = ya; y < yb; ++y) {
                        for (int32_t x = xa; x < xb; ++x) {
                            const int32_t v = input[(y * p->in_w + x) * p->c + c];
                            acc = acc + (float)(v - p->in_zp) * p->in_scale;
                        }
                    }
                    float t = acc / (float)count / p->out_scale + (float)(p->out_zp + p->mean_bias);
                    if (t < -4194304.0f) t = -4194304.0f; /* saturates below; keeps the */
                    if (t > 4194304.0f) t = 4194304.0f;   /* round-to-even trick exact */
                    int32_t r = tinyaot_round_even_f32(t) - p->mean_bias;
                    if (r < p->act_min) r = p->act_min;
                    if (r > p->act_max) r = p->act_max;
                    out[c] = (int8_t)r;
                } else if (p->use_float == 1) {
                    /* onnxruntime: sum of dequantized values in window order, / count. */
                    float acc = 0.0f;
                    for (int32_t y = ya; y < yb; ++y) {
                        for (int32_t x = xa; x < xb; ++x) {
                            const int32_t v = input[(y * p->in_w + x) * p->c + c];
                            acc = acc + (float)(v - p->in_zp) * p->in_scale;
                        }
                    }
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
                        acc = tinyaot_mbqm(acc, p->mean_mult, p->mean_shift) + p->mean_bias;
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
