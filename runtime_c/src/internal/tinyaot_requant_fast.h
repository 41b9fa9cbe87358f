/* Requantization for the fast kernels: the same results as
 * tinyaot_requant_channel (tinyaot_requant.h), in fewer instructions.
 *
 * tflite: tinyaot_requant_tflite(acc, mult, shift, zp, lo, hi) computes
 *   RDBPOT(SRDHM(acc << l, mult), r) + zp, clamped, l = max(shift, 0),
 *   r = max(-shift, 0), with SRDHM(a, b) = trunc((a*b + nudge) / 2^31),
 *   nudge = 2^30 if a*b >= 0 else 1 - 2^30.  For a*b < 0, y = a*b + 1 - 2^30
 *   is negative and trunc(y / 2^31) = floor((y + 2^31 - 1) / 2^31)
 *   = floor((a*b + 2^30) / 2^31), the same formula as for a*b >= 0; so
 *   SRDHM(a, b) = (a*b + 2^30) >> 31 (arithmetic), except a = b = INT32_MIN
 *   (saturates), which cannot happen here: mult >= 0 (TFLite multipliers are
 *   in [2^30, 2^31) or 0, codegen/ops/conv_params.py).  Tested against
 *   tinyaot_requant_tflite in tests/kernels/test_fast_kernels.py.
 */
#ifndef TINYAOT_REQUANT_FAST_H
#define TINYAOT_REQUANT_FAST_H

#include <stdint.h>
#include <string.h>

#include "tinyaot_intrinsics.h"
#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

static inline int32_t tinyaot_srdhm_fast(int32_t a, int32_t b)
{
    const int64_t ab = (int64_t)a * (int64_t)b + ((int64_t)1 << 30);
    /* arithmetic shift of an int64 without implementation-defined >>:
     * the quotient fits in int32 for b >= 0 */
    const uint64_t u = (uint64_t)ab;
    const uint32_t hi = (uint32_t)(u >> 31);
    return tinyaot_fp_s32(hi);
}

/* mult >= 0, -31 <= shift <= 31 */
static inline int8_t tinyaot_requant_tflite_fast(int32_t acc, int32_t mult, int32_t shift,
                                                 int32_t zp, int32_t lo, int32_t hi)
{
    int32_t x, v;
    if (shift > 0) {
        x = tinyaot_srdhm_fast(tinyaot_fp_s32((uint32_t)acc << shift), mult);
    } else {
        const int32_t e = -shift;
        const int32_t mask = (int32_t)(((uint32_t)1 << e) - 1u);
        const int32_t t = tinyaot_srdhm_fast(acc, mult);
        const int32_t rem = (int32_t)((uint32_t)t & (uint32_t)mask);
        const int32_t thr = (mask >> 1) + (int32_t)((uint32_t)t >> 31);
        x = tinyaot_fp_asr(t, e) + (int32_t)(rem > thr);
    }
    v = tinyaot_fp_wrap_add(x, zp);
    /* branch-free clamp (the same result): instruction counts stay data-independent */
    {
        const uint32_t below = 0u - (uint32_t)(v < lo);
        const uint32_t above = 0u - (uint32_t)(v > hi);
        uint32_t u = ((uint32_t)v & ~below) | ((uint32_t)lo & below);
        u = (u & ~above) | ((uint32_t)hi & above);
        return (int8_t)tinyaot_fp_s32(u);
    }
}

