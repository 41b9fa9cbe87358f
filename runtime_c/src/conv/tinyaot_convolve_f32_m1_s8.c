/* onnxruntime's float Conv when every MLAS call is one of its M=1 kernels
 * (one output channel per group, e.g. depthwise, or one output pixel): the
 * plans without an fma segment (tinyaot_conv_f32_plan_t.tiles == 0), bit
 * for bit. Per output (channel m, pixel n) one im2col column x (the input's
 * table values through the compile-time tap offsets, 0 for padding) and the
 * channel's float weights w, [out_c][k8] with k8 = k rounded up to 8 and
 * zero padded; per K slice of the segment:
 *  - m1tb: 8 lanes, lane j sums from 0 the rounded products of the k with
 *          k % 8 == j, reduced as MLAS's M=1 transpose-B kernel does for a
 *          run of 4, 2 or 1 rows; on FPv4 VLDM of 8 x and 8 w, 8 VMLA (not
 *          fused on FPv4: acc + round(x * w), exactly the C expression);
 *          the column and the weights are zero padded to 8, and a product
 *          x * 0 = +-0 (x finite) leaves a lane unchanged except for the
 *          sign of a zero lane, which the sum + bias (+0 or not zero) erases;
 *  - m1:   products rounded, summed in groups of four ((p0 + p1) + p2) + p3,
 *          then of two, then one, each group added to C.
 * Then y = C + bias and QuantizeLinear. Depthwise plans (one segment, one
 * channel per group) skip the per-output bookkeeping: windows inside the
 * input walk by fixed steps, and windows along one line of the input plane
 * (1-D kernels, sww01) read their columns in place from a dequantized band
 * of the plane, K <= 4 with one asm loop per run of rows. The sums are the
 * same whichever path. Built with -ffp-contract=off. */
#include "../internal/tinyaot_conv_f32_m1.h"

/* m1tb_dot for k <= 4: lanes 4-7 hold no product (+0), so each reduction
 * keeps only its terms of lanes 0-3 (the dropped +0 additions change at most
 * the sign of a zero sum, which C + bias erases). */
static inline float m1tb_dot4(const float *x, const float *w, int32_t run)
{
#ifdef TINYAOT_M1_ASM
    float r;
    __asm__ volatile(
        "vldm %[z], {s16-s19}\n\t"
        "vldm %[x], {s0-s3}\n\t"
        "vldm %[w], {s8-s11}\n\t"
        "vmla.f32 s16, s0, s8\n\t"
        "vmla.f32 s17, s1, s9\n\t"
        "vmla.f32 s18, s2, s10\n\t"
        "vmla.f32 s19, s3, s11\n\t"
        "cmp %[run], #1\n\t"
        "beq 2f\n\t"
        "bgt 3f\n\t"
        "vadd.f32 s16, s16, s17\n\t" /* run of 4: ((l0 + l1) + l2) + l3 */
        "vadd.f32 s16, s16, s18\n\t"
        "vadd.f32 %[r], s16, s19\n\t"
        "b 4f\n"
        "2:\n\t" /* run of 2: (l0 + l2) + (l1 + l3) */
        "vadd.f32 s16, s16, s18\n\t"
        "vadd.f32 s17, s17, s19\n\t"
        "vadd.f32 %[r], s16, s17\n\t"
        "b 4f\n"
        "3:\n\t" /* run of 1: (l0 + l1) + (l2 + l3) */
        "vadd.f32 s16, s16, s17\n\t"
        "vadd.f32 s18, s18, s19\n\t"
        "vadd.f32 %[r], s16, s18\n"
        "4:"
        : [r] "=t"(r)
        : [z] "r"(zero8), [x] "r"(x), [w] "r"(w), [run] "r"(run)
        : "memory", "cc", "s0", "s1", "s2", "s3", "s8", "s9", "s10", "s11", "s16", "s17",
          "s18", "s19");
    return r;
#else
    const float l0 = 0.0f + x[0] * w[0], l1 = 0.0f + x[1] * w[1];
    const float l2 = 0.0f + x[2] * w[2], l3 = 0.0f + x[3] * w[3];
    if (run == RUN_4) {
        return ((l0 + l1) + l2) + l3;
    }
    if (run == RUN_2) {
        return (l0 + l2) + (l1 + l3);
    }
    return (l0 + l1) + (l2 + l3);
#endif
}

