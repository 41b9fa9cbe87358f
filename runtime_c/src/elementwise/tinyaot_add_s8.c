/* Elementwise int8 Add of two tensors with their own quantization. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

#include <math.h>

/* onnxruntime QLinearAdd (MLAS AVX2): fma(a, r_a, fma(b, r_b, fixed)) on the
 * values ORT holds (uint8 when it ran uint8), round half to even, saturate.
 * A broadcast (one-value) b is folded into fixed first, unfused, as MLAS does. */
static int8_t qlinear_add_one(const tinyaot_add_params_t *p, float fixed, float rb, int32_t av,
                              int32_t bv)
{
    const int32_t sh = p->u8_shift;
    const int32_t lo = sh ? 0 : -128;
    const int32_t hi = sh ? 255 : 127;
    float t = fmaf((float)(bv + sh), rb, fixed);
    t = fmaf((float)(av + sh), p->a_scale, t);
    int32_t r;
    if (t >= 2147483648.0f) {
        r = lo; /* cvtps gives INT32_MIN, the packs saturate it */
    } else {
        if (t < -1024.0f) t = -1024.0f;
        if (t > 1024.0f) t = 1024.0f;
        r = tinyaot_round_even_f32(t);
        if (r < lo) r = lo;
        if (r > hi) r = hi;
    }
    r -= sh;
    if (r < p->act_min) r = p->act_min;
    if (r > p->act_max) r = p->act_max;
    return (int8_t)r;
}

int tinyaot_add_s8(int32_t n, const tinyaot_add_params_t *p, const int8_t *a,
                   const int8_t *b, int32_t b_stride, int8_t *output)
{
    if (p->use_float >= 2) { /* decided once: the other modes' loop stays as it was */
        float fixed = p->qlinear_fixed;
        float rb = p->b_scale;
        if (b_stride == 0 && p->use_float == 2) { /* 3: a per-channel b, never folded */
            const float fb = (float)((int32_t)b[0] + p->u8_shift) * rb;
            fixed = fixed + fb;
            rb = 0.0f;
        }
        for (int32_t i = 0; i < n; ++i) {
            output[i] = qlinear_add_one(p, fixed, rb, a[i], b[i * b_stride]);
        }
        return TINYAOT_OK;
    }
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