/* One-SMLAL form of tinyaot_requant_tflite's MBQM for shift < 0, e = -shift
 * in [1, 31]; exact for every int32 v (bias included) and mult in [0, 2^31):
 *   MBQM(v) = RDBPOT(x, e), x = SRDHM(v, m) = floor((v*m + 2^30) / 2^31) (above);
 *   RDBPOT(x, e) = floor((x + 2^(e-1) - [x < 0]) / 2^e) (ties away from zero:
 *   for x < 0 the remainder must exceed 2^(e-1)).
 *   For an integer k and n > 0, floor((floor(y) + k) / n) = floor((y + k) / n), so
 *   MBQM(v) = floor((v*m + 2^30 + 2^(30+e) - [x < 0] * 2^31) / 2^(31+e)).
 *   [x < 0] may be replaced by [v < 0]: they differ only when v < 0 and x = 0,
 *   and then both give floor((2^(e-1) - s) / 2^e) = 0 for e >= 1.
 *   With R = 2^30 + 2^(30+e) (per channel, compile time, two words):
 *   MBQM(v) = (R + v*m - [v < 0] * 2^31) >> (31 + e); as 31 + e >= 32, that is
 *   the high word shifted right by e - 1: SMLAL, LSR, SMLAL (by INT32_MIN), ASR.
 *   |v*m| < 2^62 and R <= 2^61 + 2^30, so the 64-bit sum does not overflow.
 *   (m = 0 gives 0 for every shift, so such channels take e = 1.)
 * The records' R also holds the layer's output zero point, zp * 2^(31+e):
 * the high word gains zp * 2^(e-1) and the shift gives MBQM(v) + zp, where the
 * code generator has checked that the high word stays an int32 over the
 * channel's accumulators (codegen/kernels/fast_pack.py: smlal_requant); this
 * function is the same either way.
 * The portable form computes the same sum modulo 2^64 (the exact sum fits).
 *
 * The sign fix (- [v < 0] * 2^31: LSR and the second SMLAL) only matters to a
 * layer that can output below its zero point. One whose clamp starts at or
 * above it (a fused ReLU, act_min >= zp: every output zero point -128 over the
 * whole int8 range) gives act_min for every v < 0 with or without it: then
 * MBQM(v) <= 0, and without the fix R + v*m < 2^(30+e) + 2^30 - m <= 2^(31+e)
 * (m >= 1) also gives at most 0: either output is at most zp <= act_min. (The
 * sum without the fix is up to 2^31 more, its high word up to 1 more:
 * smlal_requant checks that one stays an int32 too.) A kernel source that defines TINYAOT_RQ_FIX_BIT (its
 * TINYAOT_SPEC_FIX_* bit) before its includes compiles the fix only where its
 * model's config sets that bit in TINYAOT_SPEC_RQ_FIX (some layer on the kernel
 * clamps below its zero point: codegen/kernels/specialize.py, rq_fix_uses) and
 * without it refuses such a layer (tinyaot_rq_fix_built). Every other source,
 * and a build without a model config, keeps the fix. */
#ifdef TINYAOT_RQ_FIX_BIT
#ifndef TINYAOT_SPEC_RQ_FIX
#error "include tinyaot_specialize.h before tinyaot_requant_fast.h with TINYAOT_RQ_FIX_BIT"
#endif
#define TINYAOT_RQ_NEG_FIX ((TINYAOT_SPEC_RQ_FIX >> TINYAOT_RQ_FIX_BIT) & 1u)
#else
#define TINYAOT_RQ_NEG_FIX 1
#endif
/* The fix's two instructions on accumulator A (overwritten), R in LO:HI, MN = 0x80000000
 * (S: "" or "s", the shift's flag-setting suffix), or nothing. */
#if TINYAOT_RQ_NEG_FIX
#define TINYAOT_RQ_NEG_ASM(S, A, LO, HI, MN)                                                      \
    "lsr" S " " A ", " A ", #31\n\t"                                                               \
    "smlal " LO ", " HI ", " A ", " MN "\n\t"
#else
#define TINYAOT_RQ_NEG_ASM(S, A, LO, HI, MN)
#endif
/* The fix's constant 0x80000000 into register REG (an asm that holds every register), or
 * nothing where the fix is not compiled. */
#if TINYAOT_RQ_NEG_FIX
#define TINYAOT_RQ_NEG_MN(REG) "mov " REG ", #0x80000000\n\t"
#else
#define TINYAOT_RQ_NEG_MN(REG)
#endif
/* May this layer run on this build of its kernel? (never a wrong result: a layer that
 * needs the sign fix where it is not compiled gets TINYAOT_ERR_NOT_BUILT) */
