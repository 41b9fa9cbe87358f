/* onnxruntime's float Conv on dequantized int8, bit for bit.
 *
 * MLAS runs it per group as im2col + SGEMM; which output pixels and channels
 * go together, how K = (channel, ky, kx) is cut into blocks and which kernel
 * sums a block is decided at compile time (codegen/reference/mlas_conv_order.py)
 * and passed as segments (see tinyaot_conv_f32_plan_t):
 *  - fma:  per K block one fused multiply-add chain from zero, added to the
 *          previous blocks' sum;
 *  - m1:   products rounded, added in groups of four ((p0 + p1) + p2) + p3
 *          (then two, then one), each group added to the sum;
 *  - m1tb: 8 lanes (lane k % 8 adds the rounded product of k), reduced as
 *          MLAS's M=1 transpose-B kernel does for a run of 4, 2 or 1 rows.
 * Then + bias, QuantizeLinear. The input goes through a compile-time table
 * (its 256 dequantized values) into im2col columns in the scratch (4 pixels
 * x K for the fma tiles, one pixel for the M=1 kinds: tinyaot_conv_f32_m1.h,
 * shared with tinyaot_convolve_f32_m1_s8), zeros for the
 * padding (MLAS's im2col feeds the same zeros: fma(0, w, a) == a); windows
 * inside the input use the compile-time tap offsets, no bounds checks.
 * Small fma-only layers (plan->padded) first dequantize the input into a
 * zero-padded float copy in the scratch: a column is then 4 loads per k.
 * fma segments run 4 channels x 4 pixels at a time: on FPv4 an inline-asm
 * VFMA tile (VLDM of 2 k of inputs and weights, 32 VFMA), else fmaf(); with
 * the DSP extension a full tile's K blocks and QuantizeLinear are one asm
 * block (tile_fused).
 * Built with -ffp-contract=off so only fmaf() / VFMA fuse. */
#include <math.h>
#include <string.h>

#include "../internal/tinyaot_conv_f32_m1.h"
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

#define TILE 4 /* output channels x pixels of one accumulator tile */

enum { SEG_FMA = 0 }; /* kinds 1 (m1) and 2 (m1tb): tinyaot_conv_f32_m1.h */

#if defined(__thumb2__)
/* The im2col gathers' asm: one k of 4 pixels (its tap offset o, the 4
 * values through core registers, 2 STRD), two k per loop iteration, an odd
 * count entering at the second. */
#define PADDED_K /* from the padded float copy: 4 LDR */ \
    "ldr %[o], [%[tp]], #4\n\t" \
    "ldr %[a], [%[p0], %[o], lsl #2]\n\t" \
    "ldr %[b], [%[p1], %[o], lsl #2]\n\t" \
    "ldr %[e], [%[p2], %[o], lsl #2]\n\t" \
    "ldr %[o], [%[p3], %[o], lsl #2]\n\t" \
    "strd %[a], %[b], [%[col]], #8\n\t" \
    "strd %[e], %[o], [%[col]], #8\n\t"
#define TABLE_K /* from the int8 input: LDRSB, then the table's LDR */ \
    "ldr %[o], [%[tp]], #4\n\t" \
    "ldrsb %[a], [%[p0], %[o]]\n\t" \
    "ldrsb %[b], [%[p1], %[o]]\n\t" \
    "ldrsb %[e], [%[p2], %[o]]\n\t" \
    "ldrsb %[o], [%[p3], %[o]]\n\t" \
    "ldr %[a], [%[t], %[a], lsl #2]\n\t" \
    "ldr %[b], [%[t], %[b], lsl #2]\n\t" \
    "ldr %[e], [%[t], %[e], lsl #2]\n\t" \
    "ldr %[o], [%[t], %[o], lsl #2]\n\t" \
    "strd %[a], %[b], [%[col]], #8\n\t" \
    "strd %[e], %[o], [%[col]], #8\n\t"
#define GATHER2(K) \
    "tst %[n], #1\n\t" \
    "beq 1f\n\t" \
    "adds %[n], %[n], #1\n\t" \
    "b 2f\n" \
    "1:\n\t" \
    K \
    "2:\n\t" \
    K \
    "subs %[n], %[n], #2\n\t" \
    "bne 1b"
#endif

/* Rows / columns of the input the windows reach, padding included. */
static int32_t padded_h(const tinyaot_conv_dims_t *d)
{
    return (d->out_h - 1) * d->stride_h + (d->k_h - 1) * d->dil_h + 1;
}

static int32_t padded_w(const tinyaot_conv_dims_t *d)
{
    return (d->out_w - 1) * d->stride_w + (d->k_w - 1) * d->dil_w + 1;
}

int32_t tinyaot_convolve_f32_s8_get_buffer_size(const tinyaot_conv_dims_t *d,
                                                const tinyaot_conv_f32_plan_t *pl)
{
    const int32_t cg = d->in_c / d->groups;
    const int32_t k = cg * d->k_h * d->k_w;
    /* the padded float copy; or the band (k_h padded rows, planar); or a row of
     * the input zero point (padding taps' source) */
    const int32_t extra =
        pl->padded == 1   ? padded_h(d) * padded_w(d) * d->in_c * (int32_t)sizeof(float)
        : pl->padded == 2 ? d->k_h * d->in_c * padded_w(d) * (int32_t)sizeof(float)
                          : (cg + 3) & ~3;
    return (k * TILE + TILE * TILE) * (int32_t)sizeof(float) + extra;
}

