/* onnxruntime's float ReduceMean over H, W, in Eigen's summation order. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

int tinyaot_reduce_mean_hw_f32_s8(int32_t batches, int32_t hw, int32_t c,
                                  const tinyaot_requantize_params_t *p, const int8_t *input,
                                  int8_t *output)
{
    if (hw <= 0) return TINYAOT_ERR_ARG;
    for (int32_t b = 0; b < batches; ++b) {
        const int8_t *x = input + (int32_t)(b * hw * c);
        for (int32_t ch = 0; ch < c; ++ch) {
#define TINYAOT_V(i) ((float)((int32_t)x[(i) * c + ch] - p->in_zp) * p->in_scale)
            float s;
            if (hw < 4) {
                s = TINYAOT_V(0);
                for (int32_t i = 1; i < hw; ++i) s = s + TINYAOT_V(i);
            } else {
                const int32_t a1 = hw / 4 * 4;
                const int32_t a2 = hw / 8 * 8;
                float p0[4], p1[4];
                for (int32_t k = 0; k < 4; ++k) p0[k] = TINYAOT_V(k);
                if (a1 > 4) {
                    for (int32_t k = 0; k < 4; ++k) p1[k] = TINYAOT_V(4 + k);
                    for (int32_t i = 8; i < a2; i += 8) {
                        for (int32_t k = 0; k < 4; ++k) {
                            p0[k] = p0[k] + TINYAOT_V(i + k);
                            p1[k] = p1[k] + TINYAOT_V(i + 4 + k);
                        }
                    }
                    for (int32_t k = 0; k < 4; ++k) p0[k] = p0[k] + p1[k];
                    if (a1 > a2) {
                        for (int32_t k = 0; k < 4; ++k) p0[k] = p0[k] + TINYAOT_V(a2 + k);
                    }
                }
                s = (p0[0] + p0[2]) + (p0[1] + p0[3]);
                for (int32_t i = a1; i < hw; ++i) s = s + TINYAOT_V(i);
            }
#undef TINYAOT_V
            const float mean = s / (float)hw;
            output[b * c + ch] = tinyaot_quantize_f32(mean, p->out_scale, p->out_zp, p->act_min,
                                                      p->act_max);
        }
    }
    return TINYAOT_OK;
}
