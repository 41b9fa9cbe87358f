/* Fast int8 depthwise convolution (channel multiplier 1, in_c % 4 == 0):
 * four channels at a time, inputs widened with the zero point folded in by
 * __SXTAB16, products accumulated by __SMLABB / __SMLATT against packed
 * int16 weights (tinyaot_fast_kernels.h). 3x3 undilated windows that lie
 * inside the input take an unrolled path (inline asm on DSP cores).
 *
 * This file holds the loops over output pixels and the dispatch on the
 * requantization mode (one inlined copy of the loops per mode); the rest
 * sits in parts it includes (one translation unit):
 *   tinyaot_depthwise_conv_fast_s8_quad.inc  one channel quad's taps and
 *       requantization: DSP inline asm, or C twins on tinyaot_intrinsics.h;
 *   tinyaot_depthwise_conv_fast_s8_3x3.inc   3x3 undilated windows: whole
 *       rows inside the input, and the windows cut by its edges. */
/* the one-SMLAL sign fix where this model's layers need it (tinyaot_requant_fast.h) */
#define TINYAOT_RQ_FIX_BIT TINYAOT_SPEC_FIX_DW
#include "../internal/tinyaot_specialize.h"
#include <string.h>

#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_gemm_q15.h"

/* Is mode m's copy of the loops compiled (tinyaot_specialize.h)? A constant. */
#define DW_HAS_MODE(m) TINYAOT_SPEC_HAS(TINYAOT_SPEC_DW_MODES, m)

#include "tinyaot_depthwise_conv_fast_s8_quad.inc"
#include "tinyaot_depthwise_conv_fast_s8_3x3.inc"

#if TINYAOT_HAVE_DSP_ASM
/* 1-D kernels (k_w == 1) in the saturating record modes: all channel quads of
 * one output pixel in one asm statement, each quad's n >= 1 taps down the
 * column (input bytes st apart, 12 instructions per tap as dw_line), its bias
 * start and requantization inline: a call per quad (dw_line) and the
 * accumulators' trip through memory cost as much as a quad's taps. Every
 * register is the loop's, so its state is in memory operands (locals of this
 * frame). Registers: sums r0-r3 (channels 0-3 of the quad), x r4, xb r5,
 * weight r6, input r7, weights r8, taps r9, st r10, zero point pair r11;
 * records r12, output lr (the cursors r7, r8, r12, lr live across quads). */
typedef struct {
    const int8_t *s;
    const uint32_t *w;
    const int32_t *p;
    int8_t *o;
    const int8_t *o_end;
    int32_t n, st, zp;
    int32_t back;  /* bytes from the input after a quad's taps to the next quad's */
    int32_t wskip; /* bytes from the weights after a quad's taps to the next quad's */
    uint32_t off;
} dw_col_t;
/* dw_col_sat's: pixels left, the next one's input pstep bytes on and its outputs right
 * after (one output column), och bytes of them */
typedef struct {
    dw_col_t c;
    int32_t pix, pstep, och;
} dw_cols_t;

/* One pixel's column state: its quads' taps from s (input bytes st apart), weights w
 * (wquad words a quad), records rq, outputs out. */
static inline __attribute__((always_inline)) void dw_col_fill(dw_col_t *L, const int8_t *s,
                                                              const uint32_t *w, int32_t nq,
                                                              int32_t n, int32_t st, int32_t wquad,
                                                              uint32_t off,
                                                              const tinyaot_rqc_t *rq, int8_t *out)
{
    L->s = s;
    L->w = w;
    L->p = rq->rq;
    L->o = out;
    L->o_end = out + 4 * nq;
    L->n = n;
    L->st = st;
    L->back = n * st - 4;
    L->wskip = 4 * (wquad - 2 * n);
    L->zp = rq->zp;
    L->off = off;
}

#define TINYAOT_DWC_HEAD                                                                           \
    "ldr r12, %[p]\n\t"                                                                            \
    "ldr lr, %[o]\n\t"                                                                             \
    "ldr r7, %[s]\n\t"                                                                             \
    "ldr r8, %[w]\n\t"                                                                             \
    "1:\n\t"
#define TINYAOT_DWC_TAP                                                                            \
    TINYAOT_DW_TAP_REGS("r4", "r5", "r6", "r7", "r8", "r10", "r11", "r0", "r1", "r2", "r3")
