/* Elementwise clamp (fused Relu/Clip on its own) or change of quantization. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

int tinyaot_requantize_s8(int32_t n, const tinyaot_requantize_params_t *p,
                          const int8_t *input, int8_t *output)
{
    /* Parameters in locals and one loop per mode: int8 stores through output
     * could alias *p and would otherwise force reloads on every element. */
    const int32_t lo = p->act_min, hi = p->act_max, in_zp = p->in_zp, out_zp = p->out_zp;
    if (p->mode == 0) {
        for (int32_t i = 0; i < n; ++i) {
            output[i] = (int8_t)tinyaot_fp_clamp(input[i], lo, hi); /* branch-free */
        }
    } else if (p->mode == 1) {
        const float in_scale = p->in_scale, out_scale = p->out_scale;
        for (int32_t i = 0; i < n; ++i) {
            const float f = (float)(input[i] - in_zp) * in_scale;
            output[i] = tinyaot_quantize_f32(f, out_scale, out_zp, lo, hi);
        }
    } else {
        const int32_t mult = p->mult, shift = p->shift;
        for (int32_t i = 0; i < n; ++i) {
            output[i] = tinyaot_requant_tflite(input[i] - in_zp, mult, shift, out_zp, lo, hi);
        }
    }
    return TINYAOT_OK;
}
