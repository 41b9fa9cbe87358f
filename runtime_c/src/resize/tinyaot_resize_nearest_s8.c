/* Nearest-neighbour resize of an NHWC int8 tensor: index tables made at compile time. */
#include "tinyaot_kernels.h"

#include <stddef.h>
#include <string.h>

int tinyaot_resize_nearest_s8(const int32_t dims[6], const int32_t *y_idx, const int32_t *x_idx,
                              const int8_t *table, const int8_t *input, int8_t *output)
{
    const int32_t batches = dims[0], in_h = dims[1], in_w = dims[2], c = dims[3];
    const int32_t out_h = dims[4], out_w = dims[5];
    for (int32_t b = 0; b < batches; ++b) {
        const int8_t *img = input + (size_t)b * (size_t)(in_h * in_w * c);
        for (int32_t y = 0; y < out_h; ++y) {
            const int8_t *row = img + y_idx[y] * in_w * c;
            for (int32_t x = 0; x < out_w; ++x) {
                const int8_t *src = row + x_idx[x] * c;
                if (table == NULL) {
                    memcpy(output, src, (size_t)c);
                } else { /* the output's quantization or a fused clamp differs */
                    for (int32_t i = 0; i < c; ++i) {
                        output[i] = table[(int32_t)src[i] + 128];
                    }
                }
                output += c;
            }
        }
    }
    return TINYAOT_OK;
}
