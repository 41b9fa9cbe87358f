/* QuantizeLinear of float32 into int8 where a float fallback region ends. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_f32_math.h"

/* TFLite's TfLiteRound (std::round): half away from zero. |v| < 2^23 has a fraction. */
static float round_half_away(float v)
{
    if (!(v < 8388608.0f && v > -8388608.0f)) {
        return v;
    }
    const float t = (float)(int32_t)v; /* toward zero */
    const float d = v - t;             /* exact */
    if (d >= 0.5f) {
        return t + 1.0f;
    }
    if (d <= -0.5f) {
        return t - 1.0f;
    }
    return t;
}

/* static_cast<int32_t> as x86-64 does it (CVTTSS2SI): out of range or NaN gives INT32_MIN. */
static int32_t x86_to_int32(float v)
{
    if (!(v < 2147483648.0f && v >= -2147483648.0f)) {
        return INT32_MIN;
    }
    return (int32_t)v;
}

int tinyaot_quantize_s8_f32(int32_t n, float scale, int32_t zp, int32_t mode,
                            const float *input, int8_t *output)
{
    if (mode == 0) {
        /* MLAS (QuantizeLinear AVX-512F): divide, MAXPS / MINPS clamp, round to even. */
        const float lo = (float)(-128 - zp);
        const float hi = (float)(127 - zp);
        for (int32_t i = 0; i < n; ++i) {
            float v = input[i] / scale;
            v = tinyaot_x86_max(v, lo); /* a NaN becomes lo */
            v = tinyaot_x86_min(v, hi);
            const float r = (v + 12582912.0f) - 12582912.0f; /* round half to even */
            output[i] = (int8_t)((int32_t)r + zp);
        }
        return TINYAOT_OK;
    }
    for (int32_t i = 0; i < n; ++i) {
        /* TFLite Micro AffineQuantize: round(x / scale) + zp, clamped (the int32 sum wraps). */
        const int32_t r = x86_to_int32(round_half_away(input[i] / scale));
        int32_t v = (int32_t)((uint32_t)r + (uint32_t)zp);
        v = v < -128 ? -128 : (v > 127 ? 127 : v);
        output[i] = (int8_t)v;
    }
    return TINYAOT_OK;
}