/* x[j] = tbl[b[j * stride]], j < count (count >= 1). */
static inline void m1_gather_strided(const int8_t *b, int32_t stride, const float *tbl,
                                     int32_t count, float *x)
{
#if defined(__thumb2__)
    uint32_t v, v2;
    __asm__ volatile(
        "tst %[n], #1\n\t" /* an odd element first, then 2 per iteration */
        "beq 2f\n\t"
        "ldrsb %[v], [%[b]]\n\t"
        "add %[b], %[b], %[s]\n\t"
        "ldr %[v], [%[t], %[v], lsl #2]\n\t"
        "str %[v], [%[x]], #4\n"
        "2:\n\t"
        "asrs %[n], %[n], #1\n\t"
        "beq 3f\n"
        "1:\n\t"
        "ldrsb %[v], [%[b]]\n\t"
        "ldrsb %[v2], [%[b], %[s]]\n\t"
        "add %[b], %[b], %[s], lsl #1\n\t"
        "ldr %[v], [%[t], %[v], lsl #2]\n\t"
        "ldr %[v2], [%[t], %[v2], lsl #2]\n\t"
        "strd %[v], %[v2], [%[x]], #8\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        "3:"
        : [v] "=&r"(v), [v2] "=&r"(v2), [b] "+r"(b), [x] "+r"(x), [n] "+r"(count)
        : [s] "r"(stride), [t] "r"(tbl)
        : "memory", "cc");
#else
    for (int32_t j = 0; j < count; ++j) {
        x[j] = tbl[b[j * stride]];
    }
#endif
}

#if defined(TINYAOT_M1_ASM) && (!defined(TINYAOT_F32_CAPTURE) || defined(TINYAOT_F32_CAPTURE_PTR))
#define TINYAOT_M1_ROWS_ASM 1
/* Tests record y through this pointer (the asm stores it). */
#ifdef TINYAOT_F32_CAPTURE_PTR
#define M1_CAPTURE "vstmia %[cap]!, {s16}\n\t"
#else
#define M1_CAPTURE
#endif
/* `count` (>= 1) rows of one run type, k <= 4, columns `step` floats apart:
 * m1tb_dot4, + bias, QuantizeLinear as m1_quantize, one asm loop with the
 * weights kept in s8-s11. */
#define M1_ROWS4(REDUCE) \
    __asm__ volatile( \
        "vldm %[w], {s8-s11}\n" \
        "1:\n\t" \
        "vldm %[z], {s16-s19}\n\t" \
        "vldm %[x], {s0-s3}\n\t" \
        "add %[x], %[x], %[st]\n\t" \
        "vmla.f32 s16, s0, s8\n\t" \
        "vmla.f32 s17, s1, s9\n\t" \
        "vmla.f32 s18, s2, s10\n\t" \
        "vmla.f32 s19, s3, s11\n\t" \
        REDUCE \
        "vadd.f32 s16, s16, %[b]\n\t" \
        M1_CAPTURE \
        "vdiv.f32 s16, s16, %[sc]\n\t" \
        "vcvtr.s32.f32 s16, s16\n\t" \
        "vmov %[r], s16\n\t" \
        "cmp %[r], %[lo]\n\tit lt\n\tmovlt %[r], %[lo]\n\t" \
        "cmp %[r], %[hi]\n\tit gt\n\tmovgt %[r], %[hi]\n\t" \
        "add %[r], %[r], %[zp]\n\t" \
        "strb %[r], [%[o]]\n\t" \
        "add %[o], %[o], %[oc]\n\t" \
        "subs %[n], %[n], #1\n\t" \
        "bne 1b" \
        : [r] "=&r"(r), [x] "+r"(x), [o] "+r"(out), [n] "+r"(count), [cap] "+r"(cap) \
        : [w] "r"(w), [z] "r"(zero8), [st] "r"(step * (int32_t)sizeof(float)), [b] "t"(b), \
          [sc] "t"(p->out_scale), [lo] "r"(p->act_min - p->out_zp), \
          [hi] "r"(p->act_max - p->out_zp), [zp] "r"(p->out_zp), [oc] "r"(out_c) \
        : "memory", "cc", "s0", "s1", "s2", "s3", "s8", "s9", "s10", "s11", "s16", "s17", \
          "s18", "s19")

