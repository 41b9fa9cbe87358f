/* Elementwise int8 PRelu, the slope per channel, both numerics (codegen/ops/prelu.py). */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_fixedpoint.h"
#include "../internal/tinyaot_requant.h"

/* TFLite Micro's reference_ops::BroadcastPrelu4DSlow for one element, v = x - in_zp and
 * a = alpha - alpha_zp: out_zp + (v >= 0 ? MBQM(v, M1) : MBQM(v * a, M2)), clamped. Both
 * products are computed and one is selected, so the time does not depend on the sign of
 * x. |v|, |a| <= 255: the product fits. TFLite clamps to int8; the fused Relu / Clip
 * bounds lie inside that range, so one clamp to them is the same. */
static inline int8_t prelu_tflite(const tinyaot_prelu_params_t *p, int32_t x, int32_t a)
{
    const int32_t v = x - p->in_zp;
    const int32_t pos = tinyaot_mbqm(v, p->pos_mult, p->pos_shift);
    const int32_t neg = tinyaot_mbqm(v * a, p->neg_mult, p->neg_shift);
    const int32_t r = tinyaot_fp_select(tinyaot_fp_mask(v >= 0), pos, neg);
    return (int8_t)tinyaot_fp_clamp(tinyaot_fp_wrap_add(r, p->out_zp), p->act_min, p->act_max);
}

/* onnxruntime: DequantizeLinear, its float PRelu (input > 0 ? input : input * slope,
 * float32), QuantizeLinear. */
static inline int8_t prelu_ort(const tinyaot_prelu_params_t *p, int32_t x, float slope)
{
    const float xf = (float)(x - p->in_zp) * p->in_scale;
    const float neg = xf * slope;
    const float y = xf > 0.0f ? xf : neg;
    return tinyaot_quantize_f32(y, p->out_scale, p->out_zp, p->act_min, p->act_max);
}

int tinyaot_prelu_s8(int32_t outer, int32_t channels, int32_t inner,
                     const tinyaot_prelu_params_t *p, const int8_t *alpha, const float *slope,
                     const int8_t *input, int8_t *output)
{
    int32_t i = 0;
    for (int32_t o = 0; o < outer; ++o) {
        for (int32_t c = 0; c < channels; ++c) {
            if (p->mode == 0) {
                const int32_t a = (int32_t)alpha[c] - p->alpha_zp;
                for (int32_t k = 0; k < inner; ++k, ++i) {
                    output[i] = prelu_tflite(p, input[i], a);
                }
            } else {
                const float s = slope[c];
                for (int32_t k = 0; k < inner; ++k, ++i) {
                    output[i] = prelu_ort(p, input[i], s);
                }
            }
        }
    }
    return TINYAOT_OK;
}
