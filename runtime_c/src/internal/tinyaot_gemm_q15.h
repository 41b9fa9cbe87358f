/* Internal helpers of the fast kernels (tinyaot_fast_kernels.h): widening
 * int8 activations minus the input zero point into int16 columns ("im2col"),
 * and the int16 x int16 -> int32 GEMM cores on __SMLAD.
 *
 * A column holds Kp = roundup(K, 4) int16 values, as int32 words: quad j of
 * logical elements (k0, k1, k2, k3) is two words {k0, k2}, {k1, k3} (what
 * __SXTAB16 and __SXTAB16_ROR8 give for one loaded word). Two-column buffers
 * interleave the columns per quad: words [j][col][2]. Weights come in pairs
 * of output channels, 4 words per quad: [pair][j][channel][2]
 * (codegen/kernels/fast_pack.py:pack_gemm); tinyaot_convolve_fast_s8's in
 * groups of four first, 8 words per quad [group][j][half][channel], then
 * its out_c % 4 channels left in pairs (fast_pack.pack_conv_gemm).
 *
 * The GEMM cores and the saturating requantizations are inline asm with
 * TINYAOT_HAVE_DSP_ASM (and VFP asm for onnxruntime's float records when
 * there is an FPU too, TINYAOT_HAVE_FPU_ASM); otherwise C on the intrinsics
 * of tinyaot_intrinsics.h, which are then portable C.
 */
#ifndef TINYAOT_GEMM_Q15_H
#define TINYAOT_GEMM_Q15_H

#include <stdint.h>
#include <string.h>

#include "tinyaot_intrinsics.h"
#include "tinyaot_kernels.h"
#include "tinyaot_requant_fast.h"

static inline uint32_t tinyaot_pack16(int32_t lo, int32_t hi)
{
    return ((uint32_t)lo & 0xffffu) | (((uint32_t)hi & 0xffffu) << 16);
}

/* Words {v0, v2}, {v1, v3} of one quad (the order __SXTAB16 widens in). */
static inline void tinyaot_put_quad(uint32_t *dst, int32_t v0, int32_t v1, int32_t v2, int32_t v3)
{
    dst[0] = tinyaot_pack16(v0, v2);
    dst[1] = tinyaot_pack16(v1, v3);
}

/* n >= 1 int8 values from src minus the zero point (off = {-in_zp, -in_zp}),
 * then zeros up to the next quad, into quads at dst (st words apart).
 * Returns where the next quad goes. */
static inline uint32_t *tinyaot_widen_run(const int8_t *src, int32_t n, uint32_t *dst, int32_t st,
                                          uint32_t off, int32_t in_zp)
{
    const int8_t *end4 = src + (n & ~3);
    while (src != end4) {
        uint32_t x;
        memcpy(&x, src, 4);
        dst[0] = __SXTAB16(off, x);
        dst[1] = __SXTAB16_ROR8(off, x);
        dst += st;
        src += 4;
    }
    switch (n & 3) {
    case 1: tinyaot_put_quad(dst, src[0] - in_zp, 0, 0, 0); dst += st; break;
    case 2: tinyaot_put_quad(dst, src[0] - in_zp, src[1] - in_zp, 0, 0); dst += st; break;
    case 3:
        tinyaot_put_quad(dst, src[0] - in_zp, src[1] - in_zp, src[2] - in_zp, 0);
        dst += st;
        break;
    default: break;
    }
    return dst;
}

/* tinyaot_widen_run with st a compile-time constant and 8 bytes per pass
 * (one loop test per two quads; the stores become STRDs). */
static inline __attribute__((always_inline)) uint32_t *widen_run_st(const int8_t *src, int32_t n,
                                                                    uint32_t *dst, int32_t st,
                                                                    uint32_t off, int32_t in_zp)
{
    const int8_t *end8 = src + (n & ~7);
#if TINYAOT_HAVE_DSP_ASM
    /* 10 instructions per 8 bytes (GCC's C: 14 to 16, no post-indexed STRD) */
#define TINYAOT_WIDEN8(STEP)                                                                       \
    "1:\n\t"                                                                                       \
    "ldr %[x0], [%[s]], #4\n\t"                                                                    \
    "ldr %[x1], [%[s]], #4\n\t"                                                                    \
    "sxtab16 %[a], %[off], %[x0]\n\t"                                                              \
    "sxtab16 %[b], %[off], %[x0], ror #8\n\t"                                                      \
    "strd %[a], %[b], [%[d]], #" STEP "\n\t"                                                       \
    "sxtab16 %[a], %[off], %[x1]\n\t"                                                              \
    "sxtab16 %[b], %[off], %[x1], ror #8\n\t"                                                      \
    "strd %[a], %[b], [%[d]], #" STEP "\n\t"                                                       \
    "cmp %[s], %[e]\n\t"                                                                           \
    "bne 1b"
    if (src != end8) {
        uint32_t x0, x1, a, b;
        if (st == 4) {
            __asm__ volatile(TINYAOT_WIDEN8("16")
                             : [s] "+r"(src), [d] "+r"(dst), [x0] "=&r"(x0), [x1] "=&r"(x1),
                               [a] "=&r"(a), [b] "=&r"(b)
                             : [e] "r"(end8), [off] "r"(off)
                             : "cc", "memory");
        } else {
            __asm__ volatile(TINYAOT_WIDEN8("8")
                             : [s] "+r"(src), [d] "+r"(dst), [x0] "=&r"(x0), [x1] "=&r"(x1),
                               [a] "=&r"(a), [b] "=&r"(b)
                             : [e] "r"(end8), [off] "r"(off)
                             : "cc", "memory");
        }
    }
#undef TINYAOT_WIDEN8
#else
    while (src != end8) {
        uint32_t x0, x1;
        memcpy(&x0, src, 4);
        memcpy(&x1, src + 4, 4);
        dst[0] = __SXTAB16(off, x0);
        dst[1] = __SXTAB16_ROR8(off, x0);
        dst[st] = __SXTAB16(off, x1);
        dst[st + 1] = __SXTAB16_ROR8(off, x1);
        dst += 2 * st;
        src += 8;
    }
#endif
    if (n & 4) { /* one more quad, no loop */
        uint32_t x;
        memcpy(&x, src, 4);
        dst[0] = __SXTAB16(off, x);
        dst[1] = __SXTAB16_ROR8(off, x);
        dst += st;
        src += 4;
    }
    return (n & 3) ? tinyaot_widen_run(src, n & 3, dst, st, off, in_zp) : dst;
}

/* The columns of two pointwise pixels, n values each at src and src + n,
 * into a pair's buffer (quads 4 words apart, the second column 2 words in):
 * with the DSP asm and whole quads, one loop for both (a quad of each per
 * pass: the same cycles as two widen_run_st, a third of their code, which
 * keeps the pixel loop and the GEMM's group function inside a 1 KB
 * instruction cache); else widen_run_st each. */
/* one quad of each pixel (operands s, n, d, off, x0, x1, a, b), both cursors past it */
#define TINYAOT_WIDEN_PAIR_QUAD                                                                    \
    "ldr %[x1], [%[s], %[n]]\n\t"                                                                  \
    "ldr %[x0], [%[s]], #4\n\t"                                                                    \
    "sxtab16 %[a], %[off], %[x0]\n\t"                                                              \
    "sxtab16 %[b], %[off], %[x0], ror #8\n\t"                                                      \
    "strd %[a], %[b], [%[d]], #8\n\t"                                                              \
    "sxtab16 %[a], %[off], %[x1]\n\t"                                                              \
    "sxtab16 %[b], %[off], %[x1], ror #8\n\t"                                                      \
    "strd %[a], %[b], [%[d]], #8\n\t"
/* (TWO, a constant where inlined: two quads of each pixel a pass, 25 cycles on the M4
 * for what takes 32 a quad at a time, in about 80 bytes more code: the 1x1 pair conv's
 * widen_pixel_pair2, whose pixel loop and group function stay inside a 1 KB instruction
 * cache; the int16 group loops' did not with it, vww01's 24x24 layers +20 % on the
 * STM32L4R5 model, and keep widen_pixel_pair) */
