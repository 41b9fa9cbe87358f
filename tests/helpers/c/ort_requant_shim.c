/* Shim for tests/test_ort_fast_requant.py: onnxruntime's requantization as
 * the fast kernels do it (tinyaot_requant_fast.h, tinyaot_gemm_q15.h), one
 * accumulator through every form, for the host (portable twins, cffi) and
 * for a qemu-m4 firmware (the VCVTR inline asm). */
#include <stdint.h>

#include "tinyaot_gemm_q15.h"
#include "tinyaot_requant_fast.h"

/* out[0]: tinyaot_requant_float_sat; out[1..4]: the four outputs of
 * tinyaot_rqf_2x2_sat (the accumulator in every slot); out[5..6]: the two of
 * tinyaot_rqf_2x1_sat. Records {bias, scale} (the bias is not read: the
 * accumulator includes it). */
void shim_requant_float(int32_t acc, int32_t scale_bits, int32_t zp, int8_t *out)
{
    const int32_t rec[4] = {0, scale_bits, 0, scale_bits};
    const uint32_t a4[4] = {(uint32_t)acc, (uint32_t)acc, (uint32_t)acc, (uint32_t)acc};
    int8_t o0[2], o1[2], o2[2];
    out[0] = tinyaot_requant_float_sat(acc, scale_bits, zp);
    tinyaot_rqf_2x2_sat(a4, rec, zp, o0, o1);
    tinyaot_rqf_2x1_sat(a4, rec, zp, o2);
    out[1] = o0[0];
    out[2] = o1[0];
    out[3] = o0[1];
    out[4] = o1[1];
    out[5] = o2[0];
    out[6] = o2[1];
}

void shim_requant_float_n(int32_t n, const int32_t *acc, const int32_t *scale_bits,
                          const int32_t *zp, int8_t *out)
{
    for (int32_t i = 0; i < n; ++i) {
        shim_requant_float(acc[i], scale_bits[i], zp[i], out + 7 * i);
    }
}