#define TINYAOT_DWC_TAPS                                                                           \
    "ldr r9, %[n]\n\t"                                                                             \
    "ldr r10, %[st]\n\t"                                                                           \
    "ldr r11, %[off]\n\t"                                                                          \
    "lsrs r9, r9, #1\n\t" /* an odd tap first, then two per pass */                               \
    "bcc 3f\n\t" TINYAOT_DWC_TAP                                                                   \
    "3:\n\t"                                                                                       \
    "beq 4f\n\t"                                                                                   \
    "2:\n\t" TINYAOT_DWC_TAP TINYAOT_DWC_TAP                                                        \
    "subs r9, r9, #1\n\t"                                                                          \
    "bne 2b\n\t"                                                                                   \
    "4:\n\t"
/* next quad (input, weights, records + RB bytes, output + 4); the input,
 * weights, records and output cursors stay in r7, r8, r12, lr */
#define TINYAOT_DWC_TAIL(RB)                                                                       \
    "ldr r10, %[back]\n\t" /* (the three loads one after another: pipelined) */                   \
    "ldr r9, %[o_end]\n\t"                                                                         \
    "ldr r11, %[wskip]\n\t"                                                                        \
    "sub r7, r7, r10\n\t"                                                                          \
    "add r8, r8, r11\n\t"                                                                          \
    "add r12, r12, #" RB "\n\t"                                                                    \
    "add lr, lr, #4\n\t"                                                                           \
    "cmp lr, r9\n\t"                                                                               \
    "bne 1b"
#define TINYAOT_DWC_OPS                                                                            \
    :                                                                                              \
    : [s] "m"(L.s), [w] "m"(L.w), [p] "m"(L.p), [o] "m"(L.o), [o_end] "m"(L.o_end), [n] "m"(L.n), \
      [st] "m"(L.st), [back] "m"(L.back), [wskip] "m"(L.wskip), [zp] "m"(L.zp), [off] "m"(L.off)
/* dw_col_sat: after the pixel's last quad, the next pixel while there are any (the
 * weights and records from their start again; a call per pixel costs some 200
 * instructions of C around it); its state's operands */
#define TINYAOT_DWC_NEXT_PIXEL                                                                     \
    "\n\t"                                                                                         \
    "ldr r9, %[pix]\n\t"                                                                           \
    "subs r9, r9, #1\n\t"                                                                          \
    "beq 9f\n\t"                                                                                   \
    "str r9, %[pix]\n\t"                                                                           \
    "ldr r7, %[s]\n\t"                                                                             \
    "ldr r10, %[pstep]\n\t"                                                                        \
    "ldr r9, %[och]\n\t"                                                                           \
    "ldr r8, %[w]\n\t"                                                                             \
    "ldr r12, %[p]\n\t"                                                                            \
    "add r7, r7, r10\n\t"                                                                          \
    "str r7, %[s]\n\t"                                                                             \
    "add r9, lr, r9\n\t"                                                                           \
    "str r9, %[o_end]\n\t"                                                                         \
    "b 1b\n\t"                                                                                     \
    "9:"
#define TINYAOT_DWC_OPS_N                                                                          \
    : [s] "+m"(N.c.s), [o_end] "+m"(N.c.o_end), [pix] "+m"(N.pix)                                \
    : [w] "m"(N.c.w), [p] "m"(N.c.p), [o] "m"(N.c.o), [n] "m"(N.c.n), [st] "m"(N.c.st),         \
      [back] "m"(N.c.back), [wskip] "m"(N.c.wskip), [zp] "m"(N.c.zp), [off] "m"(N.c.off),       \
      [pstep] "m"(N.pstep), [och] "m"(N.och)
#define TINYAOT_DWC_CLOBBERS                                                                       \
    "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "cc",   \
        "memory"
/* one-SMLAL records {m, e - 1, R lo, R hi, bias}: channel A's at OFF;
 * 0x80000000 in r11 */
#define TINYAOT_DWC_RQ(A, OFF, OUT)                                                                \
    TINYAOT_LDR4("r12", OFF, "r4", "r5", "r6", "r10")                                              \
    TINYAOT_RQ_SMLAL_REGS(A, "r4", "r5", "r6", "r10", "r11")                                       \
    "strb r10, [lr, #" OUT "]\n\t"
