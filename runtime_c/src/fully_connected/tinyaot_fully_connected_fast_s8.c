/* Fast int8 fully connected. Each input row is widened once (minus the input
 * zero point) into one int16 column in scratch; then the output features go
 * four at a time with their four accumulators (started at the biases) in
 * registers over the whole K, against weights packed for exactly that read
 * order (codegen/backend/fast_pack.py:pack_gemm(w, 4)): per quad of K one
 * LDRD of the column and two LDM of weights feed eight SMLAD, 11 instructions
 * per 16 MACs. The four results are requantized together: ort in VFP
 * (float(acc) * scale, VCVTR rounds half to even), tflite by the one-SMLAL
 * form (tinyaot_requant_fast.h). The saturating modes (every MLPerf layer)
 * run the whole group loop in one asm statement (fc_groups_asm); the others,
 * a group left over when N % 4 != 0 and the portable twin go through C.
 * ort layers whose requantization has an exact fixed-point form
 * (codegen/backend/ort_requant_fixed.py; q has no scale, multipliers, records
 * or bias) carry it inline in the weight stream (fast_pack.pack_gemm_fixed):
 * per group [B0..B3] (the accumulators' start), the weights, [M0..M3,
 * R0..R3]; each output is USAT8(SMMLAR(acc, M, R)) - 128. */
#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_gemm_q15.h"

#define FC_UNROLL 8         /* quads per loop pass (C-driven loop) */
#define FC_RQ_ORT_SAT 4 /* TINYAOT_RQ_ORT with [lo, hi] = [-128, 127]: no bytewise clamp */
#define FC_RQ_ORT_USAT 5 /* FC_RQ_ORT_SAT with zero point -128 (asm group loop only) */

/* The asm needs all 14 free core registers: optimized builds only (at -O0
 * GCC cannot allocate them; the portable C twin is used there). */
#if TINYAOT_HAVE_DSP_ASM && defined(__OPTIMIZE__)
#define FC_ASM 1
#else
#define FC_ASM 0
#endif
#if FC_ASM && defined(__ARM_FP) && (__ARM_FP & 4)
#define FC_VFP_ASM 1
#else
#define FC_VFP_ASM 0
#endif

int32_t tinyaot_fully_connected_fast_s8_get_buffer_size(int32_t in_features)
{
    return ((in_features + 3) / 4) * 4 * (int32_t)sizeof(int16_t);
}

#if FC_ASM
/* a0..a3 += rows 0..3 . column over one quad (x: 2 words, w: 8 words). */
#define FC_DOT4_QUAD                                                                               \
    "ldrd %[xa], %[xb], [%[x]], #8\n\t"                                                            \
    "ldmia.w %[w]!, {r8, r9, r10, r11}\n\t"                                                        \
    "smlad %[a0], %[xa], r8, %[a0]\n\t"                                                            \
    "smlad %[a0], %[xb], r9, %[a0]\n\t"                                                            \
    "smlad %[a1], %[xa], r10, %[a1]\n\t"                                                           \
    "smlad %[a1], %[xb], r11, %[a1]\n\t"                                                           \
    "ldmia.w %[w]!, {r8, r9, r10, r11}\n\t"                                                        \
    "smlad %[a2], %[xa], r8, %[a2]\n\t"                                                            \
    "smlad %[a2], %[xb], r9, %[a2]\n\t"                                                            \
    "smlad %[a3], %[xa], r10, %[a3]\n\t"                                                           \
    "smlad %[a3], %[xb], r11, %[a3]\n\t"
#define FC_DOT4_OPERANDS                                                                           \
    : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xa] "=&r"(xa), [xb] "=&r"(xb),  \
      [x] "+r"(x), [w] "+r"(w)                                                                     \
    : [xe] "r"(xe)                                                                                 \
    : "r8", "r9", "r10", "r11", "cc", "memory"

/* nq >= 1 quads: nq % FC_UNROLL single quads first, then whole passes
 * (`unrolled` 0, for a once-per-call group: single quads only, less code).
 * Returns the next group's weights. */
