/* The fixed-point helpers of runtime_c/src/internal/tinyaot_fixedpoint.h run on the
 * target (tests/test_fixedpoint_branch_free.py): the input of one "inference"
 * is FPT_N records of three int32 (a, b, c); record i applies helper i % 10
 * (chosen by position, never by data) and writes one int32. Every input runs
 * the same helpers on different data, so the instruction count must be the
 * same for all of them. */
#include <stdint.h>
#include <string.h>

#include "fpt.h"
#include "tinyaot_fixedpoint.h"

static int32_t one(int32_t i, int32_t a, int32_t b, int32_t c)
{
    switch (i % 10) {
    case 0: return tinyaot_fp_clamp(a, b, c);
    case 1: return tinyaot_srdhm(a, b);
    case 2: return tinyaot_rdbpot(a, (int32_t)((uint32_t)b & 31u));
    case 3: return tinyaot_avgpool_round_tflite(a, (int32_t)((uint32_t)c & 0x7fffffffu) | 1);
    case 4: return tinyaot_fp_exp_on_negative_values(a, 5);
    case 5: return tinyaot_fp_one_over_one_plus_x_for_x_in_0_1(a);
    case 6: return tinyaot_mbqm(a, b, 7);
    case 7: return tinyaot_mbqm(a, b, -9);
    case 8: return tinyaot_fp_max(a, b);
    default: return tinyaot_fp_clz32((uint32_t)a);
    }
}

int fpt_run(const void *input, void *output)
{
    const uint8_t *in = (const uint8_t *)input;
    uint8_t *out = (uint8_t *)output;
    for (int32_t i = 0; i < FPT_N; ++i) {
        int32_t r[3], v;
        memcpy(r, in + 12 * i, sizeof r);
        v = one(i, r[0], r[1], r[2]);
        memcpy(out + 4 * i, &v, sizeof v);
    }
    return 0;
}