static inline __attribute__((always_inline)) void widen_pixel_pair_q(const int8_t *src, int32_t n,
                                                               uint32_t *dst, uint32_t off,
                                                               int32_t in_zp, int two)
{
#if TINYAOT_HAVE_DSP_ASM
    if ((n & 3) == 0) {
        const int8_t *end = src + n;
        uint32_t x0, x1, a, b;
        if (!two) {
            __asm__ volatile("1:\n\t" TINYAOT_WIDEN_PAIR_QUAD
                             "cmp %[s], %[e]\n\t"
                             "bne 1b"
                             : [s] "+r"(src), [d] "+r"(dst), [x0] "=&r"(x0), [x1] "=&r"(x1),
                               [a] "=&r"(a), [b] "=&r"(b)
                             : [e] "r"(end), [n] "r"(n), [off] "r"(off)
                             : "cc", "memory");
            return;
        }
        if (n & 4) { /* an odd quad first: then two a pass */
            __asm__ volatile(TINYAOT_WIDEN_PAIR_QUAD
                             : [s] "+r"(src), [d] "+r"(dst), [x0] "=&r"(x0), [x1] "=&r"(x1),
                               [a] "=&r"(a), [b] "=&r"(b)
                             : [n] "r"(n), [off] "r"(off)
                             : "memory");
        }
        if (src != end) {
            /* two quads of each pixel a pass: four pipelined loads, single STRs (one
             * cycle each on the M4, where an STRD of two takes three) */
            const int8_t *src1 = src + n;
            uint32_t x2, x3;
/* word X's two halves widened, stored at d + OFF */
#define TINYAOT_WIDEN_WORD_AT(X, OFF)                                                              \
    "sxtab16 %[a], %[off], %[" X "]\n\t" "sxtab16 %[b], %[off], %[" X "], ror #8\n\t"            \
    "str %[a], [%[d], #" OFF "]\n\t" "str %[b], [%[d], #(" OFF " + 4)]\n\t"
            __asm__ volatile("1:\n\t"
                             "ldr %[x0], [%[s]], #8\n\t"
                             "ldr %[x2], [%[s], #-4]\n\t"
                             "ldr %[x1], [%[t]], #8\n\t"
                             "ldr %[x3], [%[t], #-4]\n\t"
                             TINYAOT_WIDEN_WORD_AT("x0", "0") TINYAOT_WIDEN_WORD_AT("x1", "8")
                             TINYAOT_WIDEN_WORD_AT("x2", "16") TINYAOT_WIDEN_WORD_AT("x3", "24")
                             "add %[d], %[d], #32\n\t"
                             "cmp %[s], %[e]\n\t"
                             "bne 1b"
                             : [s] "+r"(src), [t] "+r"(src1), [d] "+r"(dst), [x0] "=&r"(x0),
                               [x1] "=&r"(x1), [x2] "=&r"(x2), [x3] "=&r"(x3), [a] "=&r"(a),
                               [b] "=&r"(b)
                             : [e] "r"(end), [off] "r"(off)
                             : "cc", "memory");
        }
        return;
    }
#else
    (void)two;
#endif
    widen_run_st(src, n, dst, 4, off, in_zp);
    widen_run_st(src + n, n, dst + 2, 4, off, in_zp);
}
static inline __attribute__((always_inline)) void widen_pixel_pair(const int8_t *src, int32_t n,
                                                             uint32_t *dst, uint32_t off,
                                                             int32_t in_zp)
{
    widen_pixel_pair_q(src, n, dst, off, in_zp, 0);
}
static inline __attribute__((always_inline)) void widen_pixel_pair2(const int8_t *src, int32_t n,
                                                              uint32_t *dst, uint32_t off,
                                                              int32_t in_zp)
{
    widen_pixel_pair_q(src, n, dst, off, in_zp, 1);
}
#undef TINYAOT_WIDEN_WORD_AT
#undef TINYAOT_WIDEN_PAIR_QUAD

/* One input row of n values minus its zero point (off = {-in_zp, -in_zp}) into
 * one int16 column (quads of 2 words, zeros up to the quad): tinyaot_widen_run,
 * with the bulk of a word-aligned row in asm, 16 values per loop pass (one LDM,
 * eight SXTAB16, two STM: 13 instructions instead of 32; optimized builds: at
 * -O0 GCC cannot give the asm its registers). The fully connected kernels'. */
static inline __attribute__((always_inline)) void tinyaot_widen_row(const int8_t *src, int32_t n,
                                                                    uint32_t *dst, uint32_t off,
                                                                    int32_t in_zp)
{
#if TINYAOT_HAVE_DSP_ASM && defined(__OPTIMIZE__)
    if (n >= 16 && ((uintptr_t)src & 3u) == 0) {
        const int8_t *end = src + (n & ~15);
        __asm__ volatile("1:\n\t"
                         "ldmia %[s]!, {r8, r9, r10, r11}\n\t"
                         "sxtab16 r4, %[off], r8\n\t"
                         "sxtab16 r5, %[off], r8, ror #8\n\t"
                         "sxtab16 r6, %[off], r9\n\t"
                         "sxtab16 r7, %[off], r9, ror #8\n\t"
                         "stmia %[d]!, {r4, r5, r6, r7}\n\t"
                         "sxtab16 r4, %[off], r10\n\t"
                         "sxtab16 r5, %[off], r10, ror #8\n\t"
                         "sxtab16 r6, %[off], r11\n\t"
                         "sxtab16 r7, %[off], r11, ror #8\n\t"
                         "stmia %[d]!, {r4, r5, r6, r7}\n\t"
                         "cmp %[s], %[e]\n\t"
                         "bne 1b"
                         : [s] "+r"(src), [d] "+r"(dst)
                         : [e] "r"(end), [off] "r"(off)
                         : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "memory", "cc");
        n &= 15;
        if (n == 0) {
            return;
        }
    }
#endif
    tinyaot_widen_run(src, n, dst, 2, off, in_zp);
}

#if TINYAOT_HAVE_DSP_ASM
/* acc[0..3] += {oc0 col0, oc0 col1, oc1 col0, oc1 col1} over nq >= 1 quads:
 * x = two interleaved columns (4 words per quad), w = an output channel
 * pair's weights (4 words per quad, one LDM into r8-r11, in that order).
 * rem = nq % 8 a constant at the call: eight quads per loop pass (83
 * instructions per 128 MACs), the rem others before the loop; rem = -1
 * (unknown): two quads per pass, one before when nq is odd.
 * Returns the next pair's weights. */
/* One quad of the 2x2 dot by two LDMs (x's quad of both columns into r4-r7,
 * w's into r8-r11): 10 instructions per 16 MACs. Operands named a00, a01,
 * a10, a11, x, w; r4-r11 clobbered. Also the Winograd conv's position loop. */
#define TINYAOT_DOT2X2_LDM_REGS(X, W, A00, A01, A10, A11)                                          \
    "ldmia " X "!, {r4, r5, r6, r7}\n\t"                                                           \
    "ldmia " W "!, {r8, r9, r10, r11}\n\t"                                                         \
    "smlad " A00 ", r4, r8, " A00 "\n\t"                                                            \
    "smlad " A00 ", r5, r9, " A00 "\n\t"                                                            \
    "smlad " A01 ", r6, r8, " A01 "\n\t"                                                            \
    "smlad " A01 ", r7, r9, " A01 "\n\t"                                                            \
    "smlad " A10 ", r4, r10, " A10 "\n\t"                                                           \
    "smlad " A10 ", r5, r11, " A10 "\n\t"                                                           \
    "smlad " A11 ", r6, r10, " A11 "\n\t"                                                           \
    "smlad " A11 ", r7, r11, " A11 "\n\t"
#define TINYAOT_DOT2X2_LDM                                                                         \
    TINYAOT_DOT2X2_LDM_REGS("%[x]", "%[w]", "%[a00]", "%[a01]", "%[a10]", "%[a11]")
#define TINYAOT_DOT2X2_QUAD                                                                        \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"                                                          \
    "ldrd %[xa], %[xb], [%[x]], #8\n\t"                                                            \
    "smlad %[a00], %[xa], r8, %[a00]\n\t"                                                          \
    "smlad %[a00], %[xb], r9, %[a00]\n\t"                                                          \
    "smlad %[a10], %[xa], r10, %[a10]\n\t"                                                         \
    "smlad %[a10], %[xb], r11, %[a10]\n\t"                                                         \
    "ldrd %[xa], %[xb], [%[x]], #8\n\t"                                                            \
    "smlad %[a01], %[xa], r8, %[a01]\n\t"                                                          \
    "smlad %[a01], %[xb], r9, %[a01]\n\t"                                                          \
    "smlad %[a11], %[xa], r10, %[a11]\n\t"                                                         \
    "smlad %[a11], %[xb], r11, %[a11]\n\t"
#define TINYAOT_DOT2X2_OPS                                                                         \
    : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [xa] "=&r"(xa),         \
      [xb] "=&r"(xb), [x] "+r"(x), [w] "+r"(w)
