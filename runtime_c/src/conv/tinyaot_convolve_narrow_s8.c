/* int8 convolution of a narrow input (1 to 3 channels: the first layer of
 * image and audio models), groups 1, undilated: two output channels per
 * multiply. A window row of k_w * in_c values (9 for 3x3 on RGB) is not whole
 * quads, so the im2col + SMLAD path widens and pads few values per output and
 * spends most of its time building columns. Here each weight word packs two
 * output channels, W = w0 + w1 * 2^21 (codegen/kernels/fast_pack.py:
 * pack_narrow), and one SMLAL adds x * W to a 64-bit sum: the raw input byte x
 * needs no widening, and the sum is A + B * 2^21 with A, B the two channels'
 * exact sums. A window has at most NARROW_K_MAX = 32 taps, so |A| <= 32 * 128
 * * 128 = 2^19 (fast_pack.narrow_fits), and A + 2^20 (the sum starts at 2^20)
 * is the low 21 bits and B the bits above: both exact.
 *
 * Weights: per channel quad, per tap (window order: row, column, channel) two
 * words {W(c0, c1), W(c2, c3)}. The input zero point is folded into the bias at
 * compile time (bias - in_zp * sum(w)), so a window cut by the input's edges is
 * copied with the zero point in the taps outside. Two output pixels of a row
 * share each weight load; the requantization is the fast kernels'. No scratch:
 * the edge windows and the sums of up to NARROW_QUADS_C quads live on the stack.
 * With TINYAOT_HAVE_DSP_ASM the taps are inline asm (10 cycles per 8 MACs on
 * a Cortex-M4), the one-SMLAL records applied in the same asm; the C twin
 * computes the same 64-bit sums. */
/* the one-SMLAL sign fix where this model's layers need it (tinyaot_requant_fast.h) */
#define TINYAOT_RQ_FIX_BIT TINYAOT_SPEC_FIX_NARROW
#include "../internal/tinyaot_specialize.h"
#include <string.h>

#include "tinyaot_kernels.h"
#include "../internal/tinyaot_gemm_q15.h"
#include "../internal/tinyaot_intrinsics.h"
#include "../internal/tinyaot_requant_fast.h"

#define NARROW_ROW_MAX 16 /* k_w * in_c: taps per window row (the asm's unrolled row) */
#define NARROW_K_MAX 32   /* k_h * k_w * in_c: taps per window (the edge copies) */
#define NARROW_QUADS 8    /* channel quads per pass (with the records in the asm) */
#define NARROW_QUADS_C 2  /* ... where the sums are requantized in C (on the stack) */
#define NARROW_SPLIT 21   /* W = w0 + w1 << NARROW_SPLIT */

/* One pass over up to NARROW_QUADS channel quads of two pixels: their sums
 * (per quad, pixel 0's pairs c0c1, c2c3, then pixel 1's) to acc, or with the
 * DSP asm and one-SMLAL records (rq not NULL) requantized straight to o0, o1. */
typedef struct {
    const int8_t *s0, *s1; /* the two windows' first rows */
    const uint32_t *w;     /* the first quad's weights */
    int32_t rstep;         /* bytes from one window row to the next */
    int32_t k_h, n;        /* rows, taps per row */
    int32_t nq;            /* quads */
    int64_t *acc;          /* 4 sums per quad */
    const int32_t *rq;     /* the first quad's records {m, e - 1, R lo, R hi, bias}, or NULL */
    int8_t *o0, *o1;       /* the two pixels' outputs of the first quad (with rq) */
} narrow_pass_t;

/* The asm requantizes the one-SMLAL records itself (narrow_sums). */
#define NARROW_ASM_RQ(mode) (TINYAOT_HAVE_DSP_ASM && (mode) == TINYAOT_RQ_SMLAL_SAT)

#if TINYAOT_HAVE_DSP_ASM
/* One tap (byte I of both windows' rows): 8 four-byte instructions, 32 bytes,
 * the unrolled row entered NARROW_ROW_MAX - n taps in. Registers: sums
 * r0:r1, r2:r3 (pixel 0) and r4:r5, r6:r7 (pixel 1); x r8; weights r9, r10;
 * windows r11, r12 (offset back by the skipped taps); weight cursor lr. The
 * weight words are two LDRs, not an LDRD: after the LDRSB each takes one cycle
 * (an LDR right after an LDR is pipelined; an LDRD never is: three). */
