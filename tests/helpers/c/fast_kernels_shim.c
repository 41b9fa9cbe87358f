/* Host shim for tests/test_fast_kernels.py: the portable intrinsics of
 * tinyaot_intrinsics.h and the fast requantization of tinyaot_requant_fast.h
 * as plain functions (vectorized over arrays), for cffi. */
#include <stdint.h>

#include "tinyaot_intrinsics.h"
#include "tinyaot_requant_fast.h"

void shim_binop(int32_t op, int32_t n, const uint32_t *a, const uint32_t *b, const uint32_t *c,
                uint32_t *out)
{
    for (int32_t i = 0; i < n; ++i) {
        uint32_t r = 0u;
        switch (op) {
        case 0: r = __SXTB16(a[i]); break;
        case 1: r = __SXTB16_ROR8(a[i]); break;
        case 2: r = __SXTAB16(a[i], b[i]); break;
        case 3: r = __SXTAB16_ROR8(a[i], b[i]); break;
        case 4: r = __SMLAD(a[i], b[i], c[i]); break;
        case 5: r = __SMLADX(a[i], b[i], c[i]); break;
        case 6: r = __SMUAD(a[i], b[i]); break;
        case 7: r = __SMLABB(a[i], b[i], c[i]); break;
        case 8: r = __SMLABT(a[i], b[i], c[i]); break;
        case 9: r = __SMLATB(a[i], b[i], c[i]); break;
        case 10: r = __SMLATT(a[i], b[i], c[i]); break;
        case 11: r = (uint32_t)__QADD(tinyaot_pi_s32(a[i]), tinyaot_pi_s32(b[i])); break;
        case 12: r = (uint32_t)__QSUB(tinyaot_pi_s32(a[i]), tinyaot_pi_s32(b[i])); break;
        case 13: r = (uint32_t)__SSAT(tinyaot_pi_s32(a[i]), 8); break;
        case 14: r = (uint32_t)__SSAT(tinyaot_pi_s32(a[i]), 16); break;
        case 15: r = (uint32_t)__SSAT(tinyaot_pi_s32(a[i]), 1); break;
        case 16: r = (uint32_t)__SSAT(tinyaot_pi_s32(a[i]), 32); break;
        case 17: r = __USAT(tinyaot_pi_s32(a[i]), 8); break;
        case 18: r = __USAT(tinyaot_pi_s32(a[i]), 0); break;
        case 19: r = __USAT(tinyaot_pi_s32(a[i]), 31); break;
        case 20: r = __PKHBT(a[i], b[i], 0); break;
        case 21: r = __PKHBT(a[i], b[i], 16); break;
        case 22: r = __PKHBT(a[i], b[i], 5); break;
        case 23: r = __PKHTB(a[i], b[i], 0); break;
        case 24: r = __PKHTB(a[i], b[i], 16); break;
        case 25: r = __PKHTB(a[i], b[i], 7); break;
        case 26: r = __PKHTB(a[i], b[i], 31); break;
        case 27:
            r = (uint32_t)__SMMLAR(tinyaot_pi_s32(a[i]), tinyaot_pi_s32(b[i]), tinyaot_pi_s32(c[i]));
            break;
        case 28: r = __SADD16(a[i], b[i]); break;
        case 29: r = __SSUB16(a[i], b[i]); break;
        default: break;
        }
        out[i] = r;
    }
}

/* tinyaot_requant_tflite (reference) vs tinyaot_requant_tflite_fast */
void shim_requant(int32_t n, const int32_t *acc, const int32_t *mult, const int32_t *shift,
                  const int32_t *zp, int8_t *ref, int8_t *fast)
{
    for (int32_t i = 0; i < n; ++i) {
        ref[i] = tinyaot_requant_tflite(acc[i], mult[i], shift[i], zp[i], -128, 127);
        fast[i] = tinyaot_requant_tflite_fast(acc[i], mult[i], shift[i], zp[i], -128, 127);
    }
}

void shim_srdhm(int32_t n, const int32_t *a, const int32_t *b, int32_t *ref, int32_t *fast)
{
    for (int32_t i = 0; i < n; ++i) {
        ref[i] = tinyaot_srdhm(a[i], b[i]);
        fast[i] = tinyaot_srdhm_fast(a[i], b[i]);
    }
}

/* tinyaot_mbqm_smlal, saturated to int8 (rq: the 5-word records of
 * codegen/kernels/fast_pack.py:smlal_requant, the zero point in their R; their
 * bias unused) */
void shim_requant_smlal(int32_t n, const int32_t *acc, const int32_t *rq, int8_t *out)
{
    for (int32_t i = 0; i < n; ++i) {
        const int32_t *p = rq + 5 * i;
        const int32_t v = tinyaot_mbqm_smlal(acc[i], p[0], p[1], (uint32_t)p[2], p[3]);
        out[i] = (int8_t)tinyaot_fp_clamp(v, -128, 127);
    }
}
