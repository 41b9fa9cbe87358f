/* onnxruntime's float Conv when every MLAS call is one of its M=1 kernels
 * (one output channel per group, e.g. depthwise, or one output pixel): the
 * plans without an fma segment (tinyaot_conv_f32_plan_t.tiles == 0), bit
 * for bit. Per output (channel m, pixel n) one im2col column x (the input's
 * table values through the compile-time tap offsets, 0 for padding) and the
 * channel's float weights w, [out_c][k8] with k8 = k rounded up to 8 and
 * zero padded; per K slice of the segment:
 *  - m1tb: 8 lanes, lane j sums from 0 the rounded products of the k with
 *          k % 8 == j, reduced as MLAS's M=1 transpose-B kernel does for a
 *          run of 4, 2 or 1 rows; with a single-precision FPU VLDM of 8 x
 *          and 8 w, 8 VMUL and 8 VADD (not fused: acc + round(x * w),
 *          exactly the C expression);
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
 * same whichever path (the depthwise ones sit in
 * tinyaot_convolve_f32_m1_s8_depthwise.inc, included below: one translation
 * unit). Built with -ffp-contract=off. */
#include "../internal/tinyaot_conv_f32_m1.h"

#include "tinyaot_convolve_f32_m1_s8_depthwise.inc"

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
