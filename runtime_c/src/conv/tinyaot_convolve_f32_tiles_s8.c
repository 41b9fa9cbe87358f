/* onnxruntime's float Conv on dequantized int8, bit for bit: the tiles of 4 output
 * channels [t_lo, t_hi), on the packed float weights given (tinyaot_convolve_f32_s8:
 * all tiles, the plan's weights in flash; tinyaot_convolve_f32_b8_s8: a block at a time,
 * dequantized from int8 into its scratch).
 *
 * MLAS runs it per group as im2col + SGEMM; which output pixels and channels
 * go together, how K = (channel, ky, kx) is cut into blocks and which kernel
 * sums a block is decided at compile time (codegen/numerics/mlas_conv_order.py)
 * and passed as segments (see tinyaot_conv_f32_plan_t):
 *  - fma:  per K block one fused multiply-add chain from zero, added to the
 *          previous blocks' sum;
 *  - m1:   products rounded, added in groups of four ((p0 + p1) + p2) + p3
 *          (then two, then one), each group added to the sum;
 *  - m1tb: 8 lanes (lane k % 8 adds the rounded product of k), reduced as
 *          MLAS's M=1 transpose-B kernel does for a run of 4, 2 or 1 rows.
 * Then + bias, QuantizeLinear. The input goes through a compile-time table
 * (its 256 dequantized values) into im2col columns in the scratch, zeros for
 * the padding (MLAS's im2col feeds the same zeros: fma(0, w, a) == a).
 *
 * This file holds the loop over segments and groups of 4 pixels (the scratch
 * size is tinyaot_convolve_f32_s8_get_buffer_size); the strategies sit in parts
 * it includes (one translation unit):
 *   tinyaot_convolve_f32_tiles_s8_im2col.inc  the columns of 4 pixels: through the
 *       table, from a zero-padded float copy, or from a band of padded rows;
 *   tinyaot_convolve_f32_tiles_s8_tile.inc    4 channels x 4 pixels of an fma
 *       segment: inline-asm VFMA where the FPU has it (FPv4-SP and later),
 *       fmaf() elsewhere; with the DSP extension too, a full tile's K blocks
 *       and QuantizeLinear in one asm block;
 *   ../internal/tinyaot_conv_f32_m1.h   the M=1 kinds' column and sums
 *       (m1_channel below; shared with tinyaot_convolve_f32_m1_s8).
 * Built with -ffp-contract=off so only fmaf() / VFMA fuse. */
#include <math.h>
#include <string.h>

#include "../internal/tinyaot_conv_f32_m1.h"
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

#define TILE 4 /* output channels x pixels of one accumulator tile */

enum { SEG_FMA = 0 }; /* kinds 1 (m1) and 2 (m1tb): tinyaot_conv_f32_m1.h */

/* Rows / columns of the input the windows reach, padding included. */
static int32_t padded_h(const tinyaot_conv_dims_t *d)
{
    return (d->out_h - 1) * d->stride_h + (d->k_h - 1) * d->dil_h + 1;
}

static int32_t padded_w(const tinyaot_conv_dims_t *d)
{
    return (d->out_w - 1) * d->stride_w + (d->k_w - 1) * d->dil_w + 1;
}

#include "tinyaot_convolve_f32_tiles_s8_im2col.inc"
#include "tinyaot_convolve_f32_tiles_s8_tile.inc"

/* An M=1 segment among fma tiles: ORT's threads split M and one thread got
 * one channel, its K in one slice (codegen/kernels/conv_f32_pack.py checks
 * it). The channel's weights, packed with its tile's, are copied after the
 * column into the M=1 layout ([k8], zero padded); then per pixel its column
 * and MLAS's M=1 sum of the segment's kind (m1tb: rows are the pixels). The
 * scratch's 4 columns and tile hold the two (4 k + 16 >= 2 k8). */
static void m1_channel(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                       const tinyaot_conv_f32_plan_t *pl, const float *weights, int32_t t_lo,
                       const int32_t *seg, int32_t g, const int8_t *input, float *x,
                       int8_t *output)
{
    const int32_t m = seg[1], n0 = seg[3], n1 = seg[4];
    const int32_t kk = pl->k, k8 = (kk + 7) & ~7;
    const int32_t oc = g * (d->out_c / d->groups) + m;
    const int32_t rows = n1 - n0, four = rows / 4 * 4, two = four + (rows - four) / 2 * 2;
    const float *wt = weights + (g * pl->tiles + m / TILE - t_lo) * kk * TILE + m % TILE;
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

int tinyaot_convolve_f32_tiles_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                                  const tinyaot_conv_f32_plan_t *pl, const float *weights,
                                  int32_t t_lo, int32_t t_hi, const int8_t *input,
                                  float *scratch, int8_t *output)
{
    if (t_lo < 0 || t_hi > pl->tiles || t_lo >= t_hi ||
        (d->groups != 1 && (t_lo != 0 || t_hi != pl->tiles))) {
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
            if (m1 <= t_lo * TILE || m0 >= t_hi * TILE) {
                continue; /* none of its channels in these tiles */
            }
            /* an M=1 segment: rare (2+ ORT threads), kept off the fma path's registers */
            if (__builtin_expect(seg[0] != SEG_FMA, 0)) {
                m1_channel(d, p, pl, weights, t_lo, seg, g, input, xt, output);
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
                int32_t t = m0 / TILE > t_lo ? m0 / TILE : t_lo;
#if defined(TINYAOT_F32_FUSED)
                if (np == TILE && t * TILE >= m0) { /* the full tiles: one asm block each */
                    const int32_t kstep = pl->k * TILE;
                    const float *w = weights + (g * pl->tiles + t - t_lo) * kstep;
                    ft.bias = p->bias_f + g * cout_g + t * TILE;
                    ft.out = output + n * out_c + g * cout_g + t * TILE;
                    for (; t * TILE + TILE <= m1 && t < t_hi; ++t, w += kstep) {
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
                for (; t * TILE < m1 && t < t_hi; ++t) {
                    const float *w = weights + (g * pl->tiles + t - t_lo) * pl->k * TILE;
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
