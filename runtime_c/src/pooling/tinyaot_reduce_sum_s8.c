/* TFLite's int8 SUM over a contiguous run of axes (codegen/ops/reduce_sum.py). */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_fixedpoint.h"

/* reference_ops::QuantizedMeanOrSum with compute_sum: the int32 sum of the raw values, less
 * in_zp * count, rescaled by MultiplyByQuantizedMultiplier(s_in / s_out), plus out_zp,
 * clamped. The front end bounds count so that the sum fits in int32. */
int tinyaot_reduce_sum_s8(int32_t outer, int32_t count, int32_t inner,
                          const tinyaot_reduce_sum_params_t *p, const int8_t *input,
                          int8_t *output)
{
    if (count <= 0 || inner <= 0) return TINYAOT_ERR_ARG;
    const int32_t offset = p->in_zp * count;
    for (int32_t o = 0; o < outer; ++o) {
        const int8_t *x = input + o * count * inner;
        for (int32_t i = 0; i < inner; ++i) {
            int32_t s = 0;
            for (int32_t k = 0; k < count; ++k) s += x[k * inner + i];
            const int32_t v = tinyaot_fp_wrap_add(tinyaot_mbqm(s - offset, p->mult, p->shift), p->out_zp);
            output[o * inner + i] = (int8_t)tinyaot_fp_clamp(v, p->act_min, p->act_max);
        }
    }
    return TINYAOT_OK;
}