#define NARROW_TAP(I)                                                                              \
    "ldrsb.w r8, [r11, #" #I "]\n\t"                                                               \
    "ldr r9, [lr], #4\n\t"                                                                         \
    "ldr r10, [lr], #4\n\t"                                                                        \
    "smlal r0, r1, r8, r9\n\t"                                                                     \
    "smlal r2, r3, r8, r10\n\t"                                                                    \
    "ldrsb.w r8, [r12, #" #I "]\n\t"                                                               \
    "smlal r4, r5, r8, r9\n\t"                                                                     \
    "smlal r6, r7, r8, r10\n\t"
#define NARROW_TAP_BYTES 32u
/* The sum LO:HI = 2^20 + A + B * 2^21 -> LO = A, HI = B (r9 scratch). The
 * code of a pixel pair fits the STM32L4R5's 1 KB instruction cache with little
 * to spare (a few bytes more took vww01's first layer 0.3M cycles of fetch
 * stalls in one placement), so where the flags are dead the instructions are
 * the 16-bit flag-setting forms (LSRS, ASRS, MOVS). */
#define NARROW_SPLIT_ASM(LO, HI)                                                                   \
    "ubfx r9, " LO ", #0, #21\n\t"                                                                 \
    "lsrs " LO ", " LO ", #21\n\t"                                                                 \
    "orr " HI ", " LO ", " HI ", lsl #11\n\t"                                                      \
    "sub " LO ", r9, #0x100000\n\t"
/* Sum A (bias not included) -> int8 at [r12], next: the channel's record by one
 * LDM (r8 its cursor; the zero point in its R), 0x80000000 in r10 (as
 * tinyaot_rq_smlal_out, saturated: TINYAOT_RQ_SMLAL_REGS_S, the 16-bit forms). */
#define NARROW_RQ_ASM(A)                                                                           \
    "ldmia r8!, {r4, r5, r6, r7, r9}\n\t"                                                          \
    "add " A ", " A ", r9\n\t"                                                                     \
    TINYAOT_RQ_SMLAL_REGS_S(A, "r4", "r5", "r6", "r7", "r10")                                      \
    "strb r7, [r12], #1\n\t"
#define NARROW_RQ4_ASM NARROW_RQ_ASM("r0") NARROW_RQ_ASM("r1") NARROW_RQ_ASM("r2") NARROW_RQ_ASM("r3")

/* Every register is the loop's, so its state is in memory operands: locals of
 * this frame (sp-relative, no base register). */
