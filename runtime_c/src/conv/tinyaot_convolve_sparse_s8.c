/* int8 pointwise convolution (1x1, stride 1, no padding, groups 1) on sparse
 * weights: only the nonzero weights are stored and multiplied. Trained models
 * often carry whole rows of dead weights (MLPerf Tiny's VWW MobileNet: 90 to
 * 99 % zeros in its last pointwise layers); a zero weight adds nothing to the
 * exact int32 sum, so skipping it changes no bit of the result.
 *
 * Weights: a stream of 32-bit words, per output channel its nonzero count n,
 * then n words (w << 16) | k: the weight (int8, sign-extended into the top
 * half) and its input channel k (codegen/kernels/fast_pack.py: pack_sparse).
 * The input zero point is folded into the bias at compile time (bias -
 * in_zp * sum(w) per channel: the same int32), so a product is the raw input
 * byte times the weight. Four output pixels share one pass over a channel's
 * words; the requantization is the fast kernels' (the records' bias is the
 * folded one). No scratch. */
/* the one-SMLAL sign fix where this model's layers need it (tinyaot_requant_fast.h) */
#define TINYAOT_RQ_FIX_BIT TINYAOT_SPEC_FIX_SPARSE
#include "../internal/tinyaot_specialize.h"
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_intrinsics.h"
#include "../internal/tinyaot_requant_fast.h"

/* Channel `oc` of the four pixels at x (rows k_in bytes apart). */
#if TINYAOT_HAVE_DSP_ASM
/* One nonzero weight word V (weight in its top half, input channel in its
 * bottom half) of the four pixels: SMLATB takes the weight from V's top half,
 * so only the channel is extracted; two loads at a time pipeline. 14
 * registers: an optimizing build (TINYAOT_HAVE_DSP_ASM); inlined, as a call
 * per channel costs more than a channel's few nonzero weights. */
#define SPARSE_STEP                                                                                \
    "ldr %[v], [%[e]], #4\n\t"                                                                    \
    "uxth %[k], %[v]\n\t"                                                                         \
    "ldrsb %[y0], [%[x0], %[k]]\n\t"                                                              \
    "ldrsb %[y1], [%[x1], %[k]]\n\t"                                                              \
    "smlatb %[a0], %[v], %[y0], %[a0]\n\t"                                                        \
    "smlatb %[a1], %[v], %[y1], %[a1]\n\t"                                                        \
    "ldrsb %[y0], [%[x2], %[k]]\n\t"                                                              \
    "ldrsb %[y1], [%[x3], %[k]]\n\t"                                                              \
    "smlatb %[a2], %[v], %[y0], %[a2]\n\t"                                                        \
    "smlatb %[a3], %[v], %[y1], %[a3]\n\t"
static inline __attribute__((always_inline)) void sums4(const uint32_t *e, int32_t n, const int8_t *x,
                                            int32_t k_in, int32_t s[4])
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    const int8_t *x1 = x + k_in, *x2 = x1 + k_in, *x3 = x2 + k_in;
    const uint32_t *end = e + (n & ~1);
    uint32_t v, k;
    int32_t y0, y1;
#define SPARSE_OPS                                                                                 \
    : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [e] "+r"(e), [v] "=&r"(v),     \
      [k] "=&r"(k), [y0] "=&r"(y0), [y1] "=&r"(y1)                                                 \
    : [x0] "r"(x), [x1] "r"(x1), [x2] "r"(x2), [x3] "r"(x3)
    if (e != end) { /* pairs of words: one loop test per two; the loop's head word-aligned
                     * (a branch to a 32-bit instruction at a halfword address costs a cycle
                     * more, and where the code lands moves with every change elsewhere) */
        __asm__(".p2align 2\n\t"
                "1:\n\t" SPARSE_STEP SPARSE_STEP "cmp %[e], %[end]\n\t"
                "bne 1b" SPARSE_OPS, [end] "r"(end) : "cc", "memory");
    }
    if (n & 1) {
        __asm__(SPARSE_STEP SPARSE_OPS : "memory");
    }
#undef SPARSE_OPS
    s[0] = a0;
    s[1] = a1;
    s[2] = a2;
    s[3] = a3;
}
#undef SPARSE_STEP
#else
static inline void sums4(const uint32_t *e, int32_t n, const int8_t *x, int32_t k_in, int32_t s[4])
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    const int8_t *x1 = x + k_in, *x2 = x1 + k_in, *x3 = x2 + k_in;
    for (int32_t j = 0; j < n; ++j) {
        const uint32_t v = e[j];
        const uint32_t k = v & 0xffffu;
        const int32_t w = (int32_t)v >> 16;
        a0 += w * x[k];
        a1 += w * x1[k];
        a2 += w * x2[k];
        a3 += w * x3[k];
    }
    s[0] = a0;
    s[1] = a1;
    s[2] = a2;
    s[3] = a3;
}
#endif