/* a pixel's quads: the sums at the biases, the taps, the requantization, the next quad */
#define TINYAOT_DWC_SAT                                                                            \
    TINYAOT_DWC_HEAD                                                                               \
    "ldr r0, [r12, #16]\n\t"                                                                       \
    "ldr r1, [r12, #36]\n\t"                                                                       \
    "ldr r2, [r12, #56]\n\t"                                                                       \
    "ldr r3, [r12, #76]\n\t" TINYAOT_DWC_TAPS                                                     \
    TINYAOT_RQ_NEG_MN("r11")                                                                     \
    TINYAOT_DWC_RQ("r0", "0", "0") TINYAOT_DWC_RQ("r1", "20", "1")                                 \
    TINYAOT_DWC_RQ("r2", "40", "2") TINYAOT_DWC_RQ("r3", "60", "3") TINYAOT_DWC_TAIL("80")
static __attribute__((noinline)) void dw_col_sat(dw_col_t L)
{
    __asm__ volatile(TINYAOT_DWC_SAT TINYAOT_DWC_OPS : TINYAOT_DWC_CLOBBERS);
}

#if (TINYAOT_SPEC_DW_KINDS >> TINYAOT_SPEC_DW_COLS) & 1u
/* A 1-D layer down a column (k_w == 1, one input and output column) whose rows' taps
 * all lie inside the input, in the one-SMLAL mode: every row in one asm statement,
 * dw_col_sat's with the next-pixel step (the state in this frame: no call below it).
 * Returns 0 for any other layer (dw_run's). Compiled where a model has such a layer
 * (codegen/kernels/specialize.py: DW_COLS). (Not onnxruntime's float records: their
 * images are the ones at 0.8x TFLite Micro's, sww01's.) */
static __attribute__((noinline)) int dw_columns_sat(const tinyaot_conv_dims_t *d,
                                                    const tinyaot_rqc_t *rq, const int8_t *input,
                                                    const uint32_t *wbase, uint32_t off,
                                                    int8_t *output)
{
    const int32_t ch = d->in_c, nq = ch >> 2, n = d->k_h;
    if (d->k_w != 1 || d->in_w != 1 || d->out_w != 1 || nq == 0 || d->pad_top != 0 ||
        d->pad_left != 0 || (d->out_h - 1) * d->stride_h + (n - 1) * d->dil_h >= d->in_h) {
        return 0;
    }
    dw_cols_t N;
    dw_col_fill(&N.c, input, wbase, nq, n, d->dil_h * ch, 2 * n, off, rq, output);
    N.pix = d->out_h;
    N.pstep = d->stride_h * ch;
    N.och = ch;
    __asm__ volatile(TINYAOT_DWC_SAT TINYAOT_DWC_NEXT_PIXEL TINYAOT_DWC_OPS_N
                     : TINYAOT_DWC_CLOBBERS);
    return 1;
}
#endif
#undef TINYAOT_DWC_RQ
#undef TINYAOT_DWC_SAT

#if TINYAOT_HAVE_FPU_ASM
#define TINYAOT_DWC_HAVE_FSAT 1
/* onnxruntime's records {bias, scale}: channel A's scale at SOFF */
#define TINYAOT_DWC_RQF(A, SOFF, OUT)                                                              \
    "vldr s15, [r12, #" SOFF "]\n\t"                                                               \
    TINYAOT_RQF_REGS(A, "s14", "s15", "r9")                                                        \
    "strb " A ", [lr, #" OUT "]\n\t"
static __attribute__((noinline)) void dw_col_fsat(dw_col_t L)
{
    __asm__ volatile(TINYAOT_DWC_HEAD
                     "ldr r0, [r12]\n\t"
                     "ldr r1, [r12, #8]\n\t"
                     "ldr r2, [r12, #16]\n\t"
                     "ldr r3, [r12, #24]\n\t"
                     TINYAOT_DWC_TAPS
                     "ldr r9, %[zp]\n\t"
                     TINYAOT_DWC_RQF("r0", "4", "0") TINYAOT_DWC_RQF("r1", "12", "1")
                     TINYAOT_DWC_RQF("r2", "20", "2") TINYAOT_DWC_RQF("r3", "28", "3")
                     TINYAOT_DWC_TAIL("32")
                     TINYAOT_DWC_OPS
                     : TINYAOT_DWC_CLOBBERS, "s14", "s15");
}
#undef TINYAOT_DWC_RQF
#else
#define TINYAOT_DWC_HAVE_FSAT 0
#endif
#undef TINYAOT_DWC_HEAD
#undef TINYAOT_DWC_TAP
#undef TINYAOT_DWC_TAPS
#undef TINYAOT_DWC_TAIL
#undef TINYAOT_DWC_NEXT_PIXEL
#undef TINYAOT_DWC_OPS_N
#undef TINYAOT_DWC_OPS
#undef TINYAOT_DWC_CLOBBERS