static __attribute__((noinline)) void narrow_sums(const narrow_pass_t *P)
{
    const int32_t skip = NARROW_ROW_MAX - P->n;
    const int8_t *s0 = P->s0 - skip, *s1 = P->s1 - skip;
    const uint32_t *w = P->w;
    const int32_t rstep = P->rstep, k_h = P->k_h;
    /* the row's entry: this offset from label 3, then (the asm) its address */
    uint32_t entry = (uint32_t)skip * NARROW_TAP_BYTES + 1u; /* + 1: Thumb */
    int64_t *acc = P->acc;
    const int32_t *rq = P->rq;
    int8_t *o0 = P->o0, *o1 = P->o1;
    int32_t quads = P->nq, rows;
    uint64_t t01, t23; /* pixel 1's values while pixel 0 is requantized */
    __asm__ volatile("adr.w r8, 3f\n\t"
                     "ldr r9, %[entry]\n\t"
                     "add r8, r8, r9\n\t"
                     "str r8, %[entry]\n\t"
                     "ldr lr, %[w]\n\t"
                     "5:\n\t"
                     "ldr r11, %[s0]\n\t"
                     "ldr r12, %[s1]\n\t"
                     "ldr r0, %[k_h]\n\t"
                     "str r0, %[rows]\n\t"
                     "mov r0, #0x100000\n\t"
                     "movs r1, #0\n\t"
                     "mov r2, r0\n\t"
                     "movs r3, #0\n\t"
                     "mov r4, r0\n\t"
                     "movs r5, #0\n\t"
                     "mov r6, r0\n\t"
                     "movs r7, #0\n\t"
                     "1:\n\t"
                     "ldr pc, %[entry]\n\t"
                     ".p2align 2\n\t"
                     "3:\n\t"
                     NARROW_TAP(0) NARROW_TAP(1) NARROW_TAP(2) NARROW_TAP(3)
                     NARROW_TAP(4) NARROW_TAP(5) NARROW_TAP(6) NARROW_TAP(7)
                     NARROW_TAP(8) NARROW_TAP(9) NARROW_TAP(10) NARROW_TAP(11)
                     NARROW_TAP(12) NARROW_TAP(13) NARROW_TAP(14) NARROW_TAP(15)
                     "ldr r8, %[rstep]\n\t" /* (r9: its load pipelined behind r8's) */
                     "ldr r9, %[rows]\n\t"
                     "add r11, r11, r8\n\t"
                     "add r12, r12, r8\n\t"
                     "subs r9, r9, #1\n\t"
                     "str r9, %[rows]\n\t"
                     "bne 1b\n\t"
                     "ldr r8, %[rq]\n\t"
                     "cmp r8, #0\n\t"
                     "beq 6f\n\t"
                     NARROW_SPLIT_ASM("r0", "r1") NARROW_SPLIT_ASM("r2", "r3")
                     NARROW_SPLIT_ASM("r4", "r5") NARROW_SPLIT_ASM("r6", "r7")
                     "strd r4, r5, %[t01]\n\t"
                     "strd r6, r7, %[t23]\n\t"
                     TINYAOT_RQ_NEG_MN("r10")
                     "ldr r12, %[o0]\n\t"
                     "mov r11, #0\n\t"
                     /* one copy of the four requantizations, run for pixel 0 then
                        pixel 1 (r11): the loop stays within a 1 KB instruction cache */
                     "8:\n\t"
                     NARROW_RQ4_ASM
                     "cmp r11, #0\n\t"
                     "bne 9f\n\t"
                     "str r12, %[o0]\n\t"
                     "ldr r8, %[rq]\n\t"
                     "ldrd r0, r1, %[t01]\n\t"
                     "ldrd r2, r3, %[t23]\n\t"
                     "ldr r12, %[o1]\n\t"
                     "mov r11, #1\n\t"
                     "b 8b\n\t"
                     "9:\n\t"
                     "str r12, %[o1]\n\t"
                     "str r8, %[rq]\n\t"
                     "b 7f\n\t"
                     "6:\n\t"
                     "ldr r8, %[acc]\n\t"
                     "stmia r8!, {r0, r1, r2, r3, r4, r5, r6, r7}\n\t"
                     "str r8, %[acc]\n\t"
                     "7:\n\t"
                     "ldr r8, %[quads]\n\t"
                     "subs r8, r8, #1\n\t"
                     "str r8, %[quads]\n\t"
                     "bne 5b"
                     : [entry] "+m"(entry), [rows] "=m"(rows), [quads] "+m"(quads),
                       [acc] "+m"(acc), [rq] "+m"(rq), [o0] "+m"(o0), [o1] "+m"(o1),
                       [t01] "=m"(t01), [t23] "=m"(t23)
                     : [s0] "m"(s0), [s1] "m"(s1), [w] "m"(w), [rstep] "m"(rstep),
                       [k_h] "m"(k_h)
                     : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11",
                       "r12", "lr", "cc", "memory");
}
#undef NARROW_TAP
#undef NARROW_SPLIT_ASM
#undef NARROW_RQ_ASM
#undef NARROW_RQ4_ASM
#else
static void narrow_sums(const narrow_pass_t *P)
{
    const uint32_t *w = P->w;
    int64_t *acc = P->acc;
    for (int32_t q = 0; q < P->nq; ++q, acc += 4) {
        for (int32_t i = 0; i < 4; ++i) {
            acc[i] = 1 << 20; /* (the sums start at 2^20: narrow_split) */
        }
        const int8_t *r0 = P->s0, *r1 = P->s1;
        for (int32_t r = 0; r < P->k_h; ++r, r0 += P->rstep, r1 += P->rstep) {
            for (int32_t t = 0; t < P->n; ++t, w += 2) {
                const int64_t w0 = tinyaot_fp_s32(w[0]), w1 = tinyaot_fp_s32(w[1]);
                acc[0] += r0[t] * w0;
                acc[1] += r0[t] * w1;
                acc[2] += r1[t] * w0;
                acc[3] += r1[t] * w1;
            }
        }
    }
}
#endif

/* A sum 2^20 + A + B * 2^21 -> A (low channel), B (high channel). */
static inline __attribute__((always_inline)) void narrow_split(int64_t s, int32_t *a, int32_t *b)
{
    const uint64_t u = (uint64_t)s;
    *a = (int32_t)(uint32_t)(u & 0x1fffffu) - (1 << 20);
    *b = tinyaot_fp_s32((uint32_t)(u >> NARROW_SPLIT));
}

/* The windows of output pixels (iy0, ix0) and (iy0, ix1) (top-left input row and
 * column, cut by the input's edges) side by side in win: row r of the first at
 * win + 2 n r, of the second n bytes after it; the zero point outside. */