static inline int tinyaot_rq_fix_built(const tinyaot_requant_t *q)
{
    return TINYAOT_RQ_NEG_FIX || q->act_min >= q->out_zp;
}
#if TINYAOT_HAVE_DSP_ASM
static inline __attribute__((always_inline)) int32_t tinyaot_mbqm_smlal(int32_t v, int32_t m,
                                                                       int32_t sh, uint32_t rlo,
                                                                       int32_t rhi)
{
#if TINYAOT_RQ_NEG_FIX
    uint32_t t;
    __asm__("smlal %[lo], %[hi], %[v], %[m]\n\t"
            "lsr %[t], %[v], #31\n\t"
            "smlal %[lo], %[hi], %[t], %[mn]\n\t"
            "asr %[hi], %[hi], %[sh]"
            : [lo] "+&r"(rlo), [hi] "+&r"(rhi), [t] "=&r"(t)
            : [v] "r"(v), [m] "r"(m), [mn] "r"(0x80000000u), [sh] "r"(sh));
#else
    __asm__("smlal %[lo], %[hi], %[v], %[m]\n\t"
            "asr %[hi], %[hi], %[sh]"
            : [lo] "+&r"(rlo), [hi] "+&r"(rhi)
            : [v] "r"(v), [m] "r"(m), [sh] "r"(sh));
#endif
    return rhi;
}
#else
static inline int32_t tinyaot_mbqm_smlal(int32_t v, int32_t m, int32_t sh, uint32_t rlo,
                                         int32_t rhi)
{
    const uint64_t r = ((uint64_t)(uint32_t)rhi << 32) | (uint64_t)rlo;
    const uint64_t s = r + (uint64_t)((int64_t)v * (int64_t)m) -
                       (TINYAOT_RQ_NEG_FIX ? ((uint64_t)((uint32_t)v >> 31) << 31) : 0u);
    return tinyaot_fp_asr(tinyaot_fp_s32((uint32_t)(s >> 32)), sh);
}
#endif

/* How a layer requantizes; the kernels branch on it once per call and
 * inline one copy of their loops per mode (so no per-output test). */
enum {
    TINYAOT_RQ_ORT = 0,       /* float scale (onnxruntime) */
    TINYAOT_RQ_TFLITE = 1,    /* tinyaot_requant_tflite_fast (some shift >= 0) */
    TINYAOT_RQ_SMLAL = 2,     /* tinyaot_mbqm_smlal, clamp to [lo, hi] */
    TINYAOT_RQ_SMLAL_SAT = 3, /* tinyaot_mbqm_smlal, [lo, hi] = [-128, 127]: SSAT only */
    TINYAOT_RQ_FLOAT_SAT = 4  /* onnxruntime, records {bias, scale}, [lo, hi] = [-128, 127] */
};

/* Per-channel requantization records: words per channel and where the bias is. */
#define TINYAOT_RQ_WORDS(mode) ((mode) == TINYAOT_RQ_FLOAT_SAT ? 2 : 5)
#define TINYAOT_RQ_BIAS(mode) ((mode) == TINYAOT_RQ_FLOAT_SAT ? 0 : 4)

/* onnxruntime's requantization (tinyaot_requant_ort) to the whole int8 range,
 * acc with the bias: round_half_even(float(acc) * scale) + zp, saturated.
 * On an FPU core that is VCVT, VMUL, VCVTR (rounds in the FPSCR mode:
 * round to nearest even, the reset default) and a saturating add of the zero
 * point, then SSAT. Clamping before rounding (MLAS) and after it give the
 * same integer: rounding is monotonic and the bounds are integers; QADD keeps
 * a saturated VCVTR (|v| >= 2^31) from wrapping. scale_bits: the float's bits
 * (records are int32 words). */
#if TINYAOT_HAVE_DSP_ASM && defined(__ARM_FP) && (__ARM_FP & 4)
#define TINYAOT_HAVE_FPU_ASM 1
/* One output: A (an int32 register operand, overwritten) -> int8 at O + OOFF,
 * with the channel's scale in float operand sc; operands f (float scratch), zp. */
/* Its arithmetic with the registers named by the caller (operand strings, or
 * the register names of an asm that holds every register): A -> the int8 in A,
 * float scratch F, scale SC, zero point ZP. */
#define TINYAOT_RQF_REGS(A, F, SC, ZP)                                                             \
    "vmov " F ", " A "\n\t"                                                                         \
    "vcvt.f32.s32 " F ", " F "\n\t"                                                                 \
    "vmul.f32 " F ", " F ", " SC "\n\t"                                                             \
    "vcvtr.s32.f32 " F ", " F "\n\t"                                                                \
    "vmov " A ", " F "\n\t"                                                                         \
    "qadd " A ", " A ", " ZP "\n\t"                                                                 \
    "ssat " A ", #8, " A "\n\t"
#define TINYAOT_RQF_ONE(A, O, OOFF)                                                                \
    TINYAOT_RQF_REGS("%[" A "]", "%[f]", "%[sc]", "%[zp]")                                         \
    "strb %[" A "], [%[" O "], #" OOFF "]\n\t"