static inline __attribute__((always_inline)) const uint32_t *tinyaot_dot_2x2_p(
    const uint32_t *x, const uint32_t *w, int32_t nq, uint32_t acc[4], int rem)
{
    uint32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    uint32_t xa, xb;
    const uint32_t *xe = x + 4 * nq;
    if (rem < 0) { /* not known at compile time: two quads per pass, fewer tests */
        if (nq & 1) {
            __asm__(TINYAOT_DOT2X2_QUAD TINYAOT_DOT2X2_OPS : : "r8", "r9", "r10", "r11", "memory");
        }
        if (nq > 1) {
            __asm__("1:\n\t" TINYAOT_DOT2X2_QUAD TINYAOT_DOT2X2_QUAD "cmp %[x], %[xe]\n\t"
                                                                  "bne 1b" TINYAOT_DOT2X2_OPS
                    : [xe] "r"(xe)
                    : "r8", "r9", "r10", "r11", "cc", "memory");
        }
    } else {
        /* one LDM for the quad of both columns, one for the weights: 10
         * instructions per quad; r4-r11 hold them, so the loop end is
         * reloaded from the stack into a dead column register */
        const uint32_t *xe_m = xe;
#define TINYAOT_DOT2X2_LDM_OPS                                                                     \
    : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [x] "+r"(x), [w] "+r"(w)
#define TINYAOT_DOT2X2_LDM_CLOBBERS "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "memory"
        if (rem & 1) {
            __asm__(TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM_OPS : : TINYAOT_DOT2X2_LDM_CLOBBERS);
        }
        if (rem & 2) {
            __asm__(TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM_OPS
                    :
                    : TINYAOT_DOT2X2_LDM_CLOBBERS);
        }
        if (rem & 4) {
            __asm__(TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM
                        TINYAOT_DOT2X2_LDM_OPS
                    :
                    : TINYAOT_DOT2X2_LDM_CLOBBERS);
        }
        if (rem == 0 || nq > rem) { /* nq >= 1: nq >= 8 when rem = 0 */
            __asm__("1:\n\t" TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM
                        TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM TINYAOT_DOT2X2_LDM
                            TINYAOT_DOT2X2_LDM "ldr r4, %[xe]\n\t"
                                           "cmp %[x], r4\n\t"
                                           "bne 1b" TINYAOT_DOT2X2_LDM_OPS
                    : [xe] "m"(xe_m)
                    : TINYAOT_DOT2X2_LDM_CLOBBERS, "cc");
        }
#undef TINYAOT_DOT2X2_LDM_OPS
#undef TINYAOT_DOT2X2_LDM_CLOBBERS
    }
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
    return w;
}
#undef TINYAOT_DOT2X2_OPS
#undef TINYAOT_DOT2X2_QUAD

static inline __attribute__((always_inline)) const uint32_t *tinyaot_dot_2x2(const uint32_t *x,
                                                                             const uint32_t *w,
                                                                             int32_t nq,
                                                                             uint32_t acc[4])
{
    return tinyaot_dot_2x2_p(x, w, nq, acc, -1);
}

/* Four accumulators (bias included) {oc col0, oc col1, oc+1 col0, oc+1 col1}
 * -> int8 through the one-SMLAL records p (of oc; oc + 1 follows; the output
 * zero point is in their R, fast_pack.smlal_requant), saturated: o0[0],
 * o1[0], o0[1], o1[1]. 7.5 instructions per output. TINYAOT_RQ_ONE (also used
 * by the depthwise kernel): one output, with m, sh loaded; operands named m,
 * sh, lo, hi, p, mn (0x80000000). */
/* Its arithmetic, the registers named by the caller (operands such as "%[lo]",
 * or the register names of an asm that holds every register): accumulator A
 * (bias included; overwritten), multiplier M, shift SH, rounding constant
 * LO:HI (loaded; the zero point folded in), MN = 0x80000000 -> the int8 in HI. */
#define TINYAOT_RQ_SMLAL_REGS(A, M, SH, LO, HI, MN) TINYAOT_RQ_SMLAL_FORM("", A, M, SH, LO, HI, MN)
/* The same in the flag-setting forms (LSRS, ASRS: 16-bit on low registers), for
 * an asm whose flags are dead there and that declares "cc". */
#define TINYAOT_RQ_SMLAL_REGS_S(A, M, SH, LO, HI, MN)                                              \
    TINYAOT_RQ_SMLAL_FORM("s", A, M, SH, LO, HI, MN)
/* (both: S "" or "s", the shifts' flag-setting suffix) */
#define TINYAOT_RQ_SMLAL_FORM(S, A, M, SH, LO, HI, MN)                                             \
    "smlal " LO ", " HI ", " A ", " M "\n\t"                                                        \
    TINYAOT_RQ_NEG_ASM(S, A, LO, HI, MN)                                                           \
    "asr" S " " HI ", " HI ", " SH "\n\t"                                                           \
    "ssat " HI ", #8, " HI "\n\t"
/* Four consecutive words at BASE + OFF into R0-R3 by single LDRs: behind a load
 * each takes one cycle on the Cortex-M4 (pipelined), where two LDRDs take six. */
#define TINYAOT_LDR4(BASE, OFF, R0, R1, R2, R3)                                                    \
    "ldr " R0 ", [" BASE ", #" OFF "]\n\t" "ldr " R1 ", [" BASE ", #(" OFF " + 4)]\n\t"            \
    "ldr " R2 ", [" BASE ", #(" OFF " + 8)]\n\t" "ldr " R3 ", [" BASE ", #(" OFF " + 12)]\n\t"
#define TINYAOT_RQ_ONE(A, POFF, O, OOFF)                                                           \
    "ldrd %[lo], %[hi], [%[p], #" POFF "]\n\t"                                                     \
    TINYAOT_RQ_SMLAL_REGS("%[" A "]", "%[m]", "%[sh]", "%[lo]", "%[hi]", "%[mn]")                  \
    "strb %[hi], [%[" O "], #" OOFF "]\n\t"
static inline __attribute__((always_inline)) void tinyaot_rq_2x2_sat(const uint32_t acc[4],
                                                                     const int32_t *p,
                                                                     int8_t *o0, int8_t *o1)
{
    uint32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3], m, sh, lo, hi;
    /* volatile: its only effect is the stores */
    __asm__ volatile("ldrd %[m], %[sh], [%[p]]\n\t"
                     TINYAOT_RQ_ONE("a00", "8", "o0", "0") TINYAOT_RQ_ONE("a01", "8", "o1", "0")
                     "ldrd %[m], %[sh], [%[p], #20]\n\t"
                     TINYAOT_RQ_ONE("a10", "28", "o0", "1") TINYAOT_RQ_ONE("a11", "28", "o1", "1")
                     : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11),
                       [m] "=&r"(m), [sh] "=&r"(sh), [lo] "=&r"(lo), [hi] "=&r"(hi)
                     : [p] "r"(p), [o0] "r"(o0), [o1] "r"(o1), [mn] "r"(0x80000000u)
                     : "memory");
}

/* Two accumulators (bias included) of channels oc, oc + 1 (records p) of one
 * column -> o[0], o[1]. */
static inline __attribute__((always_inline)) void tinyaot_rq_2x1_sat(const uint32_t acc[2],
                                                                     const int32_t *p, int8_t *o)
{
    uint32_t a0 = acc[0], a1 = acc[1], m, sh, lo, hi;
    /* volatile: its only effect is the stores */
    __asm__ volatile("ldrd %[m], %[sh], [%[p]]\n\t"
                     TINYAOT_RQ_ONE("a0", "8", "o", "0")
                     "ldrd %[m], %[sh], [%[p], #20]\n\t"
                     TINYAOT_RQ_ONE("a1", "28", "o", "1")
                     : [a0] "+r"(a0), [a1] "+r"(a1), [m] "=&r"(m), [sh] "=&r"(sh), [lo] "=&r"(lo),
                       [hi] "=&r"(hi)
                     : [p] "r"(p), [o] "r"(o), [mn] "r"(0x80000000u)
                     : "memory");
}

#if TINYAOT_HAVE_FPU_ASM
/* The same with onnxruntime's float requantization (records p = {bias, scale}
 * of oc, then of oc + 1; TINYAOT_RQF_ONE): 8.5 instructions per output. */
static inline __attribute__((always_inline)) void tinyaot_rqf_2x2_sat(const uint32_t acc[4],
                                                                      const int32_t *p, int32_t zp,
                                                                      int8_t *o0, int8_t *o1)
{
    uint32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    float f, sc;
    /* volatile: its only effect is the stores */
    __asm__ volatile("vldr %[sc], [%[p], #4]\n\t"
                     TINYAOT_RQF_ONE("a00", "o0", "0") TINYAOT_RQF_ONE("a01", "o1", "0")
                     "vldr %[sc], [%[p], #12]\n\t"
                     TINYAOT_RQF_ONE("a10", "o0", "1") TINYAOT_RQF_ONE("a11", "o1", "1")
                     : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11),
                       [f] "=&t"(f), [sc] "=&t"(sc)
                     : [p] "r"(p), [o0] "r"(o0), [o1] "r"(o1), [zp] "r"(zp)
                     : "memory");
}

static inline __attribute__((always_inline)) void tinyaot_rqf_2x1_sat(const uint32_t acc[2],
                                                                      const int32_t *p, int32_t zp,
                                                                      int8_t *o)
{
    uint32_t a0 = acc[0], a1 = acc[1];
    float f, sc;
    /* volatile: its only effect is the stores */
    __asm__ volatile("vldr %[sc], [%[p], #4]\n\t" TINYAOT_RQF_ONE("a0", "o", "0")
                     "vldr %[sc], [%[p], #12]\n\t" TINYAOT_RQF_ONE("a1", "o", "1")
                     : [a0] "+r"(a0), [a1] "+r"(a1), [f] "=&t"(f), [sc] "=&t"(sc)
                     : [p] "r"(p), [o] "r"(o), [zp] "r"(zp)
                     : "memory");
}
#endif