static __attribute__((noinline)) void narrow_copy(const tinyaot_conv_dims_t *d,
                                                  const int8_t *input, int32_t iy0, int32_t ix0,
                                                  int32_t ix1, int8_t zp, int8_t *win)
{
    const int32_t cin = d->in_c, n = d->k_w * cin;
    memset(win, zp, (size_t)(2 * n * d->k_h));
    for (int32_t ky = 0; ky < d->k_h; ++ky) {
        const int32_t iy = iy0 + ky;
        if (iy < 0 || iy >= d->in_h) {
            continue;
        }
        for (int32_t side = 0; side < 2; ++side) {
            const int32_t x0 = side ? ix1 : ix0;
            const int32_t lo = x0 < 0 ? -x0 : 0;
            const int32_t hi = x0 + d->k_w > d->in_w ? d->in_w - x0 : d->k_w;
            const int8_t *src = input + (iy * d->in_w + x0) * cin;
            int8_t *dst = win + (2 * ky + side) * n;
            for (int32_t i = lo * cin; i < hi * cin; ++i) {
                dst[i] = src[i];
            }
        }
    }
}

/* The quad of channels c..c+3 of two pixels (sums acc: pixel 0's pairs, then
 * pixel 1's) -> o0[c..c+3], o1[0..3]: the one-SMLAL and float records through
 * the fast kernels' 2x2 requantization (bias added here), else per output. */
static inline __attribute__((always_inline)) void narrow_requant(const tinyaot_rqc_t *rq,
                                                                 const int64_t *acc, int32_t c,
                                                                 int8_t *o0, int8_t *o1,
                                                                 int mode)
{
    int32_t v0[4], v1[4];
    narrow_split(acc[0], &v0[0], &v0[1]);
    narrow_split(acc[1], &v0[2], &v0[3]);
    narrow_split(acc[2], &v1[0], &v1[1]);
    narrow_split(acc[3], &v1[2], &v1[3]);
    if (mode == TINYAOT_RQ_SMLAL_SAT || mode == TINYAOT_RQ_FLOAT_SAT) {
        const int32_t rw = TINYAOT_RQ_WORDS(mode), rb = TINYAOT_RQ_BIAS(mode);
        const int32_t *p = rq->rq + rw * c;
        for (int32_t h = 0; h < 4; h += 2, p += 2 * rw) {
            const int32_t b0 = p[rb], b1 = p[rw + rb];
            const uint32_t a[4] = {(uint32_t)(v0[h] + b0), (uint32_t)(v1[h] + b0),
                                   (uint32_t)(v0[h + 1] + b1), (uint32_t)(v1[h + 1] + b1)};
            if (mode == TINYAOT_RQ_SMLAL_SAT) {
                tinyaot_rq_2x2_sat(a, p, o0 + c + h, o1 + h);
            } else {
                tinyaot_rqf_2x2_sat(a, p, rq->zp, o0 + c + h, o1 + h);
            }
        }
        return;
    }
    for (int32_t i = 0; i < 4; ++i) {
        tinyaot_rqc_apply2_m(rq, v0[i], v1[i], c + i, o0 + c + i, o1 + i, mode);
    }
}

/* All pixels in requantization mode `mode` (a constant; one noinline copy per
 * mode, narrow_run_<mode>, so only one mode's frame is ever on the stack). */
static inline __attribute__((always_inline)) void narrow_run(const tinyaot_conv_dims_t *d,
                                                             const tinyaot_rqc_t *rq,
                                                             int8_t in_zp, const int8_t *input,
                                                             const uint32_t *w, int8_t *output,
                                                             int mode)
{
    const int32_t cin = d->in_c, n = d->k_w * cin, k = d->k_h * n, out_c = d->out_c;
    const int32_t sx = d->stride_w * cin;
    /* quads per pass: the asm requantizes as it goes, C needs the sums */
    const int32_t per = 4 * (NARROW_ASM_RQ(mode) ? NARROW_QUADS : NARROW_QUADS_C);
    int8_t win[2 * NARROW_K_MAX];
    narrow_pass_t P;
    P.k_h = d->k_h;
    P.n = n;
    P.rq = NULL;
    P.o0 = P.o1 = NULL;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        const int rows_in = iy0 >= 0 && iy0 + d->k_h <= d->in_h;
        for (int32_t ox = 0; ox < d->out_w; ox += 2) {
            const int two = ox + 1 < d->out_w;
            const int32_t ix0 = ox * d->stride_w - d->pad_left;
            const int32_t ix1 = two ? ix0 + d->stride_w : ix0;
            if (rows_in && ix0 >= 0 && ix1 + d->k_w <= d->in_w) {
                P.s0 = input + (iy0 * d->in_w + ix0) * cin;
                P.s1 = two ? P.s0 + sx : P.s0;
                P.rstep = d->in_w * cin;
            } else {
                narrow_copy(d, input, iy0, ix0, ix1, in_zp, win);
                P.s0 = win;
                P.s1 = win + n;
                P.rstep = 2 * n;
            }
            int8_t *o0 = output + (oy * d->out_w + ox) * out_c;
            for (int32_t c0 = 0; c0 < out_c; c0 += per) {
                const int32_t nq = (out_c - c0 < per ? out_c - c0 : per) >> 2;
                /* a lone last pixel is its own pair: the same sums, written twice */
                int8_t *o1 = o0 + (two ? out_c : 0) + c0;
                P.w = w + 2 * k * (c0 >> 2);
                P.nq = nq;
                if (NARROW_ASM_RQ(mode)) {
                    P.acc = NULL;
                    P.rq = rq->rq + 5 * c0;
                    P.o0 = o0 + c0;
                    P.o1 = o1;
                    narrow_sums(&P);
                    continue;
                }
                int64_t acc[4 * NARROW_QUADS_C];
                P.acc = acc;
                narrow_sums(&P);
                for (int32_t j = 0; j < nq; ++j) {
                    narrow_requant(rq, acc + 4 * j, c0 + 4 * j, o0, o1 + 4 * j, mode);
                }
            }
        }
    }
}