static inline __attribute__((always_inline)) const uint32_t *fc_dot4(const uint32_t *x,
                                                                     const uint32_t *w,
                                                                     int32_t nq, uint32_t acc[4],
                                                                     int unrolled)
{
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], xa, xb;
    const uint32_t *xe = x + 2 * (unrolled ? nq % FC_UNROLL : nq);
    if (x != xe) {
        __asm__("1:\n\t" FC_DOT4_QUAD "cmp %[x], %[xe]\n\t"
                "bne 1b" FC_DOT4_OPERANDS);
    }
    xe = x + 2 * (nq - nq % FC_UNROLL);
    if (unrolled && x != xe) {
        __asm__("1:\n\t" FC_DOT4_QUAD FC_DOT4_QUAD FC_DOT4_QUAD FC_DOT4_QUAD FC_DOT4_QUAD
                FC_DOT4_QUAD FC_DOT4_QUAD FC_DOT4_QUAD "cmp %[x], %[xe]\n\t"
                "bne 1b" FC_DOT4_OPERANDS);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
    return w;
}
#undef FC_DOT4_OPERANDS
#else
static inline const uint32_t *fc_dot4(const uint32_t *x, const uint32_t *w, int32_t nq,
                                      uint32_t acc[4], int unrolled)
{
    (void)unrolled;
    for (int32_t j = 0; j < nq; ++j) {
        for (int32_t r = 0; r < 4; ++r) {
            acc[r] = __SMLAD(x[0], w[2 * r], acc[r]);
            acc[r] = __SMLAD(x[1], w[2 * r + 1], acc[r]);
        }
        x += 2;
        w += 8;
    }
    return w;
}
#endif

#if FC_VFP_ASM
/* ort: s0-s3 (four int32 accumulators) * s4-s7 (their scales), rounded half
 * to even (VCVTR), into a0..a3 */
#define FC_ORT_ROUND4                                                                              \
    "vcvt.f32.s32 s0, s0\n\t"                                                                      \
    "vcvt.f32.s32 s1, s1\n\t"                                                                      \
    "vcvt.f32.s32 s2, s2\n\t"                                                                      \
    "vcvt.f32.s32 s3, s3\n\t"                                                                      \
    "vmul.f32 s0, s0, s4\n\t"                                                                      \
    "vmul.f32 s1, s1, s5\n\t"                                                                      \
    "vmul.f32 s2, s2, s6\n\t"                                                                      \
    "vmul.f32 s3, s3, s7\n\t"                                                                      \
    "vcvtr.s32.f32 s0, s0\n\t"                                                                     \
    "vcvtr.s32.f32 s1, s1\n\t"                                                                     \
    "vcvtr.s32.f32 s2, s2\n\t"                                                                     \
    "vcvtr.s32.f32 s3, s3\n\t"                                                                     \
    "vmov %[a0], %[a1], s0, s1\n\t"                                                                \
    "vmov %[a2], %[a3], s2, s3\n\t"
/* ort, four channels: float(acc) * scale rounded half to even by VCVTR, plus
 * the zero point (QADD: no wrap), saturated to int8; rounding and clamping
 * to integer bounds commute, so this is MLAS's clamp-then-round. The bytes
 * are packed into one word and clamped to [lo, hi] bytewise (SSUB8 / SEL)
 * unless that is [-128, 127]. */
static inline __attribute__((always_inline)) void fc_rq4_ort(const uint32_t acc[4],
                                                             const float *sc, int32_t zp,
                                                             int32_t lo, int32_t hi, int clamp,
                                                             int8_t *o)
{
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
#define FC_RQ4_ORT_HEAD                                                                            \
    "vmov s0, s1, %[a0], %[a1]\n\t"                                                                \
    "vmov s2, s3, %[a2], %[a3]\n\t"                                                                \
    "vldmia %[sc], {s4-s7}\n\t"                                                                    \
    FC_ORT_ROUND4                                                                                  \
    "qadd %[a0], %[a0], %[zp]\n\t"                                                                 \
    "qadd %[a1], %[a1], %[zp]\n\t"                                                                 \
    "qadd %[a2], %[a2], %[zp]\n\t"                                                                 \
    "qadd %[a3], %[a3], %[zp]\n\t"                                                                 \
    "ssat %[a0], #8, %[a0]\n\t"                                                                    \
    "ssat %[a1], #8, %[a1]\n\t"                                                                    \
    "ssat %[a2], #8, %[a2]\n\t"                                                                    \
    "ssat %[a3], #8, %[a3]\n\t"                                                                    \
    "bfi %[a0], %[a1], #8, #8\n\t"                                                                 \
    "bfi %[a0], %[a2], #16, #8\n\t"                                                                \
    "bfi %[a0], %[a3], #24, #8\n\t"
    if (clamp) {
        const uint32_t lo4 = (uint32_t)(uint8_t)lo * 0x01010101u;
        const uint32_t hi4 = (uint32_t)(uint8_t)hi * 0x01010101u;
        __asm__ volatile(FC_RQ4_ORT_HEAD
                         "ssub8 %[a1], %[a0], %[lo4]\n\t"
                         "sel %[a0], %[a0], %[lo4]\n\t"
                         "ssub8 %[a1], %[hi4], %[a0]\n\t"
                         "sel %[a0], %[a0], %[hi4]\n\t"
                         "str %[a0], [%[o]]"
                         : [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3)
                         : [sc] "r"(sc), [zp] "r"(zp), [o] "r"(o), [lo4] "r"(lo4), [hi4] "r"(hi4)
                         : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "cc", "memory");
    } else {
        (void)lo;
        (void)hi;
        __asm__ volatile(FC_RQ4_ORT_HEAD "str %[a0], [%[o]]"
                         : [a0] "+&r"(a0), [a1] "+&r"(a1), [a2] "+&r"(a2), [a3] "+&r"(a3)
                         : [sc] "r"(sc), [zp] "r"(zp), [o] "r"(o)
                         : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "cc", "memory");
    }
#undef FC_RQ4_ORT_HEAD
}
#endif

