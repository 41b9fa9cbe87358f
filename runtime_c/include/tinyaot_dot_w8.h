/* The inner product of the --optimize size integer kernels
 * (tinyaot_convolve_w8_s8, tinyaot_fully_connected_w8_s8): int8 weights read
 * where they are (flash), against a column of int16 (input - zero point)
 * values that the kernel prepared in its scratch. With the DSP extension 4
 * MACs are one word of weights, two __SXTB16 and two __SMLAD (CMSIS-NN's
 * read-and-pad-reordered scheme); the int32 sum is exact either way, so the
 * order does not matter. */
#ifndef TINYAOT_DOT_W8_H
#define TINYAOT_DOT_W8_H

#include <stdint.h>
#include <string.h>

#include "tinyaot_intrinsics.h"

/* Where value i of a column goes: in each full group of 4 the order is
 * x0, x2, x1, x3 (the halfwords __SXTB16 and __SXTB16_ROR8 pair with
 * weights 0, 2 and 1, 3); the k % 4 tail stays in order. */
static inline int32_t tinyaot_w8_slot(int32_t i, int32_t k)
{
    static const int8_t perm[4] = {0, 2, 1, 3};
    return i < (k & ~3) ? (i & ~3) + perm[i & 3] : i;
}

/* acc + sum over i < k of x[i] * w[i], x in tinyaot_w8_slot order. */
static inline int32_t tinyaot_dot_w8(const int16_t *x, const int8_t *w, int32_t k, int32_t acc)
{
    int32_t i = 0;
    uint32_t a = (uint32_t)acc;
    for (; i + 4 <= k; i += 4) {
        uint32_t w4, x02, x13;
        memcpy(&w4, w + i, sizeof w4);
        memcpy(&x02, x + i, sizeof x02);
        memcpy(&x13, x + i + 2, sizeof x13);
        a = __SMLAD(__SXTB16(w4), x02, a);
        a = __SMLAD(__SXTB16_ROR8(w4), x13, a);
    }
    for (; i < k; ++i) {
        a += (uint32_t)((int32_t)x[i] * (int32_t)w[i]);
    }
    return (int32_t)a;
}

#endif