/* acc[0..1] += an output channel pair's rows . one column (2 words per
 * quad), nq >= 1 quads; weights by one LDM into r8-r11 per quad. Two quads
 * per loop pass (7 instructions per 8 MACs), one before when nq is odd.
 * Returns the next pair's weights. */
#define TINYAOT_DOT2X1_QUAD                                                                        \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"                                                          \
    "ldrd %[xa], %[xb], [%[x]], #8\n\t"                                                            \
    "smlad %[a0], %[xa], r8, %[a0]\n\t"                                                            \
    "smlad %[a0], %[xb], r9, %[a0]\n\t"                                                            \
    "smlad %[a1], %[xa], r10, %[a1]\n\t"                                                           \
    "smlad %[a1], %[xb], r11, %[a1]\n\t"
static inline __attribute__((always_inline)) const uint32_t *tinyaot_dot_2x1(const uint32_t *x,
                                                                             const uint32_t *w,
                                                                             int32_t nq,
                                                                             uint32_t acc[2])
{
    uint32_t a0 = acc[0], a1 = acc[1];
    uint32_t xa, xb;
    const uint32_t *xe = x + 2 * nq;
    if (nq & 1) {
        __asm__(TINYAOT_DOT2X1_QUAD
                : [a0] "+r"(a0), [a1] "+r"(a1), [xa] "=&r"(xa), [xb] "=&r"(xb), [x] "+r"(x),
                  [w] "+r"(w)
                :
                : "r8", "r9", "r10", "r11", "memory");
    }
    if (nq > 1) {
        __asm__("1:\n\t" TINYAOT_DOT2X1_QUAD TINYAOT_DOT2X1_QUAD
                "cmp %[x], %[xe]\n\t"
                "bne 1b"
                : [a0] "+r"(a0), [a1] "+r"(a1), [xa] "=&r"(xa), [xb] "=&r"(xb), [x] "+r"(x),
                  [w] "+r"(w)
                : [xe] "r"(xe)
                : "r8", "r9", "r10", "r11", "cc", "memory");
    }
    acc[0] = a0;
    acc[1] = a1;
    return w;
}
#undef TINYAOT_DOT2X1_QUAD
#else
static inline const uint32_t *tinyaot_dot_2x2(const uint32_t *x, const uint32_t *w, int32_t nq,
                                              uint32_t acc[4])
{
    uint32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
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
        w += 4;
    }
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
    return w;
}

static inline const uint32_t *tinyaot_dot_2x2_p(const uint32_t *x, const uint32_t *w, int32_t nq,
                                                uint32_t acc[4], int rem)
{
    (void)rem;
    return tinyaot_dot_2x2(x, w, nq, acc);
}

static inline void tinyaot_rq_2x2_sat(const uint32_t acc[4], const int32_t *p, int8_t *o0,
                                      int8_t *o1)
{
    int8_t *o[4] = {o0, o1, o0 + 1, o1 + 1};
    for (int32_t i = 0; i < 4; ++i) {
        const int32_t *r = p + 5 * (i >> 1);
        *o[i] = (int8_t)__SSAT(
            tinyaot_mbqm_smlal(tinyaot_fp_s32(acc[i]), r[0], r[1], (uint32_t)r[2], r[3]), 8);
    }
}

static inline void tinyaot_rq_2x1_sat(const uint32_t acc[2], const int32_t *p, int8_t *o)
{
    for (int32_t i = 0; i < 2; ++i) {
        const int32_t *r = p + 5 * i;
        o[i] = (int8_t)__SSAT(
            tinyaot_mbqm_smlal(tinyaot_fp_s32(acc[i]), r[0], r[1], (uint32_t)r[2], r[3]), 8);
    }
}

static inline const uint32_t *tinyaot_dot_2x1(const uint32_t *x, const uint32_t *w, int32_t nq,
                                              uint32_t acc[2])
{
    uint32_t a0 = acc[0], a1 = acc[1];
    for (int32_t j = 0; j < nq; ++j) {
        a0 = __SMLAD(x[0], w[0], a0);
        a0 = __SMLAD(x[1], w[1], a0);
        a1 = __SMLAD(x[0], w[2], a1);
        a1 = __SMLAD(x[1], w[3], a1);
        x += 2;
        w += 4;
    }
    acc[0] = a0;
    acc[1] = a1;
    return w;
}
#endif

#if !TINYAOT_HAVE_FPU_ASM
static inline void tinyaot_rqf_2x2_sat(const uint32_t acc[4], const int32_t *p, int32_t zp,
                                       int8_t *o0, int8_t *o1)
{
    int8_t *o[4] = {o0, o1, o0 + 1, o1 + 1};
    for (int32_t i = 0; i < 4; ++i) {
        *o[i] = tinyaot_requant_float_sat(tinyaot_fp_s32(acc[i]), p[2 * (i >> 1) + 1], zp);
    }
}

static inline void tinyaot_rqf_2x1_sat(const uint32_t acc[2], const int32_t *p, int32_t zp,
                                       int8_t *o)
{
    o[0] = tinyaot_requant_float_sat(tinyaot_fp_s32(acc[0]), p[1], zp);
    o[1] = tinyaot_requant_float_sat(tinyaot_fp_s32(acc[1]), p[3], zp);
}
#endif

/* The conv GEMM's weights come in groups of four output channels, 8 words
 * per quad [group][j][half][channel] (half 0: the words {k0, k2}, 1: {k1,
 * k3}; in the order the group loop reads them), then the out_c % 4 channels
 * left in the pairs above (fast_pack.pack_conv_gemm): four channels take a
 * quad of both columns in 12 loads and 16 SMLADs, a pair in 8 loads and 8.
 * The C dots of a group (the portable twin, the modes without an asm loop,
 * a lone column); with the DSP asm the saturating record modes run the
 * group loop below. acc[2c + col] += channel c's row . column col; returns
 * the next group's weights. */
static inline __attribute__((always_inline)) const uint32_t *tinyaot_dot_4x2(const uint32_t *x,
                                                                             const uint32_t *w,
                                                                             int32_t nq,
                                                                             uint32_t acc[8])
{
    for (int32_t j = 0; j < nq; ++j, x += 4, w += 8) {
        for (int32_t c = 0; c < 4; ++c) {
            acc[2 * c] = __SMLAD(x[0], w[c], acc[2 * c]);
            acc[2 * c] = __SMLAD(x[1], w[4 + c], acc[2 * c]);
            acc[2 * c + 1] = __SMLAD(x[2], w[c], acc[2 * c + 1]);
            acc[2 * c + 1] = __SMLAD(x[3], w[4 + c], acc[2 * c + 1]);
        }
    }
    return w;
}

/* acc[c] += channel c's row . one column (2 words per quad). */
static inline __attribute__((always_inline)) const uint32_t *tinyaot_dot_4x1(const uint32_t *x,
                                                                             const uint32_t *w,
                                                                             int32_t nq,
                                                                             uint32_t acc[4])
{
    for (int32_t j = 0; j < nq; ++j, x += 2, w += 8) {
        for (int32_t c = 0; c < 4; ++c) {
            acc[c] = __SMLAD(x[0], w[c], acc[c]);
            acc[c] = __SMLAD(x[1], w[4 + c], acc[c]);
        }
    }
    return w;
}

#if TINYAOT_HAVE_DSP_ASM
/* The saturating-record channel groups (one-SMLAL, or onnxruntime's {bias,
 * scale}) of two interleaved columns in one asm statement: for each group of
 * four output channels, accumulators r6-r12, lr ({channel, column}, in that
 * order) start at the records' biases, the dot product takes the nquads % 4
 * quads straight, then (nquads >= 4) four per loop pass, and the eight
 * outputs are requantized. A half quad (one k pair) is one run of four LDRs
 * (both columns' words, two channels' weight words: 5 cycles on the M4, the
 * loads pipelined), 4 SMLADs, two LDRs of the other two channels' words (3
 * cycles), 4 SMLADs: 32 cycles per 32 MACs, where a channel pair's two LDMs
 * of four and 8 SMLADs took 18 per 16. The cursors (columns r0, weights r1)
 * move by immediate offsets and one ADD per run of quads; loads between low
 * registers within 124 bytes are 16-bit instructions, and four quads a pass
 * keep a group's code (about 0.7 KB) inside a 1 KB instruction cache
 * (docs/cycle-model.md: the STM32L4R5's ART). Every register is the loop's,
 * so its state lives in memory operands (locals of this frame,
 * sp-relative). One function per nquads % 4 and per nquads < 4 or not
 * (tinyaot_gemm_2col_sat), so no jump into the quads. */
typedef struct {
    const uint32_t *col, *col_end, *w;
    const int32_t *p;
    int8_t *o0, *o1;
    const int8_t *o_end;
    int32_t zp;
    uint64_t spill; /* the one-SMLAL records' requantization is two registers short */
} tinyaot_pw_loop_t;

