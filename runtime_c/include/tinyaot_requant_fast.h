/* Requantization for the fast kernels: the same results as
 * tinyaot_requant_channel (tinyaot_requant.h), in fewer instructions.
 *
 * tflite: tinyaot_requant_tflite(acc, mult, shift, zp, lo, hi) computes
 *   RDBPOT(SRDHM(acc << l, mult), r) + zp, clamped, l = max(shift, 0),
 *   r = max(-shift, 0), with SRDHM(a, b) = trunc((a*b + nudge) / 2^31),
 *   nudge = 2^30 if a*b >= 0 else 1 - 2^30.  For a*b < 0, y = a*b + 1 - 2^30
 *   is negative and trunc(y / 2^31) = floor((y + 2^31 - 1) / 2^31)
 *   = floor((a*b + 2^30) / 2^31), the same formula as for a*b >= 0; so
 *   SRDHM(a, b) = (a*b + 2^30) >> 31 (arithmetic), except a = b = INT32_MIN
 *   (saturates), which cannot happen here: mult >= 0 (TFLite multipliers are
 *   in [2^30, 2^31) or 0, codegen/prepare.py).  Tested against
 *   tinyaot_requant_tflite in tests/test_fast_kernels.py.
 */
#ifndef TINYAOT_REQUANT_FAST_H
#define TINYAOT_REQUANT_FAST_H

#include <stdint.h>

#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

static inline int32_t tinyaot_srdhm_fast(int32_t a, int32_t b)
{
    const int64_t ab = (int64_t)a * (int64_t)b + ((int64_t)1 << 30);
    /* arithmetic shift of an int64 without implementation-defined >>:
     * the quotient fits in int32 for b >= 0 */
    const uint64_t u = (uint64_t)ab;
    const uint32_t hi = (uint32_t)(u >> 31);
    return tinyaot_fp_s32(hi);
}

/* mult >= 0, -31 <= shift <= 31 */
static inline int8_t tinyaot_requant_tflite_fast(int32_t acc, int32_t mult, int32_t shift,
                                                 int32_t zp, int32_t lo, int32_t hi)
{
    int32_t x, v;
    if (shift > 0) {
        x = tinyaot_srdhm_fast(tinyaot_fp_s32((uint32_t)acc << shift), mult);
    } else {
        const int32_t e = -shift;
        const int32_t mask = (int32_t)(((uint32_t)1 << e) - 1u);
        const int32_t t = tinyaot_srdhm_fast(acc, mult);
        const int32_t rem = (int32_t)((uint32_t)t & (uint32_t)mask);
        const int32_t thr = (mask >> 1) + (int32_t)((uint32_t)t >> 31);
        x = tinyaot_fp_asr(t, e) + (int32_t)(rem > thr);
    }
    v = tinyaot_fp_wrap_add(x, zp);
    /* branch-free clamp (the same result): instruction counts stay data-independent */
    {
        const uint32_t below = 0u - (uint32_t)(v < lo);
        const uint32_t above = 0u - (uint32_t)(v > hi);
        uint32_t u = ((uint32_t)v & ~below) | ((uint32_t)lo & below);
        u = (u & ~above) | ((uint32_t)hi & above);
        return (int8_t)tinyaot_fp_s32(u);
    }
}

/* The requantization parameters of one layer, copied to locals once per call
 * (so int8 stores through the output pointer cannot force reloads). */
typedef struct {
    const int32_t *bias;
    const float *scale;
    const int32_t *mult;
    const int32_t *shift;
    int32_t zp, lo, hi;
} tinyaot_rqc_t;

static inline tinyaot_rqc_t tinyaot_rqc(const tinyaot_requant_t *q)
{
    tinyaot_rqc_t r;
    r.bias = q->bias;
    r.scale = q->scale;
    r.mult = q->mult;
    r.shift = q->shift;
    r.zp = q->out_zp;
    r.lo = q->act_min;
    r.hi = q->act_max;
    return r;
}

/* Output channel ch of two accumulators (two pixels / rows) at once. */
static inline void tinyaot_rqc_apply2(const tinyaot_rqc_t *r, int32_t acc0, int32_t acc1, int32_t ch,
                                      int8_t *o0, int8_t *o1)
{
    const int32_t b = r->bias[ch];
    acc0 += b;
    acc1 += b;
    if (r->scale) {
        const float s = r->scale[ch];
        *o0 = tinyaot_requant_ort(acc0, s, r->zp, r->lo, r->hi);
        *o1 = tinyaot_requant_ort(acc1, s, r->zp, r->lo, r->hi);
    } else {
        const int32_t m = r->mult[ch], sh = r->shift[ch];
        *o0 = tinyaot_requant_tflite_fast(acc0, m, sh, r->zp, r->lo, r->hi);
        *o1 = tinyaot_requant_tflite_fast(acc1, m, sh, r->zp, r->lo, r->hi);
    }
}

static inline int8_t tinyaot_rqc_apply(const tinyaot_rqc_t *r, int32_t acc, int32_t ch)
{
    acc += r->bias[ch];
    if (r->scale) {
        return tinyaot_requant_ort(acc, r->scale[ch], r->zp, r->lo, r->hi);
    }
    return tinyaot_requant_tflite_fast(acc, r->mult[ch], r->shift[ch], r->zp, r->lo, r->hi);
}

static inline int8_t tinyaot_requant_channel_fast(const tinyaot_requant_t *q, int32_t acc, int32_t ch)
{
    acc += q->bias[ch];
    if (q->scale) {
        return tinyaot_requant_ort(acc, q->scale[ch], q->out_zp, q->act_min, q->act_max);
    }
    return tinyaot_requant_tflite_fast(acc, q->mult[ch], q->shift[ch], q->out_zp,
                                       q->act_min, q->act_max);
}

#endif