/* The zero-padded float copy: xp[(py * wp + px) * in_c + c] = table value of
 * the input at (py - pad_top, px - pad_left, c), 0.0f outside (MLAS's im2col
 * zero fill: fma(0, w, a) == a). */
static void dequantize_padded(const tinyaot_conv_dims_t *d, const float *tbl,
                              const int8_t *input, float *xp)
{
    const int32_t hp = padded_h(d), wp = padded_w(d), c = d->in_c;
    const int32_t left = d->pad_left < wp ? d->pad_left : wp;
    const int32_t mid0 = wp - left < d->in_w ? wp - left : d->in_w;
    const int32_t mid = mid0 > 0 ? mid0 * c : 0; /* floats of an input row inside */
    /* one memset for all the padding (0.0f is all-zero bits), not one per row edge */
    memset(xp, 0, (size_t)(hp * wp * c) * sizeof(float));
    for (int32_t py = 0; py < hp; ++py) {
        const int32_t iy = py - d->pad_top;
        if (iy >= 0 && iy < d->in_h) {
            const int8_t *src = input + iy * d->in_w * c; /* contiguous NHWC bytes */
            float *dst = xp + (py * wp + left) * c;
            for (int32_t i = 0; i < mid; ++i) {
                dst[i] = tbl[src[i]];
            }
        }
    }
}

/* Band row slot <- padded input row py, channel planar: slot[c * wp + x].
 * The padding columns stay the zeros of the band's first memset; a padding
 * row is all zeros. */
static void band_row(const tinyaot_conv_dims_t *d, const float *tbl, const int8_t *input,
                     int32_t py, float *slot)
{
    const int32_t wp = padded_w(d), c = d->in_c;
    const int32_t iy = py - d->pad_top;
    if (iy < 0 || iy >= d->in_h) {
        memset(slot, 0, (size_t)(c * wp) * sizeof(float));
        return;
    }
    const int32_t left = d->pad_left < wp ? d->pad_left : wp;
    const int32_t mid = wp - left < d->in_w ? wp - left : d->in_w; /* input pixels inside */
    const int8_t *src = input + iy * d->in_w * c;
    for (int32_t x = 0; x < mid; ++x, src += c) {
        float *dst = slot + left + x;
        int32_t ci = 0;
        for (; ci + 4 <= c; ci += 4, dst += 4 * wp) { /* 4 channels per iteration */
            const float a = tbl[src[ci]], b = tbl[src[ci + 1]];
            const float e = tbl[src[ci + 2]], f = tbl[src[ci + 3]];
            dst[0] = a;
            dst[wp] = b;
            dst[2 * wp] = e;
            dst[3 * wp] = f;
        }
        for (; ci < c; ++ci, dst += wp) {
            *dst = tbl[src[ci]];
        }
    }
}

/* The band for output row oy (stride 1): padded rows oy .. oy + k_h - 1 in
 * slots row % k_h; rows already there for output row `had` (-1: none) stay. */
static void band_update(const tinyaot_conv_dims_t *d, const float *tbl, const int8_t *input,
                        float *band, int32_t had, int32_t oy)
{
    const int32_t kh = d->k_h, rowf = d->in_c * padded_w(d);
    for (int32_t ky = 0; ky < kh; ++ky) {
        const int32_t py = oy + ky;
        if (had < 0 || py < had || py >= had + kh) {
            band_row(d, tbl, input, py, band + (py % kh) * rowf);
        }
    }
}

/* Every k of 4 adjacent pixels (stride 1) from the band: 4 consecutive
 * floats at base + rtaps[k]. */
static inline void gather_band(const float *base, const int32_t *rtaps, int32_t k, float *xt)
{
#if defined(__thumb2__) && defined(__ARM_FP)
    int32_t o;
    __asm__ volatile(GATHER2("ldr %[o], [%[tp]], #4\n\t"
                             "add %[o], %[b], %[o], lsl #2\n\t"
                             "vldm %[o], {s0-s3}\n\t"
                             "vstmia %[col]!, {s0-s3}\n\t")
                     : [o] "=&r"(o), [tp] "+r"(rtaps), [col] "+r"(xt), [n] "+r"(k)
                     : [b] "r"(base)
                     : "memory", "cc", "s0", "s1", "s2", "s3");
#else
    for (int32_t i = 0; i < k; ++i, xt += TILE) {
        const float *x = base + rtaps[i];
        xt[0] = x[0];
        xt[1] = x[1];
        xt[2] = x[2];
        xt[3] = x[3];
    }
#endif
}

/* Every k of 4 pixels from the padded float copy (window origins p0 +
 * {0, d1, d2, d3}): xt[k * 4 + px] = p_px[taps[k]]. */
static inline void gather_padded(const float *p0, int32_t d1, int32_t d2, int32_t d3,
                                 const int32_t *taps, int32_t k, float *xt)
{
    const float *p1 = p0 + d1, *p2 = p0 + d2, *p3 = p0 + d3;
#if defined(__thumb2__)
    uint32_t a, b, e, o;
    __asm__ volatile(
        GATHER2(PADDED_K)
        : [a] "=&r"(a), [b] "=&r"(b), [e] "=&r"(e), [o] "=&r"(o), [tp] "+r"(taps),
          [col] "+r"(xt), [n] "+r"(k)
        : [p0] "r"(p0), [p1] "r"(p1), [p2] "r"(p2), [p3] "r"(p3)
        : "memory", "cc");
#else
    for (int32_t i = 0; i < k; ++i, xt += TILE) {
        const int32_t o = taps[i];
        xt[0] = p0[o];
        xt[1] = p1[o];
        xt[2] = p2[o];
        xt[3] = p3[o];
    }
#endif
}

