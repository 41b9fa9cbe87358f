/* Elementwise int8 maximum / minimum with broadcasting (codegen/ops/minmax.py): TFLite
 * Micro's MAXIMUM / MINIMUM compare the stored integers, which is exact when the inputs
 * and the output share one quantization (the front end checks that). */
#include "tinyaot_kernels.h"

int tinyaot_minmax_s8(int32_t is_max, const int32_t d[18], const int8_t *a, const int8_t *b,
                      int8_t *output)
{
    const int32_t *sa = d + 6;
    const int32_t *sb = d + 12;
    int32_t o = 0;
    for (int32_t i0 = 0; i0 < d[0]; ++i0) {
        for (int32_t i1 = 0; i1 < d[1]; ++i1) {
            for (int32_t i2 = 0; i2 < d[2]; ++i2) {
                for (int32_t i3 = 0; i3 < d[3]; ++i3) {
                    for (int32_t i4 = 0; i4 < d[4]; ++i4) {
                        const int32_t ia = i0 * sa[0] + i1 * sa[1] + i2 * sa[2] + i3 * sa[3] +
                                           i4 * sa[4];
                        const int32_t ib = i0 * sb[0] + i1 * sb[1] + i2 * sb[2] + i3 * sb[3] +
                                           i4 * sb[4];
                        for (int32_t i5 = 0; i5 < d[5]; ++i5) {
                            const int8_t x = a[ia + i5 * sa[5]];
                            const int8_t y = b[ib + i5 * sb[5]];
                            output[o++] = is_max ? (x > y ? x : y) : (x < y ? x : y);
                        }
                    }
                }
            }
        }
    }
    return TINYAOT_OK;
}