/* Rows ch..ch+3 of one column, accumulators started at their biases. */
static inline __attribute__((always_inline)) void fc_rq4(const tinyaot_rqc_t *rq,
                                                         const uint32_t acc[4], int32_t ch,
                                                         int8_t *o, int mode)
{
    if (mode == TINYAOT_RQ_SMLAL_SAT) {
        tinyaot_rq_2x1_sat(acc, rq->rq + 5 * ch, rq->zp, o);
        tinyaot_rq_2x1_sat(acc + 2, rq->rq + 5 * (ch + 2), rq->zp, o + 2);
        return;
    }
#if FC_VFP_ASM
    if (mode == TINYAOT_RQ_ORT || mode == FC_RQ_ORT_SAT) {
        fc_rq4_ort(acc, rq->scale + ch, rq->zp, rq->lo, rq->hi, mode == TINYAOT_RQ_ORT, o);
        return;
    }
#endif
    if (mode == FC_RQ_ORT_SAT) {
        mode = TINYAOT_RQ_ORT;
    }
    for (int32_t i = 0; i < 4; ++i) {
        const int32_t a = tinyaot_fp_s32(acc[i]);
        if (mode == TINYAOT_RQ_SMLAL) { /* the bias is already in a */
            const int32_t *p = rq->rq + 5 * (ch + i);
            const int32_t v = tinyaot_mbqm_smlal(a, p[0], p[1], (uint32_t)p[2], p[3]) + rq->zp;
            o[i] = (int8_t)tinyaot_fp_clamp(v, rq->lo, rq->hi);
        } else { /* the bias is already in a */
            o[i] = tinyaot_rqc_out(rq, a, ch + i, mode);
        }
    }
}

static inline __attribute__((always_inline)) int32_t fc_bias(const tinyaot_rqc_t *rq, int32_t ch,
                                                            int mode)
{
    if (mode == TINYAOT_RQ_SMLAL || mode == TINYAOT_RQ_SMLAL_SAT) {
        return rq->rq[5 * ch + 4];
    }
    return rq->bias[ch];
}

#if FC_ASM
/* The whole loop over groups of four output features in one asm statement,
 * for the two saturating modes the MLPerf models use: the values that live
 * across groups but not in the dot product (column, loop entries, output and
 * parameter cursors, zero point) stay in memory operands. The dot product
 * reads the column two quads at a time (one LDM into r4-r7) against four
 * LDMs of weights (r8-r11), 21 instructions per 32 MACs; its loop body is
 * 16 such pairs (K = 128) unrolled, entered part way when the pair count is
 * not a multiple of 16 (each pair is 21 four-byte instructions, 84 bytes),
 * after one single quad when the quad count is odd; with one pass (K <= 128)
 * the loop's end test is jumped over. A group costs ~14 instructions besides
 * its MACs and requantization. */
typedef struct {
    const uint32_t *col;
    const uint32_t *col_end;
    uint32_t skip;  /* bytes of the unrolled loop to skip on entry, + 1 (Thumb) */
    uint32_t odd;   /* an odd quad count */
    uint32_t entry; /* set by the asm: the group's first instruction */
    uint32_t pairs; /* set by the asm: the unrolled loop's entry */
    uint32_t multi; /* more than one pass of the unrolled loop */
    uint32_t after; /* set by the asm: the loop's end test (multi), or past it */
    int8_t *o;
    const int8_t *o_end;
    const int32_t *p;  /* ort: biases; tflite: one-SMLAL records */
    const float *sc;   /* ort: scales */
    int32_t zp;
} fc_loop_t;