/* The 1-D kernels' pixel by dw_col_sat / dw_col_fsat; 0: no such path here
 * (the caller's quad loop runs it). */

static inline __attribute__((always_inline)) int dw_col(const int8_t *s, const uint32_t *w,
                                                        int32_t nq, int32_t n, int32_t st,
                                                        int32_t wquad, uint32_t off,
                                                        const tinyaot_rqc_t *rq, int8_t *out,
                                                        int mode)
{
    if (mode == TINYAOT_RQ_FLOAT_SAT && !TINYAOT_DWC_HAVE_FSAT) {
        return 0;
    }
    dw_col_t L;
    dw_col_fill(&L, s, w, nq, n, st, wquad, off, rq, out);
#if TINYAOT_DWC_HAVE_FSAT
    if (mode == TINYAOT_RQ_FLOAT_SAT) {
        dw_col_fsat(L);
        return 1;
    }
#endif
    dw_col_sat(L);
    return 1;
}

#endif

/* One output pixel (all channels) over the taps [ky_lo, ky_hi) x [kx_lo, kx_hi)
 * that lie inside the input: one dw_line per kernel row (or one line down the
 * column for k_w == 1 kernels). */
static inline __attribute__((always_inline)) void dw_pixel(
    const tinyaot_conv_dims_t *d, const tinyaot_rqc_t *rq, const int8_t *input,
    const uint32_t *wbase, int32_t iy0, int32_t ix0, int32_t ky_lo, int32_t ky_hi, uint32_t off,
    int8_t *out, int mode)
{
    const int32_t ch = d->in_c, nq = ch >> 2, k_w = d->k_w, in_w = d->in_w;
    const int32_t dil_w = d->dil_w, dil_h = d->dil_h;
    const int32_t wquad = 2 * d->k_h * k_w; /* words per channel quad */
    int32_t kx_lo = 0, kx_hi = k_w;
    while (kx_lo < kx_hi && ix0 + kx_lo * dil_w < 0) ++kx_lo;
    while (kx_hi > kx_lo && ix0 + (kx_hi - 1) * dil_w >= in_w) --kx_hi;
    int32_t nky = ky_hi - ky_lo, nkx = kx_hi - kx_lo;
    const int32_t rstep = dil_h * in_w * ch;
    int32_t lstep = dil_w * ch, wrstep = 2 * k_w;
    if (k_w == 1) { /* the column is the line (none if the column is outside) */
        nkx = nkx > 0 ? nky : 0;
        nky = nkx > 0 ? 1 : 0;
        lstep = rstep;
    }
    if (dw_rec_mode(mode) && d->k_h == 3 && k_w == 3 && dil_w == 1 && dil_h == 1) {
        const int8_t *s3 = input + ((iy0 + ky_lo) * in_w + ix0 + kx_lo) * ch;
        if (mode == TINYAOT_RQ_FLOAT_SAT
                ? dw3x3_border_fsat(s3, wbase, nq, in_w * ch, off, rq->rq, rq->zp, out, ky_lo,
                                    ky_hi, kx_lo, kx_hi)
                : dw3x3_border_sat(s3, wbase, nq, in_w * ch, off, rq->rq, rq->zp, out, ky_lo,
                                   ky_hi, kx_lo, kx_hi)) {
            return;
        }
    }
    const int8_t *s0 = input + ((iy0 + ky_lo * dil_h) * in_w + ix0 + kx_lo * dil_w) * ch;
    const uint32_t *w0 = wbase + (ky_lo * k_w + kx_lo) * 2;
#if TINYAOT_HAVE_DSP_ASM
    if (dw_rec_mode(mode) && k_w == 1 && nkx > 0 && nq > 0 &&
        dw_col(s0, w0, nq, nkx, lstep, wquad, off, rq, out, mode)) {
        return;
    }
#endif
    const int32_t *p = rq->rq;
    for (int32_t j = 0; j < nq; ++j) {
        uint32_t acc[4] = {0u, 0u, 0u, 0u};
        if (dw_rec_mode(mode)) { /* start at the biases */
            dw_bias4(p, acc, mode);
        }
        if (nkx > 0) {
            const int8_t *s = s0;
            const uint32_t *w = w0;
            for (int32_t ky = 0; ky < nky; ++ky) {
                dw_line(s, w, nkx, lstep, off, acc);
                s += rstep;
                w += wrstep;
            }
        }
        s0 += 4;
        w0 += wquad;
        if (dw_rec_mode(mode)) {
            dw_rq4(acc, p, rq->zp, out, mode);
            p += 4 * TINYAOT_RQ_WORDS(mode);
        } else {
            for (int32_t i = 0; i < 4; ++i) {
                out[i] = tinyaot_rqc_apply_m(rq, tinyaot_fp_s32(acc[i]), 4 * j + i, mode);
            }
        }
        out += 4;
    }
}

