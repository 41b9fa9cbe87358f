/* The inner products of the --optimize size integer kernels
 * (tinyaot_convolve_w8_s8, tinyaot_fully_connected_w8_s8): int8 weights read
 * where they are (flash) against int16 (input - zero point) columns that the
 * kernel prepared in its scratch.
 *
 * Weights stay 1 byte each, reordered at compile time
 * (ops/size_kernels.py:w8_pack): rows padded with zeros to k4 (k rounded
 * up to 4), then per pair of rows, per group of 4, the word of row a and the
 * word of row b (one LDRD), each with its bytes as w0, w2, w1, w3 so that
 * __SXTB16 gives the halfword pair {w0, w1} and __SXTB16_ROR8 {w2, w3}; an
 * odd last row follows alone. Columns are int16 in natural order, zero padded
 * to k4: one column is words {x01, x23} per group; two columns (two pixels /
 * rows) are interleaved word by word {x01, y01, x23, y23}, so one pointer
 * serves both. CMSIS-NN's 2x2 block: each widened weight pair and each
 * column word feeds two SMLADs. Sums are exact int32, so the order does not
 * change a result. q4 = k4 / 4. */
#ifndef TINYAOT_DOT_W8_H
#define TINYAOT_DOT_W8_H

#include <stdint.h>
#include <string.h>

#include "tinyaot_intrinsics.h"
#include "tinyaot_requant_fast.h"

/* The inline-asm loops need the optimizer's register allocation (at -O0 GCC
 * cannot give them their registers; the portable C twins run there). */
#if TINYAOT_HAVE_DSP_ASM && defined(__OPTIMIZE__)
#define TINYAOT_DOT_W8_ASM 1
#else
#define TINYAOT_DOT_W8_ASM 0
#endif

static inline uint32_t tinyaot_w8_ld32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* s = {a.x, a.y, b.x, b.y}: a row pair w against two interleaved columns c. */
#if TINYAOT_DOT_W8_ASM
/* Per group of 4: one LDM of the two columns' words {x01, y01, x23, y23}
 * into r4-r7, one LDRD of the row pair's words, 4 SXTB16, 8 SMLAD (14
 * instructions, 20 cycles on the M4 for 16 MACs). The odd group and the odd
 * pair of groups run before the loop, which then does 4 groups per pass; r4-r7
 * hold the columns, so the loop end is reloaded from the stack into r4, dead
 * by then. q4 >= 1. */
#define TINYAOT_W8_22_QUAD                                                                         \
    "ldmia %[c]!, {r4, r5, r6, r7}\n\t"                                                            \
    "ldrd %[u], %[v], [%[w]], #8\n\t"                                                              \
    "sxtb16 %[t], %[u]\n\t"                                                                        \
    "smlad %[ax], %[t], r4, %[ax]\n\t"                                                             \
    "smlad %[ay], %[t], r5, %[ay]\n\t"                                                             \
    "sxtb16 %[t], %[v]\n\t"                                                                        \
    "smlad %[bx], %[t], r4, %[bx]\n\t"                                                             \
    "smlad %[by], %[t], r5, %[by]\n\t"                                                             \
    "sxtb16 %[u], %[u], ror #8\n\t"                                                                \
    "smlad %[ax], %[u], r6, %[ax]\n\t"                                                             \
    "smlad %[ay], %[u], r7, %[ay]\n\t"                                                             \
    "sxtb16 %[v], %[v], ror #8\n\t"                                                                \
    "smlad %[bx], %[v], r6, %[bx]\n\t"                                                             \
    "smlad %[by], %[v], r7, %[by]\n\t"
#define TINYAOT_W8_22_OPS                                                                          \
    : [ax] "+r"(ax), [ay] "+r"(ay), [bx] "+r"(bx), [by] "+r"(by), [c] "+r"(c), [w] "+r"(w),     \
      [u] "=&r"(u), [v] "=&r"(v), [t] "=&r"(t)
