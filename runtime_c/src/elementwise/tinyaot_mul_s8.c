/* Broadcasting elementwise int8 Mul, both numerics. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

static int8_t mul_one(const tinyaot_mul_params_t *p, int32_t av, int32_t bv)
{
    if (p->mode == 0) {
        return tinyaot_mul_tflite_s8(av, bv, p->a_zp, p->b_zp, p->out_zp, p->out_mult,
                                     p->out_shift, p->act_min, p->act_max);
    }
    if (p->mode == 1) {
        /* MLAS QLinearMul: cvtps(float(prod) * ratio + float(zp)) (nearest even;
         * INT32_MIN when out of range), then saturating packs to int8. */
        const int32_t prod = (av - p->a_zp) * (bv - p->b_zp); /* |prod| <= 65025 */
        float v = (float)prod * p->ratio;
        v = v + (float)p->out_zp;
        int32_t r;
        if (v >= 2147483648.0f) {
            r = -128;
        } else {
            if (v < -256.0f) v = -256.0f;
            if (v > 256.0f) v = 256.0f;
            r = tinyaot_round_even_f32(v);
            if (r < -128) r = -128;
            if (r > 127) r = 127;
        }
        if (r < p->act_min) r = p->act_min;
        if (r > p->act_max) r = p->act_max;
        return (int8_t)r;
    }
    {
        const float fa = (float)(av - p->a_zp) * p->a_scale;
        const float fb = (float)(bv - p->b_zp) * p->b_scale;
        return tinyaot_quantize_f32(fa * fb, p->out_scale, p->out_zp, p->act_min, p->act_max);
    }
}

int tinyaot_mul_s8(const int32_t dims[4], const int32_t a_strides[4], const int32_t b_strides[4],
                   const tinyaot_mul_params_t *p, const int8_t *a, const int8_t *b,
                   int8_t *output)
{
    int32_t o = 0;
    for (int32_t i0 = 0; i0 < dims[0]; ++i0) {
        for (int32_t i1 = 0; i1 < dims[1]; ++i1) {
            for (int32_t i2 = 0; i2 < dims[2]; ++i2) {
                const int32_t ab = i0 * a_strides[0] + i1 * a_strides[1] + i2 * a_strides[2];
                const int32_t bb = i0 * b_strides[0] + i1 * b_strides[1] + i2 * b_strides[2];
                for (int32_t i3 = 0; i3 < dims[3]; ++i3) {
                    output[o++] = mul_one(p, a[ab + i3 * a_strides[3]], b[bb + i3 * b_strides[3]]);
                }
            }
        }
    }
    return TINYAOT_OK;
}