static inline __attribute__((always_inline)) int32_t sum1(const uint32_t *e, int32_t n,
                                                          const int8_t *x)
{
    int32_t a = 0;
    for (int32_t j = 0; j < n; ++j) {
        const uint32_t v = e[j];
        a += ((int32_t)v >> 16) * x[v & 0xffffu];
    }
    return a;
}

/* Four sums of channel oc (bias not included) -> int8 at o[0], o[st], o[2 st],
 * o[3 st]: the channel's record read once (record modes), else per output. */
static inline __attribute__((always_inline)) void requant4(const tinyaot_rqc_t *rq,
                                                           const int32_t s[4], int32_t oc,
                                                           int8_t *o, int32_t st, int mode)
{
    if (mode == TINYAOT_RQ_SMLAL || mode == TINYAOT_RQ_SMLAL_SAT) {
        const int32_t *p = rq->rq + 5 * oc;
        const int32_t m = p[0], sh = p[1], hi = p[3], b = p[4]; /* the zero point in hi */
        const uint32_t lo = (uint32_t)p[2];
        for (int32_t i = 0; i < 4; ++i, o += st) {
            const int32_t v = tinyaot_mbqm_smlal(s[i] + b, m, sh, lo, hi);
            *o = (int8_t)(mode == TINYAOT_RQ_SMLAL_SAT ? __SSAT(v, 8)
                                                       : tinyaot_fp_clamp(v, rq->lo, rq->hi));
        }
    } else if (mode == TINYAOT_RQ_FLOAT_SAT) {
        const int32_t *p = rq->rq + 2 * oc;
        const int32_t b = p[0], sc = p[1], zp = rq->zp;
        for (int32_t i = 0; i < 4; ++i, o += st) {
            *o = tinyaot_requant_float_sat(s[i] + b, sc, zp);
        }
    } else {
        for (int32_t i = 0; i < 4; ++i, o += st) {
            *o = tinyaot_rqc_apply_m(rq, s[i], oc, mode);
        }
    }
}

/* All pixels in requantization mode `mode` (a constant). */
static inline __attribute__((always_inline)) void run_m(const tinyaot_conv_dims_t *d,
                                                        const tinyaot_rqc_t *rq,
                                                        const int8_t *input, const uint32_t *w,
                                                        int8_t *output, int mode)
{
    const int32_t k_in = d->in_c, out_c = d->out_c, npix = d->out_h * d->out_w;
    int32_t p = 0;
    for (; p + 4 <= npix; p += 4) {
        const int8_t *x = input + p * k_in;
        int8_t *o = output + p * out_c;
        const uint32_t *e = w;
        for (int32_t oc = 0; oc < out_c; ++oc) {
            const int32_t n = (int32_t)*e++;
            int32_t s[4];
            sums4(e, n, x, k_in, s);
            e += n;
            requant4(rq, s, oc, o + oc, out_c, mode);
        }
    }
    for (; p < npix; ++p) {
        const int8_t *x = input + p * k_in;
        int8_t *o = output + p * out_c;
        const uint32_t *e = w;
        for (int32_t oc = 0; oc < out_c; ++oc) {
            const int32_t n = (int32_t)*e++;
            o[oc] = tinyaot_rqc_apply_m(rq, sum1(e, n, x), oc, mode);
            e += n;
        }
    }
}

int tinyaot_convolve_sparse_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                               const int8_t *input, const uint32_t *weights, int8_t *output)
{
    if (d->groups != 1 || d->k_h != 1 || d->k_w != 1 || d->stride_h != 1 || d->stride_w != 1 ||
        d->pad_top != 0 || d->pad_left != 0 || d->in_h != d->out_h || d->in_w != d->out_w ||
        d->in_c > 65536) {
        return TINYAOT_ERR_ARG;
    }
    if (!tinyaot_rq_fix_built(q)) {
        return TINYAOT_ERR_NOT_BUILT; /* the sign fix it needs is not compiled */
    }
    if (tinyaot_rq_float_records(q)) {
        const tinyaot_rqc_t rq = tinyaot_rqc_records(q);
        run_m(d, &rq, input, weights, output, TINYAOT_RQ_FLOAT_SAT);
        return TINYAOT_OK;
    }
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    switch (rq.mode) {
    case TINYAOT_RQ_ORT: run_m(d, &rq, input, weights, output, TINYAOT_RQ_ORT); break;
    case TINYAOT_RQ_TFLITE: run_m(d, &rq, input, weights, output, TINYAOT_RQ_TFLITE); break;
    case TINYAOT_RQ_SMLAL: run_m(d, &rq, input, weights, output, TINYAOT_RQ_SMLAL); break;
    default: run_m(d, &rq, input, weights, output, TINYAOT_RQ_SMLAL_SAT); break;
    }
    return TINYAOT_OK;
}
