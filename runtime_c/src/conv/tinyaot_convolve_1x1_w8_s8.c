/* Fast int8 1x1 convolution (stride 1, no padding, groups 1, out_c % 4 == 0)
 * with int8 weights in flash, two output channels per int16 lane: the
 * pointwise layers' form of tinyaot_fully_connected_fast_w8_s8 (see there,
 * and docs/kernels.md). Channels (lo, hi) = (2p, 2p + 1) are stored as one
 * halfword per input k, H = 256 * w_hi[k] + w_lo[k]; per weight word one
 * SXTB16 and, for each of the two pixels of a pair, two SMLADs:
 *   A += SMLAD(word, x)          256 * hi's products + lo's,
 *   S += SMLAD(SXTB16(word), x)  lo's products,
 * and hi's sum is (A - S) / 256. S starts at lo's bias, A at the record's
 * start word (hi's fifth record word: lo's bias + 256 * hi's bias, mod
 * 2^32, codegen/kernels/fast_pack.py:pair_records), so hi's sum comes out
 * with its bias; the compiler checks that it stays within [-2^23, 2^23)
 * for every input (pack_conv_pairs) and keeps the int16 fast conv where it
 * does not.
 *
 * Stream: per group of four channels (two pairs), per quad of k, the words
 * pair 0 {H0, H2}, pair 1 {H0, H2}, pair 0 {H1, H3}, pair 1 {H1, H3} (the
 * column halves' order). Columns: two pixels at a time, interleaved per quad
 * (widen_pixel_pair2: the fast conv's pointwise columns, two quads a pass), an odd last pixel in
 * a pair with the one before it (its bytes stored again). Requantization: the
 * one-SMLAL records over the whole int8 range (else TINYAOT_ERR_ARG).
 *
 * With the DSP extension (optimized builds, 4 quads or more) every group of a
 * pixel pair runs in one asm statement: per quad 30 cycles for 32 MACs on the
 * M4 where the int16 kernel's group loop takes 32; the quads left after the
 * loop's passes of four (nquads % 4 != 0: a function of their own) run
 * straight, entered part way. Elsewhere the same integers in C on the
 * intrinsics of tinyaot_intrinsics.h. */
/* the one-SMLAL sign fix where this model's layers need it (tinyaot_requant_fast.h) */
#define TINYAOT_RQ_FIX_BIT TINYAOT_SPEC_FIX_1X1
#include "../internal/tinyaot_specialize.h"
#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_fixedpoint.h"
#include "../internal/tinyaot_gemm_q15.h"

#if TINYAOT_HAVE_DSP_ASM && defined(__OPTIMIZE__)
#define C1_ASM 1
#else
#define C1_ASM 0
#endif

int32_t tinyaot_convolve_1x1_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d)
{
    return 2 * 4 * ((d->in_c + 3) / 4) * (int32_t)sizeof(int16_t);
}

/* A sum, bias included, -> int8 through one-SMLAL record p (saturating). */
static inline int8_t c1_out(const int32_t *p, int32_t v)
{
    return (int8_t)__SSAT(tinyaot_mbqm_smlal(v, p[0], p[1], (uint32_t)p[2], p[3]), 8);
}

/* A hi channel's A - S = 256 times its sum -> int8 through its record p, which
 * fast_pack.pair_records scaled for that (R times 256, the shift 8 more): the same
 * result with the sign fix 256 times larger, and no shift of the sum first. */
static inline int8_t c1_out_hi(const int32_t *p, int32_t v)
{
    const uint64_t r = ((uint64_t)(uint32_t)p[3] << 32) | (uint64_t)(uint32_t)p[2];
    const uint64_t fix = TINYAOT_RQ_NEG_FIX ? (uint64_t)((uint32_t)v >> 31) << 39 : 0u;
    const uint64_t s = r + (uint64_t)((int64_t)v * (int64_t)p[0]) - fix;
    return (int8_t)__SSAT(tinyaot_fp_asr(tinyaot_fp_s32((uint32_t)(s >> 32)), p[1]), 8);
}

/* The groups of one pixel pair in C: columns cols (per quad px0 {k0, k2},
 * px0 {k1, k3}, px1 {k0, k2}, px1 {k1, k3}), outputs o0, o1. */
