/* Elementwise clamp (fused Relu/Clip on its own) or change of quantization. */
#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

int tinyaot_requantize_s8(int32_t n, const tinyaot_requantize_params_t *p,
                          const int8_t *input, int8_t *output)
{
    for (int32_t i = 0; i < n; ++i) {
        const int32_t v = input[i];
        if (p->mode == 0) {
            output[i] = (int8_t)(v < p->act_min ? p->act_min : (v > p->act_max ? p->act_max : v));
        } else if (p->mode == 1) {
            const float f = (float)(v - p->in_zp) * p->in_scale;
            output[i] = tinyaot_quantize_f32(f, p->out_scale, p->out_zp, p->act_min, p->act_max);
        } else {
            output[i] = tinyaot_requant_tflite(v - p->in_zp, p->mult, p->shift, p->out_zp,
                                               p->act_min, p->act_max);
        }
    }
    return TINYAOT_OK;
}
