/* int8 fully connected for --optimize size with its weights in fewer bits
 * (codegen/kernels/bits_pack.py): one width b in [2, 7] for the layer, each row
 * ceil(K * b / 32) words read from the top bit down, weight k the b-bit two's-
 * complement field from bit k * b (0 for an outlier), then per row its
 * outliers {k, w}. The
 * sum is the int8 weights' exact int32 sum, the requantization the one-SMLAL
 * records over the whole int8 range (TFLite's full-range layers) split as
 * tinyaot_fully_connected_fast_w8_s8 reads them (fast_pack.split_records:
 * q->bias the biases, q->rq = {step, headers}): the integers of
 * tinyaot_fully_connected_s8, from less flash and with more cycles (a field's
 * shift and sign extension per weight). Portable C, the same on every core;
 * the cost depends on the weights' layout, never on the input. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_fixedpoint.h"
#include "../internal/tinyaot_requant_fast.h"

int32_t tinyaot_fully_connected_bits_s8_get_buffer_size(int32_t in_features)
{
    return ((in_features + 3) & ~3) * (int32_t)sizeof(int16_t);
}

/* sum over k of x[k] * (row's b-bit field k), x the input row less its zero point */
static int32_t bits_dot(const int16_t *x, int32_t k, const uint32_t *w, int32_t bits)
{
    const uint32_t b = (uint32_t)bits, sh = 32u - b;
    uint32_t buf = 0u, avail = 0u, acc = 0u; /* buf: the next avail bits at its top */
    for (int32_t j = 0; j < k; ++j) {
        int32_t v;
        if (avail >= b) {
            v = tinyaot_fp_asr(tinyaot_fp_s32(buf), (int32_t)sh);
            buf <<= b;
            avail -= b;
        } else { /* the field's last b - avail bits from the next word (the same steps for
                  * every input: the cost is the layout's) */
            const uint32_t next = *w++;
            v = tinyaot_fp_asr(tinyaot_fp_s32(buf | (next >> avail)), (int32_t)sh);
            buf = next << (b - avail);
            avail += 32u - b;
        }
        acc += (uint32_t)((int32_t)x[j] * v); /* |x| <= 255, |v| <= 64: exact */
    }
    return tinyaot_fp_s32(acc);
}

int tinyaot_fully_connected_bits_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                    int32_t bits, const tinyaot_requant_t *q,
                                    const int8_t *input, const uint32_t *weights,
                                    const uint16_t *outliers, int16_t *scratch, int8_t *output)
{
    if (!tinyaot_rq_split_ok(q) || bits < 2 || bits > 7 || in_features < 1 || out_features < 1) {
        return TINYAOT_ERR_ARG;
    }
    const int32_t wpr = (in_features * bits + 31) / 32;
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *x = input + r * in_features;
        int8_t *o = output + r * out_features;
        const uint16_t *ol = outliers;
        for (int32_t k = 0; k < in_features; ++k) {
            scratch[k] = (int16_t)(x[k] - q->in_zp);
        }
        for (int32_t n = 0; n < out_features; ++n) {
            uint32_t acc = (uint32_t)bits_dot(scratch, in_features, weights + n * wpr, bits);
            for (uint32_t c = *ol++; c > 0u; --c, ol += 2) {
                const int32_t w = (int32_t)ol[1] - (int32_t)((ol[1] & 0x8000u) << 1); /* int16 */
                acc += (uint32_t)((int32_t)scratch[ol[0]] * w);
            }
            o[n] = tinyaot_rq_split_out(tinyaot_fp_s32(acc + (uint32_t)q->bias[n]),
                                        tinyaot_rq_split_head(q, n));
        }
    }
    return TINYAOT_OK;
}