static void c1_groups(const uint32_t *cols, int32_t nq, const uint32_t *w, int32_t out_c,
                      const int32_t *rq, int8_t *o0, int8_t *o1)
{
    for (int32_t ch = 0; ch < out_c; ch += 4, rq += 20) {
        uint32_t a[2][2], s[2][2];
        for (int32_t p = 0; p < 2; ++p) {
            s[p][0] = s[p][1] = (uint32_t)rq[10 * p + 4];
            a[p][0] = a[p][1] = (uint32_t)rq[10 * p + 9];
        }
        for (int32_t j = 0; j < nq; ++j, w += 4) {
            for (int32_t h = 0; h < 2; ++h) {
                const uint32_t x0 = cols[4 * j + h], x1 = cols[4 * j + 2 + h];
                for (int32_t p = 0; p < 2; ++p) {
                    const uint32_t u = w[2 * h + p], t = __SXTB16(u);
                    a[p][0] = __SMLAD(u, x0, a[p][0]);
                    a[p][1] = __SMLAD(u, x1, a[p][1]);
                    s[p][0] = __SMLAD(t, x0, s[p][0]);
                    s[p][1] = __SMLAD(t, x1, s[p][1]);
                }
            }
        }
        for (int32_t p = 0; p < 2; ++p) {
            const int32_t *lo = rq + 10 * p, *hi = lo + 5;
            for (int32_t x = 0; x < 2; ++x) {
                int8_t *o = x ? o1 : o0;
                o[ch + 2 * p] = c1_out(lo, tinyaot_fp_s32(s[p][x]));
                o[ch + 2 * p + 1] = c1_out_hi(hi, tinyaot_fp_s32(a[p][x] - s[p][x]));
            }
        }
    }
}

#if C1_ASM
/* Registers: columns r0, weights r1, column words r2 (px0), r3 (px1),
 * weight words r4 (pair 0), r5 (pair 1; their SXTB16 in place); sums
 * pair 0 S px0 r6, px1 r7, A px0 r8, px1 r9, pair 1 S r10, r11, A r12, lr:
 * channel c's two pixels where the fast conv's group loop has them, so that
 * its bias start and requantization serve (tinyaot_gemm_q15.h:
 * TINYAOT_PW_BIAS_SAT, TINYAOT_PW_RQ8_R3; hi's start is in its record's
 * bias word). Every register is the loop's, so its state is in memory
 * operands. */
typedef struct {
    const uint32_t *col, *col_end4; /* the columns, past their last whole 4 quads */
    const uint32_t *w;
    const int32_t *p;
    int8_t *o0, *o1;
    const int8_t *o_end;
    uint32_t skip; /* bytes of the straight quads to skip, + 1 (Thumb) */
    uint32_t tail; /* set by the asm: the entry into the straight quads */
    uint32_t remb; /* bytes of weights the straight quads read (16 a quad) */
    uint64_t spill;
} c1_loop_t;

#define C1_QUAD_BYTES 96u /* 8 16-bit LDRs and 20 32-bit DSP instructions */
#define C1_HALF(Q, H)                                                                              \
    "ldr r2, [r0, #(16 * " Q " + 4 * " H ")]\n\t"                                                  \
    "ldr r3, [r0, #(16 * " Q " + 8 + 4 * " H ")]\n\t"                                              \
    "ldr r4, [r1, #(16 * " Q " + 8 * " H ")]\n\t"                                                  \
    "ldr r5, [r1, #(16 * " Q " + 8 * " H " + 4)]\n\t"                                              \
    "smlad r8, r4, r2, r8\n\t" "smlad r9, r4, r3, r9\n\t" "sxtb16 r4, r4\n\t"                     \
    "smlad r6, r4, r2, r6\n\t" "smlad r7, r4, r3, r7\n\t"                                         \
    "smlad r12, r5, r2, r12\n\t" "smlad lr, r5, r3, lr\n\t" "sxtb16 r5, r5\n\t"                   \
    "smlad r10, r5, r2, r10\n\t" "smlad r11, r5, r3, r11\n\t"
#define C1_QUAD(Q) C1_HALF(Q, "0") C1_HALF(Q, "1")
/* The same in the loop's passes, whose first quad's first loads step r0 and r1 past the
 * pass (post-indexed: the two ADDs a pass saved), the other loads 64 bytes back */
#define C1_LHALF(Q, H, L0, L1)                                                                     \
    L0 "ldr r3, [r0, #(16 * " Q " + 8 + 4 * " H " - 64)]\n\t"                                     \
    L1 "ldr r5, [r1, #(16 * " Q " + 8 * " H " + 4 - 64)]\n\t"                                     \
    "smlad r8, r4, r2, r8\n\t" "smlad r9, r4, r3, r9\n\t" "sxtb16 r4, r4\n\t"                     \
    "smlad r6, r4, r2, r6\n\t" "smlad r7, r4, r3, r7\n\t"                                         \
    "smlad r12, r5, r2, r12\n\t" "smlad lr, r5, r3, lr\n\t" "sxtb16 r5, r5\n\t"                   \
    "smlad r10, r5, r2, r10\n\t" "smlad r11, r5, r3, r11\n\t"
