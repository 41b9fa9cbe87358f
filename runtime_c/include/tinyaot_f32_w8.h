/* Helpers of the --optimize size float kernels (tinyaot_*_f32_w8_s8): int8
 * weights dequantized at run time and MLAS's M=1 transpose-B lane reduction.
 * Built with -ffp-contract=off, so every product below is rounded before it
 * is added, as in the speed kernels and in MLAS. */
#ifndef TINYAOT_F32_W8_H
#define TINYAOT_F32_W8_H

#include <stdint.h>

#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

/* DequantizeLinear of an int8 weight, float(q) * scale: one exact conversion
 * and one rounded multiply, the same float32 the speed kernels store. */
static inline float tinyaot_w8_dequant(int8_t q, float scale)
{
    return (float)q * scale;
}

/* MLAS M1 TransposeB reduction of one output's 8 lanes; the tree depends on
 * whether output `pos` of `count` falls in a block of 4, the pair or the
 * single remainder (reference/fc_float_order.py reduce_lanes). */
static inline float tinyaot_w8_lanes8_reduce(const float *a, int32_t pos, int32_t count)
{
    if (pos < count - (count & 3)) {
        return (((a[0] + a[1]) + a[2]) + a[3]) + (((a[4] + a[5]) + a[6]) + a[7]);
    }
    if ((count & 2) && pos < count - (count & 1)) {
        return ((a[0] + a[2]) + (a[4] + a[6])) + ((a[1] + a[3]) + (a[5] + a[7]));
    }
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* 8 lanes from 0: lane (k - k0) % 8 adds round(x[k] * w[k]) for k in [k0, k1). */
static inline void tinyaot_w8_lanes8(const float *x, const int8_t *wq, float ws, int32_t k0,
                                     int32_t k1, float *lane)
{
    for (int32_t j = 0; j < 8; ++j) {
        lane[j] = 0.0f;
    }
    for (int32_t k = k0; k < k1; ++k) {
        lane[(k - k0) & 7] = lane[(k - k0) & 7] + x[k] * tinyaot_w8_dequant(wq[k], ws);
    }
}

/* QuantizeLinear of a layer's float output: branch-free on an FPU (the
 * instruction count stays input-independent); a test that defines
 * tinyaot_quantize_f32 (to capture the float) gets that instead. */
static inline int8_t tinyaot_w8_quantize(float y, const tinyaot_float_conv_t *p)
{
#ifdef tinyaot_quantize_f32
    return tinyaot_quantize_f32(y, p->out_scale, p->out_zp, p->act_min, p->act_max);
#else
    return tinyaot_quantize_f32_fpu(y, p->out_scale, p->out_zp, p->act_min, p->act_max);
#endif
}

#endif