/* Columns of output pixels n0 .. n0 + np - 1 (np <= 4, an absent pixel
 * repeats the last) of group g from the padded float copy xp. */
static void im2col4_padded(const tinyaot_conv_dims_t *d, const int32_t *taps, const float *xp,
                           int32_t g, int32_t n0, int32_t np, float *xt)
{
    const int32_t cg = d->in_c / d->groups;
    const int32_t wp = padded_w(d);
    int32_t off[TILE];
    int32_t oy = n0 / d->out_w, ox = n0 - oy * d->out_w; /* one division, then steps */
    for (int32_t px = 0; px < TILE; ++px) {
        off[px] = (oy * d->stride_h * wp + ox * d->stride_w) * d->in_c;
        if (px + 1 < np && ++ox == d->out_w) { /* an absent pixel repeats the last */
            ox = 0;
            ++oy;
        }
    }
    gather_padded(xp + off[0] + g * cg, off[1] - off[0], off[2] - off[0], off[3] - off[0], taps,
                  cg * d->k_h * d->k_w, xt);
}

/* One tap of 4 pixels: col[c * step + px] = table value of src_px[c], c < cg. */
static inline void gather4(const int8_t *s0, const int8_t *s1, const int8_t *s2,
                           const int8_t *s3, int32_t cg, const float *tbl, float *col,
                           int32_t step)
{
#if defined(__thumb2__)
    /* the float bits move through core registers: LDRSB, LDR [tbl, q, lsl #2], STRD */
    uint32_t a, b, e, f;
    __asm__ volatile(
        "1:\n\t"
        "ldrsb %[a], [%[s0]], #1\n\t"
        "ldrsb %[b], [%[s1]], #1\n\t"
        "ldrsb %[e], [%[s2]], #1\n\t"
        "ldrsb %[f], [%[s3]], #1\n\t"
        "ldr %[a], [%[t], %[a], lsl #2]\n\t"
        "ldr %[b], [%[t], %[b], lsl #2]\n\t"
        "ldr %[e], [%[t], %[e], lsl #2]\n\t"
        "ldr %[f], [%[t], %[f], lsl #2]\n\t"
        "strd %[a], %[b], [%[col]]\n\t"
        "strd %[e], %[f], [%[col], #8]\n\t"
        "add %[col], %[col], %[step]\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b"
        : [a] "=&r"(a), [b] "=&r"(b), [e] "=&r"(e), [f] "=&r"(f), [s0] "+r"(s0), [s1] "+r"(s1),
          [s2] "+r"(s2), [s3] "+r"(s3), [col] "+r"(col), [n] "+r"(cg)
        : [t] "r"(tbl), [step] "r"(step * (int32_t)sizeof(float))
        : "memory", "cc");
#else
    for (int32_t c = 0; c < cg; ++c, col += step) {
        const float a = tbl[s0[c]], b = tbl[s1[c]], e = tbl[s2[c]], f = tbl[s3[c]];
        col[0] = a;
        col[1] = b;
        col[2] = e;
        col[3] = f;
    }
#endif
}

/* Every k of 4 windows inside the input (origins p0 + {0, d1, d2, d3}):
 * xt[k * 4 + px] = table value of p_px[taps[k]]. One loop over K, no
 * per-tap setup. */
static inline void gather_taps(const int8_t *p0, int32_t d1, int32_t d2, int32_t d3,
                               const int32_t *taps, int32_t k, const float *tbl, float *xt)
{
    const int8_t *p1 = p0 + d1, *p2 = p0 + d2, *p3 = p0 + d3;
#if defined(__thumb2__)
    uint32_t a, b, e, o;
    __asm__ volatile(
        GATHER2(TABLE_K)
        : [a] "=&r"(a), [b] "=&r"(b), [e] "=&r"(e), [o] "=&r"(o), [tp] "+r"(taps),
          [col] "+r"(xt), [n] "+r"(k)
        : [p0] "r"(p0), [p1] "r"(p1), [p2] "r"(p2), [p3] "r"(p3), [t] "r"(tbl)
        : "memory", "cc");
#else
    for (int32_t i = 0; i < k; ++i, xt += TILE) {
        const int32_t o = taps[i];
        xt[0] = tbl[p0[o]];
        xt[1] = tbl[p1[o]];
        xt[2] = tbl[p2[o]];
        xt[3] = tbl[p3[o]];
    }
#endif
}

/* Columns of output pixels n0 .. n0 + np - 1 (raster order, np <= 4) of group g:
 * xt[k * 4 + px]. A padding tap, or an absent pixel, reads `zp_row` (cg bytes
 * of the input zero point, whose table value is 0.0f), so every tap is the
 * same loop: 4 bytes -> 4 table loads -> 4 consecutive floats. */
