/* onnxruntime's float Gemm (MatMul + bias Add) on dequantized int8:
 * SGEMM with fused multiply-adds over k, then + bias, then QuantizeLinear. */
#include <math.h>

#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

int tinyaot_fully_connected_f32_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                   const tinyaot_float_conv_t *p, const int8_t *input,
                                   int8_t *output)
{
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *x = input + r * in_features;
        for (int32_t n = 0; n < out_features; ++n) {
            const int8_t *w = p->filter + n * in_features;
            const float ws = p->filter_scale[n];
            float acc = 0.0f;
            for (int32_t k = 0; k < in_features; ++k) {
                acc = fmaf((float)((int32_t)x[k] - p->in_zp) * p->in_scale, (float)w[k] * ws, acc);
            }
            acc = acc + p->bias_f[n];
            output[r * out_features + n] =
                tinyaot_quantize_f32(acc, p->out_scale, p->out_zp, p->act_min, p->act_max);
        }
    }
    return TINYAOT_OK;
}
