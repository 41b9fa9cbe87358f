/* onnxruntime's float Gemm / MatMul on dequantized int8, in MLAS's summation
 * order (codegen/numerics/mlas_fc_order.py), then QuantizeLinear.
 *
 * GEMV4 (every MLPerf Tiny float FC): outputs in blocks of 8, then one of 4,
 * weights packed per block as [k group of 4][output][4] then the k tail per
 * output, leftover outputs row-major (codegen/kernels/fc_float_pack.py). Per output:
 * t = bias; t = (((x0*w0 + x1*w1) + x2*w2) + x3*w3) + t per group, every
 * product rounded. On a single-precision FPU (FPv4-SP and later) that is
 * VMUL + 3 VMLA (multiply rounded, then added: not fused) + VADD, with the
 * portable C below as its twin
 * (built with -ffp-contract=off). LANES8 and KBLOCK read row-major weights.
 * The FPU's asm blocks of 4 and 8 outputs sit in
 * tinyaot_fully_connected_f32_s8_fpu.inc, included below (one translation
 * unit); TINYAOT_FC_F32_ASM (Thumb-2 with a single-precision FPU and the DSP
 * extension) selects them. */
#include <math.h>

#include "../internal/tinyaot_f32_mlas_sums.h"
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

/* The asm also uses DSP-extension instructions (QADD, SSAT, SSUB8, SEL): a
 * single-precision FPU alone (a Cortex-M4F-like core built without DSP) takes
 * the C. */
#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__thumb2__) && defined(__ARM_FEATURE_DSP) && \
    defined(__OPTIMIZE__) /* -O0: see TINYAOT_HAVE_DSP_ASM */
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

#include "tinyaot_fully_connected_f32_s8_fpu.inc"

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
