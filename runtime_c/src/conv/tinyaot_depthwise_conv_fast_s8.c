/* Fast int8 depthwise convolution (channel multiplier 1, in_c % 4 == 0):
 * four channels at a time, inputs widened with the zero point folded in by
 * __SXTAB16, products accumulated by __SMLABB / __SMLATT against packed
 * int16 weights (tinyaot_fast_kernels.h). 3x3 undilated windows that lie
 * inside the input take an unrolled path (inline asm on DSP cores). */
#include <string.h>

#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_gemm_q15.h"

/* acc = four channels' sums over nky x nkx taps */
static inline __attribute__((always_inline)) void dw_taps(const int8_t *srow, const uint32_t *wrow,
                                                          int32_t nky, int32_t nkx, int32_t sstep,
                                                          int32_t rstep, int32_t wstep,
                                                          int32_t wrstep, uint32_t off,
                                                          uint32_t acc[4])
{
    uint32_t a0 = 0u, a1 = 0u, a2 = 0u, a3 = 0u;
    for (int32_t ky = 0; ky < nky; ++ky) {
        const int8_t *src = srow;
        const uint32_t *wp = wrow;
        for (int32_t kx = 0; kx < nkx; ++kx) {
            uint32_t x;
            memcpy(&x, src, 4);
            const uint32_t xa = __SXTAB16(off, x);
            const uint32_t xb = __SXTAB16_ROR8(off, x);
            const uint32_t wa = wp[0], wb = wp[1];
            a0 = __SMLABB(xa, wa, a0);
            a2 = __SMLATT(xa, wa, a2);
            a1 = __SMLABB(xb, wb, a1);
            a3 = __SMLATT(xb, wb, a3);
            src += sstep;
            wp += wstep;
        }
        srow += rstep;
        wrow += wrstep;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* A 3x3 window inside the input, one channel quad (s: its top-left input
 * bytes, w: its 9 taps' weight words, rstep: bytes from one input row to the
 * next): the four channels' sums. The asm form is 74 instructions with every
 * weight at an immediate offset; the C form is the same sums. */
#if TINYAOT_HAVE_DSP_ASM
#define TINYAOT_DW_TAP(ADDR, WOFF)                                                                 \
    "ldr %[x], " ADDR "\n\t"                                                                       \
    "ldrd %[wa], %[wb], [%[w], #" WOFF "]\n\t"                                                     \
    "sxtab16 %[xb], %[off], %[x], ror #8\n\t"                                                      \
    "sxtab16 %[x], %[off], %[x]\n\t"                                                               \
    "smlabb %[a0], %[x], %[wa], %[a0]\n\t"                                                         \
    "smlatt %[a2], %[x], %[wa], %[a2]\n\t"                                                         \
    "smlabb %[a1], %[xb], %[wb], %[a1]\n\t"                                                        \
    "smlatt %[a3], %[xb], %[wb], %[a3]\n\t"
#define TINYAOT_DW_ROW(W0, W1, W2)                                                                 \
    TINYAOT_DW_TAP("[%[s]]", W0)                                                                   \
    TINYAOT_DW_TAP("[%[s], %[ch]]", W1) TINYAOT_DW_TAP("[%[s], %[ch], lsl #1]", W2)
static inline __attribute__((always_inline)) void dw3x3_quad(const int8_t *s, const uint32_t *w,
                                                             int32_t ch, int32_t rstep,
                                                             uint32_t off, uint32_t acc[4])
{
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], x, xb, wa, wb;
    __asm__(TINYAOT_DW_ROW("0", "8", "16") "add %[s], %[s], %[rs]\n\t"
            TINYAOT_DW_ROW("24", "32", "40") "add %[s], %[s], %[rs]\n\t"
            TINYAOT_DW_ROW("48", "56", "64")
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x),
              [xb] "=&r"(xb), [wa] "=&r"(wa), [wb] "=&r"(wb), [s] "+r"(s)
            : [w] "r"(w), [ch] "r"(ch), [rs] "r"(rstep), [off] "r"(off)
            : "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* Four accumulators (bias included) of channels 4j..4j+3 -> int8 with their
 * one-SMLAL records p (tinyaot_mbqm_smlal), plus the zero point, saturated
 * to int8: 9 instructions per output. */
#define TINYAOT_DW_RQ(A, OFF, OUT)                                                                 \
    "ldrd %[m], %[sh], [%[p], #" OFF "]\n\t" TINYAOT_RQ_ONE(A, OFF "+8", "o", OUT)
static inline __attribute__((always_inline)) void dw_rq4_sat(const uint32_t acc[4], const int32_t *p,
                                                             int32_t zp, int8_t *o)
{
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], m, sh, lo, hi;
    /* volatile: its only effect is the stores */
    __asm__ volatile(TINYAOT_DW_RQ("a0", "0", "0") TINYAOT_DW_RQ("a1", "20", "1")
            TINYAOT_DW_RQ("a2", "40", "2") TINYAOT_DW_RQ("a3", "60", "3")
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [m] "=&r"(m),
              [sh] "=&r"(sh), [lo] "=&r"(lo), [hi] "=&r"(hi)
            : [p] "r"(p), [o] "r"(o), [mn] "r"(0x80000000u), [zp] "r"(zp)
            : "memory");
}
#undef TINYAOT_DW_RQ
#undef TINYAOT_DW_ROW
#undef TINYAOT_DW_TAP


#if TINYAOT_HAVE_FPU_ASM
/* The same with onnxruntime's float requantization (records p = {bias, scale}
 * per channel, TINYAOT_RQF_ONE): 9 instructions per output. */
#define TINYAOT_DW_RQF(A, SOFF, OUT) "vldr %[sc], [%[p], #" SOFF "]\n\t" TINYAOT_RQF_ONE(A, "o", OUT)
static inline __attribute__((always_inline)) void dw_rq4_fsat(const uint32_t acc[4],
                                                              const int32_t *p, int32_t zp,
                                                              int8_t *o)
{
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    float f, sc;
    /* volatile: its only effect is the stores */
    __asm__ volatile(TINYAOT_DW_RQF("a0", "4", "0") TINYAOT_DW_RQF("a1", "12", "1")
                     TINYAOT_DW_RQF("a2", "20", "2") TINYAOT_DW_RQF("a3", "28", "3")
                     : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [f] "=&t"(f),
                       [sc] "=&t"(sc)
                     : [p] "r"(p), [o] "r"(o), [zp] "r"(zp)
                     : "memory");
}
#undef TINYAOT_DW_RQF
#endif

/* acc += n >= 1 taps of one channel quad along a line: input bytes st apart,
 * weight words contiguous (2 per tap). 12 instructions per tap (the two
 * weight words share a register: 12 registers in all). */
static __attribute__((noinline)) void dw_line(const int8_t *s, const uint32_t *w, int32_t n,
                                              int32_t st, uint32_t off, uint32_t acc[4])
{
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], x, xb, wv;
    __asm__("1:\n\t"
            "ldr %[x], [%[s]]\n\t"
            "add %[s], %[s], %[st]\n\t"
            "sxtab16 %[xb], %[off], %[x], ror #8\n\t"
            "sxtab16 %[x], %[off], %[x]\n\t"
            "ldr %[wv], [%[w]], #4\n\t"
            "smlabb %[a0], %[x], %[wv], %[a0]\n\t"
            "smlatt %[a2], %[x], %[wv], %[a2]\n\t"
            "ldr %[wv], [%[w]], #4\n\t"
            "smlabb %[a1], %[xb], %[wv], %[a1]\n\t"
            "smlatt %[a3], %[xb], %[wv], %[a3]\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x),
              [xb] "=&r"(xb), [wv] "=&r"(wv), [s] "+r"(s), [w] "+r"(w), [n] "+r"(n)
            : [st] "r"(st), [off] "r"(off)
            : "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* acc += one tap of one channel quad: input word at src, weight words w[0..1]. */
static inline __attribute__((always_inline)) void dw_tap(const int8_t *src, const uint32_t *w,
                                                         uint32_t off, uint32_t acc[4])
{
    uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], x, xb, wa, wb;
    __asm__("ldr %[x], [%[src]]\n\t"
            "ldrd %[wa], %[wb], [%[w]]\n\t"
            "sxtab16 %[xb], %[off], %[x], ror #8\n\t"
            "sxtab16 %[x], %[off], %[x]\n\t"
            "smlabb %[a0], %[x], %[wa], %[a0]\n\t"
            "smlatt %[a2], %[x], %[wa], %[a2]\n\t"
            "smlabb %[a1], %[xb], %[wb], %[a1]\n\t"
            "smlatt %[a3], %[xb], %[wb], %[a3]"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x),
              [xb] "=&r"(xb), [wa] "=&r"(wa), [wb] "=&r"(wb)
            : [src] "r"(src), [w] "r"(w), [off] "r"(off)
            : "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#else
static inline void dw_tap(const int8_t *src, const uint32_t *w, uint32_t off, uint32_t acc[4])
{
    uint32_t x;
    memcpy(&x, src, 4);
    const uint32_t xa = __SXTAB16(off, x), xb = __SXTAB16_ROR8(off, x);
    acc[0] = __SMLABB(xa, w[0], acc[0]);
    acc[2] = __SMLATT(xa, w[0], acc[2]);
    acc[1] = __SMLABB(xb, w[1], acc[1]);
    acc[3] = __SMLATT(xb, w[1], acc[3]);
}

static inline void dw3x3_quad(const int8_t *s, const uint32_t *w, int32_t ch, int32_t rstep,
                              uint32_t off, uint32_t acc[4])
{
    uint32_t a[4];
    dw_taps(s, w, 3, 3, ch, rstep, 2, 6, off, a);
    for (int32_t i = 0; i < 4; ++i) {
        acc[i] += a[i];
    }
}

static inline void dw_line(const int8_t *s, const uint32_t *w, int32_t n, int32_t st, uint32_t off,
                           uint32_t acc[4])
{
    uint32_t a[4];
    dw_taps(s, w, 1, n, st, 0, 2, 0, off, a);
    for (int32_t i = 0; i < 4; ++i) {
        acc[i] += a[i];
    }
}

static inline void dw_rq4_sat(const uint32_t acc[4], const int32_t *p, int32_t zp, int8_t *o)
{
    for (int32_t i = 0; i < 4; ++i) {
        const int32_t *r = p + 5 * i;
        o[i] = (int8_t)__SSAT(
            tinyaot_mbqm_smlal(tinyaot_fp_s32(acc[i]), r[0], r[1], (uint32_t)r[2], r[3]) + zp, 8);
    }
}
#endif

#if !TINYAOT_HAVE_FPU_ASM
static inline void dw_rq4_fsat(const uint32_t acc[4], const int32_t *p, int32_t zp, int8_t *o)
{
    for (int32_t i = 0; i < 4; ++i) {
        o[i] = tinyaot_requant_float_sat(tinyaot_fp_s32(acc[i]), p[2 * i + 1], zp);
    }
}
#endif

/* The saturating record modes (TINYAOT_RQ_SMLAL_SAT, TINYAOT_RQ_FLOAT_SAT):
 * accumulators of a channel quad start at the biases of its records p; the
 * four sums -> int8. */
static inline __attribute__((always_inline)) void dw_bias4(const int32_t *p, uint32_t acc[4],
                                                           int mode)
{
    const int32_t rw = TINYAOT_RQ_WORDS(mode), rb = TINYAOT_RQ_BIAS(mode);
    acc[0] = (uint32_t)p[rb];
    acc[1] = (uint32_t)p[rw + rb];
    acc[2] = (uint32_t)p[2 * rw + rb];
    acc[3] = (uint32_t)p[3 * rw + rb];
}

static inline __attribute__((always_inline)) void dw_rq4(const uint32_t acc[4], const int32_t *p,
                                                         int32_t zp, int8_t *o, int mode)
{
    if (mode == TINYAOT_RQ_FLOAT_SAT) {
        dw_rq4_fsat(acc, p, zp, o);
    } else {
        dw_rq4_sat(acc, p, zp, o);
    }
}

static inline int dw_rec_mode(int mode)
{
    return mode == TINYAOT_RQ_SMLAL_SAT || mode == TINYAOT_RQ_FLOAT_SAT;
}

/* npix outputs along a row (input pointers sstep bytes apart) whose 3x3
 * windows lie inside the input, SSAT requantization: all channel quads of
 * each. A leaf function, so the asm blocks get the registers they need. */
static inline __attribute__((always_inline)) void dw3x3_row_m(
    const int8_t *s, const uint32_t *wbase, int32_t nq, int32_t rstep, uint32_t off,
    const int32_t *rq, int32_t zp, int8_t *out, int32_t npix, int32_t sstep, int mode)
{
    const int32_t ch = 4 * nq;
    for (int32_t i = 0; i < npix; ++i) {
        const uint32_t *w = wbase;
        const int32_t *p = rq;
        for (int32_t j = 0; j < nq; ++j) {
            uint32_t acc[4];
            dw_bias4(p, acc, mode);
            dw3x3_quad(s + 4 * j, w, ch, rstep, off, acc);
            dw_rq4(acc, p, zp, out, mode);
            w += 18;
            p += 4 * TINYAOT_RQ_WORDS(mode);
            out += 4;
        }
        s += sstep;
    }
}

static __attribute__((noinline)) void dw3x3_row_sat(const int8_t *s, const uint32_t *wbase,
                                                    int32_t nq, int32_t rstep, uint32_t off,
                                                    const int32_t *rq, int32_t zp, int8_t *out,
                                                    int32_t npix, int32_t sstep)
{
    dw3x3_row_m(s, wbase, nq, rstep, off, rq, zp, out, npix, sstep, TINYAOT_RQ_SMLAL_SAT);
}

static __attribute__((noinline)) void dw3x3_row_fsat(const int8_t *s, const uint32_t *wbase,
                                                     int32_t nq, int32_t rstep, uint32_t off,
                                                     const int32_t *rq, int32_t zp, int8_t *out,
                                                     int32_t npix, int32_t sstep)
{
    dw3x3_row_m(s, wbase, nq, rstep, off, rq, zp, out, npix, sstep, TINYAOT_RQ_FLOAT_SAT);
}

/* A 3x3 undilated window cut by the input's edges to rows [y0, y1) and
 * columns [x0, x1) (constants after inlining: one straight-line copy per
 * case), SSAT requantization, all channel quads. s: the input bytes under
 * tap (y0, x0) of quad 0. */
static inline __attribute__((always_inline)) void dw3x3_cut_sat(
    const int8_t *s, const uint32_t *wbase, int32_t nq, int32_t rstep, uint32_t off,
    const int32_t *p, int32_t zp, int8_t *out, int32_t y0, int32_t y1, int32_t x0, int32_t x1,
    int mode)
{
    const int32_t ch = 4 * nq;
    for (int32_t j = 0; j < nq; ++j) {
        uint32_t acc[4];
        dw_bias4(p, acc, mode);
        for (int32_t ky = y0; ky < y1; ++ky) {
            for (int32_t kx = x0; kx < x1; ++kx) {
                dw_tap(s + (ky - y0) * rstep + (kx - x0) * ch, wbase + 2 * (3 * ky + kx), off, acc);
            }
        }
        dw_rq4(acc, p, zp, out, mode);
        s += 4;
        wbase += 18;
        p += 4 * TINYAOT_RQ_WORDS(mode);
        out += 4;
    }
}

/* The cut 3x3 windows: rows [ky_lo, ky_hi), columns [kx_lo, kx_hi), each in
 * {0, 1, 2, 3} with at most one of the low / high ends cut. Returns 0 when the
 * case has no straight-line copy (the caller takes the general path). */
static inline __attribute__((always_inline)) int dw3x3_border_m(
    const int8_t *s, const uint32_t *w, int32_t nq, int32_t rstep, uint32_t off, const int32_t *p,
    int32_t zp, int8_t *out, int32_t ky_lo, int32_t ky_hi, int32_t kx_lo, int32_t kx_hi, int mode)
{
    const int32_t code = (ky_lo * 4 + ky_hi) * 16 + kx_lo * 4 + kx_hi;
#define TINYAOT_DW_CUT(Y0, Y1, X0, X1)                                                             \
    case ((Y0) * 4 + (Y1)) * 16 + (X0) * 4 + (X1):                                                 \
        dw3x3_cut_sat(s, w, nq, rstep, off, p, zp, out, Y0, Y1, X0, X1, mode);                     \
        return 1;
    switch (code) {
    TINYAOT_DW_CUT(0, 3, 1, 3) TINYAOT_DW_CUT(0, 3, 0, 2)
    TINYAOT_DW_CUT(1, 3, 0, 3) TINYAOT_DW_CUT(0, 2, 0, 3)
    TINYAOT_DW_CUT(1, 3, 1, 3) TINYAOT_DW_CUT(1, 3, 0, 2)
    TINYAOT_DW_CUT(0, 2, 1, 3) TINYAOT_DW_CUT(0, 2, 0, 2)
    TINYAOT_DW_CUT(0, 3, 0, 3)
    default: return 0;
    }
#undef TINYAOT_DW_CUT
}

static __attribute__((noinline)) int dw3x3_border_sat(const int8_t *s, const uint32_t *w,
                                                      int32_t nq, int32_t rstep, uint32_t off,
                                                      const int32_t *p, int32_t zp, int8_t *out,
                                                      int32_t ky_lo, int32_t ky_hi, int32_t kx_lo,
                                                      int32_t kx_hi)
{
    return dw3x3_border_m(s, w, nq, rstep, off, p, zp, out, ky_lo, ky_hi, kx_lo, kx_hi,
                          TINYAOT_RQ_SMLAL_SAT);
}

static __attribute__((noinline)) int dw3x3_border_fsat(const int8_t *s, const uint32_t *w,
                                                       int32_t nq, int32_t rstep, uint32_t off,
                                                       const int32_t *p, int32_t zp, int8_t *out,
                                                       int32_t ky_lo, int32_t ky_hi,
                                                       int32_t kx_lo, int32_t kx_hi)
{
    return dw3x3_border_m(s, w, nq, rstep, off, p, zp, out, ky_lo, ky_hi, kx_lo, kx_hi,
                          TINYAOT_RQ_FLOAT_SAT);
}

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
    int8_t *out = output;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        int32_t ky_lo = 0, ky_hi = k_h;
        while (ky_lo < ky_hi && iy0 + ky_lo * dil_h < 0) ++ky_lo;
        while (ky_hi > ky_lo && iy0 + (ky_hi - 1) * dil_h >= in_h) --ky_hi;
        int32_t ox = 0;
        if (fast3 && ky_lo == 0 && ky_hi == 3) {
            for (; ox < x_a; ++ox) {
                dw_pixel(d, rq, input, wbase, iy0, ox * sw - d->pad_left, 0, 3, off, out, mode);
                out += ch;
            }
            if (dw_rec_mode(mode) && ox < x_b) {
                const int8_t *s3 = input + (iy0 * in_w + ox * sw - d->pad_left) * ch;
                if (mode == TINYAOT_RQ_FLOAT_SAT) {
                    dw3x3_row_fsat(s3, wbase, nq, in_w * ch, off, rq->rq, rq->zp, out, x_b - ox,
                                   sw * ch);
                } else {
                    dw3x3_row_sat(s3, wbase, nq, in_w * ch, off, rq->rq, rq->zp, out, x_b - ox,
                                  sw * ch);
                }
                out += (x_b - ox) * ch;
                ox = x_b;
            }
        }
        for (; ox < d->out_w; ++ox) {
            dw_pixel(d, rq, input, wbase, iy0, ox * sw - d->pad_left, ky_lo, ky_hi, off, out, mode);
            out += ch;
        }
    }
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
static __attribute__((noinline)) void dw_fixed(const tinyaot_conv_dims_t *d,
                                               const tinyaot_requant_t *q, const int8_t *input,
                                               const uint32_t *wbase, uint32_t off, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    switch (rq.mode) {
    case TINYAOT_RQ_ORT: dw_run(d, &rq, input, wbase, off, output, TINYAOT_RQ_ORT); break;
    case TINYAOT_RQ_TFLITE: dw_run(d, &rq, input, wbase, off, output, TINYAOT_RQ_TFLITE); break;
    case TINYAOT_RQ_SMLAL: dw_run(d, &rq, input, wbase, off, output, TINYAOT_RQ_SMLAL); break;
    default: dw_run(d, &rq, input, wbase, off, output, TINYAOT_RQ_SMLAL_SAT); break;
    }
}

int tinyaot_depthwise_conv_fast_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                   const int8_t *input, const int32_t *packed_weights,
                                   int8_t *output)
{
    const int32_t ch = d->in_c;
    if (d->out_c != ch || (ch & 3) != 0) {
        return TINYAOT_ERR_ARG;
    }
    const uint32_t off = tinyaot_pack16(-q->in_zp, -q->in_zp);
    const uint32_t *wbase = (const uint32_t *)(const void *)packed_weights;
    if (tinyaot_rqc_records(q).mode == TINYAOT_RQ_FLOAT_SAT) {
        dw_run_float_sat(d, q, input, wbase, off, output);
        return TINYAOT_OK;
    }
    dw_fixed(d, q, input, wbase, off, output);
    return TINYAOT_OK;
}