static inline __attribute__((always_inline)) void dw_run(const tinyaot_conv_dims_t *d,
                                                         const tinyaot_rqc_t *rq,
                                                         const int8_t *input,
                                                         const uint32_t *wbase, uint32_t off,
                                                         int8_t *output, int mode)
{
    const int32_t ch = d->in_c, nq = ch >> 2;
    const int32_t in_w = d->in_w, in_h = d->in_h, k_h = d->k_h;
    const int32_t dil_h = d->dil_h, sw = d->stride_w;
    /* 3x3 undilated: outputs whose window is inside the row are ox in [x_a, x_b) */
    const int32_t fast3 = d->k_h == 3 && d->k_w == 3 && d->dil_h == 1 && d->dil_w == 1;
    int32_t x_a = 0, x_b = 0;
    if (fast3 && in_w - 3 + d->pad_left >= 0) {
        x_a = (d->pad_left + sw - 1) / sw;
        x_b = (in_w - 3 + d->pad_left) / sw + 1;
        if (x_b > d->out_w) x_b = d->out_w;
        if (x_a > x_b) x_a = x_b;
    }
    /* A 3x3 'same' layer at stride 1 (one row and column of padding on each side):
     * its edge outputs go three at a time as well, down the left and right columns
     * (nv groups each, rows 1 .. 3 nv) and along the top and bottom rows (nh groups
     * each, columns 1 .. 3 nh), through the two-line passes; the corners and the
     * rest one at a time. */
    int32_t nv = 0, nh = 0;
    /* The rows whose windows are inside vertically (the record modes): their outputs
     * [x_a, x_b) after the row loop, phase by phase over all those rows (the first of
     * them oy3, ny3 of them): [x_a, x_a + 3 n3) through the three-output pass, the rest
     * by dw3x3_row_*. Each phase's code then stays in a small instruction cache (the
     * row loop's single pixels, the passes, the rows' loop: vww01's 48x48 layer
     * fetched its code again in every row). */
    int32_t n3 = 0, oy3 = -1, ny3 = 0;
#if TINYAOT_HAVE_DSP_ASM
    if (fast3 && dw_rec_mode(mode) && (mode != TINYAOT_RQ_FLOAT_SAT || TINYAOT_DW3_HAVE_FSAT) &&
        ((sw == 1 && TINYAOT_SPEC_HAS(TINYAOT_SPEC_DW_KINDS, TINYAOT_SPEC_DW_ROW3)) ||
         (sw == 2 && TINYAOT_SPEC_HAS(TINYAOT_SPEC_DW_KINDS, TINYAOT_SPEC_DW_ROW3S2)))) {
        n3 = (x_b - x_a) / 3; /* (stride 2: dw3x3_row3s2_*, seven input columns a group) */
    }
    if (TINYAOT_SPEC_HAS(TINYAOT_SPEC_DW_KINDS, TINYAOT_SPEC_DW_ROW3) && fast3 &&
        dw_rec_mode(mode) && sw == 1 && d->stride_h == 1 &&
        d->pad_top == 1 && d->pad_left == 1 && d->out_h == in_h && d->out_w == in_w &&
        in_h >= 2 && in_w >= 2 && (mode != TINYAOT_RQ_FLOAT_SAT || TINYAOT_DW3_HAVE_FSAT)) {
        nv = (in_h - 2) / 3;
        nh = (in_w - 2) / 3;
    }
#endif
    int8_t *out = output;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        int32_t ky_lo = 0, ky_hi = k_h;
        while (ky_lo < ky_hi && iy0 + ky_lo * dil_h < 0) ++ky_lo;
        while (ky_hi > ky_lo && iy0 + (ky_hi - 1) * dil_h >= in_h) --ky_hi;
        /* its first and last outputs in the side columns' groups (rows 1 .. 3 nv; then
         * x_a is 1) */
        const int32_t side = (uint32_t)(oy - 1) < (uint32_t)(3 * nv);
        const int32_t ox_end = side ? d->out_w - 1 : d->out_w;
        /* in the top and bottom rows, the groups' outputs [1, 1 + 3 nh) */
        const int32_t gap = nh > 0 && (oy == 0 || oy == d->out_h - 1) ? 1 : -1;
        int32_t ox = 0;
        if (fast3 && ky_lo == 0 && ky_hi == 3) {
            if (side) {
                ox = x_a;
                out += x_a * ch;
            }
            for (; ox < x_a; ++ox) {
                dw_pixel(d, rq, input, wbase, iy0, ox * sw - d->pad_left, 0, 3, off, out, mode);
                out += ch;
            }
            if (dw_rec_mode(mode) && ox < x_b) { /* (ox is x_a here) after the loop */
                oy3 = ny3++ == 0 ? oy : oy3;
                out += (x_b - ox) * ch;
                ox = x_b;
            }
        }
        for (; ox < ox_end; ++ox) {
            if (ox == gap) { /* (1 + 3 nh <= out_w - 1: never past the row) */
                ox += 3 * nh;
                out += 3 * nh * ch;
            }
            dw_pixel(d, rq, input, wbase, iy0, ox * sw - d->pad_left, ky_lo, ky_hi, off, out, mode);
            out += ch;
        }
        out += (d->out_w - ox_end) * ch;
    }
    /* the inner outputs of rows oy3 .. oy3 + ny3 - 1 past the groups: x_a + 3 n3 .. */
    for (int32_t r = 0, x = x_a + 3 * n3; r < ny3 && x < x_b; ++r) {
        const int32_t oy = oy3 + r;
        const int8_t *s3 = input + ((oy * d->stride_h - d->pad_top) * in_w + x * sw -
                                    d->pad_left) * ch;
        int8_t *o3 = output + (oy * d->out_w + x) * ch;
        if (mode == TINYAOT_RQ_FLOAT_SAT) {
            dw3x3_row_fsat(s3, wbase, nq, in_w * ch, off, rq->rq, rq->zp, o3, x_b - x, sw * ch);
        } else {
            dw3x3_row_sat(s3, wbase, nq, in_w * ch, off, rq->rq, rq->zp, o3, x_b - x, sw * ch);
        }
    }