#define FC_PAIR_UNROLL 16 /* pairs of quads per loop pass */
#define FC_PAIR_BYTES 84u

/* The group loop's entries for a column of nq quads and outputs o[0..n). */
static inline __attribute__((always_inline)) void fc_loop_init(fc_loop_t *L, const uint32_t *col,
                                                               int32_t nq, int8_t *o, int32_t n)
{
    const uint32_t pairs = (uint32_t)nq >> 1;
    L->col = col;
    L->col_end = col + 2 * nq;
    /* no pair: straight to the loop's end test */
    L->skip = (pairs ? (FC_PAIR_UNROLL - pairs % FC_PAIR_UNROLL) % FC_PAIR_UNROLL
                     : FC_PAIR_UNROLL) * FC_PAIR_BYTES + 1u;
    L->odd = (uint32_t)nq & 1u;
    L->multi = pairs > FC_PAIR_UNROLL;
    L->o = o;
    L->o_end = o + n;
}

/* a0..a3 += rows 0..3 . column over one quad (x: XA, XB; w: 8 words) */
#define FC_DOT4_Q(XA, XB)                                                                          \
    "ldmia.w %[w]!, {r8, r9, r10, r11}\n\t"                                                        \
    "smlad %[a0], " XA ", r8, %[a0]\n\t" "smlad %[a0], " XB ", r9, %[a0]\n\t"                    \
    "smlad %[a1], " XA ", r10, %[a1]\n\t" "smlad %[a1], " XB ", r11, %[a1]\n\t"                  \
    "ldmia.w %[w]!, {r8, r9, r10, r11}\n\t"                                                        \
    "smlad %[a2], " XA ", r8, %[a2]\n\t" "smlad %[a2], " XB ", r9, %[a2]\n\t"                    \
    "smlad %[a3], " XA ", r10, %[a3]\n\t" "smlad %[a3], " XB ", r11, %[a3]\n\t"
/* the same over two quads, the column's four words in one LDM */
#define FC_DOT4_PAIR                                                                               \
    "ldmia.w %[x]!, {r4, r5, r6, r7}\n\t" FC_DOT4_Q("r4", "r5") FC_DOT4_Q("r6", "r7")
#define FC_DOT4_PAIR4 FC_DOT4_PAIR FC_DOT4_PAIR FC_DOT4_PAIR FC_DOT4_PAIR
/* entry: the single quad (odd count) or the pair loop entry */
#define FC_GROUP_HEAD                                                                              \
    "adr.w r4, 3f\n\t"                                                                             \
    "ldr r5, %[skip]\n\t"                                                                          \
    "add r4, r4, r5\n\t"                                                                           \
    "str r4, %[pairs]\n\t"                                                                         \
    "ldr r5, %[odd]\n\t"                                                                           \
    "cmp r5, #0\n\t"                                                                               \
    "beq 8f\n\t"                                                                                   \
    "adr.w r4, 9f\n\t"                                                                             \
    "add r4, r4, #1\n\t"                                                                           \
    "8:\n\t"                                                                                       \
    "str r4, %[entry]\n\t"                                                                         \
    "ldr r5, %[multi]\n\t"                                                                         \
    "adr.w r4, 5f\n\t"                                                                             \
    "cmp r5, #0\n\t"                                                                               \
    "beq 7f\n\t"                                                                                   \
    "adr.w r4, 4f\n\t"                                                                             \
    "7:\n\t"                                                                                       \
    "add r4, r4, #1\n\t"                                                                           \
    "str r4, %[after]\n\t"                                                                         \
    "1:\n\t"
#define FC_GROUP_DOT                                                                               \
    "ldr %[x], %[col]\n\t"                                                                         \
    "ldr pc, %[entry]\n\t"                                                                         \
    "9:\n\t"                                                                                       \
    "ldrd r4, r5, [%[x]], #8\n\t" FC_DOT4_Q("r4", "r5")                                            \
    "ldr pc, %[pairs]\n\t"                                                                         \
    "3:\n\t" FC_DOT4_PAIR4 FC_DOT4_PAIR4 FC_DOT4_PAIR4 FC_DOT4_PAIR4                                \
    "ldr pc, %[after]\n\t"                                                                         \
    "4:\n\t"                                                                                       \
    "ldr r4, %[col_end]\n\t"                                                                       \
    "cmp %[x], r4\n\t"                                                                             \
    "bne 3b\n\t"                                                                                   \
    "5:\n\t"
