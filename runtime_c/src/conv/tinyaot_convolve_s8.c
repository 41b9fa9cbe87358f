/* General int8 2-D convolution, NHWC, grouped, per-channel requantization
 * (the loops: ../internal/tinyaot_conv_ref.h). */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_conv_ref.h"

int tinyaot_convolve_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                        const int8_t *input, const int8_t *filter, int8_t *output)
{
    tinyaot_conv_ref(d, q, input, filter, 0, output);
    return TINYAOT_OK;
}
