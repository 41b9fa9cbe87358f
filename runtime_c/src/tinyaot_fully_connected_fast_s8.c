/* Fast int8 fully connected: each input row widened once into an int16
 * column, then a __SMLAD GEMM over two output features at a time (two rows
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
    const int32_t in_zp = q->in_zp;
    const uint32_t off = tinyaot_pack16(-in_zp, -in_zp);
    int32_t r = 0;
    if (in_features < 1) {
        return TINYAOT_ERR_ARG;
    }
    for (; r + 1 < rows; r += 2) {
        tinyaot_widen_run(input + r * in_features, in_features, scratch, 4, off, in_zp);
        tinyaot_widen_run(input + (r + 1) * in_features, in_features, scratch + 2, 4, off, in_zp);
        tinyaot_gemm_2col(scratch, nquads, packed_weights, out_features, &rq,
                          output + r * out_features, output + (r + 1) * out_features);
    }
    if (r < rows) {
        tinyaot_widen_run(input + r * in_features, in_features, scratch, 2, off, in_zp);
        tinyaot_gemm_1col(scratch, nquads, packed_weights, out_features, &rq,
                          output + r * out_features);
    }
    return TINYAOT_OK;
}