/* the four int8 in a0..a3 packed into a0 */
#define FC_GROUP_PACK                                                                              \
    "bfi %[a0], %[a1], #8, #8\n\t"                                                                 \
    "bfi %[a0], %[a2], #16, #8\n\t"                                                                \
    "bfi %[a0], %[a3], #24, #8\n\t"
/* a0 -> output, next group */
#define FC_GROUP_STORE                                                                             \
    "ldr r5, %[o]\n\t"                                                                             \
    "str %[a0], [r5], #4\n\t"                                                                      \
    "str r5, %[o]\n\t"                                                                             \
    "ldr r4, %[o_end]\n\t"                                                                         \
    "cmp r5, r4\n\t"                                                                               \
    "bne 1b\n\t"
#define FC_GROUP_TAIL FC_GROUP_PACK FC_GROUP_STORE
#define FC_GROUP_OPERANDS                                                                          \
    : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [x] "=&r"(x), [w] "+r"(w),  \
      [entry] "=m"(L->entry), [pairs] "=m"(L->pairs), [after] "=m"(L->after), [o] "+m"(L->o),     \
      [p] "+m"(L->p), [sc] "+m"(L->sc)                                                             \
    : [col] "m"(L->col), [col_end] "m"(L->col_end), [skip] "m"(L->skip), [odd] "m"(L->odd),       \
      [multi] "m"(L->multi), [o_end] "m"(L->o_end), [zp] "m"(L->zp)

/* tflite: the next one-SMLAL record {m, e - 1, R low, R high, bias} (5 words
 * per channel, one LDM; the bias, already in A, lands unused in r11) requantizes
 * accumulator A (bias included); zero point in r4, 0x80000000 in x. */
#define FC_RQ_SMLAL(A)                                                                             \
    "ldmia r5!, {r7, r8, r9, r10, r11}\n\t"                                                        \
    "smlal r9, r10, %[" A "], r7\n\t"                                                              \
    "lsr %[" A "], %[" A "], #31\n\t"                                                              \
    "smlal r9, r10, %[" A "], %[x]\n\t"                                                            \
    "asr %[" A "], r10, r8\n\t"                                                                    \
    "add %[" A "], %[" A "], r4\n\t"                                                               \
    "ssat %[" A "], #8, %[" A "]\n\t"

