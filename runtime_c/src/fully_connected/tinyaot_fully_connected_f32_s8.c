/* onnxruntime's float Gemm / MatMul on dequantized int8, in MLAS's summation
 * order (codegen/reference/fc_float_order.py), then QuantizeLinear.
 *
 * GEMV4 (every MLPerf Tiny float FC): outputs in blocks of 8, then one of 4,
 * weights packed per block as [k group of 4][output][4] then the k tail per
 * output, leftover outputs row-major (codegen/backend/fc_float_pack.py). Per output:
 * t = bias; t = (((x0*w0 + x1*w1) + x2*w2) + x3*w3) + t per group, every
 * product rounded. On an FPv4 FPU that is VMUL + 3 VMLA (multiply rounded,
 * then added: not fused) + VADD, with the portable C below as its twin
 * (built with -ffp-contract=off). LANES8 and KBLOCK read row-major weights. */
#include <math.h>

#include "../internal/tinyaot_f32_mlas_sums.h"
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__thumb2__)
#define TINYAOT_FC_F32_ASM 1
#endif

/* One dequantized input row. */
int32_t tinyaot_fully_connected_f32_s8_get_buffer_size(int32_t in_features)
{
    return in_features * (int32_t)sizeof(float);
}

/* One block of nb (4 or 8) outputs from their biases b[nb] into t[nb]: k groups
 * of 4, then MLAS's tail (a group of 2, then a group of 1). Advances *w past
 * the block. */
static void gemv4_block(const float *x, const float **w, int32_t k, int32_t nb, const float *b,
                        float *t)
{
    const float *wp = *w;
    const int32_t groups = k >> 2, tail = k & 3;
    for (int32_t j = 0; j < nb; ++j) {
        t[j] = b[j];
    }
    for (int32_t g = 0; g < groups; ++g, x += 4) {
        for (int32_t j = 0; j < nb; ++j, wp += 4) {
            float part = x[0] * wp[0];
            part = part + x[1] * wp[1];
            part = part + x[2] * wp[2];
            part = part + x[3] * wp[3];
            t[j] = part + t[j];
        }
    }
    for (int32_t j = 0; j < nb && tail; ++j, wp += tail) {
        const float *xt = x, *wt = wp;
        if (tail & 2) {
            const float part = xt[0] * wt[0] + xt[1] * wt[1];
            t[j] = part + t[j];
            xt += 2;
            wt += 2;
        }
        if (tail & 1) {
            t[j] = xt[0] * wt[0] + t[j];
        }
    }
    *w = wp;
}

#ifdef TINYAOT_FC_F32_ASM
/* One k group of 4 for 4 outputs: weights in s0-s15 (each output's product sum
 * lands on its first weight's register), x in X0..X3, totals T0..T3. */
#define FC_GROUP_T(X0, X1, X2, X3, T0, T1, T2, T3)                                             \
    "vmul.f32 s0, " X0 ", s0\n\t" "vmla.f32 s0, " X1 ", s1\n\t"                               \
    "vmla.f32 s0, " X2 ", s2\n\t" "vmla.f32 s0, " X3 ", s3\n\t"                               \
    "vadd.f32 " T0 ", s0, " T0 "\n\t"                                                         \
    "vmul.f32 s4, " X0 ", s4\n\t" "vmla.f32 s4, " X1 ", s5\n\t"                               \
    "vmla.f32 s4, " X2 ", s6\n\t" "vmla.f32 s4, " X3 ", s7\n\t"                               \
    "vadd.f32 " T1 ", s4, " T1 "\n\t"                                                         \
    "vmul.f32 s8, " X0 ", s8\n\t" "vmla.f32 s8, " X1 ", s9\n\t"                               \
    "vmla.f32 s8, " X2 ", s10\n\t" "vmla.f32 s8, " X3 ", s11\n\t"                             \
    "vadd.f32 " T2 ", s8, " T2 "\n\t"                                                         \
    "vmul.f32 s12, " X0 ", s12\n\t" "vmla.f32 s12, " X1 ", s13\n\t"                           \
    "vmla.f32 s12, " X2 ", s14\n\t" "vmla.f32 s12, " X3 ", s15\n\t"                           \
    "vadd.f32 " T3 ", s12, " T3 "\n\t"
