/* int8 fully connected for --optimize size: int8 weights read in place
 * ([out_features][in_features] rows, padded to k4 and grouped by 4 at compile
 * time for LDM + __SXTB16, tinyaot_dot_w8.h), each input row's (input - zero
 * point) as int16 in the scratch, 4 outputs per block of exact int32 sums and
 * the fast kernels' requantization (tinyaot_requant_fast.h): the same
 * integers as tinyaot_fully_connected_s8, without the fast kernel's int16
 * copy. */
#include "../internal/tinyaot_dot_w8.h"
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant_fast.h"

int32_t tinyaot_fully_connected_w8_s8_get_buffer_size(int32_t in_features)
{
    return ((in_features + 3) & ~3) * (int32_t)sizeof(int16_t);
}

/* One input row as a zero-padded int16 column (one copy for every mode). */
static __attribute__((noinline)) void load_row(int16_t *scratch, const int8_t *x, int32_t k,
                                               int32_t zp)
{
    tinyaot_w8_widen(scratch, 0, x, k, zp, 1);
    tinyaot_w8_zero(scratch, k, ((k + 3) & ~3) - k, 1);
}

/* Outputs n .. nout - 1 (at most 3, w8_pack's pair then single row), one
 * copy for every requantization mode. */
static __attribute__((noinline)) void fc_rest(const tinyaot_rqc_t *rq, const int16_t *x,
                                              const int8_t *w, int32_t q4, int32_t n, int32_t nout,
                                              int8_t *o)
{
    if (n + 2 <= nout) {
        int32_t s[2];
        tinyaot_dot_w8_21(x, w, q4, s);
        o[n] = tinyaot_w8_rq_any(rq, s[0], n);
        o[n + 1] = tinyaot_w8_rq_any(rq, s[1], n + 1);
        n += 2;
        w += 8 * q4;
    }
    if (n < nout) {
        o[n] = tinyaot_w8_rq_any(rq, tinyaot_dot_w8_11(x, w, q4), n);
    }
}

static inline __attribute__((always_inline)) void fc_m(int32_t rows, int32_t k, int32_t nout,
                                                       const tinyaot_rqc_t *rq, int32_t zp,
                                                       const int8_t *input, const int8_t *weights,
                                                       int16_t *scratch, int8_t *output, int mode)
{
    const int32_t k4 = (k + 3) & ~3, q4 = k4 / 4;
    for (int32_t r = 0; r < rows; ++r) {
        load_row(scratch, input + r * k, k, zp);
        int8_t *o = output + r * nout;
        const int8_t *w = weights;
        int32_t n = 0;
        for (; n + 4 <= nout; n += 4, w += 4 * k4) {
            int32_t s[4];
            tinyaot_dot_w8_41(scratch, w, q4, s);
            for (int32_t i = 0; i < 4; ++i) {
                o[n + i] = tinyaot_w8_rq(rq, s[i], n + i, mode);
            }
        }
        if (n < nout) {
            fc_rest(rq, scratch, w, q4, n, nout, o);
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
    case TINYAOT_RQ_SMLAL_SAT: fc_m(rows, k, n, &r, zp, input, weights, scratch, output, TINYAOT_RQ_SMLAL_SAT); break;
    case TINYAOT_RQ_FLOAT_SAT: fc_m(rows, k, n, &r, zp, input, weights, scratch, output, TINYAOT_RQ_FLOAT_SAT); break;
    default: fc_m(rows, k, n, &r, zp, input, weights, scratch, output, TINYAOT_W8_RQ_ANY); break;
    }
    return TINYAOT_OK;
}