#if TINYAOT_HAVE_DSP_ASM
    const int fl = mode == TINYAOT_RQ_FLOAT_SAT;
    if (ny3 > 0 && n3 > 0) { /* rows oy3 .. oy3 + ny3 - 1, n3 groups each from x_a */
        const int32_t irow = in_w * ch, orow = d->out_w * ch;
        dw3x3_triples(sw == 2 ? DW3_ROW_S2 : DW3_ROW,
                      input + ((oy3 * d->stride_h - d->pad_top) * in_w + x_a * sw -
                               d->pad_left) * ch,
                      wbase, nq, ch, irow, ch, off, rq->rq, rq->zp,
                      output + (oy3 * d->out_w + x_a) * ch, ny3, d->stride_h * irow, orow, n3,
                      3 * sw * ch, 3 * ch, fl);
    }
    const int32_t rs = in_w * ch; /* in_w == out_w here */
    if (nv > 0) { /* rows 1 .. 3 nv of columns 0 and in_w - 1; their inputs from row 0 */
        dw3x3_triples(DW3_LEFT, input, wbase, nq, rs, ch, rs, off, rq->rq, rq->zp,
                      output + rs, nv, 3 * rs, 3 * rs, 1, 0, 0, fl);
        dw3x3_triples(DW3_RIGHT, input + (in_w - 2) * ch, wbase, nq, rs, ch, rs, off, rq->rq,
                      rq->zp, output + rs + (in_w - 1) * ch, nv, 3 * rs, 3 * rs, 1, 0, 0, fl);
    }
    if (nh > 0) { /* columns 1 .. 3 nh of rows 0 and in_h - 1; their inputs from column 0 */
        dw3x3_triples(DW3_TOP, input, wbase, nq, ch, rs, ch, off, rq->rq, rq->zp, output + ch,
                      nh, 3 * ch, 3 * ch, 1, 0, 0, fl);
        dw3x3_triples(DW3_BOTTOM, input + (in_h - 2) * rs, wbase, nq, ch, rs, ch, off, rq->rq,
                      rq->zp, output + (in_h - 1) * rs + ch, nh, 3 * ch, 3 * ch, 1, 0, 0, fl);
    }
