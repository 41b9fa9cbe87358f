/* Internal helpers of the fast kernels (tinyaot_fast_kernels.h): widening
 * int8 activations minus the input zero point into int16 columns ("im2col"),
 * and the int16 x int16 -> int32 GEMM cores on __SMLAD.
 *
 * A column holds Kp = roundup(K, 4) int16 values, as int32 words: quad j of
 * logical elements (k0, k1, k2, k3) is two words {k0, k2}, {k1, k3} (what
 * __SXTAB16 and __SXTAB16_ROR8 give for one loaded word). Two-column buffers
 * interleave the columns per quad: words [j][col][2].
 */
#ifndef TINYAOT_GEMM_Q15_H
#define TINYAOT_GEMM_Q15_H

#include <stdint.h>
#include <string.h>

#include "tinyaot_intrinsics.h"
#include "tinyaot_kernels.h"
#include "tinyaot_requant_fast.h"

typedef struct {
    uint32_t *dst;   /* first word of this column */
    int32_t stride;  /* words per quad: 2 (one column) or 4 (two interleaved) */
    int32_t k;       /* logical elements written so far */
    int32_t in_zp;
    uint32_t off;    /* {-in_zp, -in_zp} */
    int32_t pend[4];
} tinyaot_colw_t;

static inline uint32_t tinyaot_pack16(int32_t lo, int32_t hi)
{
    return ((uint32_t)lo & 0xffffu) | (((uint32_t)hi & 0xffffu) << 16);
}

static inline void tinyaot_colw_init(tinyaot_colw_t *c, uint32_t *dst, int32_t stride, int32_t in_zp)
{
    c->dst = dst;
    c->stride = stride;
    c->k = 0;
    c->in_zp = in_zp;
    c->off = tinyaot_pack16(-in_zp, -in_zp);
}

static inline void tinyaot_colw_one(tinyaot_colw_t *c, int32_t v)
{
    c->pend[c->k & 3] = v;
    c->k++;
    if ((c->k & 3) == 0) {
        uint32_t *w = c->dst + ((c->k - 1) >> 2) * c->stride;
        w[0] = tinyaot_pack16(c->pend[0], c->pend[2]);
        w[1] = tinyaot_pack16(c->pend[1], c->pend[3]);
    }
}

/* n int8 values from src, minus the zero point */
static inline void tinyaot_colw_bytes(tinyaot_colw_t *c, const int8_t *src, int32_t n)
{
    int32_t i = 0;
    while ((c->k & 3) != 0 && i < n) {
        tinyaot_colw_one(c, (int32_t)src[i] - c->in_zp);
        ++i;
    }
    if (i + 4 <= n) {
        uint32_t *w = c->dst + (c->k >> 2) * c->stride;
        const int32_t st = c->stride;
        const uint32_t off = c->off;
        const int32_t nq = (n - i) >> 2;
        for (int32_t j = 0; j < nq; ++j) {
            uint32_t x;
            memcpy(&x, src + i, 4);
            w[0] = __SXTAB16(off, x);
            w[1] = __SXTAB16_ROR8(off, x);
            w += st;
            i += 4;
        }
        c->k += nq * 4;
    }
    while (i < n) {
        tinyaot_colw_one(c, (int32_t)src[i] - c->in_zp);
        ++i;
    }
}

/* n zeros (padding: the zero point minus itself) */
static inline void tinyaot_colw_zeros(tinyaot_colw_t *c, int32_t n)
{
    int32_t i = 0;
    while ((c->k & 3) != 0 && i < n) {
        tinyaot_colw_one(c, 0);
        ++i;
    }
    while (i + 4 <= n) {
        uint32_t *w = c->dst + (c->k >> 2) * c->stride;
        w[0] = 0u;
        w[1] = 0u;
        c->k += 4;
        i += 4;
    }
    while (i < n) {
        tinyaot_colw_one(c, 0);
        ++i;
    }
}

/* n >= 4 int8 values from src, then zeros up to the next quad; k % 4 == 0
 * on entry. The last n % 4 values come from one word load ending at
 * src + n (no read past the run), shifted down and masked after widening. */
static inline void tinyaot_colw_bytes_pad4(tinyaot_colw_t *c, const int8_t *src, int32_t n)
{
    const int32_t nq = n >> 2;
    const int32_t r = n & 3;
    uint32_t *w = c->dst + (c->k >> 2) * c->stride;
    const int32_t st = c->stride;
    const uint32_t off = c->off;
    for (int32_t j = 0; j < nq; ++j) {
        uint32_t x;
        memcpy(&x, src + 4 * j, 4);
        w[0] = __SXTAB16(off, x);
        w[1] = __SXTAB16_ROR8(off, x);
        w += st;
    }
    if (r != 0) {
        static const uint32_t mask_a[4] = {0u, 0x0000ffffu, 0x0000ffffu, 0xffffffffu};
        static const uint32_t mask_b[4] = {0u, 0u, 0x0000ffffu, 0x0000ffffu};
        uint32_t x;
        memcpy(&x, src + n - 4, 4);
        x >>= 8u * (uint32_t)(4 - r);
        w[0] = __SXTAB16(off, x) & mask_a[r];
        w[1] = __SXTAB16_ROR8(off, x) & mask_b[r];
    }
    c->k += (n + 3) & ~3;
}