static inline __attribute__((always_inline)) const uint32_t *fc_groups_asm(fc_loop_t *L,
                                                                           const uint32_t *w,
                                                                           int mode)
{
    uint32_t a0, a1, a2, a3;
    const uint32_t *x;
    if (mode == TINYAOT_RQ_SMLAL_SAT) {
        __asm__ volatile(FC_GROUP_HEAD
                         "ldr r4, %[p]\n\t"
                         "ldr %[a0], [r4, #16]\n\t"
                         "ldr %[a1], [r4, #36]\n\t"
                         "ldr %[a2], [r4, #56]\n\t"
                         "ldr %[a3], [r4, #76]\n\t"
                         FC_GROUP_DOT
                         "ldr r5, %[p]\n\t"
                         "ldr r4, %[zp]\n\t"
                         "mov %[x], #0x80000000\n\t"
                         FC_RQ_SMLAL("a0") FC_RQ_SMLAL("a1") FC_RQ_SMLAL("a2") FC_RQ_SMLAL("a3")
                         "str r5, %[p]\n\t"
                         FC_GROUP_TAIL
                         FC_GROUP_OPERANDS
                         : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "cc", "memory");
    }
#if FC_VFP_ASM
    if (mode == FC_RQ_ORT_SAT || mode == FC_RQ_ORT_USAT) { /* as fc_rq4_ort */
#define FC_RQ_ORT_HEAD                                                                             \
    "ldr r4, %[p]\n\t"                                                                             \
    "ldrd %[a0], %[a1], [r4], #8\n\t"                                                              \
    "ldrd %[a2], %[a3], [r4], #8\n\t"                                                              \
    "str r4, %[p]\n\t"                                                                             \
    FC_GROUP_DOT                                                                                   \
    "ldr r4, %[sc]\n\t"                                                                            \
    "vmov s0, s1, %[a0], %[a1]\n\t"                                                                \
    "vmov s2, s3, %[a2], %[a3]\n\t"                                                                \
    "vldmia r4!, {s4-s7}\n\t"                                                                      \
    "str r4, %[sc]\n\t"                                                                            \
    FC_ORT_ROUND4
#define FC_RQ_ORT_CLOBBERS                                                                         \
    : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "s0", "s1", "s2", "s3", "s4", "s5", "s6",   \
      "s7", "cc", "memory"
        if (mode == FC_RQ_ORT_SAT) {
            __asm__ volatile(FC_GROUP_HEAD FC_RQ_ORT_HEAD
                             "ldr r4, %[zp]\n\t"
                             "qadd %[a0], %[a0], r4\n\t"
                             "qadd %[a1], %[a1], r4\n\t"
                             "qadd %[a2], %[a2], r4\n\t"
                             "qadd %[a3], %[a3], r4\n\t"
                             "ssat %[a0], #8, %[a0]\n\t"
                             "ssat %[a1], #8, %[a1]\n\t"
                             "ssat %[a2], #8, %[a2]\n\t"
                             "ssat %[a3], #8, %[a3]\n\t"
                             FC_GROUP_TAIL
                             FC_GROUP_OPERANDS FC_RQ_ORT_CLOBBERS);
        } else { /* zero point -128: USAT to [0, 255], then each byte - 128 (EOR) */
            __asm__ volatile(FC_GROUP_HEAD FC_RQ_ORT_HEAD
                             "usat %[a0], #8, %[a0]\n\t"
                             "usat %[a1], #8, %[a1]\n\t"
                             "usat %[a2], #8, %[a2]\n\t"
                             "usat %[a3], #8, %[a3]\n\t"
                             FC_GROUP_PACK
                             "eor %[a0], %[a0], #0x80808080\n\t"
                             FC_GROUP_STORE
                             FC_GROUP_OPERANDS FC_RQ_ORT_CLOBBERS);
        }
#undef FC_RQ_ORT_HEAD
#undef FC_RQ_ORT_CLOBBERS
    }
#endif
    return w;
}

/* TINYAOT_FC_FIXED: the accumulators r0-r3 (one LDM of [B0..B3]) are
 * requantized by one LDM of [M0..M3, R0..R3] and four SMMLAR; the four
 * results (within int16, checked at compile time) are packed by PKHBT and
 * saturated to [0, 255] by USAT16, then each byte - 128 (EOR). `straight`
 * pairs of quads (16: K == 128, one pass of the unrolled loop; 1: K == 8, an
 * autoencoder's bottleneck) run the dot product without jumps; 0: the
 * general entry (FC_GROUP_DOT). */
#define FC_FIXED_TAIL                                                                              \
    "ldmia %[w]!, {r4, r5, r6, r7, r8, r9, r10, r11}\n\t"                                          \
    "smmlar %[a0], %[a0], r4, r8\n\t"                                                              \
    "smmlar %[a1], %[a1], r5, r9\n\t"                                                              \
    "smmlar %[a2], %[a2], r6, r10\n\t"                                                             \
    "smmlar %[a3], %[a3], r7, r11\n\t"                                                             \
    "pkhbt %[a0], %[a0], %[a2], lsl #16\n\t"                                                       \
    "pkhbt %[a1], %[a1], %[a3], lsl #16\n\t"                                                       \
    "usat16 %[a0], #8, %[a0]\n\t"                                                                  \
    "usat16 %[a1], #8, %[a1]\n\t"                                                                  \
    "orr %[a0], %[a0], %[a1], lsl #8\n\t"                                                          \
    "eor %[a0], %[a0], #0x80808080\n\t" FC_GROUP_STORE
