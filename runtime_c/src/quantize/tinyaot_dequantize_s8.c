/* A float end of a model: DequantizeLinear (onnxruntime) or DEQUANTIZE
 * (TFLite) of int8 or uint8 bytes into floats (the generated <name>_run). */
#include "tinyaot_kernels.h"

int tinyaot_dequantize_s8(int32_t n, const tinyaot_quantize_params_t *p, const int8_t *input,
                          float *output)
{
    /* onnxruntime: float(q - zp) * scale. TFLite: (float)((double)scale * (q - zp)),
     * whose double product is exact (24 + 9 bits), so both are the product
     * rounded once to float: the same bits. */
    const float scale = p->scale;
    const int32_t zp = p->zero_point;
    if (p->qmin >= 0) { /* uint8 */
        const uint8_t *in = (const uint8_t *)input;
        for (int32_t i = 0; i < n; ++i) {
            output[i] = (float)((int32_t)in[i] - zp) * scale;
        }
    } else {
        for (int32_t i = 0; i < n; ++i) {
            output[i] = (float)((int32_t)input[i] - zp) * scale;
        }
    }
    return TINYAOT_OK;
}