static void im2col4(const tinyaot_conv_dims_t *d, const float *table, const int32_t *taps,
                    const int8_t *input, const int8_t *zp_row, int32_t g, int32_t n0, int32_t np,
                    float *xt)
{
    const int32_t cg = d->in_c / d->groups;
    const int32_t step = d->k_h * d->k_w * TILE;
    const float *tbl = table + 128;
    int32_t iy0[TILE], ix0[TILE], off[TILE];
    int32_t inside = 1;
    for (int32_t px = 0; px < TILE; ++px) {
        const int32_t n = n0 + (px < np ? px : np - 1); /* an absent pixel repeats the last */
        const int32_t oy = n / d->out_w;
        iy0[px] = oy * d->stride_h - d->pad_top;
        ix0[px] = (n - oy * d->out_w) * d->stride_w - d->pad_left;
        off[px] = (iy0[px] * d->in_w + ix0[px]) * d->in_c;
        inside = inside && iy0[px] >= 0 && iy0[px] + (d->k_h - 1) * d->dil_h < d->in_h &&
                 ix0[px] >= 0 && ix0[px] + (d->k_w - 1) * d->dil_w < d->in_w;
    }
    if (inside) { /* every window inside the input: no bounds checks */
        gather_taps(input + off[0] + g * cg, off[1] - off[0], off[2] - off[0], off[3] - off[0],
                    taps, cg * d->k_h * d->k_w, tbl, xt);
        return;
    }
    for (int32_t ky = 0; ky < d->k_h; ++ky) {
        for (int32_t kx = 0; kx < d->k_w; ++kx) {
            const int8_t *src[TILE];
            for (int32_t px = 0; px < TILE; ++px) {
                const int32_t iy = iy0[px] + ky * d->dil_h;
                const int32_t ix = ix0[px] + kx * d->dil_w;
                src[px] = (px >= np || iy < 0 || iy >= d->in_h || ix < 0 || ix >= d->in_w)
                              ? zp_row
                              : input + (iy * d->in_w + ix) * d->in_c + g * cg;
            }
            gather4(src[0], src[1], src[2], src[3], cg, tbl, xt + (ky * d->k_w + kx) * TILE,
                    step);
        }
    }
}

#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__ARM_FEATURE_FMA)
#define TINYAOT_F32_ASM 1
static const float zero16[TILE * TILE];

/* 16 VFMA of one k into the tile's accumulators s16-s31 (acc[j][p] =
 * s16 + 4j + p): x of the 4 pixels in s0-s3, weights of the 4 channels in
 * s8-s11 (FMA_A) or s4-s7 / s12-s15 for the second k of a pair (FMA_B). */
#define FMA_A \
    "vfma.f32 s16, s8, s0\n\t" \
    "vfma.f32 s17, s8, s1\n\t" \
    "vfma.f32 s18, s8, s2\n\t" \
    "vfma.f32 s19, s8, s3\n\t" \
    "vfma.f32 s20, s9, s0\n\t" \
    "vfma.f32 s21, s9, s1\n\t" \
    "vfma.f32 s22, s9, s2\n\t" \
    "vfma.f32 s23, s9, s3\n\t" \
    "vfma.f32 s24, s10, s0\n\t" \
    "vfma.f32 s25, s10, s1\n\t" \
    "vfma.f32 s26, s10, s2\n\t" \
    "vfma.f32 s27, s10, s3\n\t" \
    "vfma.f32 s28, s11, s0\n\t" \
    "vfma.f32 s29, s11, s1\n\t" \
    "vfma.f32 s30, s11, s2\n\t" \
    "vfma.f32 s31, s11, s3\n\t"
#define FMA_B \
    "vfma.f32 s16, s12, s4\n\t" \
    "vfma.f32 s17, s12, s5\n\t" \
    "vfma.f32 s18, s12, s6\n\t" \
    "vfma.f32 s19, s12, s7\n\t" \
    "vfma.f32 s20, s13, s4\n\t" \
    "vfma.f32 s21, s13, s5\n\t" \
    "vfma.f32 s22, s13, s6\n\t" \
    "vfma.f32 s23, s13, s7\n\t" \
    "vfma.f32 s24, s14, s4\n\t" \
    "vfma.f32 s25, s14, s5\n\t" \
    "vfma.f32 s26, s14, s6\n\t" \
    "vfma.f32 s27, s14, s7\n\t" \
    "vfma.f32 s28, s15, s4\n\t" \
    "vfma.f32 s29, s15, s5\n\t" \
    "vfma.f32 s30, s15, s6\n\t" \
    "vfma.f32 s31, s15, s7\n\t"
#if defined(__ARM_FEATURE_DSP) /* QADD, SSAT */
#define TINYAOT_F32_FUSED 1
/* A full 4x4 tile (4 pixels x 4 channels, all stored) in one asm block: its
 * K blocks, then QuantizeLinear. Fields the asm reads by offset. */
typedef struct {
    const float *zero;  /* 0: 16 zeros (a block's chain starts from zero) */
    float *tot;         /* 4: the tile's sums (C between blocks; the capture hook's) */
    int32_t nslices;    /* 8 */
    const float *bias;  /* 12: the tile's 4 channels */
    int8_t *out;        /* 16: pixel 0, channel 0 of the tile */
    int32_t out_c;      /* 20 */
    int32_t zp;         /* 24 */
    int32_t lo, hi;     /* 28, 32 */
    float scale;        /* 36 */
    int32_t clamp;      /* 40: 0 when [lo, hi] is [-128, 127] (SSAT is the clamp) */
} fused_tile_t;

