/* Softmax / LogSoftmax of float32 over n elements at stride inner (the float fallback). */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_f32_math.h"

/* MlasReduceMaximumF32KernelAvx512F: from -FLT_MAX, four 8-lane maxima over blocks of 32,
 * combined, then 8 at a time, the lanes reduced, then the rest one by one; every step a
 * MAXPS (the second operand wins when either is NaN). */
static float mlas_row_max(const float *x, int32_t n, int32_t st)
{
    float acc = -3.402823466e+38f;
    int32_t k = 0;
    if (n >= 8) {
        float v[4][8];
        for (int32_t a = 0; a < 4; ++a) {
            for (int32_t l = 0; l < 8; ++l) {
                v[a][l] = acc;
            }
        }
        if (n >= 32) {
            for (; n - k >= 32; k += 32) {
                for (int32_t a = 0; a < 4; ++a) {
                    for (int32_t l = 0; l < 8; ++l) {
                        v[a][l] = tinyaot_x86_max(v[a][l], x[(k + 8 * a + l) * st]);
                    }
                }
            }
            for (int32_t l = 0; l < 8; ++l) {
                v[0][l] = tinyaot_x86_max(tinyaot_x86_max(v[0][l], v[1][l]),
                                          tinyaot_x86_max(v[2][l], v[3][l]));
            }
        }
        for (; n - k >= 8; k += 8) {
            for (int32_t l = 0; l < 8; ++l) {
                v[0][l] = tinyaot_x86_max(v[0][l], x[(k + l) * st]);
            }
        }
        float w[4];
        for (int32_t l = 0; l < 4; ++l) {
            w[l] = tinyaot_x86_max(v[0][l], v[0][l + 4]);
        }
        acc = tinyaot_x86_max(tinyaot_x86_max(w[0], w[2]), tinyaot_x86_max(w[1], w[3]));
    }
    for (; k < n; ++k) {
        acc = tinyaot_x86_max(acc, x[k * st]);
    }
    return acc;
}

/* onnxruntime: MlasComputeSoftmax, one row. The sum of exp runs in 16 lanes (element k in
 * lane k % 16, in order), reduced as MlasComputeSumExpF32KernelAvx512F does. */
static void mlas_softmax_row(const float *x, float *y, int32_t n, int32_t st, int32_t log)
{
    const float neg_max = -mlas_row_max(x, n, st);
    float lanes[16];
    for (int32_t l = 0; l < 16; ++l) {
        lanes[l] = 0.0f;
    }
    for (int32_t k = 0; k < n; ++k) {
        const float e = tinyaot_mlas_expsum(x[k * st], neg_max);
        if (!log) {
            y[k * st] = e;
        }
        lanes[k & 15] = lanes[k & 15] + e;
    }
    float b[8];
    for (int32_t l = 0; l < 8; ++l) {
        b[l] = lanes[l + 8] + lanes[l];
    }
    const float sum = ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));
    if (log) {
        const float lg = tinyaot_glibc_logf(sum);
        for (int32_t k = 0; k < n; ++k) {
            y[k * st] = (x[k * st] + neg_max) - lg;
        }
        return;
    }
    const float scale = 1.0f / sum;
    for (int32_t k = 0; k < n; ++k) {
        y[k * st] = scale * y[k * st];
    }
}

/* TFLite Micro: reference_ops::Softmax (beta 1) or LogSoftmax, one row: std::max from
 * FLT_LOWEST, exp(x - max) summed in order, then e / sum, or (x - max) - logf(sum). */
static void tflm_softmax_row(const float *x, float *y, int32_t n, int32_t st, int32_t log)
{
    float max = -3.402823466e+38f;
    for (int32_t k = 0; k < n; ++k) {
        max = (max < x[k * st]) ? x[k * st] : max;
    }
    float sum = 0.0f;
    for (int32_t k = 0; k < n; ++k) {
        const float e = tinyaot_glibc_expf(x[k * st] - max);
        if (!log) {
            y[k * st] = e;
        }
        sum += e;
    }
    if (log) {
        const float lg = tinyaot_glibc_logf(sum);
        for (int32_t k = 0; k < n; ++k) {
            y[k * st] = (x[k * st] - max) - lg;
        }
        return;
    }
    for (int32_t k = 0; k < n; ++k) {
        y[k * st] = y[k * st] / sum;
    }
}

int tinyaot_softmax_f32(const tinyaot_softmax_f32_params_t *p, const float *input, float *output)
{
    if (p->mode != 0 && p->mode != 1) {
        return TINYAOT_ERR_ARG;
    }
    for (int32_t o = 0; o < p->outer; ++o) {
        for (int32_t i = 0; i < p->inner; ++i) {
            const int32_t base = o * p->n * p->inner + i;
            if (p->mode == 0) {
                mlas_softmax_row(input + base, output + base, p->n, p->inner, p->log);
            } else {
                tflm_softmax_row(input + base, output + base, p->n, p->inner, p->log);
            }
        }
    }
    return TINYAOT_OK;
}
