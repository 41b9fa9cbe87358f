/* Transposed convolution geometry, shared by the ConvTranspose kernels. */
#ifndef TINYAOT_TRANSPOSE_CONV_TAP_H
#define TINYAOT_TRANSPOSE_CONV_TAP_H

#include <stdint.h>

/* Output index o receives input index i through tap t when
 * o = i * stride - pad + t * dil. Returns that i, or -1 when no input pixel
 * lands on o through t. Gathering per output pixel this way sums the same
 * terms as TFLite's scatter into an output-sized int32 buffer (integer sums do
 * not depend on the order) and visits taps in onnxruntime's col2im order. */
static inline int32_t tinyaot_transpose_conv_tap(int32_t o, int32_t t, int32_t pad, int32_t dil,
                                                 int32_t stride, int32_t n_in)
{
    const int32_t num = o + pad - t * dil;
    if (num < 0 || num % stride != 0) {
        return -1;
    }
    const int32_t i = num / stride;
    return i < n_in ? i : -1;
}

#endif