#define C1_LOADS(Q, H)                                                                             \
    "ldr r2, [r0, #(16 * " Q " + 4 * " H " - 64)]\n\t"                                            \
    , "ldr r4, [r1, #(16 * " Q " + 8 * " H " - 64)]\n\t"
#define C1_LHALF_(Q, H, LOADS) C1_LHALF_X(Q, H, LOADS)
#define C1_LHALF_X(Q, H, L0, L1) C1_LHALF(Q, H, L0, L1)
#define C1_LQUAD(Q) C1_LHALF_(Q, "0", C1_LOADS(Q, "0")) C1_LHALF_(Q, "1", C1_LOADS(Q, "1"))

/* A group's start: S at lo's bias, A at the start word in hi's record */
#define C1_HEAD                                                                                    \
    "1:\n\t"                                                                                       \
    "ldr r0, %[p]\n\t" TINYAOT_PW_BIAS_SAT                                                         \
    "ldr r0, %[col]\n\t"                                                                           \
    "ldr r1, %[w]\n\t"                                                                             \
    "mov r7, r6\n\t"                                                                               \
    "mov r9, r8\n\t"                                                                               \
    "mov r11, r10\n\t"                                                                             \
    "mov lr, r12\n\t"
/* the passes of four quads */
#define C1_LOOP                                                                                    \
    "3:\n\t" C1_LHALF("0", "0", "ldr r2, [r0], #64\n\t", "ldr r4, [r1], #64\n\t")                 \
    C1_LHALF_("0", "1", C1_LOADS("0", "1")) C1_LQUAD("1") C1_LQUAD("2") C1_LQUAD("3")            \
    "ldr r2, %[col_end4]\n\t"                                                                      \
    "cmp r0, r2\n\t"                                                                               \
    "bne 3b\n\t"
/* An output's sign fix for TINYAOT_PW_RQ_R3 (R in r5:r7): lo's (- [A < 0] * 2^31 on the
 * 64-bit sum) or hi's (- [A < 0] * 2^39: its records are 256 times lo's, as its sum;
 * c1_out_hi), or none (tinyaot_requant_fast.h: TINYAOT_RQ_NEG_FIX). */
#if TINYAOT_RQ_NEG_FIX
#define C1_FIX_LO(A) "lsrs " A ", " A ", #31\n\t" "subs r5, r5, " A ", lsl #31\n\t" "sbc r7, r7, #0\n\t"
#define C1_FIX_HI(A) "lsrs " A ", " A ", #31\n\t" "sub r7, r7, " A ", lsl #7\n\t"
#else
#define C1_FIX_LO(A)
#define C1_FIX_HI(A)
#endif
/* the weights past the group stored, hi's sums A - S (256 times their sums with their
 * biases), the eight outputs requantized (tinyaot_gemm_q15.h: TINYAOT_PW_RQ8_R3, one sum
 * spilled; hi's and lo's fixes), the next group */
#define C1_RQ8                                                                                     \
    "str r1, %[w]\n\t"                                                                             \
    "sub r8, r8, r6\n\t" "sub r9, r9, r7\n\t" "sub r12, r12, r10\n\t" "sub lr, lr, r11\n\t"     \
    TINYAOT_PW_RQ8_R3(C1_FIX_LO, C1_FIX_HI) "bne 1b"
#define C1_OPS                                                                                     \
    : [w] "+m"(L.w), [p] "+m"(L.p), [o0] "+m"(L.o0), [o1] "+m"(L.o1), [tail] "+m"(L.tail),       \
      [spill] "+m"(L.spill)                                                                        \
    : [col] "m"(L.col), [col_end4] "m"(L.col_end4), [o_end] "m"(L.o_end), [skip] "m"(L.skip),    \
      [remb] "m"(L.remb)                                                                           \
    : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr",     \
      "cc", "memory"

/* Every pixel pair of a layer in one function, its loop's state (the asm's memory
 * operands, this frame's) built once: a call per pixel pair cost about 45 cycles of
 * pushes, pops and state. NAME: the groups' asm ASM (C1_OPS appended). */