#define FC_GROUP(X0, X1, X2, X3) FC_GROUP_T(X0, X1, X2, X3, "s16", "s17", "s18", "s19")

/* Three k groups: x in s20-s31, weights 16 at a time. */
#define FC_TRIPLE                                                                             \
    "vldmia %[xp]!, {s20-s31}\n\t" "vldmia %[wp]!, {s0-s15}\n\t"                            \
    FC_GROUP("s20", "s21", "s22", "s23")                                                      \
    "vldmia %[wp]!, {s0-s15}\n\t" FC_GROUP("s24", "s25", "s26", "s27")                        \
    "vldmia %[wp]!, {s0-s15}\n\t" FC_GROUP("s28", "s29", "s30", "s31")

/* `blocks` blocks of 4 outputs of one row, k % 4 == 0: totals into y, 4 per block.
 * Two triples of k groups per loop pass: 130 instructions per 96 MACs. */
static void gemv4_blocks_fpu(const float *x, const float **w, int32_t k, const float *b,
                             int32_t blocks, float *y)
{
    const int32_t cfg[2] = {(k >> 2) / 3, (k >> 2) % 3}; /* triples, leftover groups */
    const float *wp = *w;
    const float *xp;
    int32_t cnt;
    __asm__ volatile(
        "0:\n\t"
        "mov %[xp], %[x]\n\t"
        "vldmia %[b]!, {s16-s19}\n\t"
        "ldr %[cnt], [%[cfg]]\n\t"
        "lsrs %[cnt], %[cnt], #1\n\t" /* C: an odd triple; Z: no pair of triples */
        "bcc 4f\n\t"
        FC_TRIPLE
        "4:\n\t"
        "beq 2f\n"                     /* the FPU instructions leave the flags alone */
        "1:\n\t"
        FC_TRIPLE
        FC_TRIPLE
        "subs %[cnt], %[cnt], #1\n\t"
        "bne 1b\n"
        "2:\n\t"
        "ldr %[cnt], [%[cfg], #4]\n\t"
        "cmp %[cnt], #0\n\t"
        "beq 3f\n\t"
        "vldmia %[xp]!, {s20-s23}\n\t"
        "vldmia %[wp]!, {s0-s15}\n\t"
        FC_GROUP("s20", "s21", "s22", "s23")
        "cmp %[cnt], #1\n\t"
        "beq 3f\n\t"
        "vldmia %[xp]!, {s20-s23}\n\t"
        "vldmia %[wp]!, {s0-s15}\n\t"
        FC_GROUP("s20", "s21", "s22", "s23")
        "3:\n\t"
        "vstmia %[y]!, {s16-s19}\n\t"
        "subs %[blocks], %[blocks], #1\n\t"
        "bne 0b\n\t"
        : [wp] "+r"(wp), [b] "+r"(b), [y] "+r"(y), [blocks] "+r"(blocks), [xp] "=&r"(xp),
          [cnt] "=&r"(cnt)
        : [x] "r"(x), [cfg] "r"(cfg)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12",
          "s13", "s14", "s15", "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24",
          "s25", "s26", "s27", "s28", "s29", "s30", "s31", "memory", "cc");
    *w = wp;
}

/* Blocks of 8 outputs, totals in s24-s31, k % 4 == 0: a k group's 32 weights
 * in two VLDMs of 16, x for a pair of groups in s16-s23 (one VLDM, used by all
 * 8 outputs): 85 instructions per 64 MACs, one loop pass per 8 pairs. An
 * odd group count does the first group alone. The pass's entry is computed
 * once per call (the first pass does pairs % 8: no per-block test), and the
 * 8 totals leave the registers either as floats (capture builds) or quantized
 * right away (VDIV, VCVTR, QADD of the zero point, SSAT, four bytes per STR):
 * 5.6 instructions per output instead of 11. */
