/* The inner products of the --optimize size integer kernels
 * (tinyaot_convolve_w8_s8, tinyaot_fully_connected_w8_s8): int8 weights read
 * where they are (flash), against columns of int16 (input - zero point)
 * values that the kernel prepared in its scratch, in natural order.
 *
 * The weights are stored 1 byte each, but reordered at compile time
 * (backend/size_kernels.py:w8_rows): in each full group of 4 of a row the
 * bytes are w0, w2, w1, w3, so __SXTB16 of the word gives the pair {w0, w1}
 * and __SXTB16_ROR8 {w2, w3}, the order of the column's halfwords; one
 * __SMLAD per pair (CMSIS-NN's read-and-pad-reordered scheme, with the
 * reorder moved to the compiler). The k % 4 tail stays in order. Sums are
 * exact int32 (wrap-around never happens for int8 x int16 sums of
 * realistic k), so the order does not change a result. */
#ifndef TINYAOT_DOT_W8_H
#define TINYAOT_DOT_W8_H

#include <stdint.h>
#include <string.h>

#include "tinyaot_intrinsics.h"

static inline uint32_t tinyaot_w8_ld32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* acc + sum over i < k of x[i] * w[i]. */
static inline int32_t tinyaot_dot_w8(const int16_t *x, const int8_t *w, int32_t k, int32_t acc)
{
    int32_t i = 0;
    uint32_t a = (uint32_t)acc;
    for (; i + 4 <= k; i += 4) {
        const uint32_t w4 = tinyaot_w8_ld32(w + i);
        a = __SMLAD(__SXTB16(w4), tinyaot_w8_ld32(x + i), a);
        a = __SMLAD(__SXTB16_ROR8(w4), tinyaot_w8_ld32(x + i + 2), a);
    }
    for (; i < k; ++i) {
        a += (uint32_t)((int32_t)x[i] * (int32_t)w[i]);
    }
    return (int32_t)a;
}

/* Two weight rows (wa, wb) against one column x: s[0] = wa.x, s[1] = wb.x;
 * each column word feeds two SMLADs. */
static inline void tinyaot_dot_w8_2x1(const int16_t *x, const int8_t *wa, const int8_t *wb,
                                      int32_t k, int32_t s[2])
{
    int32_t i = 0;
    uint32_t a = 0, b = 0;
    for (; i + 4 <= k; i += 4) {
        const uint32_t x01 = tinyaot_w8_ld32(x + i), x23 = tinyaot_w8_ld32(x + i + 2);
        const uint32_t u = tinyaot_w8_ld32(wa + i), v = tinyaot_w8_ld32(wb + i);
        a = __SMLAD(__SXTB16(u), x01, a);
        b = __SMLAD(__SXTB16(v), x01, b);
        a = __SMLAD(__SXTB16_ROR8(u), x23, a);
        b = __SMLAD(__SXTB16_ROR8(v), x23, b);
    }
    for (; i < k; ++i) {
        a += (uint32_t)((int32_t)x[i] * (int32_t)wa[i]);
        b += (uint32_t)((int32_t)x[i] * (int32_t)wb[i]);
    }
    s[0] = (int32_t)a;
    s[1] = (int32_t)b;
}

/* Two weight rows (wa, wb) against two columns (x, y), CMSIS-NN's 2x2 block:
 * each widened weight pair and each column word feeds two SMLADs.
 * s = {wa.x, wa.y, wb.x, wb.y}. */
static inline void tinyaot_dot_w8_2x2(const int16_t *x, const int16_t *y, const int8_t *wa,
                                      const int8_t *wb, int32_t k, int32_t s[4])
{
    int32_t i = 0;
    uint32_t ax = 0, ay = 0, bx = 0, by = 0;
    for (; i + 4 <= k; i += 4) {
        const uint32_t u = tinyaot_w8_ld32(wa + i), v = tinyaot_w8_ld32(wb + i);
        const uint32_t u01 = __SXTB16(u), v01 = __SXTB16(v);
        const uint32_t x01 = tinyaot_w8_ld32(x + i), y01 = tinyaot_w8_ld32(y + i);
        ax = __SMLAD(u01, x01, ax);
        ay = __SMLAD(u01, y01, ay);
        bx = __SMLAD(v01, x01, bx);
        by = __SMLAD(v01, y01, by);
        const uint32_t u23 = __SXTB16_ROR8(u), v23 = __SXTB16_ROR8(v);
        const uint32_t x23 = tinyaot_w8_ld32(x + i + 2), y23 = tinyaot_w8_ld32(y + i + 2);
        ax = __SMLAD(u23, x23, ax);
        ay = __SMLAD(u23, y23, ay);
        bx = __SMLAD(v23, x23, bx);
        by = __SMLAD(v23, y23, by);
    }
    for (; i < k; ++i) {
        const int32_t p = wa[i], q = wb[i];
        ax += (uint32_t)(p * (int32_t)x[i]);
        ay += (uint32_t)(p * (int32_t)y[i]);
        bx += (uint32_t)(q * (int32_t)x[i]);
        by += (uint32_t)(q * (int32_t)y[i]);
    }
    s[0] = (int32_t)ax;
    s[1] = (int32_t)ay;
    s[2] = (int32_t)bx;
    s[3] = (int32_t)by;
}

/* dst[i] = src[i] - zp as int16, i < n (an im2col piece or an FC row). */
static inline void tinyaot_w8_widen(int16_t *dst, const int8_t *src, int32_t n, int32_t zp)
{
    for (int32_t i = 0; i < n; ++i) {
        dst[i] = (int16_t)((int32_t)src[i] - zp);
    }
}

#endif
