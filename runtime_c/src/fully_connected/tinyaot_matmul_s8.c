/* MatMul of two int8 activations (both zero points), both numerics. */
#include <math.h>

#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

int tinyaot_matmul_s8(int32_t batches, int32_t m, int32_t k, int32_t n,
                      const tinyaot_matmul_params_t *p, const int8_t *a, const int8_t *b,
                      int8_t *output)
{
    for (int32_t bt = 0; bt < batches; ++bt) {
        const int8_t *ab = a + bt * m * k;
        const int8_t *bb = b + bt * k * n;
        int8_t *ob = output + bt * m * n;
        for (int32_t i = 0; i < m; ++i) {
            for (int32_t j = 0; j < n; ++j) {
                int8_t r;
                if (p->mode == 2) {
                    /* onnxruntime float MatMul: MLAS SGEMM, one fma per k */
                    float acc = 0.0f;
                    for (int32_t t = 0; t < k; ++t) {
                        const float fa = (float)((int32_t)ab[i * k + t] - p->a_zp) * p->a_scale;
                        const float fb = (float)((int32_t)bb[t * n + j] - p->b_zp) * p->b_scale;
                        acc = fmaf(fa, fb, acc);
                    }
                    r = tinyaot_quantize_f32(acc, p->out_scale, p->out_zp, p->act_min, p->act_max);
                } else {
                    int32_t acc = 0;
                    for (int32_t t = 0; t < k; ++t) {
                        acc += ((int32_t)ab[i * k + t] - p->a_zp) * ((int32_t)bb[t * n + j] - p->b_zp);
                    }
                    r = p->mode == 1
                            ? tinyaot_requant_ort(acc, p->scale, p->out_zp, p->act_min, p->act_max)
                            : tinyaot_requant_tflite(acc, p->mult, p->shift, p->out_zp, p->act_min,
                                                     p->act_max);
                }
                ob[i * n + j] = r;
            }
        }
    }
    return TINYAOT_OK;
}