#define TINYAOT_W8_22_CLOBBERS "r4", "r5", "r6", "r7", "memory"
static inline __attribute__((always_inline)) void tinyaot_dot_w8_22(const int16_t *c,
                                                                    const int8_t *w, int32_t q4,
                                                                    int32_t s[4])
{
    uint32_t ax = 0, ay = 0, bx = 0, by = 0, u, v, t;
    const int16_t *end = c + 8 * q4;
    if (q4 & 1) {
        __asm__(TINYAOT_W8_22_QUAD TINYAOT_W8_22_OPS : : TINYAOT_W8_22_CLOBBERS);
    }
    if (q4 & 2) {
        __asm__(TINYAOT_W8_22_QUAD TINYAOT_W8_22_QUAD TINYAOT_W8_22_OPS : : TINYAOT_W8_22_CLOBBERS);
    }
    if (q4 >= 4) {
        __asm__("1:\n\t" TINYAOT_W8_22_QUAD TINYAOT_W8_22_QUAD TINYAOT_W8_22_QUAD TINYAOT_W8_22_QUAD
                "ldr r4, %[end]\n\t"
                "cmp %[c], r4\n\t"
                "bne 1b" TINYAOT_W8_22_OPS
                : [end] "m"(end)
                : TINYAOT_W8_22_CLOBBERS, "cc");
    }
    s[0] = (int32_t)ax;
    s[1] = (int32_t)ay;
    s[2] = (int32_t)bx;
    s[3] = (int32_t)by;
}
#undef TINYAOT_W8_22_QUAD
#undef TINYAOT_W8_22_OPS
#undef TINYAOT_W8_22_CLOBBERS
#else
static inline void tinyaot_dot_w8_22(const int16_t *c, const int8_t *w, int32_t q4, int32_t s[4])
{
    uint32_t ax = 0, ay = 0, bx = 0, by = 0;
    for (int32_t j = 0; j < q4; ++j, c += 8, w += 8) {
        const uint32_t u = tinyaot_w8_ld32(w), v = tinyaot_w8_ld32(w + 4);
        uint32_t t = __SXTB16(u);
        ax = __SMLAD(t, tinyaot_w8_ld32(c), ax);
        ay = __SMLAD(t, tinyaot_w8_ld32(c + 2), ay);
        t = __SXTB16(v);
        bx = __SMLAD(t, tinyaot_w8_ld32(c), bx);
        by = __SMLAD(t, tinyaot_w8_ld32(c + 2), by);
        t = __SXTB16_ROR8(u);
        ax = __SMLAD(t, tinyaot_w8_ld32(c + 4), ax);
        ay = __SMLAD(t, tinyaot_w8_ld32(c + 6), ay);
        t = __SXTB16_ROR8(v);
        bx = __SMLAD(t, tinyaot_w8_ld32(c + 4), bx);
        by = __SMLAD(t, tinyaot_w8_ld32(c + 6), by);
    }
    s[0] = (int32_t)ax;
    s[1] = (int32_t)ay;
    s[2] = (int32_t)bx;
    s[3] = (int32_t)by;
}
#endif

/* s = {w.x, w.y}: one row w (the odd last one) against two interleaved columns. */
static inline void tinyaot_dot_w8_12(const int16_t *c, const int8_t *w, int32_t q4, int32_t s[2])
{
    uint32_t ax = 0, ay = 0;
    for (int32_t j = 0; j < q4; ++j, c += 8, w += 4) {
        const uint32_t u = tinyaot_w8_ld32(w);
        uint32_t t = __SXTB16(u);
        ax = __SMLAD(t, tinyaot_w8_ld32(c), ax);
        ay = __SMLAD(t, tinyaot_w8_ld32(c + 2), ay);
        t = __SXTB16_ROR8(u);
        ax = __SMLAD(t, tinyaot_w8_ld32(c + 4), ax);
        ay = __SMLAD(t, tinyaot_w8_ld32(c + 6), ay);
    }
    s[0] = (int32_t)ax;
    s[1] = (int32_t)ay;
}

/* s = {w0.x, w1.x, w2.x, w3.x}: a group of 4 rows (fully connected: per
 * group of 4 values the 4 rows' words, one LDM) against one column c. */