/* y = sum + bias, y / scale (s4), VCVTR: round half even, saturating */
#define QT_FLOAT \
    "vadd.f32 s16, s16, s0\n\t" \
    "vadd.f32 s17, s17, s0\n\t" \
    "vadd.f32 s18, s18, s0\n\t" \
    "vadd.f32 s19, s19, s0\n\t" \
    "vadd.f32 s20, s20, s1\n\t" \
    "vadd.f32 s21, s21, s1\n\t" \
    "vadd.f32 s22, s22, s1\n\t" \
    "vadd.f32 s23, s23, s1\n\t" \
    "vadd.f32 s24, s24, s2\n\t" \
    "vadd.f32 s25, s25, s2\n\t" \
    "vadd.f32 s26, s26, s2\n\t" \
    "vadd.f32 s27, s27, s2\n\t" \
    "vadd.f32 s28, s28, s3\n\t" \
    "vadd.f32 s29, s29, s3\n\t" \
    "vadd.f32 s30, s30, s3\n\t" \
    "vadd.f32 s31, s31, s3\n\t" \
    "vdiv.f32 s16, s16, s4\n\t" \
    "vdiv.f32 s17, s17, s4\n\t" \
    "vdiv.f32 s18, s18, s4\n\t" \
    "vdiv.f32 s19, s19, s4\n\t" \
    "vdiv.f32 s20, s20, s4\n\t" \
    "vdiv.f32 s21, s21, s4\n\t" \
    "vdiv.f32 s22, s22, s4\n\t" \
    "vdiv.f32 s23, s23, s4\n\t" \
    "vdiv.f32 s24, s24, s4\n\t" \
    "vdiv.f32 s25, s25, s4\n\t" \
    "vdiv.f32 s26, s26, s4\n\t" \
    "vdiv.f32 s27, s27, s4\n\t" \
    "vdiv.f32 s28, s28, s4\n\t" \
    "vdiv.f32 s29, s29, s4\n\t" \
    "vdiv.f32 s30, s30, s4\n\t" \
    "vdiv.f32 s31, s31, s4\n\t" \
    "vcvtr.s32.f32 s16, s16\n\t" \
    "vcvtr.s32.f32 s17, s17\n\t" \
    "vcvtr.s32.f32 s18, s18\n\t" \
    "vcvtr.s32.f32 s19, s19\n\t" \
    "vcvtr.s32.f32 s20, s20\n\t" \
    "vcvtr.s32.f32 s21, s21\n\t" \
    "vcvtr.s32.f32 s22, s22\n\t" \
    "vcvtr.s32.f32 s23, s23\n\t" \
    "vcvtr.s32.f32 s24, s24\n\t" \
    "vcvtr.s32.f32 s25, s25\n\t" \
    "vcvtr.s32.f32 s26, s26\n\t" \
    "vcvtr.s32.f32 s27, s27\n\t" \
    "vcvtr.s32.f32 s28, s28\n\t" \
    "vcvtr.s32.f32 s29, s29\n\t" \
    "vcvtr.s32.f32 s30, s30\n\t" \
    "vcvtr.s32.f32 s31, s31\n\t"
#define ADD_TOT \
    "vadd.f32 s16, s16, s0\n\t" \
    "vadd.f32 s17, s17, s1\n\t" \
    "vadd.f32 s18, s18, s2\n\t" \
    "vadd.f32 s19, s19, s3\n\t" \
    "vadd.f32 s20, s20, s4\n\t" \
    "vadd.f32 s21, s21, s5\n\t" \
    "vadd.f32 s22, s22, s6\n\t" \
    "vadd.f32 s23, s23, s7\n\t" \
    "vadd.f32 s24, s24, s8\n\t" \
    "vadd.f32 s25, s25, s9\n\t" \
    "vadd.f32 s26, s26, s10\n\t" \
    "vadd.f32 s27, s27, s11\n\t" \
    "vadd.f32 s28, s28, s12\n\t" \
    "vadd.f32 s29, s29, s13\n\t" \
    "vadd.f32 s30, s30, s14\n\t" \
    "vadd.f32 s31, s31, s15\n\t"
/* clamp to [lo, hi] (hi in f): predicated moves, input-independent count */
#define QT_CLAMP(r) \
    "cmp " r ", %[lo]\n\t" \
    "it lt\n\t" \
    "movlt " r ", %[lo]\n\t" \
    "cmp " r ", %[f]\n\t" \
    "it gt\n\t" \
    "movgt " r ", %[f]\n\t"
#define QT_NOCLAMP(r)
/* channel j (its 4 pixels in sa sb sc sd): + zp (ns, QADD), SSAT 8, [clamp], one
 * STRB per pixel pointer (x, w, e, k: pixels 0-3), each stepping one channel */
#define QT_CHANNEL(sa, sb, sc, sd, CL) \
    "vmov %[a], %[b], " sa ", " sb "\n\t" \
    "qadd %[a], %[a], %[ns]\n\t" \
    "qadd %[b], %[b], %[ns]\n\t" \
    "ssat %[a], #8, %[a]\n\t" \
    "ssat %[b], #8, %[b]\n\t" \
    CL("%[a]") CL("%[b]") \
    "strb %[a], [%[x]], #1\n\t" \
    "strb %[b], [%[w]], #1\n\t" \
    "vmov %[a], %[b], " sc ", " sd "\n\t" \
    "qadd %[a], %[a], %[ns]\n\t" \
    "qadd %[b], %[b], %[ns]\n\t" \
    "ssat %[a], #8, %[a]\n\t" \
    "ssat %[b], #8, %[b]\n\t" \
    CL("%[a]") CL("%[b]") \
    "strb %[a], [%[e]], #1\n\t" \
    "strb %[b], [%[k]], #1\n\t"
