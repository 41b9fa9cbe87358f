/* Elementwise float32 functions (the float fallback): one read, then one write, per element. */
#include <math.h>

#include "tinyaot_kernels.h"
#include "../internal/tinyaot_f32_math.h"

static float unary(int32_t fn, float x)
{
    switch (fn) {
    case TINYAOT_F32_EXP:
        return tinyaot_mlas_exp(x);
    case TINYAOT_F32_SIGMOID:
        return tinyaot_mlas_logistic(x);
    case TINYAOT_F32_TANH:
        return tinyaot_mlas_tanh(x);
    case TINYAOT_F32_SQRT:
        return sqrtf(x);
    case TINYAOT_F32_NEG:
        return tinyaot_u32_as_f32(tinyaot_f32_as_u32(x) ^ 0x80000000u);
    case TINYAOT_F32_ABS:
        return tinyaot_u32_as_f32(tinyaot_f32_as_u32(x) & 0x7fffffffu);
    case TINYAOT_F32_RELU: /* onnxruntime: -0 and a NaN stay */
        return x < 0.0f ? 0.0f : x;
    case TINYAOT_F32_RECIPROCAL:
        return 1.0f / x;
    case TINYAOT_F32_ERF:
        return tinyaot_mlas_erf(x);
    case TINYAOT_F32_GELU:
        return tinyaot_ort_gelu(x, 0);
    case TINYAOT_F32_GELU_TANH:
        return tinyaot_ort_gelu(x, 1);
    case TINYAOT_F32_EXP_GLIBC:
        return tinyaot_glibc_expf(x);
    case TINYAOT_F32_LOGISTIC_TFLM:
        return tinyaot_tflm_logistic(x);
    case TINYAOT_F32_TANH_GLIBC:
        return tinyaot_glibc_tanhf(x);
    default:
        return x;
    }
}

int tinyaot_unary_f32(int32_t fn, int32_t n, const float *input, float *output)
{
    if (fn < 0 || fn > TINYAOT_F32_TANH_GLIBC) {
        return TINYAOT_ERR_ARG;
    }
    for (int32_t i = 0; i < n; ++i) {
        output[i] = unary(fn, input[i]);
    }
    return TINYAOT_OK;
}