/* zeros up to the next multiple of 4 */
static inline void tinyaot_colw_pad4(tinyaot_colw_t *c)
{
    while ((c->k & 3) != 0) {
        tinyaot_colw_one(c, 0);
    }
}

static inline void tinyaot_colw_finish(tinyaot_colw_t *c)
{
    while ((c->k & 3) != 0) {
        tinyaot_colw_one(c, 0);
    }
}

#if TINYAOT_HAVE_DSP_ASM
/* acc[0..3] = {oc0 col0, oc0 col1, oc1 col0, oc1 col1} over nq >= 1 quads:
 * x = two interleaved columns (4 words per quad), w = the oc pair's half of
 * a 4-channel weight block (8 words per quad, 4 read). 14 instructions per
 * 16 MACs. */
static inline void tinyaot_dot_2x2(const uint32_t *x, const uint32_t *w, int32_t nq, uint32_t acc[4])
{
    uint32_t a00 = 0u, a01 = 0u, a10 = 0u, a11 = 0u;
    uint32_t xa0, xb0, xa1, xb1, wa, wb;
    const uint32_t *xe = x + 4 * nq;
    __asm__("1:\n\t"
            "ldrd %[xa0], %[xb0], [%[x]], #8\n\t"
            "ldrd %[xa1], %[xb1], [%[x]], #8\n\t"
            "ldrd %[wa], %[wb], [%[w]], #8\n\t"
            "smlad %[a00], %[xa0], %[wa], %[a00]\n\t"
            "smlad %[a01], %[xa1], %[wa], %[a01]\n\t"
            "smlad %[a00], %[xb0], %[wb], %[a00]\n\t"
            "smlad %[a01], %[xb1], %[wb], %[a01]\n\t"
            "ldrd %[wa], %[wb], [%[w]], #24\n\t"
            "smlad %[a10], %[xa0], %[wa], %[a10]\n\t"
            "smlad %[a11], %[xa1], %[wa], %[a11]\n\t"
            "smlad %[a10], %[xb0], %[wb], %[a10]\n\t"
            "smlad %[a11], %[xb1], %[wb], %[a11]\n\t"
            "cmp %[x], %[xe]\n\t"
            "bne 1b"
            : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11),
              [xa0] "=&r"(xa0), [xb0] "=&r"(xb0), [xa1] "=&r"(xa1), [xb1] "=&r"(xb1),
              [wa] "=&r"(wa), [wb] "=&r"(wb), [x] "+r"(x), [w] "+r"(w)
            : [xe] "r"(xe)
            : "cc", "memory");
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}

/* acc[r] = row r of a 4-channel weight block . one column, nq >= 1 quads.
 * 15 instructions per 16 MACs. */