#if TINYAOT_DOT_W8_ASM
static inline void tinyaot_dot_w8_41(const int16_t *c, const int8_t *w, int32_t q4, int32_t s[4])
{
    uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, xa, xb, t;
    /* four groups per pass while four are left (the loop's compare and branch once per
     * 64 MACs, not 16), then one per pass */
    const int16_t *end4 = c + 4 * (q4 & ~3), *end = c + 4 * q4;
#define TINYAOT_W8_ROW(A, R)                                                                       \
    "sxtb16 %[t], " R "\n\t"                                                                      \
    "smlad %[" A "], %[t], %[xa], %[" A "]\n\t"                                                   \
    "sxtb16 " R ", " R ", ror #8\n\t"                                                             \
    "smlad %[" A "], " R ", %[xb], %[" A "]\n\t"
#define TINYAOT_W8_GROUP                                                                           \
    "ldrd %[xa], %[xb], [%[c]], #8\n\t"                                                           \
    "ldmia.w %[w]!, {r8, r9, r10, r11}\n\t"                                                       \
    TINYAOT_W8_ROW("a0", "r8") TINYAOT_W8_ROW("a1", "r9") TINYAOT_W8_ROW("a2", "r10")              \
    TINYAOT_W8_ROW("a3", "r11")
#define TINYAOT_W8_LOOP(GROUPS, END)                                                              \
    __asm__("1:\n\t" GROUPS "cmp %[c], %[end]\n\t"                                                 \
                            "bne 1b"                                                                \
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xa] "=&r"(xa),         \
              [xb] "=&r"(xb), [t] "=&r"(t), [c] "+r"(c), [w] "+r"(w)                              \
            : [end] "r"(END)                                                                       \
            : "r8", "r9", "r10", "r11", "cc", "memory")
    if (end4 != c) {
        TINYAOT_W8_LOOP(TINYAOT_W8_GROUP TINYAOT_W8_GROUP TINYAOT_W8_GROUP TINYAOT_W8_GROUP, end4);
    }
    if (end != c) {
        TINYAOT_W8_LOOP(TINYAOT_W8_GROUP, end);
    }
#undef TINYAOT_W8_LOOP
#undef TINYAOT_W8_GROUP
#undef TINYAOT_W8_ROW
    s[0] = (int32_t)a0;
    s[1] = (int32_t)a1;
    s[2] = (int32_t)a2;
    s[3] = (int32_t)a3;
}
#else
static inline void tinyaot_dot_w8_41(const int16_t *c, const int8_t *w, int32_t q4, int32_t s[4])
{
    uint32_t a[4] = {0, 0, 0, 0};
    for (int32_t j = 0; j < q4; ++j, c += 4) {
        const uint32_t xa = tinyaot_w8_ld32(c), xb = tinyaot_w8_ld32(c + 2);
        for (int32_t r = 0; r < 4; ++r, w += 4) {
            const uint32_t u = tinyaot_w8_ld32(w);
            a[r] = __SMLAD(__SXTB16(u), xa, a[r]);
            a[r] = __SMLAD(__SXTB16_ROR8(u), xb, a[r]);
        }
    }
    for (int32_t r = 0; r < 4; ++r) {
        s[r] = (int32_t)a[r];
    }
}
#endif

/* s = {a.x, b.x}: a row pair w against one column c. */
static inline void tinyaot_dot_w8_21(const int16_t *c, const int8_t *w, int32_t q4, int32_t s[2])
{
    uint32_t a = 0, b = 0;
    for (int32_t j = 0; j < q4; ++j, c += 4, w += 8) {
        const uint32_t u = tinyaot_w8_ld32(w), v = tinyaot_w8_ld32(w + 4);
        a = __SMLAD(__SXTB16(u), tinyaot_w8_ld32(c), a);
        b = __SMLAD(__SXTB16(v), tinyaot_w8_ld32(c), b);
        a = __SMLAD(__SXTB16_ROR8(u), tinyaot_w8_ld32(c + 2), a);
        b = __SMLAD(__SXTB16_ROR8(v), tinyaot_w8_ld32(c + 2), b);
    }
    s[0] = (int32_t)a;
    s[1] = (int32_t)b;
}