#define FC8_HALF(X0, X1, X2, X3)                                                              \
    "vldmia %[wp]!, {s0-s15}\n\t"                                                            \
    FC_GROUP_T(X0, X1, X2, X3, "s24", "s25", "s26", "s27")                                    \
    "vldmia %[wp]!, {s0-s15}\n\t"                                                            \
    FC_GROUP_T(X0, X1, X2, X3, "s28", "s29", "s30", "s31")
#define FC8_PAIR                                                                              \
    "vldmia %[xp]!, {s16-s23}\n\t" FC8_HALF("s16", "s17", "s18", "s19")                      \
    FC8_HALF("s20", "s21", "s22", "s23")
#define FC8_PAIR_BYTES 340 /* 85 four-byte instructions */
#define FC8_PAIRS4 FC8_PAIR FC8_PAIR FC8_PAIR FC8_PAIR
#define FC8_PAIRS8 FC8_PAIRS4 FC8_PAIRS4

typedef struct {
    const float *x;
    int32_t passes;  /* pair-loop passes per block */
    uint32_t odd;    /* in: 1 for an odd group count; then the block entry (+1: Thumb) */
    uint32_t loop;   /* in: bytes of the pair loop skipped + 1 (all without pairs, one pass
                      * that only counts down); then its entry */
    float scale;
} fc8_ctl_t;

/* fc8_ctl_t.odd / .loop -> the addresses `ldr pc` jumps to (labels 5 and 3 below) */
#define FC8_HEAD                                                                              \
    "ldr %[t], [%[L], #12]\n\t"                                                               \
    "adr.w %[xp], 3f\n\t"                                                                     \
    "add %[xp], %[xp], %[t]\n\t"                                                              \
    "str %[xp], [%[L], #12]\n\t"                                                              \
    "ldr %[t], [%[L], #8]\n\t"                                                                \
    "cmp %[t], #0\n\t"                                                                        \
    "beq 7f\n\t"                                                                              \
    "adr.w %[xp], 5f\n\t"                                                                     \
    "add %[xp], %[xp], #1\n\t"                                                                \
    "7:\n\t"                                                                                  \
    "str %[xp], [%[L], #8]\n\t"                                                               \
    "0:\n\t"                                                                                  \
    "ldr %[xp], [%[L]]\n\t"                                                                   \
    "vldmia %[b]!, {s24-s31}\n\t"                                                            \
    "ldr %[cnt], [%[L], #4]\n\t"                                                              \
    "ldr pc, [%[L], #8]\n\t"                                                                  \
    "5:\n\t"                                                                                  \
    "vldmia %[xp]!, {s16-s19}\n\t" FC8_HALF("s16", "s17", "s18", "s19")                      \
    "ldr pc, [%[L], #12]\n\t"                                                                 \
    "3:\n\t"
#define FC8_LOOP_END                                                                          \
    "subs %[cnt], %[cnt], #1\n\t"                                                             \
    "bne 3b\n\t"
#define FC8_BLOCK_END                                                                         \
    "subs %[blocks], %[blocks], #1\n\t"                                                       \
    "bne 0b\n\t"
/* s24-s31 / scale, rounded half to even (VCVTR, the FPSCR default) */
#define FC8_DIV_ROUND                                                                         \
    "vldr s0, [%[L], #16]\n\t"                                                                \
    "vdiv.f32 s24, s24, s0\n\t" "vdiv.f32 s25, s25, s0\n\t"                                   \
    "vdiv.f32 s26, s26, s0\n\t" "vdiv.f32 s27, s27, s0\n\t"                                   \
    "vdiv.f32 s28, s28, s0\n\t" "vdiv.f32 s29, s29, s0\n\t"                                   \
    "vdiv.f32 s30, s30, s0\n\t" "vdiv.f32 s31, s31, s0\n\t"                                   \
    "vcvtr.s32.f32 s24, s24\n\t" "vcvtr.s32.f32 s25, s25\n\t"                                 \
    "vcvtr.s32.f32 s26, s26\n\t" "vcvtr.s32.f32 s27, s27\n\t"                                 \
    "vcvtr.s32.f32 s28, s28\n\t" "vcvtr.s32.f32 s29, s29\n\t"                                 \
    "vcvtr.s32.f32 s30, s30\n\t" "vcvtr.s32.f32 s31, s31\n\t"