static inline void tinyaot_dot_4x1(const uint32_t *x, const uint32_t *w, int32_t nq, uint32_t acc[4])
{
    uint32_t a0 = 0u, a1 = 0u, a2 = 0u, a3 = 0u;
    uint32_t xa, xb, wa, wb;
    const uint32_t *xe = x + 2 * nq;
    __asm__("1:\n\t"
            "ldrd %[xa], %[xb], [%[x]], #8\n\t"
            "ldrd %[wa], %[wb], [%[w]], #8\n\t"
            "smlad %[a0], %[xa], %[wa], %[a0]\n\t"
            "smlad %[a0], %[xb], %[wb], %[a0]\n\t"
            "ldrd %[wa], %[wb], [%[w]], #8\n\t"
            "smlad %[a1], %[xa], %[wa], %[a1]\n\t"
            "smlad %[a1], %[xb], %[wb], %[a1]\n\t"
            "ldrd %[wa], %[wb], [%[w]], #8\n\t"
            "smlad %[a2], %[xa], %[wa], %[a2]\n\t"
            "smlad %[a2], %[xb], %[wb], %[a2]\n\t"
            "ldrd %[wa], %[wb], [%[w]], #8\n\t"
            "smlad %[a3], %[xa], %[wa], %[a3]\n\t"
            "smlad %[a3], %[xb], %[wb], %[a3]\n\t"
            "cmp %[x], %[xe]\n\t"
            "bne 1b"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xa] "=&r"(xa),
              [xb] "=&r"(xb), [wa] "=&r"(wa), [wb] "=&r"(wb), [x] "+r"(x), [w] "+r"(w)
            : [xe] "r"(xe)
            : "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#else
static inline void tinyaot_dot_2x2(const uint32_t *x, const uint32_t *w, int32_t nq, uint32_t acc[4])
{
    uint32_t a00 = 0u, a01 = 0u, a10 = 0u, a11 = 0u;
    for (int32_t j = 0; j < nq; ++j) {
        const uint32_t x0a = x[0], x0b = x[1], x1a = x[2], x1b = x[3];
        a00 = __SMLAD(x0a, w[0], a00);
        a00 = __SMLAD(x0b, w[1], a00);
        a01 = __SMLAD(x1a, w[0], a01);
        a01 = __SMLAD(x1b, w[1], a01);
        a10 = __SMLAD(x0a, w[2], a10);
        a10 = __SMLAD(x0b, w[3], a10);
        a11 = __SMLAD(x1a, w[2], a11);
        a11 = __SMLAD(x1b, w[3], a11);
        x += 4;
        w += 8;
    }
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}

static inline void tinyaot_dot_4x1(const uint32_t *x, const uint32_t *w, int32_t nq, uint32_t acc[4])
{
    uint32_t a0 = 0u, a1 = 0u, a2 = 0u, a3 = 0u;
    for (int32_t j = 0; j < nq; ++j) {
        const uint32_t xa = x[0], xb = x[1];
        a0 = __SMLAD(xa, w[0], a0);
        a0 = __SMLAD(xb, w[1], a0);
        a1 = __SMLAD(xa, w[2], a1);
        a1 = __SMLAD(xb, w[3], a1);
        a2 = __SMLAD(xa, w[4], a2);
        a2 = __SMLAD(xb, w[5], a2);
        a3 = __SMLAD(xa, w[6], a3);
        a3 = __SMLAD(xb, w[7], a3);
        x += 2;
        w += 8;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#endif

/* Two interleaved columns x nquads, all out_c channels; o0 / o1 get the
 * requantized outputs of column 0 / 1. */
static inline __attribute__((always_inline)) void tinyaot_gemm_2col_m(
    const uint32_t *cols, int32_t nquads, const int32_t *w, int32_t out_c, const tinyaot_rqc_t *rq,
    int8_t *o0, int8_t *o1, int mode)
{
    const int32_t nblocks = (out_c + 3) >> 2;
    const uint32_t *wb = (const uint32_t *)(const void *)w;
    for (int32_t b = 0; b < nblocks; ++b) {
        for (int32_t h = 0; h < 2; ++h) {
            const int32_t oc = 4 * b + 2 * h;
            if (oc >= out_c) {
                break;
            }
            uint32_t acc[4];
            tinyaot_dot_2x2(cols, wb + (int32_t)b * nquads * 8 + h * 4, nquads, acc);
            tinyaot_rqc_apply2_m(rq, tinyaot_fp_s32(acc[0]), tinyaot_fp_s32(acc[1]), oc, o0 + oc,
                                 o1 + oc, mode);
            if (oc + 1 < out_c) {
                tinyaot_rqc_apply2_m(rq, tinyaot_fp_s32(acc[2]), tinyaot_fp_s32(acc[3]), oc + 1,
                                     o0 + oc + 1, o1 + oc + 1, mode);
            }
        }
    }
}

static inline void tinyaot_gemm_2col(const uint32_t *cols, int32_t nquads, const int32_t *w,
                                     int32_t out_c, const tinyaot_rqc_t *rq, int8_t *o0,
                                     int8_t *o1)
{
    switch (rq->mode) {
    case TINYAOT_RQ_ORT:
        tinyaot_gemm_2col_m(cols, nquads, w, out_c, rq, o0, o1, TINYAOT_RQ_ORT);
        break;
    case TINYAOT_RQ_TFLITE:
        tinyaot_gemm_2col_m(cols, nquads, w, out_c, rq, o0, o1, TINYAOT_RQ_TFLITE);
        break;
    case TINYAOT_RQ_SMLAL:
        tinyaot_gemm_2col_m(cols, nquads, w, out_c, rq, o0, o1, TINYAOT_RQ_SMLAL);
        break;
    default:
        tinyaot_gemm_2col_m(cols, nquads, w, out_c, rq, o0, o1, TINYAOT_RQ_SMLAL_SAT);
        break;
    }
}

/* One column x nquads, four channels at a time. */
static inline void tinyaot_gemm_1col(const uint32_t *col, int32_t nquads, const int32_t *w,
                                     int32_t out_c, const tinyaot_rqc_t *rq, int8_t *o)
{
    const int32_t nblocks = (out_c + 3) >> 2;
    const uint32_t *wb = (const uint32_t *)(const void *)w;
    for (int32_t b = 0; b < nblocks; ++b) {
        const int32_t oc = 4 * b;
        uint32_t acc[4];
        tinyaot_dot_4x1(col, wb + (int32_t)b * nquads * 8, nquads, acc);
        for (int32_t r = 0; r < 4 && oc + r < out_c; ++r) {
            o[oc + r] = tinyaot_rqc_apply(rq, tinyaot_fp_s32(acc[r]), oc + r);
        }
    }
}

#endif