/* One noinline copy per mode; its records (tinyaot_rqc_t) on its own frame. */
#define NARROW_RUN_FN(NAME, M)                                                                     \
    static __attribute__((noinline)) void NAME(const tinyaot_conv_dims_t *d,                      \
                                               const tinyaot_requant_t *q, const int8_t *input,   \
                                               const uint32_t *w, int8_t *output)                 \
    {                                                                                              \
        const tinyaot_rqc_t rq = (M) == TINYAOT_RQ_FLOAT_SAT ? tinyaot_rqc_records(q)             \
                                                             : tinyaot_rqc(q);                     \
        narrow_run(d, &rq, (int8_t)q->in_zp, input, w, output, M);                                 \
    }
NARROW_RUN_FN(narrow_run_ort, TINYAOT_RQ_ORT)
NARROW_RUN_FN(narrow_run_tflite, TINYAOT_RQ_TFLITE)
NARROW_RUN_FN(narrow_run_smlal, TINYAOT_RQ_SMLAL)
NARROW_RUN_FN(narrow_run_sat, TINYAOT_RQ_SMLAL_SAT)
NARROW_RUN_FN(narrow_run_fsat, TINYAOT_RQ_FLOAT_SAT)
#undef NARROW_RUN_FN

int tinyaot_convolve_narrow_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                               const int8_t *input, const uint32_t *weights, int8_t *output)
{
    const int32_t in_zp = q->in_zp;
    if (d->groups != 1 || d->dil_h != 1 || d->dil_w != 1 || (d->out_c & 3) != 0 ||
        d->k_w * d->in_c > NARROW_ROW_MAX || d->k_h * d->k_w * d->in_c > NARROW_K_MAX ||
        in_zp < -128 || in_zp > 127) {
        return TINYAOT_ERR_ARG;
    }
    if (!tinyaot_rq_fix_built(q)) {
        return TINYAOT_ERR_NOT_BUILT; /* the sign fix it needs is not compiled */
    }
    /* a mode not compiled (tinyaot_specialize.h): TINYAOT_ERR_NOT_BUILT */
#define NARROW_MODE(M, FN)                                                                         \
    if (TINYAOT_SPEC_HAS(TINYAOT_SPEC_NARROW_MODES, M)) {                                          \
        FN(d, q, input, weights, output);                                                          \
        return TINYAOT_OK;                                                                         \
    }                                                                                              \
    return TINYAOT_ERR_NOT_BUILT
    if (tinyaot_rq_float_records(q)) {
        NARROW_MODE(TINYAOT_RQ_FLOAT_SAT, narrow_run_fsat);
    }
    switch (tinyaot_rqc(q).mode) {
    case TINYAOT_RQ_ORT: NARROW_MODE(TINYAOT_RQ_ORT, narrow_run_ort);
    case TINYAOT_RQ_TFLITE: NARROW_MODE(TINYAOT_RQ_TFLITE, narrow_run_tflite);
    case TINYAOT_RQ_SMLAL: NARROW_MODE(TINYAOT_RQ_SMLAL, narrow_run_smlal);
    default: NARROW_MODE(TINYAOT_RQ_SMLAL_SAT, narrow_run_sat);
    }
#undef NARROW_MODE
}
