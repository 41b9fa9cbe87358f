/* General 2-D convolution, NHWC, grouped (depthwise too), int16 weights:
 * the layers whose weights minus their zero point leave int8 (uint8 weights,
 * asymmetric int8 weights: values in [-255, 255]) and that have no fast
 * kernel. The same sums as tinyaot_convolve_s8, exact in int32 (the loops:
 * ../internal/tinyaot_conv_ref.h). */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_conv_ref.h"

int tinyaot_convolve_w16_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                            const int8_t *input, const int16_t *filter, int8_t *output)
{
    tinyaot_conv_ref(d, q, input, filter, 1, output);
    return TINYAOT_OK;
}
