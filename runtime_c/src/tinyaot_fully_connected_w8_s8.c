/* int8 fully connected for --optimize size: int8 weights read in place
 * ([out_features][in_features], the layout of tinyaot_fully_connected_s8),
 * the row's (input - zero point) as int16 in the scratch, one exact int32 sum
 * per output (tinyaot_dot_w8), tinyaot_rqc_apply (tinyaot_requant_channel's
 * results, branch-free, tinyaot_requant_fast.h): the same integers as
 * tinyaot_fully_connected_s8 and the fast kernel, without its packed copy. */
#include "tinyaot_dot_w8.h"
#include "tinyaot_kernels.h"
#include "tinyaot_requant_fast.h"

int32_t tinyaot_fully_connected_w8_s8_get_buffer_size(int32_t in_features)
{
    return in_features * (int32_t)sizeof(int16_t);
}

/* scratch: *_get_buffer_size bytes, 4-byte aligned (planned in the arena). */
int tinyaot_fully_connected_w8_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                  const tinyaot_requant_t *q, const int8_t *input,
                                  const int8_t *weights, int16_t *scratch, int8_t *output)
{
    const int32_t k = in_features;
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t i = 0; i < k; ++i) {
            scratch[tinyaot_w8_slot(i, k)] = (int16_t)((int32_t)input[r * k + i] - q->in_zp);
        }
        for (int32_t n = 0; n < out_features; ++n) {
            output[r * out_features + n] =
                tinyaot_rqc_apply(&rq, tinyaot_dot_w8(scratch, weights + n * k, k, 0), n);
        }
    }
    return TINYAOT_OK;
}