static void m1_rows4(int32_t run, const float *x, int32_t step, const float *w, float b,
                     const tinyaot_float_conv_t *p, int32_t count, int8_t *out, int32_t out_c)
{
    int32_t r;
#ifdef TINYAOT_F32_CAPTURE_PTR
    float *cap = TINYAOT_F32_CAPTURE_PTR;
#else
    float *cap = 0;
#endif
    if (run == RUN_4) { /* ((l0 + l1) + l2) + l3 */
        M1_ROWS4("vadd.f32 s16, s16, s17\n\tvadd.f32 s16, s16, s18\n\tvadd.f32 s16, s16, s19\n\t");
    } else if (run == RUN_2) { /* (l0 + l2) + (l1 + l3) */
        M1_ROWS4("vadd.f32 s16, s16, s18\n\tvadd.f32 s17, s17, s19\n\tvadd.f32 s16, s16, s17\n\t");
    } else { /* (l0 + l1) + (l2 + l3) */
        M1_ROWS4("vadd.f32 s16, s16, s17\n\tvadd.f32 s18, s18, s19\n\tvadd.f32 s16, s16, s18\n\t");
    }
#ifdef TINYAOT_F32_CAPTURE_PTR
    TINYAOT_F32_CAPTURE_PTR = cap;
#else
    (void)cap;
#endif
}
#endif

/* Depthwise windows along one line of the input plane, whose columns are
 * slices of that line (tap k at plane index k, pixel n's window at n * step):
 * dequantize a band of the channel's plane once into x and read every
 * pixel's column in place (a column runs 8-k groups past k; those plane
 * values meet zero weights, +-0 products). The band fills the scratch the
 * caller sized with tinyaot_convolve_f32_s8_get_buffer_size. */
static void m1_plane_bands(const tinyaot_conv_dims_t *d, const tinyaot_conv_f32_plan_t *pl,
                           const int8_t *input, const tinyaot_float_conv_t *p, int32_t step,
                           float *x, int8_t *output)
{
    const int32_t *seg = pl->segments;
    const int32_t m0 = seg[1], n0 = seg[3], n1 = seg[4];
    const int32_t in_c = d->in_c, out_c = d->out_c, cout_g = out_c / d->groups;
    const int32_t kk = pl->k, n8 = (kk + 7) >> 3, k8 = n8 * 8;
    const int32_t plane = d->in_h * d->in_w;
    const int32_t room = tinyaot_convolve_f32_s8_get_buffer_size(d, pl) / (int32_t)sizeof(float);
    const int32_t band = (room - k8) / step + 1; /* pixels per band */
    const float *tbl = pl->table + 128;
    const float osc = p->out_scale;
    const int32_t ozp = p->out_zp, lo = p->act_min, hi = p->act_max;
    const int32_t four = (n1 - n0) / 4 * 4, two = four + (n1 - n0 - four) / 2 * 2;
    for (int32_t g = 0; g < d->groups; ++g) {
        const int32_t oc = g * cout_g + m0;
        const float *w = pl->weights + oc * k8;
        const float b = p->bias_f[oc];
        int8_t *out = output + n0 * out_c + oc;
        for (int32_t na = n0; na < n1; na += band) {
            const int32_t nb = n1 - na < band ? n1 : na + band;
            const int32_t q0 = na * step;
            const int32_t len = (nb - 1 - na) * step + k8;
            const int32_t have = plane - q0 < len ? plane - q0 : len;
            /* past the plane's end (at most 7 values: the last window is inside) */
            float *z = x + len - 8; /* 8 stores, not a memset call */
            z[0] = 0.0f;
            z[1] = 0.0f;
            z[2] = 0.0f;
            z[3] = 0.0f;
            z[4] = 0.0f;
            z[5] = 0.0f;
            z[6] = 0.0f;
            z[7] = 0.0f;
            m1_gather_strided(input + q0 * in_c + g, in_c, tbl, have, x);
            const float *xc = x;
            int32_t row = na - n0;
#ifdef TINYAOT_M1_ROWS_ASM
            if (kk <= 4) { /* the rows of each run type in one asm loop */
                const int32_t ends[3] = {four, two, n1 - n0};
                for (int32_t t = 0; t < 3; ++t) {
                    const int32_t e = ends[t] < nb - n0 ? ends[t] : nb - n0;
                    if (e > row) {
                        m1_rows4(t, xc, step, w, b, p, e - row, out, out_c);
                        xc += (e - row) * step;
                        out += (e - row) * out_c;
                        row = e;
                    }
                }
            }
#endif
            for (; row < nb - n0; ++row, out += out_c, xc += step) {
                const int32_t run = row < four ? RUN_4 : (row < two ? RUN_2 : RUN_1);
                const float c = kk <= 4 ? m1tb_dot4(xc, w, run) : m1tb_dot(xc, w, n8, run);
                *out = conv_f32_quantize(c + b, osc, ozp, lo, hi);
            }
        }
    }
}