/* four rounded totals + zero point (QADD: no wrap), saturated to int8, packed in xp */
#define FC8_PACK4(SA, SB, SC, SD)                                                             \
    "vmov %[xp], %[cnt], " SA ", " SB "\n\t"                                                  \
    "qadd %[xp], %[xp], %[zp]\n\t" "qadd %[cnt], %[cnt], %[zp]\n\t"                          \
    "ssat %[xp], #8, %[xp]\n\t" "ssat %[cnt], #8, %[cnt]\n\t"                                \
    "bfi %[xp], %[cnt], #8, #8\n\t"                                                           \
    "vmov %[cnt], %[t], " SC ", " SD "\n\t"                                                   \
    "qadd %[cnt], %[cnt], %[zp]\n\t" "qadd %[t], %[t], %[zp]\n\t"                            \
    "ssat %[cnt], #8, %[cnt]\n\t" "ssat %[t], #8, %[t]\n\t"                                  \
    "bfi %[xp], %[cnt], #16, #8\n\t" "bfi %[xp], %[t], #24, #8\n\t"
#define FC8_OPERANDS                                                                          \
    : [wp] "+r"(wp), [b] "+r"(b), [o] "+r"(o), [blocks] "+r"(blocks), [xp] "=&r"(xp),       \
      [cnt] "=&r"(cnt), [t] "=&r"(t)                                                          \
    : [L] "r"(L), [zp] "r"(p->out_zp)                                                      \
    : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", \
      "s14", "s15", "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25",     \
      "s26", "s27", "s28", "s29", "s30", "s31", "memory", "cc"

#define FC8_UNROLL 8 /* pairs per loop pass (16: ~320 fewer instructions on ad01, 2.7 KB more code) */

/* `blocks` blocks of 8 outputs of one row (k % 4 == 0) into o: floats
 * (`quantize` 0) or int8 with QuantizeLinear, saturated to int8 (not yet
 * clamped to a narrower [act_min, act_max]). */
static inline __attribute__((always_inline)) void gemv8_blocks_fpu(
    const float *x, const float **w, int32_t k, const tinyaot_float_fc_t *p, const float *b,
    int32_t blocks, void *o, int quantize)
{
    const int32_t pairs = k >> 3;
    const uint32_t skip =
        (uint32_t)(pairs ? (FC8_UNROLL - pairs % FC8_UNROLL) % FC8_UNROLL : FC8_UNROLL) *
        FC8_PAIR_BYTES;
    fc8_ctl_t ctl;
    fc8_ctl_t *L = &ctl;
    const float *wp = *w;
    uint32_t xp, cnt, t;
    ctl.x = x;
    ctl.passes = pairs ? (pairs + FC8_UNROLL - 1) / FC8_UNROLL : 1;
    ctl.odd = (uint32_t)((k >> 2) & 1);
    ctl.loop = skip + 1u;
    ctl.scale = p->out_scale;
    if (!quantize) {
        __asm__ volatile(FC8_HEAD FC8_PAIRS8 FC8_LOOP_END
                         "vstmia %[o]!, {s24-s31}\n\t"
                         FC8_BLOCK_END FC8_OPERANDS);
    } else {
        __asm__ volatile(FC8_HEAD FC8_PAIRS8 FC8_LOOP_END FC8_DIV_ROUND
                         FC8_PACK4("s24", "s25", "s26", "s27")
                         "str %[xp], [%[o]], #4\n\t"
                         FC8_PACK4("s28", "s29", "s30", "s31")
                         "str %[xp], [%[o]], #4\n\t"
                         FC8_BLOCK_END FC8_OPERANDS);
    }
    *w = wp;
}

