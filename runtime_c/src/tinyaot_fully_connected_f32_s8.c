/* onnxruntime's float Gemm / MatMul on dequantized int8, in MLAS's summation
 * order (codegen/reference/fc_float_order.py), then QuantizeLinear.
 *
 * GEMV4 (every MLPerf Tiny float FC): outputs in blocks of 4, weights packed
 * per block as [k group of 4][output][4] then the k tail per output, leftover
 * outputs row-major (codegen/backend/fc_float_pack.py). Per output:
 * t = bias; t = (((x0*w0 + x1*w1) + x2*w2) + x3*w3) + t per group, every
 * product rounded. On an FPv4 FPU that is VMUL + 3 VMLA (multiply rounded,
 * then added: not fused) + VADD, with the portable C below as its twin
 * (built with -ffp-contract=off). LANES8 and KBLOCK read row-major weights. */
#include <math.h>

#include "tinyaot_kernels.h"
#include "tinyaot_requant.h"

#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__thumb2__)
#define TINYAOT_FC_F32_ASM 1
#endif

/* One dequantized input row. */
int32_t tinyaot_fully_connected_f32_s8_get_buffer_size(int32_t in_features)
{
    return in_features * (int32_t)sizeof(float);
}

/* One block of 4 outputs from their biases b[4] into t[4]: k groups of 4, then
 * MLAS's tail (a group of 2, then a group of 1). Advances *w past the block. */
static void gemv4_block(const float *x, const float **w, int32_t k, const float *b, float *t)
{
    const float *wp = *w;
    const int32_t groups = k >> 2, tail = k & 3;
    for (int32_t j = 0; j < 4; ++j) {
        t[j] = b[j];
    }
    for (int32_t g = 0; g < groups; ++g, x += 4) {
        for (int32_t j = 0; j < 4; ++j, wp += 4) {
            float part = x[0] * wp[0];
            part = part + x[1] * wp[1];
            part = part + x[2] * wp[2];
            part = part + x[3] * wp[3];
            t[j] = part + t[j];
        }
    }
    for (int32_t j = 0; j < 4 && tail; ++j, wp += tail) {
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
 * lands on its first weight's register), x in X0..X3, totals s16-s19. */
#define FC_GROUP(X0, X1, X2, X3)                                                              \
    "vmul.f32 s0, " X0 ", s0\n\t" "vmla.f32 s0, " X1 ", s1\n\t"                               \
    "vmla.f32 s0, " X2 ", s2\n\t" "vmla.f32 s0, " X3 ", s3\n\t" "vadd.f32 s16, s0, s16\n\t"   \
    "vmul.f32 s4, " X0 ", s4\n\t" "vmla.f32 s4, " X1 ", s5\n\t"                               \
    "vmla.f32 s4, " X2 ", s6\n\t" "vmla.f32 s4, " X3 ", s7\n\t" "vadd.f32 s17, s4, s17\n\t"   \
    "vmul.f32 s8, " X0 ", s8\n\t" "vmla.f32 s8, " X1 ", s9\n\t"                               \
    "vmla.f32 s8, " X2 ", s10\n\t" "vmla.f32 s8, " X3 ", s11\n\t" "vadd.f32 s18, s8, s18\n\t" \
    "vmul.f32 s12, " X0 ", s12\n\t" "vmla.f32 s12, " X1 ", s13\n\t"                           \
    "vmla.f32 s12, " X2 ", s14\n\t" "vmla.f32 s12, " X3 ", s15\n\t"                           \
    "vadd.f32 s19, s12, s19\n\t"

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

#define GEMV4_CHUNK 32 /* outputs per pass (a multiple of 4): their floats on the stack */

/* One row: float totals, GEMV4_CHUNK outputs at a time, then QuantizeLinear. */
static void gemv4_row(int32_t k, int32_t n, const tinyaot_float_fc_t *p, const float *x,
                      int8_t *out)
{
    float y[GEMV4_CHUNK];
    const int32_t groups = k >> 2, in_blocks = n & ~3;
    const float *w = p->weights;
    for (int32_t o0 = 0; o0 < n; o0 += GEMV4_CHUNK) {
        const float *bias = p->bias + o0;
        const int32_t cn = n - o0 < GEMV4_CHUNK ? n - o0 : GEMV4_CHUNK;
        const int32_t full = o0 + cn <= in_blocks ? cn : in_blocks - o0; /* in blocks of 4 */
        int32_t o = 0;
#ifdef TINYAOT_FC_F32_ASM
        if ((k & 3) == 0 && full >= 4) {
            gemv4_blocks_fpu(x, &w, k, bias, full >> 2, y);
            o = full;
        }
#endif
        for (; o < full; o += 4) {
            gemv4_block(x, &w, k, bias + o, y + o);
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

/* MLAS M1 TransposeB reduction of 8 lanes; the tree depends on whether output
 * `pos` of `count` falls in a block of 4, the pair or the single remainder. */
static float lanes8_reduce(const float *a, int32_t pos, int32_t count)
{
    if (pos < count - (count & 3)) {
        return (((a[0] + a[1]) + a[2]) + a[3]) + (((a[4] + a[5]) + a[6]) + a[7]);
    }
    if ((count & 2) && pos < count - (count & 1)) {
        return ((a[0] + a[2]) + (a[4] + a[6])) + ((a[1] + a[3]) + (a[5] + a[7]));
    }
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

int tinyaot_fully_connected_f32_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                   const tinyaot_float_fc_t *p, const int8_t *input,
                                   float *scratch, int8_t *output)
{
    const int32_t k = in_features, n = out_features;
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *q = input + r * k;
        int8_t *out = output + r * n;
        const float *tab = p->in_table;
        int32_t i = 0;
        for (; i + 4 <= k; i += 4) {
            scratch[i] = tab[(uint8_t)q[i]];
            scratch[i + 1] = tab[(uint8_t)q[i + 1]];
            scratch[i + 2] = tab[(uint8_t)q[i + 2]];
            scratch[i + 3] = tab[(uint8_t)q[i + 3]];
        }
        for (; i < k; ++i) {
            scratch[i] = tab[(uint8_t)q[i]];
        }
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
                t = (n == 1 && rows > 1) ? lanes8_reduce(lane, r, rows)
                                         : lanes8_reduce(lane, o, n);
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
