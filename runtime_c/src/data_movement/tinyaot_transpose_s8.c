/* 4-D int8 permutation (layout changes the compiler could not alias away). */
#include "tinyaot_kernels.h"

int tinyaot_transpose_s8(const int32_t in_dims[4], const int32_t perm[4],
                         const int8_t *input, int8_t *output)
{
    int32_t in_stride[4];
    in_stride[3] = 1;
    for (int32_t i = 2; i >= 0; --i) {
        in_stride[i] = in_stride[i + 1] * in_dims[i + 1];
    }
    const int32_t d0 = in_dims[perm[0]], d1 = in_dims[perm[1]];
    const int32_t d2 = in_dims[perm[2]], d3 = in_dims[perm[3]];
    const int32_t s0 = in_stride[perm[0]], s1 = in_stride[perm[1]];
    const int32_t s2 = in_stride[perm[2]], s3 = in_stride[perm[3]];
    for (int32_t a = 0; a < d0; ++a) {
        for (int32_t b = 0; b < d1; ++b) {
            for (int32_t c = 0; c < d2; ++c) {
                const int8_t *src = input + a * s0 + b * s1 + c * s2;
                for (int32_t e = 0; e < d3; ++e) {
                    *output++ = src[e * s3];
                }
            }
        }
    }
    return TINYAOT_OK;
}