#define C1_PIXELS_FN(NAME, ASM)                                                                    \
    static __attribute__((noinline)) void NAME(const int8_t *input, int32_t npix, int32_t cin,  \
                                               int32_t nq, const uint32_t *w, const int32_t *rq, \
                                               int8_t *output, int32_t out_c, uint32_t *col,     \
                                               uint32_t off, int32_t in_zp)                      \
    {                                                                                              \
        c1_loop_t L;                                                                               \
        L.col = col;                                                                               \
        L.col_end4 = col + 4 * (nq & ~3);                                                          \
        L.skip = (3u - (uint32_t)(nq & 3)) * C1_QUAD_BYTES + 1u;                                   \
        L.tail = 0u;                                                                               \
        L.remb = 16u * (uint32_t)(nq & 3);                                                         \
        L.spill = 0u;                                                                              \
        for (int32_t p = 0; p < npix; p += 2) {                                                    \
            p -= p + 1 == npix && p > 0; /* the odd last pixel: with the one before it */        \
            const int32_t p1 = p + 1 < npix ? p + 1 : p;                                           \
            if (p1 == p + 1) {                                                                     \
                widen_pixel_pair2(input + p * cin, cin, col, off, in_zp);                          \
            } else { /* one pixel: the same column twice */                                        \
                widen_run_st(input + p * cin, cin, col, 4, off, in_zp);                            \
                widen_run_st(input + p * cin, cin, col + 2, 4, off, in_zp);                        \
            }                                                                                      \
            L.w = w;                                                                               \
            L.p = rq;                                                                              \
            L.o0 = output + p * out_c;                                                             \
            L.o1 = output + p1 * out_c;                                                            \
            L.o_end = L.o0 + out_c;                                                                \
            __asm__ volatile(ASM C1_OPS);                                                          \
        }                                                                                          \
    }

/* nquads % 4 == 0: the passes alone */
C1_PIXELS_FN(c1_pixels_asm, C1_HEAD C1_LOOP C1_RQ8)
/* nquads % 4 != 0: then the quads left, straight, entered part way (any order: exact
 * sums), the weights past them */
C1_PIXELS_FN(c1_pixels_tail_asm,
             "adr.w r2, 5f\n\t" /* the straight quads' entry, once per pixel pair */
             "ldr r3, %[skip]\n\t"
             "add r2, r2, r3\n\t"
             "str r2, %[tail]\n\t"
             C1_HEAD C1_LOOP
             "ldr r2, %[tail]\n\t"
             "bx r2\n\t"
             "5:\n\t" C1_QUAD("2") C1_QUAD("1") C1_QUAD("0")
             "ldr r2, %[remb]\n\t"
             "add r1, r1, r2\n\t"
             C1_RQ8)
#undef C1_PIXELS_FN
#undef C1_HEAD
#undef C1_LOOP
#undef C1_RQ8
#undef C1_OPS
#undef C1_HALF
#undef C1_QUAD
#undef C1_FIX_LO
#undef C1_FIX_HI
#undef C1_LHALF
#undef C1_LOADS
#undef C1_LHALF_
#undef C1_LHALF_X
#undef C1_LQUAD
#endif

int tinyaot_convolve_1x1_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                               const int8_t *input, const int32_t *packed_weights,
                               uint32_t *scratch, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    if (d->groups != 1 || d->k_h != 1 || d->k_w != 1 || d->stride_h != 1 || d->stride_w != 1 ||
        d->pad_top != 0 || d->pad_left != 0 || d->in_h != d->out_h || d->in_w != d->out_w ||
        (d->out_c & 3) != 0 || rq.mode != TINYAOT_RQ_SMLAL_SAT) {
        return TINYAOT_ERR_ARG;
    }
    if (!tinyaot_rq_fix_built(q)) {
        return TINYAOT_ERR_NOT_BUILT; /* the sign fix it needs is not compiled */
    }
    const int32_t cin = d->in_c, out_c = d->out_c, nq = (cin + 3) / 4;
    const int32_t npix = d->out_h * d->out_w;
    const uint32_t off = tinyaot_pack16(-q->in_zp, -q->in_zp);
    const uint32_t *w = (const uint32_t *)(const void *)packed_weights;
#if C1_ASM
    if (nq >= 4) {
        if (nq & 3) {
            c1_pixels_tail_asm(input, npix, cin, nq, w, rq.rq, output, out_c, scratch, off,
                               q->in_zp);
        } else {
            c1_pixels_asm(input, npix, cin, nq, w, rq.rq, output, out_c, scratch, off, q->in_zp);
        }
        return TINYAOT_OK;
    }
#endif
    for (int32_t p = 0; p < npix; p += 2) {
        p -= p + 1 == npix && p > 0; /* the odd last pixel: with the one before it */
        const int32_t p1 = p + 1 < npix ? p + 1 : p;
        if (p1 == p + 1) {
            widen_pixel_pair2(input + p * cin, cin, scratch, off, q->in_zp);
        } else { /* one pixel: the same column twice */
            widen_run_st(input + p * cin, cin, scratch, 4, off, q->in_zp);
            widen_run_st(input + p * cin, cin, scratch + 2, 4, off, q->in_zp);
        }
        c1_groups(scratch, nq, w, out_c, rq.rq, output + p * out_c, output + p1 * out_c);
    }
    return TINYAOT_OK;
}