#define QT_CHANNELS(CL) \
    QT_CHANNEL("s16", "s17", "s18", "s19", CL) \
    QT_CHANNEL("s20", "s21", "s22", "s23", CL) \
    QT_CHANNEL("s24", "s25", "s26", "s27", CL) \
    QT_CHANNEL("s28", "s29", "s30", "s31", CL)
#define PAIR \
    "vldmia %[x]!, {s0-s7}\n\t" \
    "vldmia %[w]!, {s8-s15}\n\t" \
    FMA_A FMA_B

#ifdef TINYAOT_F32_CAPTURE /* tests: the sums stay readable in f->tot */
#define TOT_FOR_CAPTURE "ldr %[a], [%[f], #4]\n\tvstm %[a], {s16-s31}\n\t"
#else
#define TOT_FOR_CAPTURE
#endif
/* The tile's columns x[k][4] and weights w[k][4] over the K blocks ending at
 * ends[0 .. nslices - 1]: per block an fma chain from zero (8 k per loop
 * iteration), + the previous blocks' sum; then quantized into f->out. The
 * loop's registers become the output's (x, w, e, k: the 4 pixel pointers). */
static void tile_fused(const float *x, const float *w, const int32_t *ends, fused_tile_t *f)
{
    int32_t k = 0, ns, a, b, lo;
    __asm__ volatile(
        "ldr %[ns], [%[f], #8]\n"
        "0:\n\t"
        "ldr %[a], [%[e]], #4\n\t"
        "sub %[b], %[a], %[k]\n\t"      /* b: the block's k count */
        "mov %[k], %[a]\n\t"
        "ldr %[a], [%[f], #0]\n\t"
        "vldm %[a], {s16-s31}\n\t"
        "lsrs %[a], %[b], #3\n\t"
        "beq 2f\n"
        "1:\n\t"
        PAIR PAIR PAIR PAIR
        "subs %[a], %[a], #1\n\t"
        "bne 1b\n"
        "2:\n\t"
        "tst %[b], #4\n\t"
        "beq 6f\n\t"
        PAIR PAIR
        "6:\n\t"
        "tst %[b], #2\n\t"
        "beq 3f\n\t"
        PAIR
        "3:\n\t"
        "tst %[b], #1\n\t"
        "beq 4f\n\t"
        "vldmia %[x]!, {s0-s3}\n\t"
        "vldmia %[w]!, {s8-s11}\n\t"
        FMA_A
        "4:\n\t"
        "ldr %[a], [%[f], #8]\n\t"
        "cmp %[ns], %[a]\n\t"           /* the first block stores, the others add */
        "beq 5f\n\t"
        "ldr %[a], [%[f], #4]\n\t"
        "vldm %[a], {s0-s15}\n\t"
        ADD_TOT
        "5:\n\t"
        "subs %[ns], %[ns], #1\n\t"
        "beq 7f\n\t"
        "ldr %[a], [%[f], #4]\n\t"    /* C for the next block */
        "vstm %[a], {s16-s31}\n\t"
        "b 0b\n"
        "7:\n\t"
        TOT_FOR_CAPTURE
        "ldr %[a], [%[f], #12]\n\t"
        "vldm %[a], {s0-s3}\n\t"
        "vldr s4, [%[f], #36]\n\t"
        QT_FLOAT
        "ldr %[x], [%[f], #16]\n\t"
        "ldr %[k], [%[f], #20]\n\t"
        "ldr %[ns], [%[f], #24]\n\t"    /* ns: zp */
        "ldr %[lo], [%[f], #28]\n\t"
        "ldr %[a], [%[f], #40]\n\t"
        "ldr %[f], [%[f], #32]\n\t"     /* f: hi */
        "add %[w], %[x], %[k]\n\t"
        "add %[e], %[w], %[k]\n\t"
        "add %[k], %[e], %[k]\n\t"
        "cmp %[a], #0\n\t"
        "bne 9f\n\t"
        QT_CHANNELS(QT_NOCLAMP)
        "b 10f\n"
        "9:\n\t"
        QT_CHANNELS(QT_CLAMP)
        "10:\n\t"
        : [x] "+r"(x), [w] "+r"(w), [e] "+r"(ends), [k] "+r"(k), [f] "+r"(f), [ns] "=&r"(ns),
          [a] "=&r"(a), [b] "=&r"(b), [lo] "=&r"(lo)
        :
        : "memory", "cc", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10",
          "s11", "s12", "s13", "s14", "s15", "s16", "s17", "s18", "s19", "s20", "s21", "s22",
          "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31");
}
#endif /* __ARM_FEATURE_DSP */
#endif

/* One K block of a 4x4 tile: acc = fma chain from zero over n k's of
 * x[k][4] and w[k][4]; tot = acc (first block) or acc + tot (MLAS adds each
 * block's sum to C). */