/* The loop's state for the channel groups of pixels o0, o0 + out_c from records
 * p up to output o_end (the caller's frame holds none of it: it is on the asm
 * function's own). */
static inline __attribute__((always_inline)) void tinyaot_pw_loop_init(
    tinyaot_pw_loop_t *L, const uint32_t *cols, int32_t nquads, const uint32_t *w, int32_t out_c,
    const int32_t *p, int32_t zp, int8_t *o0, const int8_t *o_end)
{
    L->col = cols;
    L->col_end = cols + 4 * nquads;
    L->w = w;
    L->p = p;
    L->o0 = o0;
    L->o1 = o0 + out_c;
    L->o_end = o_end;
    L->zp = zp;
    L->spill = 0u;
}

/* Half H of quad Q (H "0": the words {k0, k2} of each, "1": {k1, k3};
 * byte offsets as assembler expressions): a column quad is 4 words
 * [col][half], a weight quad 8 words [half][channel], read in that order.
 * Quads stepped past by their first loads (post-indexed: no ADDs after them), every
 * other load CB (column) or WB (weight) bytes back: a pass of four quads in the loop
 * (CB 64, WB 128). L2 / L4: the half's first column and weight loads. */
#define TINYAOT_PW_LHALF(Q, H, CB, WB, L2, L4)                                                     \
    L2 "ldr r3, [r0, #(16 * " Q " + 8 + 4 * " H " - " CB ")]\n\t"                                 \
    L4 "ldr r5, [r1, #(32 * " Q " + 4 + 16 * " H " - " WB ")]\n\t"                                \
    "smlad r6, r2, r4, r6\n\t"                                                                     \
    "smlad r7, r3, r4, r7\n\t"                                                                     \
    "smlad r8, r2, r5, r8\n\t"                                                                     \
    "smlad r9, r3, r5, r9\n\t"                                                                     \
    "ldr r4, [r1, #(32 * " Q " + 8 + 16 * " H " - " WB ")]\n\t"                                  \
    "ldr r5, [r1, #(32 * " Q " + 12 + 16 * " H " - " WB ")]\n\t"                                 \
    "smlad r10, r2, r4, r10\n\t"                                                                   \
    "smlad r11, r3, r4, r11\n\t"                                                                   \
    "smlad r12, r2, r5, r12\n\t"                                                                   \
    "smlad lr, r3, r5, lr\n\t"
#define TINYAOT_PW_LH(Q, H, CB, WB)                                                                \
    TINYAOT_PW_LHALF(Q, H, CB, WB, "ldr r2, [r0, #(16 * " Q " + 4 * " H " - " CB ")]\n\t",       \
                     "ldr r4, [r1, #(32 * " Q " + 16 * " H " - " WB ")]\n\t")
#define TINYAOT_PW_L1(CB, WB)                                                                      \
    TINYAOT_PW_LHALF("0", "0", CB, WB, "ldr r2, [r0], #" CB "\n\t", "ldr r4, [r1], #" WB "\n\t") \
    TINYAOT_PW_LH("0", "1", CB, WB)
#define TINYAOT_PW_L2(CB, WB)                                                                      \
    TINYAOT_PW_L1(CB, WB) TINYAOT_PW_LH("1", "0", CB, WB) TINYAOT_PW_LH("1", "1", CB, WB)
#define TINYAOT_PW_L3(CB, WB)                                                                      \
    TINYAOT_PW_L2(CB, WB) TINYAOT_PW_LH("2", "0", CB, WB) TINYAOT_PW_LH("2", "1", CB, WB)
#define TINYAOT_PW_L4(CB, WB)                                                                      \
    TINYAOT_PW_L3(CB, WB) TINYAOT_PW_LH("3", "0", CB, WB) TINYAOT_PW_LH("3", "1", CB, WB)
#define TINYAOT_PW_LOOP                                                                            \
    "3:\n\t" TINYAOT_PW_L4("64", "128")                                                           \
    "ldr r2, %[col_end]\n\t"                                                                        \
    "cmp r0, r2\n\t"                                                                               \
    "bne 3b\n\t"
/* The same with every load at its own offset (16-bit encodings) and two ADDs after the
 * quads: 2 cycles more a pass, about 40 bytes less code a loop. onnxruntime's loops
 * (their float requantization is longer) keep this form, and every loop's quads
 * straight before the passes: with the other, vww01 ort's group function and pixel loop
 * left the STM32L4R5's 1 KB instruction cache (+0.23M cycles), and ic01's first conv
 * with its column code (+0.46M). */
#define TINYAOT_PW_QA(Q) TINYAOT_PW_LH(Q, "0", "0", "0") TINYAOT_PW_LH(Q, "1", "0", "0")
#define TINYAOT_PW_QA1 TINYAOT_PW_QA("0")
#define TINYAOT_PW_QA2 TINYAOT_PW_QA1 TINYAOT_PW_QA("1")
#define TINYAOT_PW_QA3 TINYAOT_PW_QA2 TINYAOT_PW_QA("2")
#define TINYAOT_PW_QA4 TINYAOT_PW_QA3 TINYAOT_PW_QA("3")
#define TINYAOT_PW_RUN_A(N)                                                                        \
    TINYAOT_PW_QA##N "adds r0, r0, #(16 * " #N ")\n\t"                                              \
                     "adds r1, r1, #(32 * " #N ")\n\t"
#define TINYAOT_PW_LOOP_A                                                                          \
    "3:\n\t" TINYAOT_PW_RUN_A(4) "ldr r2, %[col_end]\n\t"                                          \
                                 "cmp r0, r2\n\t"                                                  \
                                 "bne 3b\n\t"
/* BIAS: r6, r8, r10, r12 from the records at r0; RQ8: the eight outputs
 * (r0-r5 free, the weight cursor stored), the cursors advanced and stored,
 * the flags set for "bne" to the next group. The loop on the state L. */
#define TINYAOT_PW_ASM(DOT, BIAS, RQ8, ...) /* ...: the extra clobbers */                      \
    __asm__ volatile("1:\n\t"                                                                      \
                     "ldr r0, %[p]\n\t" BIAS                                                       \
                     "mov r7, r6\n\t"                                                              \
                     "mov r9, r8\n\t"                                                              \
                     "mov r11, r10\n\t"                                                            \
                     "mov lr, r12\n\t"                                                             \
                     "ldr r0, %[col]\n\t"                                                          \
                     "ldr r1, %[w]\n\t" DOT                                                        \
                     "str r1, %[w]\n\t" RQ8                                                        \
                     "bne 1b"                                                                      \
                     : [p] "+m"(L.p), [o0] "+m"(L.o0), [o1] "+m"(L.o1), [w] "+m"(L.w),           \
                       [spill] "+m"(L.spill)                                                       \
                     : [col] "m"(L.col), [col_end] "m"(L.col_end), [zp] "m"(L.zp),              \
                       [o_end] "m"(L.o_end)                                                        \
                     : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11",  \
                       "r12", "lr", "cc", "memory" __VA_ARGS__)
/* NAME: every group of the pixel pair; NAME##_1: the one group of weights w
 * (records p) at o0 (tinyaot_convolve_fast_w8_s8 widens a group at a time) */
#define TINYAOT_PW_FN(NAME, DOT, BIAS, RQ8, CLOBBERS)                                              \
    static __attribute__((noinline, unused)) const uint32_t *NAME(                                 \
        const uint32_t *cols, int32_t nquads, const uint32_t *w, int32_t out_c,                    \
        const tinyaot_rqc_t *rq, int8_t *o0)                                                       \
    {                                                                                              \
        tinyaot_pw_loop_t L;                                                                       \
        tinyaot_pw_loop_init(&L, cols, nquads, w, out_c, rq->rq, rq->zp, o0,                       \
                             o0 + 4 * (out_c >> 2));                                               \
        TINYAOT_PW_ASM(DOT, BIAS, RQ8, CLOBBERS);                                                  \
        return L.w;                                                                                \
    }                                                                                              \
    static __attribute__((noinline, unused)) void NAME##_1(                                        \
        const uint32_t *cols, int32_t nquads, const uint32_t *w, int32_t out_c, const int32_t *p,  \
        int32_t zp, int8_t *o0)                                                                    \
    {                                                                                              \
        tinyaot_pw_loop_t L;                                                                       \
        tinyaot_pw_loop_init(&L, cols, nquads, w, out_c, p, zp, o0, o0 + 4);                       \
        TINYAOT_PW_ASM(DOT, BIAS, RQ8, CLOBBERS);                                                  \
    }
/* One-SMLAL records {m, e - 1, R lo, R hi, bias} (20 bytes a channel, the
 * output zero point in R) at r0. Accumulator A -> int8 at [O, #OOFF] (m r4,
 * sh r5 loaded; 0x80000000 in r3; R into r6:r7): TINYAOT_RQ_SMLAL_REGS with
 * the shift and the store on low registers (16-bit instructions; the flags
 * are free until the loop test). Eight registers besides the accumulators:
 * channel 0's two wait in `spill` until channel 3's are done. (The group's
 * bias start TINYAOT_PW_BIAS_SAT and the requantization without the fix,
 * TINYAOT_PW_RQ8_R3, stay defined: tinyaot_convolve_1x1_w8_s8's group loop
 * uses them too.) */
