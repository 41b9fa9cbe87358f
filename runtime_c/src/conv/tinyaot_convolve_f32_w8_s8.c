/* onnxruntime's float Conv for --optimize size: the same sums as
 * tinyaot_convolve_f32_s8 / _m1_s8 -- MLAS's segments
 * (codegen/numerics/mlas_conv_order.py), each output (channel m, pixel n)
 * summed over its K slices as the segment's kernel does -- but the weights
 * stay int8 in flash in the integer layout [out_c][k], k = (c, ky, kx)
 * (1 byte each instead of 4, no packing, no tables), dequantized as they are
 * read, float(q) * scale (exactly DequantizeLinear's float32). The input
 * column of a pixel is dequantized into the scratch, padding as 0.0f (MLAS's
 * zero-filled im2col); fma segments take 4 pixels' columns at a time, so a
 * weight is dequantized once for 4 chains. Small, not fast.
 *  - fma:  per slice one fused multiply-add chain from 0, C = chain + C;
 *  - m1:   rounded products in groups of 4 (then 2, 1), each added to C (from 0);
 *  - m1tb: 8 lanes per slice, reduced as MLAS's M=1 transpose-B kernel for
 *          the output's place in its run of rows (pixels when the segment has
 *          one channel, else channels), C = r + C.
 * Then y = C + bias and QuantizeLinear. Built with -ffp-contract=off. */
#include "../internal/tinyaot_f32_w8.h"

enum { KIND_FMA = 0, KIND_M1 = 1, KIND_M1TB = 2 }; /* mlas_conv_order.KINDS */

int32_t tinyaot_convolve_f32_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d)
{
    return 4 * d->in_c / d->groups * d->k_h * d->k_w * (int32_t)sizeof(float);
}

/* The im2col column of output pixel n in group g: x[k], k = (c, ky, kx). */
static void column(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                   const int8_t *input, int32_t g, int32_t n, float *x)
{
    const int32_t cg = d->in_c / d->groups;
    const int32_t y0 = n / d->out_w * d->stride_h - d->pad_top;
    const int32_t x0 = n % d->out_w * d->stride_w - d->pad_left;
    int32_t k = 0;
    for (int32_t c = 0; c < cg; ++c) {
        for (int32_t ky = 0; ky < d->k_h; ++ky) {
            const int32_t iy = y0 + ky * d->dil_h;
            for (int32_t kx = 0; kx < d->k_w; ++kx, ++k) {
                const int32_t ix = x0 + kx * d->dil_w;
                if (iy < 0 || iy >= d->in_h || ix < 0 || ix >= d->in_w) {
                    x[k] = 0.0f;
                } else {
                    const int32_t q = input[(iy * d->in_w + ix) * d->in_c + g * cg + c];
                    x[k] = (float)(q - p->in_zp) * p->in_scale;
                }
            }
        }
    }
}

/* C of one output over the segment's slices (seg: {kind, m0, m1, n0, n1,
 * nslices, k_end...}); m, n relative to the group. */
static float seg_sum(const int32_t *seg, int32_t m, int32_t n, const float *x, const int8_t *w,
                     float ws)
{
    const int32_t kind = seg[0], nslices = seg[5];
    float c = 0.0f;
    int32_t k0 = 0;
    for (int32_t s = 0; s < nslices; ++s) {
        const int32_t k1 = seg[6 + s];
        if (kind == KIND_FMA) {
            const float part = tinyaot_w8_fma_chain(x, w, ws, k0, k1);
            c = s == 0 ? part : part + c;
        } else if (kind == KIND_M1) {
            /* from c = 0: the first group adds MLAS's zeroed C */
            c = mlas_m1_sum(x, w, ws, k0, k1, c, mlas_weight_w8);
        } else {
            const int32_t by_pixel = seg[2] - seg[1] == 1; /* rows: pixels, else channels */
            const int32_t row = by_pixel ? n - seg[3] : m - seg[1];
            const int32_t rows = by_pixel ? seg[4] - seg[3] : seg[2] - seg[1];
            float lane[8];
            tinyaot_w8_lanes8(x, w, ws, k0, k1, lane);
            const float r = mlas_m1tb_reduce8(lane, row, rows);
            c = s == 0 ? r : r + c;
        }
        k0 = k1;
    }
    return c;
}

/* An fma segment's C of one channel for 4 pixels (columns x, x + k, x + 2k,
 * x + 3k): per slice one fma chain from 0 per pixel, C = chain + C -- each
 * output's own chain exactly as seg_sum sums it. */
static void fma_sum4(const int32_t *seg, const float *x, int32_t k, const int8_t *w, float ws,
                     float *c)
{
    int32_t k0 = 0;
    for (int32_t s = 0; s < seg[5]; ++s) {
        const int32_t k1 = seg[6 + s];
        float p0 = 0.0f, p1 = 0.0f, p2 = 0.0f, p3 = 0.0f;
        for (int32_t i = k0; i < k1; ++i) {
            const float wv = mlas_weight_w8(w, i, ws);
            p0 = fmaf(x[i], wv, p0);
            p1 = fmaf(x[k + i], wv, p1);
            p2 = fmaf(x[2 * k + i], wv, p2);
            p3 = fmaf(x[3 * k + i], wv, p3);
        }
        if (s == 0) {
            c[0] = p0, c[1] = p1, c[2] = p2, c[3] = p3;
        } else {
            c[0] = p0 + c[0], c[1] = p1 + c[1], c[2] = p2 + c[2], c[3] = p3 + c[3];
        }
        k0 = k1;
    }
}

/* p: output quantization, int8 filter [out_c][k] with one scale per output
 * channel, float bias. segments: nseg records of one group (every group is
 * summed the same way). scratch: *_get_buffer_size bytes (one column). */
int tinyaot_convolve_f32_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                               const int32_t *segments, int32_t nseg, const int8_t *input,
                               float *scratch, int8_t *output)
{
    const int32_t cout_g = d->out_c / d->groups;
    const int32_t k = d->in_c / d->groups * d->k_h * d->k_w;
    for (int32_t g = 0; g < d->groups; ++g) {
        const int32_t *seg = segments;
        for (int32_t si = 0; si < nseg; seg += 6 + seg[5], ++si) {
            int32_t n = seg[3];
            for (; seg[0] == KIND_FMA && n + 4 <= seg[4]; n += 4) {
                for (int32_t j = 0; j < 4; ++j) {
                    column(d, p, input, g, n + j, scratch + j * k);
                }
                for (int32_t m = seg[1]; m < seg[2]; ++m) {
                    const int32_t oc = g * cout_g + m;
                    float c[4];
                    fma_sum4(seg, scratch, k, p->filter + oc * k, p->filter_scale[oc], c);
                    for (int32_t j = 0; j < 4; ++j) {
                        output[(n + j) * d->out_c + oc] = tinyaot_w8_quantize(c[j] + p->bias_f[oc], p);
                    }
                }
            }
            for (; n < seg[4]; ++n) { /* M=1 kinds, and the last pixels of an fma segment */
                column(d, p, input, g, n, scratch);
                for (int32_t m = seg[1]; m < seg[2]; ++m) {
                    const int32_t oc = g * cout_g + m;
                    const float y = seg_sum(seg, m, n, scratch, p->filter + oc * k,
                                            p->filter_scale[oc]) + p->bias_f[oc];
                    output[n * d->out_c + oc] = tinyaot_w8_quantize(y, p);
                }
            }
        }
    }
    return TINYAOT_OK;
}