static inline __attribute__((always_inline)) int8_t tinyaot_requant_float_sat(int32_t acc,
                                                                              int32_t scale_bits,
                                                                              int32_t zp)
{
    float f, sc;
    int32_t r = acc;
    __asm__("vmov %[sc], %[sb]\n\t"
            "vmov %[f], %[r]\n\t"
            "vcvt.f32.s32 %[f], %[f]\n\t"
            "vmul.f32 %[f], %[f], %[sc]\n\t"
            "vcvtr.s32.f32 %[f], %[f]\n\t"
            "vmov %[r], %[f]\n\t"
            "qadd %[r], %[r], %[zp]\n\t"
            "ssat %[r], #8, %[r]"
            : [r] "+r"(r), [f] "=&t"(f), [sc] "=&t"(sc)
            : [sb] "r"(scale_bits), [zp] "r"(zp));
    return (int8_t)r;
}

/* round_half_even(v) + zp, saturated to int32 (VCVTR saturates too); the
 * callers clamp the result. */
static inline __attribute__((always_inline)) int32_t tinyaot_round_add_fpu(float v, int32_t zp)
{
    int32_t r;
    __asm__("vcvtr.s32.f32 %[v], %[v]\n\t"
            "vmov %[r], %[v]\n\t"
            "qadd %[r], %[r], %[zp]"
            : [r] "=r"(r), [v] "+t"(v)
            : [zp] "r"(zp));
    return r;
}
#else
#define TINYAOT_HAVE_FPU_ASM 0
static inline int8_t tinyaot_requant_float_sat(int32_t acc, int32_t scale_bits, int32_t zp)
{
    float scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    return tinyaot_requant_ort(acc, scale, zp, -128, 127);
}
#endif