#endif
}

/* onnxruntime layers with {bias, scale} records, apart from the other modes'
 * copies (their code and register allocation stay as they were). */
static __attribute__((noinline)) void dw_run_float_sat(const tinyaot_conv_dims_t *d,
                                                       const tinyaot_requant_t *q,
                                                       const int8_t *input, const uint32_t *wbase,
                                                       uint32_t off, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc_records(q);
    dw_run(d, &rq, input, wbase, off, output, TINYAOT_RQ_FLOAT_SAT);
}

/* The modes of tinyaot_rqc, one inlined copy of the loops each. */
static __attribute__((noinline)) int dw_fixed(const tinyaot_conv_dims_t *d,
                                               const tinyaot_requant_t *q, const int8_t *input,
                                               const uint32_t *wbase, uint32_t off, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    /* a mode not compiled (tinyaot_specialize.h): TINYAOT_ERR_NOT_BUILT */
#define DW_MODE_CASE(M)                                                                            \
    if (DW_HAS_MODE(M)) {                                                                          \
        dw_run(d, &rq, input, wbase, off, output, M);                                              \
        return TINYAOT_OK;                                                                         \
    }                                                                                              \
    break
    switch (rq.mode) {
    case TINYAOT_RQ_ORT: DW_MODE_CASE(TINYAOT_RQ_ORT);
    case TINYAOT_RQ_TFLITE: DW_MODE_CASE(TINYAOT_RQ_TFLITE);
    case TINYAOT_RQ_SMLAL: DW_MODE_CASE(TINYAOT_RQ_SMLAL);
    default:
#if TINYAOT_HAVE_DSP_ASM && ((TINYAOT_SPEC_DW_KINDS >> TINYAOT_SPEC_DW_COLS) & 1u)
        if (DW_HAS_MODE(TINYAOT_RQ_SMLAL_SAT) &&
            dw_columns_sat(d, &rq, input, wbase, off, output)) {
            return TINYAOT_OK;
        }
#endif
        DW_MODE_CASE(TINYAOT_RQ_SMLAL_SAT);
    }
#undef DW_MODE_CASE
    return TINYAOT_ERR_NOT_BUILT;
}

int tinyaot_depthwise_conv_fast_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                   const int8_t *input, const int32_t *packed_weights,
                                   int8_t *output)
{
    const int32_t ch = d->in_c;
    if (d->out_c != ch || (ch & 3) != 0) {
        return TINYAOT_ERR_ARG;
    }
    if (!tinyaot_rq_fix_built(q)) {
        return TINYAOT_ERR_NOT_BUILT; /* the sign fix it needs is not compiled */
    }
    const uint32_t off = tinyaot_pack16(-q->in_zp, -q->in_zp);
    const uint32_t *wbase = (const uint32_t *)(const void *)packed_weights;
    if (tinyaot_rqc_records(q).mode == TINYAOT_RQ_FLOAT_SAT) {
        if (!DW_HAS_MODE(TINYAOT_RQ_FLOAT_SAT)) {
            return TINYAOT_ERR_NOT_BUILT;
        }
        dw_run_float_sat(d, q, input, wbase, off, output);
        return TINYAOT_OK;
    }
    if ((TINYAOT_SPEC_DW_MODES & 0xfu) == 0u) {
        return TINYAOT_ERR_NOT_BUILT;
    }
    return dw_fixed(d, q, input, wbase, off, output);
}
