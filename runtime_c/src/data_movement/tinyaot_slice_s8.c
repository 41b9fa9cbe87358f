/* Strided window of a 4-D int8 tensor (Slice, each output of Split). */
#include "tinyaot_kernels.h"

#include <stddef.h>
#include <string.h>

int tinyaot_slice_s8(const int32_t d[16], const int8_t *input, int8_t *output)
{
    const int32_t *in = d;
    const int32_t *out = d + 4;
    const int32_t *start = d + 8;
    const int32_t *step = d + 12;
    /* element strides of the input, scaled by each axis' step */
    const int32_t s2 = in[3], s1 = in[2] * s2, s0 = in[1] * s1;
    const int32_t t0 = s0 * step[0], t1 = s1 * step[1], t2 = s2 * step[2], t3 = step[3];
    const int8_t *base = input + start[0] * s0 + start[1] * s1 + start[2] * s2 + start[3];
    for (int32_t a = 0; a < out[0]; ++a) {
        for (int32_t b = 0; b < out[1]; ++b) {
            for (int32_t c = 0; c < out[2]; ++c) {
                const int8_t *src = base + a * t0 + b * t1 + c * t2;
                if (t3 == 1) { /* innermost run is contiguous */
                    memcpy(output, src, (size_t)out[3]);
                    output += out[3];
                } else {
                    for (int32_t e = 0; e < out[3]; ++e) {
                        *output++ = src[e * t3];
                    }
                }
            }
        }
    }
    return TINYAOT_OK;
}
