/* 4-D Pad: constant, reflect or edge, with an optional requantization table. */
#include "tinyaot_kernels.h"

#include <stddef.h>

/* Source index along one axis, or -1 for a constant pad position. */
static int32_t pad_src(int32_t o, int32_t before, int32_t n, int32_t mode)
{
    int32_t i = o - before;
    if (i >= 0 && i < n) return i;
    if (mode == 0) return -1;
    if (mode == 2) return i < 0 ? 0 : n - 1;
    if (n == 1) return 0;
    /* reflect (no edge repetition), repeated for pads longer than the axis */
    const int32_t period = 2 * (n - 1);
    i = i % period;
    if (i < 0) i += period;
    return i < n ? i : period - i;
}

int tinyaot_pad_s8(const int32_t d[12], int32_t mode, int32_t pad_value, const int8_t *table,
                   const int8_t *input, int8_t *output)
{
    const int32_t *in = d;
    const int32_t *out = d + 4;
    const int32_t *before = d + 8;
    int32_t o = 0;
    for (int32_t a = 0; a < out[0]; ++a) {
        const int32_t sa = pad_src(a, before[0], in[0], mode);
        for (int32_t b = 0; b < out[1]; ++b) {
            const int32_t sb = pad_src(b, before[1], in[1], mode);
            for (int32_t c = 0; c < out[2]; ++c) {
                const int32_t sc = pad_src(c, before[2], in[2], mode);
                const int32_t row = (sa < 0 || sb < 0 || sc < 0)
                                        ? -1 : ((sa * in[1] + sb) * in[2] + sc) * in[3];
                for (int32_t e = 0; e < out[3]; ++e) {
                    const int32_t se = pad_src(e, before[3], in[3], mode);
                    if (row < 0 || se < 0) {
                        output[o++] = (int8_t)pad_value;
                    } else {
                        const int8_t v = input[row + se];
                        output[o++] = table ? table[(int32_t)v + 128] : v;
                    }
                }
            }
        }
    }
    return TINYAOT_OK;
}
