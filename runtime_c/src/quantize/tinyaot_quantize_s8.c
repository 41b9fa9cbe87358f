/* A float end of a model: QuantizeLinear (onnxruntime) or QUANTIZE (TFLite)
 * of float values into int8 or uint8 bytes (the generated <name>_run). */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

/* std::round of a value already clamped to the int8 / uint8 range: half away
 * from zero. The fraction v - trunc(v) is exact for |v| < 2^23. */
static inline int32_t round_half_away(float v)
{
    const int32_t t = (int32_t)v;
    const float f = v - (float)t;
    return f >= 0.5f ? t + 1 : f <= -0.5f ? t - 1 : t;
}

int tinyaot_quantize_s8(int32_t n, const tinyaot_quantize_params_t *p, const float *input,
                        int8_t *output)
{
    /* Both clamp x / scale to [qmin - zp, qmax - zp] before rounding: the bounds
     * are integers, so that equals TFLite's clamp after rounding (and keeps the
     * int32 conversion defined for any finite input). NaN goes to qmin, as
     * MLAS's max/min (x86) take it. */
    const float scale = p->scale;
    const int32_t zp = p->zero_point;
    const float lo = (float)(p->qmin - zp), hi = (float)(p->qmax - zp);
    uint8_t *out = (uint8_t *)output; /* int8 or uint8: the byte of the value, mod 256 */
    if (p->rounding == 0) {
        for (int32_t i = 0; i < n; ++i) {
            float v = input[i] / scale;
            if (!(v >= lo)) v = lo;
            if (v > hi) v = hi;
            out[i] = (uint8_t)(tinyaot_round_even_f32(v) + zp);
        }
    } else {
        for (int32_t i = 0; i < n; ++i) {
            float v = input[i] / scale;
            if (!(v >= lo)) v = lo;
            if (v > hi) v = hi;
            out[i] = (uint8_t)(round_half_away(v) + zp);
        }
    }
    return TINYAOT_OK;
}
