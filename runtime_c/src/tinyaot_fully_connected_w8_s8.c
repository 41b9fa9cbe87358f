/* int8 fully connected for --optimize size: int8 weights read in place
 * ([out_features][in_features], each row's groups of 4 reordered at compile
 * time for __SXTB16, tinyaot_dot_w8.h), two input rows' (input - zero point)
 * as int16 in the scratch, 2 outputs x 2 rows per block of exact int32 sums
 * (one row: 2 outputs at a time) and the fast kernels' requantization
 * (tinyaot_requant_fast.h): the same integers as tinyaot_fully_connected_s8,
 * without the fast kernel's packed copy. */
#include "tinyaot_dot_w8.h"
#include "tinyaot_kernels.h"
#include "tinyaot_requant_fast.h"

/* The row stride: in_features rounded up to even (the second row word aligned). */
static int32_t row_stride(int32_t in_features)
{
    return (in_features + 1) & ~1;
}

int32_t tinyaot_fully_connected_w8_s8_get_buffer_size(int32_t in_features)
{
    return 2 * row_stride(in_features) * (int32_t)sizeof(int16_t);
}

static inline __attribute__((always_inline)) void fc_m(int32_t rows, int32_t k, int32_t nout,
                                                       const tinyaot_rqc_t *rq, int32_t zp,
                                                       const int8_t *input, const int8_t *w,
                                                       int16_t *scratch, int8_t *output, int mode)
{
    int16_t *x = scratch, *y = scratch + row_stride(k);
    int32_t r = 0;
    for (; r + 2 <= rows; r += 2) {
        tinyaot_w8_widen(x, input + r * k, k, zp);
        tinyaot_w8_widen(y, input + (r + 1) * k, k, zp);
        int8_t *o0 = output + r * nout, *o1 = o0 + nout;
        int32_t n = 0;
        for (; n + 2 <= nout; n += 2) {
            int32_t s[4];
            tinyaot_dot_w8_2x2(x, y, w + n * k, w + (n + 1) * k, k, s);
            tinyaot_rqc_apply2_m(rq, s[0], s[1], n, o0 + n, o1 + n, mode);
            tinyaot_rqc_apply2_m(rq, s[2], s[3], n + 1, o0 + n + 1, o1 + n + 1, mode);
        }
        if (n < nout) {
            const int32_t s0 = tinyaot_dot_w8(x, w + n * k, k, 0);
            const int32_t s1 = tinyaot_dot_w8(y, w + n * k, k, 0);
            tinyaot_rqc_apply2_m(rq, s0, s1, n, o0 + n, o1 + n, mode);
        }
    }
    if (r < rows) {
        tinyaot_w8_widen(x, input + r * k, k, zp);
        int8_t *o = output + r * nout;
        int32_t n = 0;
        for (; n + 2 <= nout; n += 2) {
            int32_t s[2];
            tinyaot_dot_w8_2x1(x, w + n * k, w + (n + 1) * k, k, s);
            o[n] = tinyaot_rqc_apply_m(rq, s[0], n, mode);
            o[n + 1] = tinyaot_rqc_apply_m(rq, s[1], n + 1, mode);
        }
        if (n < nout) {
            o[n] = tinyaot_rqc_apply_m(rq, tinyaot_dot_w8(x, w + n * k, k, 0), n, mode);
        }
    }
}

/* scratch: *_get_buffer_size bytes, 4-byte aligned (planned in the arena). */
int tinyaot_fully_connected_w8_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                  const tinyaot_requant_t *q, const int8_t *input,
                                  const int8_t *weights, int16_t *scratch, int8_t *output)
{
    const tinyaot_rqc_t r = tinyaot_rqc_records(q);
    const int32_t k = in_features, n = out_features, zp = q->in_zp;
    switch (r.mode) {
    case TINYAOT_RQ_ORT: fc_m(rows, k, n, &r, zp, input, weights, scratch, output, TINYAOT_RQ_ORT); break;
    case TINYAOT_RQ_TFLITE:
        fc_m(rows, k, n, &r, zp, input, weights, scratch, output, TINYAOT_RQ_TFLITE);
        break;
    case TINYAOT_RQ_SMLAL: fc_m(rows, k, n, &r, zp, input, weights, scratch, output, TINYAOT_RQ_SMLAL); break;
    case TINYAOT_RQ_SMLAL_SAT:
        fc_m(rows, k, n, &r, zp, input, weights, scratch, output, TINYAOT_RQ_SMLAL_SAT);
        break;
    default: fc_m(rows, k, n, &r, zp, input, weights, scratch, output, TINYAOT_RQ_FLOAT_SAT); break;
    }
    return TINYAOT_OK;
}
