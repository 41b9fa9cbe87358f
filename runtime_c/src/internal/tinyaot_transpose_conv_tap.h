/* Transposed convolution geometry, shared by the ConvTranspose kernels. */
#ifndef TINYAOT_TRANSPOSE_CONV_TAP_H
#define TINYAOT_TRANSPOSE_CONV_TAP_H

#include <stdint.h>

#include "tinyaot_kernels.h"

/* Output index o receives input index i through tap t when
 * o = i * stride - pad + t * dil. Returns that i, or -1 when no input pixel
 * lands on o through t. */
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

/* The taps that reach output pixel (oy, ox), in (k_h, k_w) order: start with
 * *tap = -1; each call moves *tap (ky * k_w + kx) to the next tap an input
 * pixel lands on through, sets *pixel to that input pixel (iy * in_w + ix)
 * and returns 1; returns 0 when none is left. Gathering per output pixel this
 * way sums the same terms as TFLite's scatter into an output-sized int32
 * buffer (integer sums do not depend on the order) and visits the taps in
 * onnxruntime's col2im order. */
static inline int32_t tinyaot_transpose_conv_next_tap(const tinyaot_conv_dims_t *d, int32_t oy,
                                                      int32_t ox, int32_t *tap, int32_t *pixel)
{
    for (int32_t t = *tap + 1; t < d->k_h * d->k_w; ++t) {
        const int32_t ky = t / d->k_w;
        const int32_t iy = tinyaot_transpose_conv_tap(oy, ky, d->pad_top, d->dil_h,
                                                      d->stride_h, d->in_h);
        if (iy < 0) {
            t = ky * d->k_w + d->k_w - 1; /* no input row: skip the rest of this row */
            continue;
        }
        const int32_t ix = tinyaot_transpose_conv_tap(ox, t - ky * d->k_w, d->pad_left,
                                                      d->dil_w, d->stride_w, d->in_w);
        if (ix >= 0) {
            *tap = t;
            *pixel = iy * d->in_w + ix;
            return 1;
        }
    }
    return 0;
}

#endif