/* n4 words of int8 (already saturated) clamped bytewise to [lo, hi]: SSUB8
 * sets GE per byte, SEL picks (no branch on the data). For the rare float
 * layer with a Relu-like bound, after gemv8_blocks_fpu. */
static inline void clamp_bytes4(int8_t *o, int32_t n4, int32_t lo, int32_t hi)
{
    const uint32_t lo4 = (uint32_t)(uint8_t)lo * 0x01010101u;
    const uint32_t hi4 = (uint32_t)(uint8_t)hi * 0x01010101u;
    uint32_t v, t;
    __asm__ volatile("1:\n\t"
                     "ldr %[v], [%[o]]\n\t"
                     "ssub8 %[t], %[v], %[lo4]\n\t"
                     "sel %[v], %[v], %[lo4]\n\t"
                     "ssub8 %[t], %[hi4], %[v]\n\t"
                     "sel %[v], %[v], %[hi4]\n\t"
                     "str %[v], [%[o]], #4\n\t"
                     "subs %[n], %[n], #1\n\t"
                     "bne 1b"
                     : [o] "+r"(o), [n] "+r"(n4), [v] "=&r"(v), [t] "=&r"(t)
                     : [lo4] "r"(lo4), [hi4] "r"(hi4)
                     : "memory", "cc");
}
#endif

/* QuantizeLinear of a row of floats. FPU: VCVTR (round half to even, the
 * default FPSCR mode) before an integer clamp -- the same integers as
 * tinyaot_quantize_f32's clamp-then-round, as the bounds are integers --
 * 11 instructions per output. (Not when a test redefines
 * tinyaot_quantize_f32 to capture the floats.) */
static void quantize_row(const float *y, int32_t n, const tinyaot_float_fc_t *p, int8_t *out)
{
    const float scale = p->out_scale;
    const int32_t zp = p->out_zp, lo = p->act_min, hi = p->act_max;
#if defined(TINYAOT_FC_F32_ASM) && !defined(tinyaot_quantize_f32)
    const int32_t qmin = lo - zp, qmax = hi - zp;
    for (int32_t o = 0; o < n; ++o) {
        int32_t r;
        float v;
        __asm__("vdiv.f32 %[v], %[y], %[s]\n\t"
                "vcvtr.s32.f32 %[v], %[v]\n\t"
                "vmov %[r], %[v]"
                : [v] "=&t"(v), [r] "=r"(r)
                : [y] "t"(y[o]), [s] "t"(scale));
        r = r < qmin ? qmin : r;
        r = r > qmax ? qmax : r;
        out[o] = (int8_t)(r + zp);
    }
#else
    for (int32_t o = 0; o < n; ++o) {
        out[o] = tinyaot_quantize_f32(y[o], scale, zp, lo, hi);
    }
#endif
}

#define GEMV4_CHUNK 32 /* outputs per pass (a multiple of 8): their floats on the stack */

/* One row: float totals, GEMV4_CHUNK outputs at a time (blocks of 8, one of 4,
 * then the leftover outputs), then QuantizeLinear. With the FPU (k % 4 == 0)
 * the blocks of 8 quantize their own totals. */