/* w.x: one row against one column. */
static inline int32_t tinyaot_dot_w8_11(const int16_t *c, const int8_t *w, int32_t q4)
{
    uint32_t a = 0;
    for (int32_t j = 0; j < q4; ++j, c += 4, w += 4) {
        const uint32_t u = tinyaot_w8_ld32(w);
        a = __SMLAD(__SXTB16(u), tinyaot_w8_ld32(c), a);
        a = __SMLAD(__SXTB16_ROR8(u), tinyaot_w8_ld32(c + 2), a);
    }
    return (int32_t)a;
}

/* Column values i0 .. i0 + n - 1 from src (minus zp) into the scratch col:
 * value i goes to halfword (i / 2) * ways * 2 + i % 2 (ways: 1 column, or 2
 * interleaved, this one starting at col). From a multiple of 4 on, 4 values
 * per input word: __SXTAB16 widens and subtracts ({-zp, -zp}) bytes 0, 2 and
 * 1, 3; __PKHBT / __PKHTB put them back in order as the pairs {x0, x1}, {x2, x3}. */
static inline void tinyaot_w8_widen(int16_t *h, int32_t i0, const int8_t *src, int32_t n,
                                    int32_t zp, int32_t ways)
{
    int32_t i = i0;
    const int32_t end = i0 + n;
    if ((i & 3) == 0) {
        const uint32_t nzp2 = ((uint32_t)-zp & 0xffffu) * 0x10001u;
        for (; i + 4 <= end; i += 4, src += 4) {
            const uint32_t v = tinyaot_w8_ld32(src);
            const uint32_t e = __SXTAB16(nzp2, v), o = __SXTAB16_ROR8(nzp2, v);
            const uint32_t p01 = __PKHBT(e, o, 16), p23 = __PKHTB(o, e, 16);
            int16_t *d = h + (i >> 1) * 2 * ways;
            memcpy(d, &p01, sizeof p01);
            memcpy(d + 2 * ways, &p23, sizeof p23);
        }
    }
    for (; i < end; ++i) {
        h[(i >> 1) * 2 * ways + (i & 1)] = (int16_t)((int32_t)*src++ - zp);
    }
}

/* Zeros for column values i0 .. i0 + n - 1 (padding taps, the k4 tail). */
static inline void tinyaot_w8_zero(int16_t *h, int32_t i0, int32_t n, int32_t ways)
{
    for (int32_t i = i0; i < i0 + n; ++i) {
        h[(i >> 1) * 2 * ways + (i & 1)] = 0;
    }
}

/* Requantization in the size kernels: their loops are inlined once per mode
 * for the two whole-int8-range record modes every model so far uses
 * (TINYAOT_RQ_SMLAL_SAT, TINYAOT_RQ_FLOAT_SAT) and once for all the others
 * (TINYAOT_W8_RQ_ANY: one call per output), so the code stays small. */
#define TINYAOT_W8_RQ_ANY (-1)

static __attribute__((noinline)) int8_t tinyaot_w8_rq_any(const tinyaot_rqc_t *r, int32_t acc,
                                                          int32_t ch)
{
    if (r->mode == TINYAOT_RQ_FLOAT_SAT) {
        return tinyaot_rqc_apply_m(r, acc, ch, TINYAOT_RQ_FLOAT_SAT);
    }
    return tinyaot_rqc_apply(r, acc, ch);
}

static inline __attribute__((always_inline)) int8_t tinyaot_w8_rq(const tinyaot_rqc_t *r,
                                                                  int32_t acc, int32_t ch, int mode)
{
    return mode == TINYAOT_W8_RQ_ANY ? tinyaot_w8_rq_any(r, acc, ch)
                                     : tinyaot_rqc_apply_m(r, acc, ch, mode);
}

/* Channel ch of two accumulators (two pixels / rows). */
static inline __attribute__((always_inline)) void tinyaot_w8_rq2(const tinyaot_rqc_t *r, int32_t a0,
                                                                 int32_t a1, int32_t ch, int8_t *o0,
                                                                 int8_t *o1, int mode)
{
    if (mode == TINYAOT_W8_RQ_ANY) {
        *o0 = tinyaot_w8_rq_any(r, a0, ch);
        *o1 = tinyaot_w8_rq_any(r, a1, ch);
    } else {
        tinyaot_rqc_apply2_m(r, a0, a1, ch, o0, o1, mode);
    }
}

#endif