/* Float bits in an int32 table word (the compile-time tables are int32). */
static inline float tinyaot_f32_bits(int32_t w)
{
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

/* The requantization parameters of one layer, copied to locals once per call
 * (so int8 stores through the output pointer cannot force reloads). */
typedef struct {
    const int32_t *bias;
    const float *scale;
    const int32_t *mult;
    const int32_t *shift;
    const int32_t *rq;
    int32_t zp, lo, hi;
    int32_t mode;
} tinyaot_rqc_t;

static inline tinyaot_rqc_t tinyaot_rqc(const tinyaot_requant_t *q)
{
    tinyaot_rqc_t r;
    r.bias = q->bias;
    r.scale = q->scale;
    r.mult = q->mult;
    r.shift = q->shift;
    r.rq = q->rq;
    r.zp = q->out_zp;
    r.lo = q->act_min;
    r.hi = q->act_max;
    if (q->scale) {
        r.mode = TINYAOT_RQ_ORT;
    } else if (!q->rq) {
        r.mode = TINYAOT_RQ_TFLITE;
    } else if (q->act_min <= -128 && q->act_max >= 127) {
        r.mode = TINYAOT_RQ_SMLAL_SAT;
    } else {
        r.mode = TINYAOT_RQ_SMLAL;
    }
    return r;
}

/* tinyaot_requant_ort with the float clamp as IT-predicated moves on FPU
 * cores: inlined into a kernel loop, the C comparisons may become branches,
 * and the instruction count would depend on the data. The same result. */
static inline int8_t tinyaot_requant_ort_fast(int32_t acc, float scale, int32_t zp, int32_t lo,
                                              int32_t hi)
{
#if defined(__GNUC__) && defined(__thumb2__) && defined(__ARM_FP) && \
    !defined(TINYAOT_PORTABLE_INTRINSICS)
    float v = (float)acc * scale;
    const float fmin = (float)(lo - zp);
    const float fmax = (float)(hi - zp);
    __asm__("vcmp.f32 %[v], %[mn]\n\t"
            "vmrs APSR_nzcv, fpscr\n\t"
            "it mi\n\t"
            "vmovmi.f32 %[v], %[mn]\n\t"
            "vcmp.f32 %[v], %[mx]\n\t"
            "vmrs APSR_nzcv, fpscr\n\t"
            "it gt\n\t"
            "vmovgt.f32 %[v], %[mx]"
            : [v] "+t"(v)
            : [mn] "t"(fmin), [mx] "t"(fmax)
            : "cc");
    return (int8_t)(tinyaot_round_even_f32(v) + zp);
#else
    return tinyaot_requant_ort(acc, scale, zp, lo, hi);
#endif
}

/* acc (bias included) of channel ch -> int8, in requantization mode `mode`
 * (a constant after inlining); not for the SMLAL modes. */
/* tinyaot_rqc, and for onnxruntime layers that keep the whole int8 range and
 * come with {bias, scale} records (the conv and depthwise kernels' only):
 * TINYAOT_RQ_FLOAT_SAT. */
static inline int tinyaot_rq_float_records(const tinyaot_requant_t *q)
{
    return q->scale && q->rq && !q->post_bias && q->act_min <= -128 && q->act_max >= 127;
}

static inline tinyaot_rqc_t tinyaot_rqc_records(const tinyaot_requant_t *q)
{
    tinyaot_rqc_t r = tinyaot_rqc(q);
    if (tinyaot_rq_float_records(q)) {
        r.mode = TINYAOT_RQ_FLOAT_SAT;
    }
    return r;
}

static inline __attribute__((always_inline)) int8_t tinyaot_rqc_out(const tinyaot_rqc_t *r,
                                                                    int32_t acc, int32_t ch,
                                                                    int mode)
{
    if (mode == TINYAOT_RQ_ORT) {
        return tinyaot_requant_ort_fast(acc, r->scale[ch], r->zp, r->lo, r->hi);
    }
    return tinyaot_requant_tflite_fast(acc, r->mult[ch], r->shift[ch], r->zp, r->lo, r->hi);
}

/* SMLAL modes: acc (without bias) -> int8 with the record p of its channel
 * ({mult, e - 1, R low, R high, bias}; the output zero point is in R). */
static inline __attribute__((always_inline)) int8_t tinyaot_rq_smlal_out(const tinyaot_rqc_t *r,
                                                                         int32_t acc,
                                                                         const int32_t *p,
                                                                         int mode)
{
    const int32_t v = tinyaot_mbqm_smlal(acc + p[4], p[0], p[1], (uint32_t)p[2], p[3]);
    if (mode == TINYAOT_RQ_SMLAL_SAT) {
        return (int8_t)__SSAT(v, 8);
    }
    return (int8_t)tinyaot_fp_clamp(v, r->lo, r->hi);
}

/* The one-SMLAL records split (codegen/kernels/fast_pack.py: split_records; the FC
 * pair and bits kernels): q->bias the biases (or what the kernel starts its sums at),
 * q->rq = {step, the headers {m, e - 1, R lo, R hi} of channels in groups of eight}, step
 * the words from one group's headers to the next, 32 or 0 (one group of eight serves
 * every group: a per-tensor layer). Over the whole int8 range only (SSAT). */
static inline int tinyaot_rq_split_ok(const tinyaot_requant_t *q)
{
    return tinyaot_rqc(q).mode == TINYAOT_RQ_SMLAL_SAT && q->bias &&
           (q->rq[0] == 0 || q->rq[0] == 32);
}
/* channel ch's header */
static inline const int32_t *tinyaot_rq_split_head(const tinyaot_requant_t *q, int32_t ch)
{
    return q->rq + 1 + q->rq[0] * (ch / 8) + 4 * (ch % 8);
}
/* the output of a sum v (bias included) with header h */
static inline __attribute__((always_inline)) int8_t tinyaot_rq_split_out(int32_t v,
                                                                         const int32_t *h)
{
    return (int8_t)__SSAT(tinyaot_mbqm_smlal(v, h[0], h[1], (uint32_t)h[2], h[3]), 8);
}

/* Output channel ch of two accumulators (two pixels / rows) at once. */
static inline __attribute__((always_inline)) void tinyaot_rqc_apply2_m(const tinyaot_rqc_t *r,
                                                                       int32_t acc0, int32_t acc1,
                                                                       int32_t ch, int8_t *o0,
                                                                       int8_t *o1, int mode)
{
    if (mode == TINYAOT_RQ_FLOAT_SAT) {
        const int32_t *p = r->rq + 2 * ch;
        *o0 = tinyaot_requant_float_sat(acc0 + p[0], p[1], r->zp);
        *o1 = tinyaot_requant_float_sat(acc1 + p[0], p[1], r->zp);
        return;
    }
    if (mode == TINYAOT_RQ_SMLAL || mode == TINYAOT_RQ_SMLAL_SAT) {
        const int32_t *p = r->rq + 5 * ch;
        *o0 = tinyaot_rq_smlal_out(r, acc0, p, mode);
        *o1 = tinyaot_rq_smlal_out(r, acc1, p, mode);
        return;
    }
    {
        const int32_t b = r->bias[ch];
        *o0 = tinyaot_rqc_out(r, acc0 + b, ch, mode);
        *o1 = tinyaot_rqc_out(r, acc1 + b, ch, mode);
    }
}

static inline __attribute__((always_inline)) int8_t tinyaot_rqc_apply_m(const tinyaot_rqc_t *r,
                                                                        int32_t acc, int32_t ch,
                                                                        int mode)
{
    if (mode == TINYAOT_RQ_SMLAL || mode == TINYAOT_RQ_SMLAL_SAT) {
        return tinyaot_rq_smlal_out(r, acc, r->rq + 5 * ch, mode);
    }
    if (mode == TINYAOT_RQ_FLOAT_SAT) {
        return tinyaot_requant_float_sat(acc + r->rq[2 * ch], r->rq[2 * ch + 1], r->zp);
    }
    return tinyaot_rqc_out(r, acc + r->bias[ch], ch, mode);
}

/* The modes of tinyaot_rqc, chosen at run time (TINYAOT_RQ_FLOAT_SAT comes only
 * from tinyaot_rqc_records, whose kernels pass it as a constant). The _in forms
 * compile the modes of the mask `modes` only (bit TINYAOT_RQ_*, a constant:
 * tinyaot_specialize.h); their caller has refused the others. */
static inline __attribute__((always_inline)) void tinyaot_rqc_apply2_in(const tinyaot_rqc_t *r,
                                                                        int32_t acc0, int32_t acc1,
                                                                        int32_t ch, int8_t *o0,
                                                                        int8_t *o1, unsigned modes)
{
    switch (r->mode) {
    case TINYAOT_RQ_ORT:
        if ((modes >> TINYAOT_RQ_ORT) & 1u)
            tinyaot_rqc_apply2_m(r, acc0, acc1, ch, o0, o1, TINYAOT_RQ_ORT);
        break;
    case TINYAOT_RQ_TFLITE:
        if ((modes >> TINYAOT_RQ_TFLITE) & 1u)
            tinyaot_rqc_apply2_m(r, acc0, acc1, ch, o0, o1, TINYAOT_RQ_TFLITE);
        break;
    case TINYAOT_RQ_SMLAL:
        if ((modes >> TINYAOT_RQ_SMLAL) & 1u)
            tinyaot_rqc_apply2_m(r, acc0, acc1, ch, o0, o1, TINYAOT_RQ_SMLAL);
        break;
    default:
        if ((modes >> TINYAOT_RQ_SMLAL_SAT) & 1u)
            tinyaot_rqc_apply2_m(r, acc0, acc1, ch, o0, o1, TINYAOT_RQ_SMLAL_SAT);
        break;
    }
}

static inline __attribute__((always_inline)) int8_t tinyaot_rqc_apply_in(const tinyaot_rqc_t *r,
                                                                         int32_t acc, int32_t ch,
                                                                         unsigned modes)
{
    switch (r->mode) {
    case TINYAOT_RQ_ORT:
        if ((modes >> TINYAOT_RQ_ORT) & 1u) return tinyaot_rqc_apply_m(r, acc, ch, TINYAOT_RQ_ORT);
        break;
    case TINYAOT_RQ_TFLITE:
        if ((modes >> TINYAOT_RQ_TFLITE) & 1u)
            return tinyaot_rqc_apply_m(r, acc, ch, TINYAOT_RQ_TFLITE);
        break;
    case TINYAOT_RQ_SMLAL:
        if ((modes >> TINYAOT_RQ_SMLAL) & 1u)
            return tinyaot_rqc_apply_m(r, acc, ch, TINYAOT_RQ_SMLAL);
        break;
    default:
        if ((modes >> TINYAOT_RQ_SMLAL_SAT) & 1u)
            return tinyaot_rqc_apply_m(r, acc, ch, TINYAOT_RQ_SMLAL_SAT);
        break;
    }
    return 0;
}

static inline void tinyaot_rqc_apply2(const tinyaot_rqc_t *r, int32_t acc0, int32_t acc1, int32_t ch,
                                      int8_t *o0, int8_t *o1)
{
    tinyaot_rqc_apply2_in(r, acc0, acc1, ch, o0, o1, 0xfu);
}

static inline int8_t tinyaot_rqc_apply(const tinyaot_rqc_t *r, int32_t acc, int32_t ch)
{
    return tinyaot_rqc_apply_in(r, acc, ch, 0xfu);
}

static inline int8_t tinyaot_requant_channel_fast(const tinyaot_requant_t *q, int32_t acc, int32_t ch)
{
    const tinyaot_rqc_t r = tinyaot_rqc(q);
    return tinyaot_rqc_apply(&r, acc, ch);
}

#endif