#define TINYAOT_PW_RQ(A, POFF, O, OOFF)                                                            \
    "ldrd r6, r7, [r0, #" POFF "]\n\t" TINYAOT_PW_RQ_BODY(A, O, OOFF)
/* The same for a channel's first output, its record's first four words
 * {m, e - 1, R lo, R hi} at MOFF into r4-r7 (TINYAOT_LDR4: behind the loads
 * before them). */
#define TINYAOT_PW_RQ_FIRST(A, MOFF, O, OOFF)                                                      \
    TINYAOT_LDR4("r0", MOFF, "r4", "r5", "r6", "r7") TINYAOT_PW_RQ_BODY(A, O, OOFF)
#define TINYAOT_PW_RQ_BODY(A, O, OOFF)                                                             \
    "smlal r6, r7, " A ", r4\n\t"                                                                  \
    TINYAOT_RQ_NEG_ASM("", A, "r6", "r7", "r3")                                                    \
    "asrs r7, r7, r5\n\t"                                                                          \
    "ssat r7, #8, r7\n\t"                                                                          \
    "strb r7, [" O ", #" OOFF "]\n\t"
#define TINYAOT_PW_BIAS_SAT                                                                        \
    "ldr r6, [r0, #16]\n\t"                                                                        \
    "ldr r8, [r0, #36]\n\t"                                                                        \
    "ldr r10, [r0, #56]\n\t"                                                                       \
    "ldr r12, [r0, #76]\n\t"
#if TINYAOT_RQ_NEG_FIX
#define TINYAOT_PW_RQ8_SAT                                                                         \
    "strd r6, r7, %[spill]\n\t"                                                                    \
    TINYAOT_RQ_NEG_MN("r3")                                                                      \
    "ldr r0, %[p]\n\t"                                                                             \
    "ldr r1, %[o0]\n\t"                                                                            \
    "ldr r2, %[o1]\n\t"                                                                            \
    TINYAOT_PW_RQ_FIRST("r8", "20", "r1", "1") TINYAOT_PW_RQ("r9", "28", "r2", "1")                \
    TINYAOT_PW_RQ_FIRST("r10", "40", "r1", "2") TINYAOT_PW_RQ("r11", "48", "r2", "2")              \
    TINYAOT_PW_RQ_FIRST("r12", "60", "r1", "3") TINYAOT_PW_RQ("lr", "68", "r2", "3")               \
    "ldrd r8, r9, %[spill]\n\t"                                                                    \
    TINYAOT_PW_RQ_FIRST("r8", "0", "r1", "0") TINYAOT_PW_RQ("r9", "8", "r2", "0")                  \
    TINYAOT_PW_RQ8_TAIL
#else
#define TINYAOT_PW_RQ8_SAT TINYAOT_PW_RQ8_R3(TINYAOT_PW_NO_FIX, TINYAOT_PW_NO_FIX)
#endif
/* Without the sign fix no register holds 0x80000000: m, the shift and R take r3, r4 and
 * r5:r7, and only channel 0's second sum waits in `spill` (one STR and one LDR where
 * STRD and LDRD took six cycles). One output: sum A -> int8 at [O, #OOFF], FIX(A) the
 * sign fix that suits its records (tinyaot_convolve_1x1_w8_s8's, whose hi channels take
 * their own) or TINYAOT_PW_NO_FIX */
#define TINYAOT_PW_NO_FIX(A)
#define TINYAOT_PW_RQ_R3(A, O, OOFF, FIX)                                                          \
    "smlal r5, r7, " A ", r3\n\t" FIX(A) "asrs r7, r7, r4\n\t" "ssat r7, #8, r7\n\t"              \
    "strb r7, [" O ", #" OOFF "]\n\t"
/* a channel's two outputs: its record {m, shift, R lo, R hi} at MOFF (pipelined single
 * loads), R again for the second pixel */
#define TINYAOT_PW_RQ2_R3(A0, A1, MOFF, OOFF, FIX)                                                 \
    TINYAOT_LDR4("r0", MOFF, "r3", "r4", "r5", "r7") TINYAOT_PW_RQ_R3(A0, "r1", OOFF, FIX)         \
    "ldrd r5, r7, [r0, #(" MOFF " + 8)]\n\t" TINYAOT_PW_RQ_R3(A1, "r2", OOFF, FIX)
/* the eight outputs of a group (channels 1, 2, 3, then 0; F0 the fix of channels 0 and
 * 2, F1 of 1 and 3), the cursors stored */
#define TINYAOT_PW_RQ8_R3(F0, F1)                                                                  \
    "str r7, %[spill]\n\t"                                                                         \
    "ldr r0, %[p]\n\t"                                                                             \
    "ldr r1, %[o0]\n\t"                                                                            \
    "ldr r2, %[o1]\n\t"                                                                            \
    TINYAOT_PW_RQ2_R3("r8", "r9", "20", "1", F1) TINYAOT_PW_RQ2_R3("r10", "r11", "40", "2", F0)  \
    TINYAOT_PW_RQ2_R3("r12", "lr", "60", "3", F1)                                                  \
    "ldr r8, %[spill]\n\t" TINYAOT_PW_RQ2_R3("r6", "r8", "0", "0", F0)                            \
    TINYAOT_PW_RQ8_TAIL
/* the cursors past the group stored, the flags for "bne" to the next group */
#define TINYAOT_PW_RQ8_TAIL                                                                        \
    "adds r0, r0, #80\n\t"                                                                         \
    "str r0, %[p]\n\t"                                                                             \
    "adds r1, r1, #4\n\t"                                                                          \
    "str r1, %[o0]\n\t"                                                                            \
    "adds r2, r2, #4\n\t"                                                                          \
    "str r2, %[o1]\n\t"                                                                            \
    "ldr r3, %[o_end]\n\t"                                                                         \
    "cmp r1, r3\n\t"
#define TINYAOT_PW_SAT(NAME, DOT)                                                                  \
    TINYAOT_PW_FN(NAME, DOT, TINYAOT_PW_BIAS_SAT, TINYAOT_PW_RQ8_SAT, )
/* One function per variant FN(name, its dot product): P_s<n> for nquads < 4
 * (its n quads straight), P_l<n> for nquads >= 4 with nquads % 4 = n. */