/* A plan of one m1tb segment over all of K for one channel per group
 * (depthwise): per group, pixel after pixel, one column, one lane dot and
 * one QuantizeLinear. The dims live in locals: the asm's memory clobbers
 * would reload them from *d. */
static void m1_one_channel(const tinyaot_conv_dims_t *d, const tinyaot_conv_f32_plan_t *pl,
                           const int8_t *input, const tinyaot_float_conv_t *p, float *x,
                           int8_t *output)
{
    const int32_t *seg = pl->segments;
    const int32_t m0 = seg[1], n0 = seg[3], n1 = seg[4];
    const int32_t sh = d->stride_h, sw = d->stride_w, pt = d->pad_top, plft = d->pad_left;
    const int32_t in_w = d->in_w, in_c = d->in_c, out_w = d->out_w, out_c = d->out_c;
    const int32_t cg = in_c / d->groups, cout_g = out_c / d->groups;
    const int32_t kk = pl->k, n8 = (kk + 7) >> 3;
    const int32_t lim_h = d->in_h - (d->k_h - 1) * d->dil_h;
    const int32_t lim_w = in_w - (d->k_w - 1) * d->dil_w;
    const int32_t *taps = pl->taps;
    const float *tbl = pl->table + 128;
    const float osc = p->out_scale;
    const int32_t ozp = p->out_zp, lo = p->act_min, hi = p->act_max;
    const int32_t four = (n1 - n0) / 4 * 4, two = four + (n1 - n0 - four) / 2 * 2;
    const int32_t oy0 = n0 / out_w, ox0 = n0 - oy0 * out_w;
    if (pt == 0 && plft == 0 && (d->out_h - 1) * sh < lim_h && (out_w - 1) * sw < lim_w) {
        int32_t line = cg == 1 && (out_w == 1 || d->out_h == 1);
        for (int32_t k = 0; k < kk && line; ++k) {
            line = taps[k] == k * in_c;
        }
        if (line && n1 - n0 > 1) { /* windows along one line of the plane, overlapping */
            m1_plane_bands(d, pl, input, p, out_w == 1 ? sh * in_w : sw, x, output);
            return;
        }
        /* every window inside the input: the origin moves by fixed steps */
        const int32_t step_x = sw * in_c, step_y = sh * in_w * in_c;
        for (int32_t g = 0; g < d->groups; ++g) {
            const int32_t oc = g * cout_g + m0;
            const float *w = pl->weights + oc * (n8 * 8);
            const float b = p->bias_f[oc];
            const int8_t *rb = input + g * cg + oy0 * step_y;
            const int8_t *bp = rb + ox0 * step_x;
            int8_t *out = output + n0 * out_c + oc;
            int32_t ox = ox0;
            for (int32_t row = 0; row < n1 - n0; ++row, out += out_c) {
                m1_gather(bp, tbl, taps, kk, x);
                if (++ox == out_w) {
                    ox = 0;
                    rb += step_y;
                    bp = rb;
                } else {
                    bp += step_x;
                }
                const int32_t run = row < four ? RUN_4 : (row < two ? RUN_2 : RUN_1);
                const float c = kk <= 4 ? m1tb_dot4(x, w, run) : m1tb_dot(x, w, n8, run);
                *out = conv_f32_quantize(c + b, osc, ozp, lo, hi);
            }
        }
        return;
    }
    for (int32_t g = 0; g < d->groups; ++g) {
        const int32_t oc = g * cout_g + m0;
        const float *w = pl->weights + oc * (n8 * 8);
        const float b = p->bias_f[oc];
        const int8_t *in_g = input + g * cg;
        int8_t *out = output + n0 * out_c + oc;
        int32_t oy = oy0, ox = ox0;
        for (int32_t row = 0; row < n1 - n0; ++row, out += out_c) {
            const int32_t iy0 = oy * sh - pt, ix0 = ox * sw - plft;
            if (iy0 >= 0 && ix0 >= 0 && iy0 < lim_h && ix0 < lim_w) {
                m1_gather(in_g + (iy0 * in_w + ix0) * in_c, tbl, taps, kk, x);
            } else {
                m1_column(d, tbl, taps, input, g, iy0, ix0, 0, kk, x);
            }
            if (++ox == out_w) {
                ox = 0;
                ++oy;
            }
            const int32_t run = row < four ? RUN_4 : (row < two ? RUN_2 : RUN_1);
            const float c = kk <= 4 ? m1tb_dot4(x, w, run) : m1tb_dot(x, w, n8, run);
            *out = conv_f32_quantize(c + b, osc, ozp, lo, hi);
        }
    }
}