static void block4x4(const float *x, const float *w, int32_t n, float *tot, int32_t first)
{
#ifdef TINYAOT_F32_ASM
    /* VLDM moves 8 registers in one instruction: 2 loads + 32 VFMA per 2 k,
     * 8 k per loop iteration */
    int32_t octs = n >> 3;
    const int32_t rest = n & 7;
    __asm__ volatile(
        "vldm %[z], {s16-s31}\n\t"
        "cmp %[q], #0\n\t"
        "beq 2f\n"
        "1:\n\t"
        "vldmia %[x]!, {s0-s7}\n\t"
        "vldmia %[w]!, {s8-s15}\n\t"
        FMA_A FMA_B
        "vldmia %[x]!, {s0-s7}\n\t"
        "vldmia %[w]!, {s8-s15}\n\t"
        FMA_A FMA_B
        "vldmia %[x]!, {s0-s7}\n\t"
        "vldmia %[w]!, {s8-s15}\n\t"
        FMA_A FMA_B
        "vldmia %[x]!, {s0-s7}\n\t"
        "vldmia %[w]!, {s8-s15}\n\t"
        FMA_A FMA_B
        "subs %[q], %[q], #1\n\t"
        "bne 1b\n"
        "2:\n\t"
        "tst %[r], #4\n\t"
        "beq 6f\n\t"
        "vldmia %[x]!, {s0-s7}\n\t"
        "vldmia %[w]!, {s8-s15}\n\t"
        FMA_A FMA_B
        "vldmia %[x]!, {s0-s7}\n\t"
        "vldmia %[w]!, {s8-s15}\n\t"
        FMA_A FMA_B
        "6:\n\t"
        "tst %[r], #2\n\t"
        "beq 3f\n\t"
        "vldmia %[x]!, {s0-s7}\n\t"
        "vldmia %[w]!, {s8-s15}\n\t"
        FMA_A FMA_B
        "3:\n\t"
        "tst %[r], #1\n\t"
        "beq 4f\n\t"
        "vldmia %[x]!, {s0-s3}\n\t"
        "vldmia %[w]!, {s8-s11}\n\t"
        FMA_A
        "4:\n\t"
        "cmp %[f], #0\n\t"
        "bne 5f\n\t"
        "vldm %[t], {s0-s15}\n\t"
        "vadd.f32 s16, s16, s0\n\t"
        "vadd.f32 s17, s17, s1\n\t"
        "vadd.f32 s18, s18, s2\n\t"
        "vadd.f32 s19, s19, s3\n\t"
        "vadd.f32 s20, s20, s4\n\t"
        "vadd.f32 s21, s21, s5\n\t"
        "vadd.f32 s22, s22, s6\n\t"
        "vadd.f32 s23, s23, s7\n\t"
        "vadd.f32 s24, s24, s8\n\t"
        "vadd.f32 s25, s25, s9\n\t"
        "vadd.f32 s26, s26, s10\n\t"
        "vadd.f32 s27, s27, s11\n\t"
        "vadd.f32 s28, s28, s12\n\t"
        "vadd.f32 s29, s29, s13\n\t"
        "vadd.f32 s30, s30, s14\n\t"
        "vadd.f32 s31, s31, s15\n"
        "5:\n\t"
        "vstm %[t], {s16-s31}\n\t"
        : [x] "+r"(x), [w] "+r"(w), [q] "+r"(octs)
        : [z] "r"(zero16), [r] "r"(rest), [f] "r"(first), [t] "r"(tot)
        : "memory", "cc", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10",
          "s11", "s12", "s13", "s14", "s15", "s16", "s17", "s18", "s19", "s20", "s21", "s22",
          "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31");
#else
    float acc[TILE * TILE];
    for (int32_t i = 0; i < TILE * TILE; ++i) {
        acc[i] = 0.0f;
    }
    for (int32_t k = 0; k < n; ++k, x += TILE, w += TILE) {
        for (int32_t j = 0; j < TILE; ++j) {
            for (int32_t p = 0; p < TILE; ++p) {
                acc[j * TILE + p] = fmaf(w[j], x[p], acc[j * TILE + p]);
            }
        }
    }
    for (int32_t i = 0; i < TILE * TILE; ++i) {
        tot[i] = first ? acc[i] : acc[i] + tot[i];
    }
#endif
}

/* An M=1 segment among fma tiles: ORT's threads split M and one thread got
 * one channel, its K in one slice (codegen/backend/conv_f32_pack.py checks
 * it). The channel's weights, packed with its tile's, are copied after the
 * column into the M=1 layout ([k8], zero padded); then per pixel its column
 * and MLAS's M=1 sum of the segment's kind (m1tb: rows are the pixels). The
 * scratch's 4 columns and tile hold the two (4 k + 16 >= 2 k8). */
static void m1_channel(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                       const tinyaot_conv_f32_plan_t *pl, const int32_t *seg, int32_t g,
                       const int8_t *input, float *x, int8_t *output)
{
    const int32_t m = seg[1], n0 = seg[3], n1 = seg[4];
    const int32_t kk = pl->k, k8 = (kk + 7) & ~7;
    const int32_t oc = g * (d->out_c / d->groups) + m;
    const int32_t rows = n1 - n0, four = rows / 4 * 4, two = four + (rows - four) / 2 * 2;
    const float *wt = pl->weights + (g * pl->tiles + m / TILE) * kk * TILE + m % TILE;
    float *w = x + k8;
    for (int32_t k = 0; k < kk; ++k) {
        w[k] = wt[k * TILE];
    }
    for (int32_t k = kk; k < k8; ++k) {
        x[k] = 0.0f;
        w[k] = 0.0f;
    }
    for (int32_t n = n0; n < n1; ++n) {
        const int32_t oy = n / d->out_w, row = n - n0;
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        const int32_t ix0 = (n - oy * d->out_w) * d->stride_w - d->pad_left;
        const int32_t inside = iy0 >= 0 && ix0 >= 0 && iy0 + (d->k_h - 1) * d->dil_h < d->in_h &&
                               ix0 + (d->k_w - 1) * d->dil_w < d->in_w;
        m1_column(d, pl->table + 128, pl->taps, input, g, iy0, ix0, inside, kk, x);
        const float c = seg[0] == M1_KIND_M1
                            ? m1_sum(x, w, 0, kk, 0.0f)
                            : m1tb_dot(x, w, k8 >> 3,
                                       row < four ? RUN_4 : (row < two ? RUN_2 : RUN_1));
        output[n * d->out_c + oc] =
            conv_f32_quantize(c + p->bias_f[oc], p->out_scale, p->out_zp, p->act_min, p->act_max);
    }
}