#define FC_FIXED_CLOBBERS : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "cc", "memory"
static inline __attribute__((always_inline)) const uint32_t *fc_groups_fixed_asm(fc_loop_t *L,
                                                                                 const uint32_t *w0,
                                                                                 int straight)
{
    /* LDM fills registers in ascending order: the accumulators are r0-r3 */
    register uint32_t a0 __asm__("r0");
    register uint32_t a1 __asm__("r1");
    register uint32_t a2 __asm__("r2");
    register uint32_t a3 __asm__("r3");
    register const uint32_t *x __asm__("lr");
    register const uint32_t *w __asm__("ip") = w0;
    if (straight == FC_PAIR_UNROLL) {
        __asm__ volatile("1:\n\t"
                         "ldmia %[w]!, {%[a0], %[a1], %[a2], %[a3]}\n\t"
                         "ldr %[x], %[col]\n\t"
                         FC_DOT4_PAIR4 FC_DOT4_PAIR4 FC_DOT4_PAIR4 FC_DOT4_PAIR4
                         FC_FIXED_TAIL
                         FC_GROUP_OPERANDS FC_FIXED_CLOBBERS);
    } else if (straight == 1) {
        __asm__ volatile("1:\n\t"
                         "ldmia %[w]!, {%[a0], %[a1], %[a2], %[a3]}\n\t"
                         "ldr %[x], %[col]\n\t"
                         FC_DOT4_PAIR
                         FC_FIXED_TAIL
                         FC_GROUP_OPERANDS FC_FIXED_CLOBBERS);
    } else {
        __asm__ volatile(FC_GROUP_HEAD
                         "ldmia %[w]!, {%[a0], %[a1], %[a2], %[a3]}\n\t"
                         FC_GROUP_DOT
                         FC_FIXED_TAIL
                         FC_GROUP_OPERANDS FC_FIXED_CLOBBERS);
    }
    return w;
}
#undef FC_FIXED_TAIL
#undef FC_FIXED_CLOBBERS
#undef FC_GROUP_HEAD
#undef FC_DOT4_Q
#undef FC_DOT4_PAIR
#undef FC_DOT4_PAIR4
#undef FC_GROUP_DOT
#undef FC_GROUP_TAIL
#undef FC_GROUP_PACK
#undef FC_GROUP_STORE
#undef FC_GROUP_OPERANDS
#undef FC_RQ_SMLAL
#endif
#undef FC_DOT4_QUAD

/* One input row minus its zero point into the int16 column (quads of 2
 * words): tinyaot_widen_run, with the bulk of a word-aligned row in asm, 16
 * values per loop pass (one LDM, eight SXTAB16, two STM: 13 instructions
 * instead of 32). */
