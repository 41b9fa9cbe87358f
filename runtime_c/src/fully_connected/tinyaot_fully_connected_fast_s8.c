/* Fast int8 fully connected. Each input row is widened once (minus the input
 * zero point) into one int16 column in scratch; then the output features go
 * four at a time with their four accumulators (started at the biases) in
 * registers over the whole K, against weights packed for exactly that read
 * order (codegen/kernels/fast_pack.py:pack_gemm(w, 4)): per quad of K one
 * LDRD of the column and two LDM of weights feed eight SMLAD, 11 instructions
 * per 16 MACs. The four results are requantized together: ort in VFP
 * (float(acc) * scale, VCVTR rounds half to even), tflite by the one-SMLAL
 * form (tinyaot_requant_fast.h). The saturating modes (every MLPerf layer)
 * run the whole group loop in one asm statement (fc_groups_asm); the others,
 * a group left over when N % 4 != 0 and the portable twin go through C.
 * ort layers whose requantization has an exact fixed-point form
 * (codegen/kernels/ort_requant_fixed.py; q has no scale, multipliers, records
 * or bias) carry it inline in the weight stream (fast_pack.pack_gemm_fixed):
 * per group [B0..B3] (the accumulators' start), the weights, [M0..M3,
 * R0..R3]; each output is USAT8(SMMLAR(acc, M, R)) - 128.
 *
 * This file holds the build switches, the scratch size and the dispatch on
 * the requantization mode; the rest sits in parts it includes (one
 * translation unit):
 *   tinyaot_fully_connected_fast_s8_group.inc      four outputs driven from C
 *       (dot product: SMLAD asm or __SMLAD; requantization of four);
 *   tinyaot_fully_connected_fast_s8_group_asm.inc  the whole group loop in one
 *       asm statement (saturating modes, fixed-point records);
 *   tinyaot_fully_connected_fast_s8_column.inc     one input row: widen, then
 *       the column through the asm loop or the C groups.
 * FC_ASM (below) turns the asm loops on. Without it (no DSP extension:
 * Cortex-M3, the host; or an -O0 build) the C paths run, on the intrinsics
 * of tinyaot_intrinsics.h (single instructions wherever the DSP extension
 * is there, portable C elsewhere). */
#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_gemm_q15.h"
#include "../internal/tinyaot_specialize.h"

#define FC_UNROLL 8         /* quads per loop pass (C-driven loop) */
#define FC_RQ_ORT_SAT 4 /* TINYAOT_RQ_ORT with [lo, hi] = [-128, 127]: no bytewise clamp */
#define FC_RQ_ORT_USAT 5 /* FC_RQ_ORT_SAT with zero point -128 (asm group loop only) */
#define FC_FIXED 6       /* the fixed-point records in the weight stream (fc_rows_fixed) */

/* Is mode m's copy compiled (tinyaot_specialize.h)? A constant. */
#define FC_HAS_MODE(m) TINYAOT_SPEC_HAS(TINYAOT_SPEC_FC_MODES, m)
#define FC_HAS_ORT_SAT (FC_HAS_MODE(FC_RQ_ORT_SAT) || FC_HAS_MODE(FC_RQ_ORT_USAT))

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

#include "tinyaot_fully_connected_fast_s8_group.inc"
#include "tinyaot_fully_connected_fast_s8_group_asm.inc"
#include "tinyaot_fully_connected_fast_s8_column.inc"

/* The specialization a call needs (bit of TINYAOT_SPEC_FC_MODES). */
static inline int fc_mode(const tinyaot_requant_t *q, int32_t in_features)
{
    if (!q->bias && in_features >= 1) {
        return FC_FIXED;
    }
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    if (rq.mode == TINYAOT_RQ_ORT && rq.lo <= -128 && rq.hi >= 127) {
        return rq.zp == -128 ? FC_RQ_ORT_USAT : FC_RQ_ORT_SAT;
    }
    return rq.mode;
}

int tinyaot_fully_connected_fast_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                    const tinyaot_requant_t *q, const int8_t *input,
                                    const int32_t *packed_weights, uint32_t *scratch,
                                    int8_t *output)
{
#if (TINYAOT_SPEC_FC_MODES & 0x7fu) != 0x7fu /* a firmware's own kernels */
    if (!FC_HAS_MODE(fc_mode(q, in_features))) {
        return TINYAOT_ERR_NOT_BUILT;
    }
#endif
    if (FC_HAS_MODE(FC_FIXED) && !q->bias && in_features >= 1) {
        /* TINYAOT_FC_FIXED: bias is never NULL otherwise */
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
        tinyaot_widen_row(input + r * in_features, in_features, scratch, off, q->in_zp);
        /* (a mode not compiled was refused above) */
        switch (rq.mode) {
        case TINYAOT_RQ_ORT:
            if (rq.lo <= -128 && rq.hi >= 127) {
                if (FC_HAS_ORT_SAT) fc_column(scratch, nq, w, out_features, &rq, o, FC_RQ_ORT_SAT);
            } else {
                if (FC_HAS_MODE(TINYAOT_RQ_ORT))
                    fc_column(scratch, nq, w, out_features, &rq, o, TINYAOT_RQ_ORT);
            }
            break;
        case TINYAOT_RQ_TFLITE:
            if (FC_HAS_MODE(TINYAOT_RQ_TFLITE))
                fc_column(scratch, nq, w, out_features, &rq, o, TINYAOT_RQ_TFLITE);
            break;
        case TINYAOT_RQ_SMLAL:
            if (FC_HAS_MODE(TINYAOT_RQ_SMLAL))
                fc_column(scratch, nq, w, out_features, &rq, o, TINYAOT_RQ_SMLAL);
            break;
        default:
            if (FC_HAS_MODE(TINYAOT_RQ_SMLAL_SAT))
                fc_column(scratch, nq, w, out_features, &rq, o, TINYAOT_RQ_SMLAL_SAT);
            break;
        }
    }
    return TINYAOT_OK;
}
