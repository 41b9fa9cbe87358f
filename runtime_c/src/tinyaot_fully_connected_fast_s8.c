/* Fast int8 fully connected: each input row widened once into an int16
 * column, then a __SMLAD GEMM over four output features at a time (two rows
 * at a time when there are several) against packed int16 weights. */
#include "tinyaot_fast_kernels.h"
#include "tinyaot_gemm_q15.h"

int32_t tinyaot_fully_connected_fast_s8_get_buffer_size(int32_t in_features)
{
    return 2 * ((in_features + 3) / 4) * 4 * (int32_t)sizeof(int16_t);
}

int tinyaot_fully_connected_fast_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                    const tinyaot_requant_t *q, const int8_t *input,
                                    const int32_t *packed_weights, uint32_t *scratch,
                                    int8_t *output)
{
    const int32_t nquads = (in_features + 3) / 4;
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    tinyaot_colw_t c;
    int32_t r = 0;
    for (; r + 1 < rows; r += 2) {
        tinyaot_colw_init(&c, scratch, 4, q->in_zp);
        tinyaot_colw_bytes(&c, input + r * in_features, in_features);
        tinyaot_colw_finish(&c);
        tinyaot_colw_init(&c, scratch + 2, 4, q->in_zp);
        tinyaot_colw_bytes(&c, input + (r + 1) * in_features, in_features);
        tinyaot_colw_finish(&c);
        tinyaot_gemm_2col(scratch, nquads, packed_weights, out_features, &rq,
                          output + r * out_features, output + (r + 1) * out_features);
    }
    if (r < rows) {
        tinyaot_colw_init(&c, scratch, 2, q->in_zp);
        tinyaot_colw_bytes(&c, input + r * in_features, in_features);
        tinyaot_colw_finish(&c);
        tinyaot_gemm_1col(scratch, nquads, packed_weights, out_features, &rq,
                          output + r * out_features);
    }
    return TINYAOT_OK;
}
