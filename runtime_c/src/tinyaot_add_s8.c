/* Elementwise int8 Add of two tensors with their own quantization. */
#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

int tinyaot_add_s8(int32_t n, const tinyaot_add_params_t *p, const int8_t *a,
                   const int8_t *b, int32_t b_stride, int8_t *output)
{
    for (int32_t i = 0; i < n; ++i) {
        const int32_t av = a[i];
        const int32_t bv = b[i * b_stride];
        if (p->use_float) {
            /* onnxruntime: DequantizeLinear both, float add, QuantizeLinear. */
            const float fa = (float)(av - p->a_zp) * p->a_scale;
            const float fb = (float)(bv - p->b_zp) * p->b_scale;
            output[i] = tinyaot_quantize_f32(fa + fb, p->out_scale, p->out_zp, p->act_min, p->act_max);
        } else {
            output[i] = tinyaot_add_tflite_s8(av, bv, p->a_zp, p->b_zp, p->out_zp, p->left_shift,
                                              p->a_mult, p->a_shift, p->b_mult, p->b_shift,
                                              p->out_mult, p->out_shift, p->act_min, p->act_max);
        }
    }
    return TINYAOT_OK;
}
