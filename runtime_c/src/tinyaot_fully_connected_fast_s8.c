/* Fast int8 fully connected. Each input row is widened once (minus the input
 * zero point) into one int16 column in scratch; then the output features go
 * four at a time with their four accumulators (started at the biases) in
 * registers over the whole K, against weights packed for exactly that read
 * order (codegen/backend/fast_pack.py:pack_gemm(w, 4)): per quad of K one
 * LDRD of the column and two LDM of weights feed eight SMLAD, 11 instructions
 * per 16 MACs, eight quads per loop pass. The four results are requantized
 * together: ort in VFP (float(acc) * scale, VCVTR rounds half to even),
 * tflite by the one-SMLAL form (tinyaot_requant_fast.h). */
#include "tinyaot_fast_kernels.h"
#include "tinyaot_gemm_q15.h"

#define FC_UNROLL 8 /* quads per loop pass */
#define FC_RQ_ORT_SAT 4 /* TINYAOT_RQ_ORT with [lo, hi] = [-128, 127]: no bytewise clamp */

#if TINYAOT_HAVE_DSP_ASM && defined(__ARM_FP) && (__ARM_FP & 4)
#define FC_VFP_ASM 1
#else
#define FC_VFP_ASM 0
#endif

int32_t tinyaot_fully_connected_fast_s8_get_buffer_size(int32_t in_features)
{
    return ((in_features + 3) / 4) * 4 * (int32_t)sizeof(int16_t);
}

#if TINYAOT_HAVE_DSP_ASM
/* a0..a3 += rows 0..3 . column over one quad (x: 2 words, w: 8 words). */
#define FC_DOT4_QUAD                                                                               \
    "ldrd %[xa], %[xb], [%[x]], #8\n\t"                                                            \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"                                                          \
    "smlad %[a0], %[xa], r8, %[a0]\n\t"                                                            \
    "smlad %[a0], %[xb], r9, %[a0]\n\t"                                                            \
    "smlad %[a1], %[xa], r10, %[a1]\n\t"                                                           \
    "smlad %[a1], %[xb], r11, %[a1]\n\t"                                                           \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"                                                          \
    "smlad %[a2], %[xa], r8, %[a2]\n\t"                                                            \
    "smlad %[a2], %[xb], r9, %[a2]\n\t"                                                            \
    "smlad %[a3], %[xa], r10, %[a3]\n\t"                                                           \
    "smlad %[a3], %[xb], r11, %[a3]\n\t"
#define FC_DOT4_OPERANDS                                                                           \
    : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xa] "=&r"(xa), [xb] "=&r"(xb),  \
      [x] "+r"(x), [w] "+r"(w)                                                                     \
    : [xe] "r"(xe)                                                                                 \
    : "r8", "r9", "r10", "r11", "cc", "memory"

/* nq >= 1 quads: nq % FC_UNROLL single quads first, then whole passes.
 * Returns the next group's weights. */
static inline __attribute__((always_inline)) const uint32_t *fc_dot4(const uint32_t *x,
                                                                     const uint32_t *w,
                                                                     int32_t nq, uint32_t acc[4])
{
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], xa, xb;
    const uint32_t *xe = x + 2 * (nq % FC_UNROLL);
    if (x != xe) {
        __asm__("1:\n\t" FC_DOT4_QUAD "cmp %[x], %[xe]\n\t"
                "bne 1b" FC_DOT4_OPERANDS);
    }
    xe = x + 2 * (nq - nq % FC_UNROLL);
    if (x != xe) {
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
#undef FC_DOT4_QUAD
#undef FC_DOT4_OPERANDS
#else
static inline const uint32_t *fc_dot4(const uint32_t *x, const uint32_t *w, int32_t nq,
                                      uint32_t acc[4])
{
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
    "vmov %[a2], %[a3], s2, s3\n\t"                                                                \
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

/* One widened column -> out_features int8. */
static inline __attribute__((always_inline)) void fc_column(const uint32_t *col, int32_t nq,
                                                            const uint32_t *w, int32_t out_features,
                                                            const tinyaot_rqc_t *rq, int8_t *o,
                                                            int mode)
{
    int32_t ch = 0;
    for (; ch + 4 <= out_features; ch += 4) {
        uint32_t acc[4];
        acc[0] = (uint32_t)fc_bias(rq, ch, mode);
        acc[1] = (uint32_t)fc_bias(rq, ch + 1, mode);
        acc[2] = (uint32_t)fc_bias(rq, ch + 2, mode);
        acc[3] = (uint32_t)fc_bias(rq, ch + 3, mode);
        w = fc_dot4(col, w, nq, acc);
        fc_rq4(rq, acc, ch, o + ch, mode);
    }
    if (mode == FC_RQ_ORT_SAT) {
        mode = TINYAOT_RQ_ORT;
    }
    if (ch < out_features) { /* the packing's zero rows pad the last group */
        uint32_t acc[4] = {0u, 0u, 0u, 0u};
        fc_dot4(col, w, nq, acc);
        for (int32_t i = 0; ch + i < out_features; ++i) {
            o[ch + i] = tinyaot_rqc_apply_m(rq, tinyaot_fp_s32(acc[i]), ch + i, mode);
        }
    }
}

int tinyaot_fully_connected_fast_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                    const tinyaot_requant_t *q, const int8_t *input,
                                    const int32_t *packed_weights, uint32_t *scratch,
                                    int8_t *output)
{
    const int32_t nq = (in_features + 3) / 4;
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    const uint32_t off = tinyaot_pack16(-q->in_zp, -q->in_zp);
    const uint32_t *w = (const uint32_t *)(const void *)packed_weights;
    if (in_features < 1) {
        return TINYAOT_ERR_ARG;
    }
    for (int32_t r = 0; r < rows; ++r) {
        int8_t *o = output + r * out_features;
        tinyaot_widen_run(input + r * in_features, in_features, scratch, 2, off, q->in_zp);
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
