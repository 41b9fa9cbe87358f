/* Requantization of one int32 accumulator, in both numerics, and
 * QuantizeLinear of a float. C, except tinyaot_quantize_f32_fpu: VCVTR inline
 * asm with a single-precision FPU (__ARM_FP & 4), tinyaot_quantize_f32
 * elsewhere. Internal to runtime_c (kernels include it as
 * "../internal/tinyaot_requant.h"). */
#ifndef TINYAOT_REQUANT_H
#define TINYAOT_REQUANT_H

#include <stdint.h>

#include "tinyaot_fixedpoint.h"
#include "tinyaot_kernels.h"

/* Round half to even for |v| < 2^22, as MLAS does (FPU in round-to-nearest).
 * Adding and subtracting 1.5 * 2^23 leaves the nearest integer. */
static inline int32_t tinyaot_round_even_f32(float v)
{
    const float magic = 12582912.0f;
    float r = (v + magic) - magic;
    return (int32_t)r;
}

/* MLAS: clamp float(acc) * scale to [lo - zp, hi - zp], round, add zp. */
static inline int8_t tinyaot_requant_ort(int32_t acc, float scale, int32_t zp,
                                         int32_t lo, int32_t hi)
{
    float v = (float)acc * scale;
    const float fmin = (float)(lo - zp);
    const float fmax = (float)(hi - zp);
    if (v < fmin) v = fmin;
    if (v > fmax) v = fmax;
    return (int8_t)(tinyaot_round_even_f32(v) + zp);
}

/* QuantizeLinear of a float: round_half_even(x / scale) + zp, saturated. */
static inline int8_t tinyaot_quantize_f32(float x, float scale, int32_t zp,
                                          int32_t lo, int32_t hi)
{
    float v = x / scale;
    const float fmin = (float)(lo - zp);
    const float fmax = (float)(hi - zp);
    if (v < fmin) v = fmin;
    if (v > fmax) v = fmax;
    return (int8_t)(tinyaot_round_even_f32(v) + zp);
}

/* tinyaot_quantize_f32 on an FPU: VCVTR (round to nearest even, the FPSCR
 * default) then predicated clamps -- the same int8 (clamping the rounded
 * integer equals clamping the float first: the bounds are integers; VCVTR
 * saturates out-of-range values to the int32 ends), and no branch, so the
 * instruction count does not depend on the value. */
static inline int8_t tinyaot_quantize_f32_fpu(float x, float scale, int32_t zp,
                                              int32_t lo, int32_t hi)
{
#if defined(__ARM_FP) && (__ARM_FP & 4)
    float t;
    int32_t r;
    __asm__("vcvtr.s32.f32 %0, %1" : "=t"(t) : "t"(x / scale));
    __asm__("vmov %0, %1" : "=r"(r) : "t"(t));
    __asm__("cmp %0, %1\n\tit lt\n\tmovlt %0, %1\n\t"
            "cmp %0, %2\n\tit gt\n\tmovgt %0, %2"
            : "+r"(r)
            : "r"(lo - zp), "r"(hi - zp)
            : "cc");
    return (int8_t)(r + zp);
#else
    return tinyaot_quantize_f32(x, scale, zp, lo, hi);
#endif
}

static inline int8_t tinyaot_requant_channel(const tinyaot_requant_t *q, int32_t acc, int32_t ch)
{
    acc += q->bias[ch];
    if (q->scale) {
        if (q->post_bias) { /* ConvInteger / MatMulInteger: Cast, Mul, Add, QuantizeLinear */
            const float v = (float)acc * q->scale[ch];
            return tinyaot_quantize_f32(v + q->post_bias[ch], q->out_scale, q->out_zp,
                                        q->act_min, q->act_max);
        }
        return tinyaot_requant_ort(acc, q->scale[ch], q->out_zp, q->act_min, q->act_max);
    }
    return tinyaot_requant_tflite(acc, q->mult[ch], q->shift[ch], q->out_zp,
                                  q->act_min, q->act_max);
}

#endif
