/* Elementwise nonlinearity through a 256-entry int8 table (in flash). */
#include "tinyaot_kernels.h"

#include <stddef.h>

int tinyaot_lut_s8(int32_t n, const int8_t table[256], const int8_t *input, int8_t *output)
{
    if (n < 0 || table == NULL || input == NULL || output == NULL) {
        return TINYAOT_ERR_ARG;
    }
    /* In place (input == output) is fine: each element is read before it is written. */
    for (int32_t i = 0; i < n; ++i) {
        output[i] = table[(int32_t)input[i] + 128];
    }
    return TINYAOT_OK;
}