#define TINYAOT_PW_VARIANTS(FN, P, RUN, LOOP)                                                      \
    FN(P##_s1, RUN(1))                                                                             \
    FN(P##_s2, RUN(2))                                                                             \
    FN(P##_s3, RUN(3))                                                                             \
    FN(P##_l0, LOOP)                                                                               \
    FN(P##_l1, RUN(1) LOOP)                                                                        \
    FN(P##_l2, RUN(2) LOOP)                                                                        \
    FN(P##_l3, RUN(3) LOOP)
TINYAOT_PW_VARIANTS(TINYAOT_PW_SAT, tinyaot_pw, TINYAOT_PW_RUN_A, TINYAOT_PW_LOOP)
#if TINYAOT_HAVE_FPU_ASM
#define TINYAOT_PW_HAVE_FSAT 1
/* onnxruntime's records {bias, scale} (8 bytes a channel) at r0: accumulator
 * A -> int8 at [O, #OUT], the channel's scale in s15, zero point in r3 */
#define TINYAOT_PW_RQF(A, O, OUT)                                                                  \
    TINYAOT_RQF_REGS(A, "s14", "s15", "r3") "strb " A ", [" O ", #" OUT "]\n\t"
#define TINYAOT_PW_BIAS_FSAT                                                                       \
    "ldr r6, [r0]\n\t"                                                                             \
    "ldr r8, [r0, #8]\n\t"                                                                         \
    "ldr r10, [r0, #16]\n\t"                                                                       \
    "ldr r12, [r0, #24]\n\t"
#define TINYAOT_PW_RQ8_FSAT                                                                        \
    "ldr r0, %[p]\n\t"                                                                             \
    "ldr r3, %[zp]\n\t"                                                                            \
    "ldr r1, %[o0]\n\t"                                                                            \
    "ldr r2, %[o1]\n\t"                                                                            \
    "vldr s15, [r0, #4]\n\t"                                                                       \
    TINYAOT_PW_RQF("r6", "r1", "0") TINYAOT_PW_RQF("r7", "r2", "0")                                \
    "vldr s15, [r0, #12]\n\t"                                                                      \
    TINYAOT_PW_RQF("r8", "r1", "1") TINYAOT_PW_RQF("r9", "r2", "1")                                \
    "vldr s15, [r0, #20]\n\t"                                                                      \
    TINYAOT_PW_RQF("r10", "r1", "2") TINYAOT_PW_RQF("r11", "r2", "2")                              \
    "vldr s15, [r0, #28]\n\t"                                                                      \
    TINYAOT_PW_RQF("r12", "r1", "3") TINYAOT_PW_RQF("lr", "r2", "3")                               \
    "adds r0, r0, #32\n\t"                                                                         \
    "str r0, %[p]\n\t"                                                                             \
    "adds r1, r1, #4\n\t"                                                                          \
    "str r1, %[o0]\n\t"                                                                            \
    "adds r2, r2, #4\n\t"                                                                          \
    "str r2, %[o1]\n\t"                                                                            \
    "ldr r4, %[o_end]\n\t"                                                                         \
    "cmp r1, r4\n\t"
#define TINYAOT_PW_CLOB_FSAT , "s14", "s15"
#define TINYAOT_PW_FSAT(NAME, DOT)                                                                 \
    TINYAOT_PW_FN(NAME, DOT, TINYAOT_PW_BIAS_FSAT, TINYAOT_PW_RQ8_FSAT, TINYAOT_PW_CLOB_FSAT)
TINYAOT_PW_VARIANTS(TINYAOT_PW_FSAT, tinyaot_pwf, TINYAOT_PW_RUN_A, TINYAOT_PW_LOOP_A)
#undef TINYAOT_PW_RQF
#undef TINYAOT_PW_BIAS_FSAT
#undef TINYAOT_PW_RQ8_FSAT
#undef TINYAOT_PW_FSAT
#undef TINYAOT_PW_CLOB_FSAT
#else
#define TINYAOT_PW_HAVE_FSAT 0
#endif
#undef TINYAOT_PW_VARIANTS
#undef TINYAOT_PW_SAT
#undef TINYAOT_PW_FN
#undef TINYAOT_PW_ASM
#undef TINYAOT_PW_LOOP
#undef TINYAOT_PW_LHALF
#undef TINYAOT_PW_LH
#undef TINYAOT_PW_L1
#undef TINYAOT_PW_L2
#undef TINYAOT_PW_L3
#undef TINYAOT_PW_L4
#undef TINYAOT_PW_QA
#undef TINYAOT_PW_QA1
#undef TINYAOT_PW_QA2
#undef TINYAOT_PW_QA3
#undef TINYAOT_PW_QA4
#undef TINYAOT_PW_RUN_A
#undef TINYAOT_PW_LOOP_A

/* The channel groups (out_c >= 4: out_c / 4 of them) of two interleaved
 * columns of nquads quads, nquads % 8 = rem (a constant), for pixels o0 and
 * o0 + out_c, records of `mode` (SMLAL_SAT, or FLOAT_SAT with
 * TINYAOT_PW_HAVE_FSAT): the function for nquads % 4 and for nquads < 4 or
 * not. Returns the weights after the last group. */
#define TINYAOT_PW_PICK(P)                                                                         \
    switch (rem & 3) {                                                                             \
    case 1: return shrt ? P##_s1(TINYAOT_PW_ARGS) : P##_l1(TINYAOT_PW_ARGS);                       \
    case 2: return shrt ? P##_s2(TINYAOT_PW_ARGS) : P##_l2(TINYAOT_PW_ARGS);                       \
    case 3: return shrt ? P##_s3(TINYAOT_PW_ARGS) : P##_l3(TINYAOT_PW_ARGS);                       \
    default: return P##_l0(TINYAOT_PW_ARGS);                                                       \
    }
#define TINYAOT_PW_ARGS cols, nquads, w, out_c, rq, o0
static inline __attribute__((always_inline)) const uint32_t *tinyaot_gemm_2col_sat(
    const uint32_t *cols, int32_t nquads, const uint32_t *w, int32_t out_c,
    const tinyaot_rqc_t *rq, int8_t *o0, int mode, int rem)
{
    const int shrt = nquads < 4;
#if TINYAOT_PW_HAVE_FSAT
    if (mode == TINYAOT_RQ_FLOAT_SAT) {
        TINYAOT_PW_PICK(tinyaot_pwf)
    }
#endif
    (void)mode;
    TINYAOT_PW_PICK(tinyaot_pw)
}
#undef TINYAOT_PW_ARGS
#undef TINYAOT_PW_PICK

/* The same loop for one group of four channels: weights w (8 words a quad),
 * records p, outputs at o0 and o0 + out_c. */
#define TINYAOT_PW_PICK1(P)                                                                        \
    switch (rem & 3) {                                                                             \
    case 1: shrt ? P##_s1_1(TINYAOT_PW_ARGS) : P##_l1_1(TINYAOT_PW_ARGS); return;                  \
    case 2: shrt ? P##_s2_1(TINYAOT_PW_ARGS) : P##_l2_1(TINYAOT_PW_ARGS); return;                  \
    case 3: shrt ? P##_s3_1(TINYAOT_PW_ARGS) : P##_l3_1(TINYAOT_PW_ARGS); return;                  \
    default: P##_l0_1(TINYAOT_PW_ARGS); return;                                                    \
    }
#define TINYAOT_PW_ARGS cols, nquads, w, out_c, p, zp, o0
static inline __attribute__((always_inline)) void tinyaot_gemm_group_sat(
    const uint32_t *cols, int32_t nquads, const uint32_t *w, int32_t out_c, const int32_t *p,
    int32_t zp, int8_t *o0, int mode, int rem)
{
    const int shrt = nquads < 4;
#if TINYAOT_PW_HAVE_FSAT
    if (mode == TINYAOT_RQ_FLOAT_SAT) {
        TINYAOT_PW_PICK1(tinyaot_pwf)
    }
#endif
    (void)mode;
    TINYAOT_PW_PICK1(tinyaot_pw)
}
#undef TINYAOT_PW_ARGS
#undef TINYAOT_PW_PICK1
#endif

/* Two interleaved columns x nquads, all out_c channels; o0 / o1 get the
 * requantized outputs of column 0 / 1. (tinyaot_gemm_2col: the modes of
 * tinyaot_rqc, chosen per call; TINYAOT_RQ_FLOAT_SAT layers call
 * tinyaot_gemm_2col_m with the mode as a constant.) With a known rem >= 0 the
 * two columns are consecutive pixels: o1 = o0 + out_c (conv_pixels). */
/* One group of four channels from channel oc in C (tinyaot_dot_4x2), both
 * columns requantized by `mode`; returns the next group's weights. */
static inline __attribute__((always_inline)) const uint32_t *tinyaot_group_2col(
    const uint32_t *cols, int32_t nquads, const uint32_t *wp, const tinyaot_rqc_t *rq, int32_t oc,
    int8_t *o0, int8_t *o1, int mode)
{
    uint32_t acc[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
    if (mode == TINYAOT_RQ_SMLAL_SAT || mode == TINYAOT_RQ_FLOAT_SAT) {
        /* accumulators start at the biases; straight-line requantization */
        const int32_t rw = TINYAOT_RQ_WORDS(mode), rb = TINYAOT_RQ_BIAS(mode);
        const int32_t *p = rq->rq + oc * rw;
        for (int32_t c = 0; c < 4; ++c) {
            acc[2 * c] = acc[2 * c + 1] = (uint32_t)p[c * rw + rb];
        }
        wp = tinyaot_dot_4x2(cols, wp, nquads, acc);
        for (int32_t h = 0; h < 4; h += 2) { /* channel pairs oc + h, oc + h + 1 */
            if (mode == TINYAOT_RQ_FLOAT_SAT) {
                tinyaot_rqf_2x2_sat(acc + 2 * h, p + h * rw, rq->zp, o0 + oc + h, o1 + oc + h);
            } else {
                tinyaot_rq_2x2_sat(acc + 2 * h, p + h * rw, o0 + oc + h, o1 + oc + h);
            }
        }
        return wp;
    }
    wp = tinyaot_dot_4x2(cols, wp, nquads, acc);
    for (int32_t c = 0; c < 4; ++c) {
        tinyaot_rqc_apply2_m(rq, tinyaot_fp_s32(acc[2 * c]), tinyaot_fp_s32(acc[2 * c + 1]),
                             oc + c, o0 + oc + c, o1 + oc + c, mode);
    }
    return wp;
}

/* Channels oc .. out_c - 1 (fewer than four after the groups), in pairs (an
 * odd last one: a zero row). */
static inline __attribute__((always_inline)) void tinyaot_gemm_2col_rest(
    const uint32_t *cols, int32_t nquads, const uint32_t *wp, int32_t out_c,
    const tinyaot_rqc_t *rq, int8_t *o0, int8_t *o1, int32_t oc, int mode, int rem)
{
    if (mode == TINYAOT_RQ_SMLAL_SAT || mode == TINYAOT_RQ_FLOAT_SAT) {
        const int32_t zp = rq->zp;
        const int32_t rw = TINYAOT_RQ_WORDS(mode), rb = TINYAOT_RQ_BIAS(mode);
        const int32_t *p = rq->rq + oc * rw;
        for (; oc + 1 < out_c; oc += 2) {
            uint32_t acc[4] = {(uint32_t)p[rb], (uint32_t)p[rb], (uint32_t)p[rw + rb],
                               (uint32_t)p[rw + rb]};
            wp = tinyaot_dot_2x2_p(cols, wp, nquads, acc, rem);
            if (mode == TINYAOT_RQ_FLOAT_SAT) {
                tinyaot_rqf_2x2_sat(acc, p, zp, o0 + oc, o1 + oc);
            } else {
                tinyaot_rq_2x2_sat(acc, p, o0 + oc, o1 + oc);
            }
            p += 2 * rw;
        }
    }
    for (; oc < out_c; oc += 2) {
        uint32_t acc[4] = {0u, 0u, 0u, 0u};
        wp = tinyaot_dot_2x2(cols, wp, nquads, acc);
        tinyaot_rqc_apply2_m(rq, tinyaot_fp_s32(acc[0]), tinyaot_fp_s32(acc[1]), oc, o0 + oc,
                             o1 + oc, mode);
        if (oc + 1 < out_c) {
            tinyaot_rqc_apply2_m(rq, tinyaot_fp_s32(acc[2]), tinyaot_fp_s32(acc[3]), oc + 1,
                                 o0 + oc + 1, o1 + oc + 1, mode);
        }
    }
}

#if TINYAOT_HAVE_DSP_ASM
/* The channels left after the asm groups, out of the pixel loop's way: its
 * code and the group function stay within the instruction cache. */
static __attribute__((noinline, unused)) void tinyaot_pw_rest(const uint32_t *cols,
                                                               int32_t nquads, const uint32_t *wp,
                                                               int32_t out_c,
                                                               const tinyaot_rqc_t *rq,
                                                               int8_t *o0, int mode)
{
    const int32_t oc = out_c & ~3;
    if (mode == TINYAOT_RQ_FLOAT_SAT) {
        tinyaot_gemm_2col_rest(cols, nquads, wp, out_c, rq, o0, o0 + out_c, oc,
                               TINYAOT_RQ_FLOAT_SAT, -1);
    } else {
        tinyaot_gemm_2col_rest(cols, nquads, wp, out_c, rq, o0, o0 + out_c, oc,
                               TINYAOT_RQ_SMLAL_SAT, -1);
    }
}
#endif

static inline __attribute__((always_inline)) void tinyaot_gemm_2col_m(
    const uint32_t *cols, int32_t nquads, const int32_t *w, int32_t out_c, const tinyaot_rqc_t *rq,
    int8_t *o0, int8_t *o1, int mode, int rem)
{
    const uint32_t *wp = (const uint32_t *)(const void *)w;
    int32_t oc = 0;
#if TINYAOT_HAVE_DSP_ASM
    if ((mode == TINYAOT_RQ_SMLAL_SAT || (mode == TINYAOT_RQ_FLOAT_SAT && TINYAOT_PW_HAVE_FSAT)) &&
        rem >= 0) { /* pixels o0 and o1 = o0 + out_c (conv_pixels' pairs) */
        if (out_c > 3) {
            wp = tinyaot_gemm_2col_sat(cols, nquads, wp, out_c, rq, o0, mode, rem);
        }
        if (out_c & 3) {
            tinyaot_pw_rest(cols, nquads, wp, out_c, rq, o0, mode);
        }
        return;
    }
#endif
    for (; oc + 3 < out_c; oc += 4) {
        wp = tinyaot_group_2col(cols, nquads, wp, rq, oc, o0, o1, mode);
    }
    tinyaot_gemm_2col_rest(cols, nquads, wp, out_c, rq, o0, o1, oc, mode, rem);
}

/* modes: the modes compiled (bit TINYAOT_RQ_*, a constant, tinyaot_specialize.h); the
 * caller has refused the others. */
static inline __attribute__((always_inline)) void tinyaot_gemm_2col(const uint32_t *cols, int32_t nquads, const int32_t *w,
                                     int32_t out_c, const tinyaot_rqc_t *rq, int8_t *o0,
                                     int8_t *o1, unsigned modes)
{
    switch (rq->mode) {
    case TINYAOT_RQ_ORT:
        if ((modes >> TINYAOT_RQ_ORT) & 1u)
            tinyaot_gemm_2col_m(cols, nquads, w, out_c, rq, o0, o1, TINYAOT_RQ_ORT, -1);
        break;
    case TINYAOT_RQ_TFLITE:
        if ((modes >> TINYAOT_RQ_TFLITE) & 1u)
            tinyaot_gemm_2col_m(cols, nquads, w, out_c, rq, o0, o1, TINYAOT_RQ_TFLITE, -1);
        break;
    case TINYAOT_RQ_SMLAL:
        if ((modes >> TINYAOT_RQ_SMLAL) & 1u)
            tinyaot_gemm_2col_m(cols, nquads, w, out_c, rq, o0, o1, TINYAOT_RQ_SMLAL, -1);
        break;
    default: /* (tinyaot_convolve_fast_s8 has its own loops for this mode) */
        if ((modes >> TINYAOT_RQ_SMLAL_SAT) & 1u)
            tinyaot_gemm_2col_m(cols, nquads, w, out_c, rq, o0, o1, TINYAOT_RQ_SMLAL_SAT, -1);
        break;
    }
}

/* One column x nquads: the groups of four channels, then the channels left
 * two at a time. */
static inline __attribute__((always_inline)) void tinyaot_gemm_1col(const uint32_t *col, int32_t nquads, const int32_t *w,
                                     int32_t out_c, const tinyaot_rqc_t *rq, int8_t *o,
                                     unsigned modes)
{
    const uint32_t *wp = (const uint32_t *)(const void *)w;
    int32_t oc = 0;
    if (((modes >> TINYAOT_RQ_SMLAL_SAT) & 1u) && rq->mode == TINYAOT_RQ_SMLAL_SAT) { /* as in tinyaot_gemm_2col_m */
        const int32_t *p = rq->rq;
        for (; oc + 3 < out_c; oc += 4, p += 20) {
            uint32_t acc[4] = {(uint32_t)p[4], (uint32_t)p[9], (uint32_t)p[14], (uint32_t)p[19]};
            wp = tinyaot_dot_4x1(col, wp, nquads, acc);
            tinyaot_rq_2x1_sat(acc, p, o + oc);
            tinyaot_rq_2x1_sat(acc + 2, p + 10, o + oc + 2);
        }
        for (; oc + 1 < out_c; oc += 2) {
            uint32_t acc[2] = {(uint32_t)p[4], (uint32_t)p[9]};
            wp = tinyaot_dot_2x1(col, wp, nquads, acc);
            tinyaot_rq_2x1_sat(acc, p, o + oc);
            p += 10;
        }
    }
    for (; oc + 3 < out_c; oc += 4) {
        uint32_t acc[4] = {0u, 0u, 0u, 0u};
        wp = tinyaot_dot_4x1(col, wp, nquads, acc);
        for (int32_t c = 0; c < 4; ++c) {
            o[oc + c] = tinyaot_rqc_apply_in(rq, tinyaot_fp_s32(acc[c]), oc + c, modes);
        }
    }
    for (; oc < out_c; oc += 2) {
        uint32_t acc[2] = {0u, 0u};
        wp = tinyaot_dot_2x1(col, wp, nquads, acc);
        o[oc] = tinyaot_rqc_apply_in(rq, tinyaot_fp_s32(acc[0]), oc, modes);
        if (oc + 1 < out_c) {
            o[oc + 1] = tinyaot_rqc_apply_in(rq, tinyaot_fp_s32(acc[1]), oc + 1, modes);
        }
    }
}

/* tinyaot_gemm_1col for TINYAOT_RQ_FLOAT_SAT (records {bias, scale}); out_c even
 * or odd, as there. */
static inline __attribute__((always_inline)) void tinyaot_gemm_1col_float_sat(
    const uint32_t *col, int32_t nquads, const int32_t *w, int32_t out_c, const tinyaot_rqc_t *rq,
    int8_t *o)
{
    const uint32_t *wp = (const uint32_t *)(const void *)w;
    const int32_t *p = rq->rq;
    int32_t oc = 0;
    for (; oc + 3 < out_c; oc += 4, p += 8) {
        uint32_t acc[4] = {(uint32_t)p[0], (uint32_t)p[2], (uint32_t)p[4], (uint32_t)p[6]};
        wp = tinyaot_dot_4x1(col, wp, nquads, acc);
        tinyaot_rqf_2x1_sat(acc, p, rq->zp, o + oc);
        tinyaot_rqf_2x1_sat(acc + 2, p + 4, rq->zp, o + oc + 2);
    }
    for (; oc + 1 < out_c; oc += 2, p += 4) {
        uint32_t acc[2] = {(uint32_t)p[0], (uint32_t)p[2]};
        wp = tinyaot_dot_2x1(col, wp, nquads, acc);
        tinyaot_rqf_2x1_sat(acc, p, rq->zp, o + oc);
    }
    if (oc < out_c) { /* the last, odd channel: its packed pair has a zero row */
        uint32_t acc[2] = {(uint32_t)p[0], 0u};
        tinyaot_dot_2x1(col, wp, nquads, acc);
        o[oc] = tinyaot_requant_float_sat(tinyaot_fp_s32(acc[0]), p[1], rq->zp);
    }
}

#endif