static inline __attribute__((always_inline)) void fc_widen(const int8_t *src, int32_t n,
                                                           uint32_t *dst, uint32_t off,
                                                           int32_t in_zp)
{
#if FC_ASM
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

/* One widened column -> out_features int8. */
static inline __attribute__((always_inline)) void fc_column(const uint32_t *col, int32_t nq,
                                                            const uint32_t *w, int32_t out_features,
                                                            const tinyaot_rqc_t *rq, int8_t *o,
                                                            int mode)
{
    int32_t ch = 0;
    /* a constant after inlining: the C group loop is not compiled where unused */
    const int asm_groups = FC_ASM &&
                           (mode == TINYAOT_RQ_SMLAL_SAT || (FC_VFP_ASM && mode == FC_RQ_ORT_SAT));
    if (asm_groups) {
#if FC_ASM
        if (out_features >= 4) {
            fc_loop_t L;
            ch = out_features & ~3;
            fc_loop_init(&L, col, nq, o, ch);
            L.p = mode == TINYAOT_RQ_SMLAL_SAT ? rq->rq : rq->bias;
            L.sc = rq->scale;
            L.zp = rq->zp;
            if (mode == FC_RQ_ORT_SAT && rq->zp == -128) {
                w = fc_groups_asm(&L, w, FC_RQ_ORT_USAT);
            } else {
                w = fc_groups_asm(&L, w, mode);
            }
        }
#endif
    } else {
        for (; ch + 4 <= out_features; ch += 4) {
            uint32_t acc[4];
            acc[0] = (uint32_t)fc_bias(rq, ch, mode);
            acc[1] = (uint32_t)fc_bias(rq, ch + 1, mode);
            acc[2] = (uint32_t)fc_bias(rq, ch + 2, mode);
            acc[3] = (uint32_t)fc_bias(rq, ch + 3, mode);
            w = fc_dot4(col, w, nq, acc, 1);
            fc_rq4(rq, acc, ch, o + ch, mode);
        }
    }
    if (mode == FC_RQ_ORT_SAT) {
        mode = TINYAOT_RQ_ORT;
    }
    if (ch < out_features) { /* the packing's zero rows pad the last group */
        uint32_t acc[4] = {0u, 0u, 0u, 0u};
        fc_dot4(col, w, nq, acc, 0);
        for (int32_t i = 0; ch + i < out_features; ++i) {
            o[ch + i] = tinyaot_rqc_apply_m(rq, tinyaot_fp_s32(acc[i]), ch + i, mode);
        }
    }
}

/* TINYAOT_FC_FIXED, one group of n <= 4 outputs in C (the portable twin, a
 * group left over when N % 4 != 0): the same records, the same bits. */
static inline __attribute__((always_inline)) const uint32_t *
fc_fixed_group(const uint32_t *col, int32_t nq, const uint32_t *w, int8_t *o, int32_t n)
{
    uint32_t acc[4];
    acc[0] = w[0];
    acc[1] = w[1];
    acc[2] = w[2];
    acc[3] = w[3];
    w = fc_dot4(col, w + 4, nq, acc, n == 4);
    for (int32_t i = 0; i < n; ++i) {
        const int32_t v = __SMMLAR(tinyaot_fp_s32(acc[i]), tinyaot_fp_s32(w[i]),
                                   tinyaot_fp_s32(w[4 + i]));
        o[i] = (int8_t)((int32_t)__USAT(v, 8) - 128);
    }
    return w + 8;
}

static inline __attribute__((always_inline)) void fc_column_fixed(const uint32_t *col, int32_t nq,
                                                                const uint32_t *w,
                                                                int32_t out_features, int8_t *o)
{
    int32_t ch = 0;
#if FC_ASM
    if (out_features >= 4) {
        fc_loop_t L;
        ch = out_features & ~3;
        fc_loop_init(&L, col, nq, o, ch);
        if (nq == 2 * FC_PAIR_UNROLL || nq == 2) {
            w = fc_groups_fixed_asm(&L, w, nq / 2);
        } else {
            w = fc_groups_fixed_asm(&L, w, 0);
        }
    }
#endif
    for (; ch < out_features; ch += 4) {
        const int32_t n = out_features - ch;
        w = fc_fixed_group(col, nq, w, o + ch, n < 4 ? n : 4);
    }
}

/* The whole call in TINYAOT_FC_FIXED, apart from the other modes (their
 * register allocation stays as it was). */
static __attribute__((noinline)) int fc_rows_fixed(int32_t rows, int32_t in_features,
                                                    int32_t out_features, int32_t in_zp,
                                                    const int8_t *input, const uint32_t *w,
                                                    uint32_t *scratch, int8_t *output)
{
    const int32_t nq = (in_features + 3) / 4;
    const uint32_t off = tinyaot_pack16(-in_zp, -in_zp);
    for (int32_t r = 0; r < rows; ++r) {
        fc_widen(input + r * in_features, in_features, scratch, off, in_zp);
        fc_column_fixed(scratch, nq, w, out_features, output + r * out_features);
    }
    return TINYAOT_OK;
}

int tinyaot_fully_connected_fast_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                    const tinyaot_requant_t *q, const int8_t *input,
                                    const int32_t *packed_weights, uint32_t *scratch,
                                    int8_t *output)
{
    if (!q->bias && in_features >= 1) { /* TINYAOT_FC_FIXED: bias is never NULL otherwise */
        return fc_rows_fixed(rows, in_features, out_features, q->in_zp, input,
                             (const uint32_t *)(const void *)packed_weights, scratch, output);
    }
    const int32_t nq = (in_features + 3) / 4;
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    const uint32_t off = tinyaot_pack16(-q->in_zp, -q->in_zp);
    const uint32_t *w = (const uint32_t *)(const void *)packed_weights;
    if (in_features < 1) {
        return TINYAOT_ERR_ARG;
    }
    for (int32_t r = 0; r < rows; ++r) {
        int8_t *o = output + r * out_features;
        fc_widen(input + r * in_features, in_features, scratch, off, q->in_zp);
        switch (rq.mode) {
        case TINYAOT_RQ_ORT:
            if (rq.lo <= -128 && rq.hi >= 127) {
                fc_column(scratch, nq, w, out_features, &rq, o, FC_RQ_ORT_SAT);
            } else {
                fc_column(scratch, nq, w, out_features, &rq, o, TINYAOT_RQ_ORT);
            }
            break;
        case TINYAOT_RQ_TFLITE:
            fc_column(scratch, nq, w, out_features, &rq, o, TINYAOT_RQ_TFLITE);
            break;
        case TINYAOT_RQ_SMLAL:
            fc_column(scratch, nq, w, out_features, &rq, o, TINYAOT_RQ_SMLAL);
            break;
        default: fc_column(scratch, nq, w, out_features, &rq, o, TINYAOT_RQ_SMLAL_SAT); break;
        }
    }
    return TINYAOT_OK;
}
