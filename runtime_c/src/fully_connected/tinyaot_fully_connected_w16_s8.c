/* int8 fully connected with int16 weights [out_features][in_features]: weights minus their
 * zero point that do not fit int8 (MatMulInteger with uint8 or asymmetric int8 weights),
 * on layers with no fast kernel. The same sums as tinyaot_fully_connected_s8. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

int tinyaot_fully_connected_w16_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                   const tinyaot_requant_t *q, const int8_t *input,
                                   const int16_t *weights, int8_t *output)
{
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *x = input + r * in_features;
        for (int32_t n = 0; n < out_features; ++n) {
            const int16_t *w = weights + n * in_features;
            int32_t acc = 0;
            for (int32_t k = 0; k < in_features; ++k) {
                acc += ((int32_t)x[k] - q->in_zp) * (int32_t)w[k];
            }
            output[r * out_features + n] = tinyaot_requant_channel(q, acc, n);
        }
    }
    return TINYAOT_OK;
}
