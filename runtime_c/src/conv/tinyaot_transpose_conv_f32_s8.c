/* onnxruntime's float ConvTranspose on dequantized int8, bit for bit.
 *
 * ORT runs it as one SGEMM per group (every out channel x tap x input pixel
 * term, summed over the group's input channels), then col2im adds the terms
 * into a zeroed output in (k_h, k_w) order, then the bias, then
 * QuantizeLinear. The SGEMM's rounding depends on its shape (MLAS, x86):
 *  - input of one pixel (GEMM N == 1): its M=1 kernel, products rounded and
 *    added in groups of four ((p0 + p1) + p2) + p3, then a group of two and
 *    one, each group's sum added to the running total;
 *  - otherwise fmaf over the input channels in blocks of 128
 *    (MLAS_SGEMM_STRIDEK), each block from zero, added to the previous ones.
 * Built with -ffp-contract=off so only the explicit fmaf() fuses. */
#include <math.h>

#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"
#include "../internal/tinyaot_transpose_conv_tap.h"

#define SGEMM_STRIDE_K 128

/* One SGEMM term: x[0..n) (int8 at step 1) times w[0..n) (int8) dequantized. */
static float sgemm_term(const int8_t *in, const int8_t *f, int32_t n, float in_scale,
                        int32_t in_zp, float ws, int32_t gemv)
{
    float total = 0.0f;
    int32_t c = 0;
    if (gemv) {
        while (c < n) {
            const int32_t size = n - c >= 4 ? 4 : (n - c >= 2 ? 2 : 1);
            float part = 0.0f;
            for (int32_t j = 0; j < size; ++j, ++c) {
                const float x = (float)((int32_t)in[c] - in_zp) * in_scale;
                const float p = x * ((float)f[c] * ws);
                part = j == 0 ? p : part + p;
            }
            total = part + total;
        }
        return total;
    }
    while (c < n) {
        const int32_t end = n - c > SGEMM_STRIDE_K ? c + SGEMM_STRIDE_K : n;
        float part = 0.0f;
        for (; c < end; ++c) {
            const float x = (float)((int32_t)in[c] - in_zp) * in_scale;
            part = fmaf(x, (float)f[c] * ws, part);
        }
        total = end <= SGEMM_STRIDE_K ? part : part + total; /* first block: stored as is */
    }
    return total;
}

int32_t tinyaot_transpose_conv_f32_s8_get_buffer_size(const tinyaot_conv_dims_t *d)
{
    return d->out_c * (int32_t)sizeof(float);
}

int tinyaot_transpose_conv_f32_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                                  const int8_t *input, float *scratch, int8_t *output)
{
    const int32_t cin_g = d->in_c / d->groups;
    const int32_t cout_g = d->out_c / d->groups;
    const int32_t gemv = d->in_h * d->in_w == 1;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            /* col2im: the pixel starts at zero, then each tap's term in (k_h, k_w) order */
            for (int32_t oc = 0; oc < d->out_c; ++oc) {
                scratch[oc] = 0.0f;
            }
            int32_t tap = -1;
            int32_t pix;
            while (tinyaot_transpose_conv_next_tap(d, oy, ox, &tap, &pix)) {
                const int8_t *pixel = input + pix * d->in_c;
                const int8_t *f = p->filter + tap * d->out_c * cin_g;
                for (int32_t oc = 0; oc < d->out_c; ++oc, f += cin_g) {
                    scratch[oc] = scratch[oc] + sgemm_term(pixel + (oc / cout_g) * cin_g, f,
                                                           cin_g, p->in_scale, p->in_zp,
                                                           p->filter_scale[oc], gemv);
                }
            }
            int8_t *out = output + (oy * d->out_w + ox) * d->out_c;
            for (int32_t oc = 0; oc < d->out_c; ++oc) {
                out[oc] = tinyaot_quantize_f32(scratch[oc] + p->bias_f[oc], p->out_scale,
                                               p->out_zp, p->act_min, p->act_max);
            }
        }
    }
    return TINYAOT_OK;
}