int tinyaot_convolve_f32_m1_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                               const tinyaot_conv_f32_plan_t *pl, const int8_t *input,
                               float *scratch, int8_t *output)
{
    const int32_t cout_g = d->out_c / d->groups;
    const int32_t out_c = d->out_c;
    const int32_t kk = pl->k;
    const int32_t k8 = (kk + 7) & ~7;
    const float osc = p->out_scale;
    const int32_t ozp = p->out_zp, lo = p->act_min, hi = p->act_max;
    const float *tbl = pl->table + 128;
    const int32_t span_h = (d->k_h - 1) * d->dil_h, span_w = (d->k_w - 1) * d->dil_w;
    for (int32_t k = kk; k < k8; ++k) {
        scratch[k] = 0.0f; /* the column's padding to 8 */
    }
    if (pl->nseg == 1 && pl->segments[0] != M1_KIND_M1 && pl->segments[5] == 1 &&
        pl->segments[2] - pl->segments[1] == 1) {
        m1_one_channel(d, pl, input, p, scratch, output);
        return TINYAOT_OK;
    }
    for (int32_t g = 0; g < d->groups; ++g) {
        const int32_t *seg = pl->segments;
        const float *wg = pl->weights + g * cout_g * k8;
        const float *bg = p->bias_f + g * cout_g;
        for (int32_t si = 0; si < pl->nseg; seg += 6 + seg[5], ++si) {
            const int32_t m0 = seg[1], m1 = seg[2], n0 = seg[3], n1 = seg[4];
            const int32_t nslices = seg[5];
            const int32_t *ends = seg + 6;
            const int32_t one = seg[0] != M1_KIND_M1 && nslices == 1; /* m1tb over all of K */
            /* m1tb rows: the pixels when the segment has one channel, else its channels */
            const int32_t by_pixel = m1 - m0 == 1;
            const int32_t rows = by_pixel ? n1 - n0 : m1 - m0;
            const int32_t four = rows / 4 * 4, two = four + (rows - four) / 2 * 2;
            int32_t oy = n0 / d->out_w, ox = n0 - oy * d->out_w;
            int8_t *out = output + n0 * out_c + g * cout_g;
            for (int32_t n = n0; n < n1; ++n, out += out_c) {
                const int32_t iy0 = oy * d->stride_h - d->pad_top;
                const int32_t ix0 = ox * d->stride_w - d->pad_left;
                const int32_t inside = iy0 >= 0 && ix0 >= 0 && iy0 + span_h < d->in_h &&
                                       ix0 + span_w < d->in_w;
                if (++ox == d->out_w) {
                    ox = 0;
                    ++oy;
                }
                m1_column(d, tbl, pl->taps, input, g, iy0, ix0, inside, kk, scratch);
                const int32_t prow = n - n0;
                const int32_t prun = prow < four ? RUN_4 : (prow < two ? RUN_2 : RUN_1);
                for (int32_t m = m0; m < m1; ++m) {
                    const float *w = wg + m * k8;
                    float c;
                    if (one) {
                        const int32_t row = m - m0;
                        const int32_t run =
                            by_pixel ? prun : (row < four ? RUN_4 : (row < two ? RUN_2 : RUN_1));
                        c = m1tb_dot(scratch, w, k8 >> 3, run);
                    } else {
                        c = 0.0f;
                        int32_t k0 = 0;
                        for (int32_t s = 0; s < nslices; ++s) {
                            const int32_t k1 = ends[s];
                            if (seg[0] == M1_KIND_M1) {
                                c = m1_sum(scratch, w, k0, k1, c);
                            } else { /* slices start at multiples of 128: lanes stay aligned */
                                const int32_t row = by_pixel ? prow : m - m0;
                                const int32_t run =
                                    row < four ? RUN_4 : (row < two ? RUN_2 : RUN_1);
                                const float r =
                                    m1tb_dot(scratch + k0, w + k0, (k1 - k0 + 7) >> 3, run);
                                c = s == 0 ? r : r + c;
                            }
                            k0 = k1;
                        }
                    }
                    out[m] = conv_f32_quantize(c + bg[m], osc, ozp, lo, hi);
                }
            }
        }
    }
    return TINYAOT_OK;
}
