/* Concatenation along one physical axis, with per-input requantization tables.
 * A NULL input is one the planner placed in its own slice of the output
 * (codegen/planner/concat_slices.py): nothing to copy. */
#include "tinyaot_kernels.h"

#include <stddef.h>
#include <string.h>

int tinyaot_concat_s8(int32_t outer, int32_t n_inputs, const int32_t *chunks,
                      const int8_t *const *inputs, const int8_t *const *tables, int8_t *output)
{
    int8_t *o = output;
    for (int32_t r = 0; r < outer; ++r) {
        for (int32_t j = 0; j < n_inputs; ++j) {
            const int32_t c = chunks[j];
            if (inputs[j] == NULL) { /* already in its slice: its producer wrote it there */
                o += c;
                continue;
            }
            const int8_t *in = inputs[j] + (size_t)r * (size_t)c;
            const int8_t *t = tables[j];
            if (t == NULL) {
                memcpy(o, in, (size_t)c);
            } else {
                for (int32_t i = 0; i < c; ++i) {
                    o[i] = t[(int32_t)in[i] + 128];
                }
            }
            o += c;
        }
    }
    return TINYAOT_OK;
}