int tinyaot_convolve_f32_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                            const tinyaot_conv_f32_plan_t *pl, const int8_t *input,
                            float *scratch, int8_t *output)
{
    if (pl->tiles == 0) { /* M=1-only plans are tinyaot_convolve_f32_m1_s8's (the emitter picks it) */
        return TINYAOT_ERR_ARG;
    }
    const int32_t cout_g = d->out_c / d->groups;
    const int32_t out_c = d->out_c;
    const float osc = p->out_scale;
    const int32_t ozp = p->out_zp, lo = p->act_min, hi = p->act_max;
    float *xt = scratch;
    float *tot = scratch + pl->k * TILE;
    float *xp = tot + TILE * TILE; /* the padded float copy, when pl->padded */
    int8_t *zp_row = (int8_t *)(void *)xp; /* else bytes of the input zero point */
    int32_t band_oy = -1; /* the output row the band holds */
    if (pl->padded == 1) {
        dequantize_padded(d, pl->table + 128, input, xp);
    } else if (pl->padded == 2) {
        memset(xp, 0, (size_t)(d->k_h * d->in_c * padded_w(d)) * sizeof(float));
    } else {
        for (int32_t c = 0; c < d->in_c / d->groups; ++c) {
            zp_row[c] = (int8_t)p->in_zp;
        }
    }
    for (int32_t g = 0; g < d->groups; ++g) {
        const int32_t *seg = pl->segments;
        for (int32_t si = 0; si < pl->nseg; seg += 6 + seg[5], ++si) {
            const int32_t m0 = seg[1], m1 = seg[2], n0 = seg[3], n1 = seg[4];
            /* an M=1 segment: rare (2+ ORT threads), kept off the fma path's registers */
            if (__builtin_expect(seg[0] != SEG_FMA, 0)) {
                m1_channel(d, p, pl, seg, g, input, xt, output);
                continue;
            }
#if defined(TINYAOT_F32_FUSED)
            fused_tile_t ft = {zero16, tot,  seg[5], 0,  0,  out_c, ozp,
                               lo,     hi,   osc,    lo != -128 || hi != 127};
#endif
            for (int32_t n = n0; n < n1; n += TILE) {
                const int32_t np = n1 - n < TILE ? n1 - n : TILE;
                if (pl->padded == 1) {
                    im2col4_padded(d, pl->taps, xp, g, n, np, xt);
                } else if (pl->padded == 2) { /* groups of 4 inside one output row */
                    const int32_t oy = n / d->out_w;
                    if (oy != band_oy) {
                        band_update(d, pl->table + 128, input, xp, band_oy, oy);
                        band_oy = oy;
                    }
                    gather_band(xp + (n - oy * d->out_w), pl->taps + oy % d->k_h * pl->k,
                                pl->k, xt);
                } else {
                    im2col4(d, pl->table, pl->taps, input, zp_row, g, n, np, xt);
                }
                int32_t t = m0 / TILE;
#if defined(TINYAOT_F32_FUSED)
                if (np == TILE && t * TILE == m0) { /* the full tiles: one asm block each */
                    const int32_t kstep = pl->k * TILE;
                    const float *w = pl->weights + (g * pl->tiles + t) * kstep;
                    ft.bias = p->bias_f + g * cout_g + t * TILE;
                    ft.out = output + n * out_c + g * cout_g + t * TILE;
                    for (; t * TILE + TILE <= m1; ++t, w += kstep) {
                        tile_fused(xt, w, seg + 6, &ft);
#ifdef TINYAOT_F32_CAPTURE
                        for (int32_t j = 0; j < TILE * TILE; ++j) {
                            TINYAOT_F32_CAPTURE(tot[j] + ft.bias[j / TILE]);
                        }
#endif
                        ft.bias += TILE;
                        ft.out += TILE;
                    }
                }
#endif
                for (; t * TILE < m1; ++t) {
                    const float *w = pl->weights + (g * pl->tiles + t) * pl->k * TILE;
                    int32_t k0 = 0;
                    for (int32_t s = 0; s < seg[5]; ++s) {
                        const int32_t k1 = seg[6 + s];
                        block4x4(xt + k0 * TILE, w + k0 * TILE, k1 - k0, tot, s == 0);
                        k0 = k1;
                    }
                    for (int32_t j = 0; j < TILE; ++j) {
                        const int32_t m = t * TILE + j;
                        if (m < m0 || m >= m1) {
                            continue;
                        }
                        const int32_t oc = g * cout_g + m;
                        const float b = p->bias_f[oc];
                        int8_t *out = output + n * out_c + oc;
                        const float *tj = tot + j * TILE;
                        for (int32_t px = 0; px < np; ++px, out += out_c) {
                            *out = conv_f32_quantize(tj[px] + b, osc, ozp, lo, hi);
                        }
                    }
                }
            }
        }
    }
    return TINYAOT_OK;
}