static void gemv4_row(int32_t k, int32_t n, const tinyaot_float_fc_t *p, const float *x,
                      int8_t *out)
{
    float y[GEMV4_CHUNK];
    const int32_t groups = k >> 2, n8 = n & ~7, n4 = n & ~3;
    const float *w = p->weights;
    int32_t o0 = 0;
#if defined(TINYAOT_FC_F32_ASM) && !defined(tinyaot_quantize_f32)
    if ((k & 3) == 0 && n8) {
        gemv8_blocks_fpu(x, &w, k, p, p->bias, n8 >> 3, out, 1);
        if (p->act_min > -128 || p->act_max < 127) {
            clamp_bytes4(out, n8 >> 2, p->act_min, p->act_max);
        }
        o0 = n8;
    }
#endif
    for (; o0 < n; o0 += GEMV4_CHUNK) {
        const float *bias = p->bias + o0;
        const int32_t cn = n - o0 < GEMV4_CHUNK ? n - o0 : GEMV4_CHUNK;
        const int32_t e8 = o0 + cn <= n8 ? cn : n8 - o0; /* in blocks of 8 */
        int32_t o = 0;
#if defined(TINYAOT_FC_F32_ASM) && defined(tinyaot_quantize_f32)
        if ((k & 3) == 0 && e8 >= 8) {
            gemv8_blocks_fpu(x, &w, k, p, bias, e8 >> 3, y, 0);
            o = e8;
        }
#endif
        for (; o < e8; o += 8) {
            gemv4_block(x, &w, k, 8, bias + o, y + o);
        }
        if (o < cn && o0 + o == n8 && n4 > n8) { /* one block of 4 */
#ifdef TINYAOT_FC_F32_ASM
            if ((k & 3) == 0) {
                gemv4_blocks_fpu(x, &w, k, bias + o, 1, y + o);
            } else
#endif
            {
                gemv4_block(x, &w, k, 4, bias + o, y + o);
            }
            o += 4;
        }
        for (; o < cn; ++o, w += k) {  /* leftover outputs: row-major weights */
            float t = bias[o];
            const float *xp = x;
            for (int32_t g = 0; g < groups; ++g, xp += 4) {
                const float *wp = w + 4 * g;
                float part = xp[0] * wp[0];
                part = part + xp[1] * wp[1];
                part = part + xp[2] * wp[2];
                part = part + xp[3] * wp[3];
                t = part + t;
            }
            if (k & 2) {
                const float part = xp[0] * w[4 * groups] + xp[1] * w[4 * groups + 1];
                t = part + t;
            }
            if (k & 1) {
                t = x[k - 1] * w[k - 1] + t;
            }
            y[o] = t;
        }
        quantize_row(y, cn, p, out + o0);
    }
}

int tinyaot_fully_connected_f32_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                   const tinyaot_float_fc_t *p, const int8_t *input,
                                   float *scratch, int8_t *output)
{
    const int32_t k = in_features, n = out_features;
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *q = input + r * k;
        int8_t *out = output + r * n;
        tinyaot_dequantize_row_f32_s8(q, k, p->in_table, scratch);
        if (p->order == TINYAOT_FC_F32_GEMV4) {
            gemv4_row(k, n, p, scratch, out);
            continue;
        }
        for (int32_t o = 0; o < n; ++o) {
            const float *w = p->weights + o * k;
            float t;
            if (p->order == TINYAOT_FC_F32_LANES8) {
                float lane[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
                for (int32_t kk = 0; kk < k; ++kk) {
                    lane[kk & 7] = lane[kk & 7] + scratch[kk] * w[kk];
                }
                /* N == 1 with rows > 1: MLAS swapped A and B, rows take the outputs' place */
                t = (n == 1 && rows > 1) ? mlas_m1tb_reduce8(lane, r, rows)
                                         : mlas_m1tb_reduce8(lane, o, n);
                t = t + p->bias[o];
            } else {
                t = p->bias[o];
                for (int32_t k0 = 0; k0 < k; k0 += p->k_block) {
                    const int32_t k1 = k0 + p->k_block < k ? k0 + p->k_block : k;
                    float part = 0.0f;
                    for (int32_t kk = k0; kk < k1; ++kk) {
                        part = fmaf(scratch[kk], w[kk], part);
                    }
                    t = part + t;
                }
            }
            out[o] = tinyaot_quantize_f32(t, p->out_scale, p->out_zp, p->act_min, p->act_max);
        }
    }
    return TINYAOT_OK;
}
