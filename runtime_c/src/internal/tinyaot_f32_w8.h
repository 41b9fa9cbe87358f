/* Helpers of the --optimize size float kernels (tinyaot_*_f32_w8_s8): int8
 * weights dequantized at run time (mlas_weight_w8); the M=1 sum and the lane
 * reduction are the speed kernels' (tinyaot_f32_mlas_sums.h). Built with
 * -ffp-contract=off, so every product below is rounded before it is added,
 * as in the speed kernels and in MLAS. */
#ifndef TINYAOT_F32_W8_H
#define TINYAOT_F32_W8_H

#include <math.h>
#include <stdint.h>

#include "tinyaot_f32_mlas_sums.h"
#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

/* One fused multiply-add chain from 0 over k0 .. k1 (an SGEMM K block). */
static inline float tinyaot_w8_fma_chain(const float *x, const int8_t *wq, float ws, int32_t k0,
                                         int32_t k1)
{
    float part = 0.0f;
    for (int32_t k = k0; k < k1; ++k) {
        part = fmaf(x[k], mlas_weight_w8(wq, k, ws), part);
    }
    return part;
}

/* 8 lanes from 0: lane (k - k0) % 8 adds round(x[k] * w[k]) for k in [k0, k1). */
static inline void tinyaot_w8_lanes8(const float *x, const int8_t *wq, float ws, int32_t k0,
                                     int32_t k1, float *lane)
{
    for (int32_t j = 0; j < 8; ++j) {
        lane[j] = 0.0f;
    }
    for (int32_t k = k0; k < k1; ++k) {
        lane[(k - k0) & 7] = lane[(k - k0) & 7] + x[k] * mlas_weight_w8(wq, k, ws);
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
