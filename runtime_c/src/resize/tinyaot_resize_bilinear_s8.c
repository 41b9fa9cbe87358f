/* Bilinear resize of an NHWC int8 tensor over H, W, in one of two numerics:
 * mode 0, onnxruntime: DequantizeLinear, float32 weights summed in ORT's order,
 *         QuantizeLinear (compiled with -ffp-contract=off);
 * mode 1, TFLite ResizeBilinearInteger: 10-bit weights, 20-bit sum, rounding
 *         half away from zero, then an optional requantization table. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

#include <stddef.h>

static void bilinear_ort(const tinyaot_resize_bilinear_params_t *p, int32_t y, int32_t x,
                         const int8_t *a, const int8_t *b, const int8_t *c, const int8_t *d,
                         int8_t *out)
{
    const float c00 = p->fx0[x] * p->fy0[y], c01 = p->fx1[x] * p->fy0[y];
    const float c10 = p->fx0[x] * p->fy1[y], c11 = p->fx1[x] * p->fy1[y];
    const float s = p->in_scale;
    const int32_t zp = p->in_zp;
    for (int32_t i = 0; i < p->c; ++i) {
        float acc = c00 * ((float)(a[i] - zp) * s);
        acc = acc + c01 * ((float)(b[i] - zp) * s);
        acc = acc + c10 * ((float)(c[i] - zp) * s);
        acc = acc + c11 * ((float)(d[i] - zp) * s);
        out[i] = tinyaot_quantize_f32(acc, p->out_scale, p->out_zp, p->act_min, p->act_max);
    }
}

static void bilinear_tflite(const tinyaot_resize_bilinear_params_t *p, int32_t y, int32_t x,
                            const int8_t *a, const int8_t *b, const int8_t *c, const int8_t *d,
                            int8_t *out)
{
    /* |sum| < 2^29: the weights' magnitudes add up to < 2048 per axis. */
    const int32_t wy = p->wy[y], wx = p->wx[x];
    const int32_t w00 = (1024 - wy) * (1024 - wx), w01 = (1024 - wy) * wx;
    const int32_t w10 = wy * (1024 - wx), w11 = wy * wx;
    for (int32_t i = 0; i < p->c; ++i) {
        const int32_t acc = a[i] * w00 + b[i] * w01 + c[i] * w10 + d[i] * w11;
        /* +2^19 or -2^19 by sign, without a branch; / truncates toward zero */
        const int32_t rnd = tinyaot_fp_select(tinyaot_fp_mask(acc < 0), -(1 << 19), 1 << 19);
        const int32_t v = (acc + rnd) / (1 << 20);
        out[i] = p->table ? p->table[v + 128] : (int8_t)v;
    }
}

int tinyaot_resize_bilinear_s8(const tinyaot_resize_bilinear_params_t *p, const int8_t *input,
                               int8_t *output)
{
    const int32_t row = p->in_w * p->c;
    for (int32_t n = 0; n < p->batches; ++n) {
        const int8_t *img = input + (size_t)n * (size_t)(p->in_h * row);
        for (int32_t y = 0; y < p->out_h; ++y) {
            const int8_t *r0 = img + p->y0[y] * row;
            const int8_t *r1 = img + p->y1[y] * row;
            for (int32_t x = 0; x < p->out_w; ++x) {
                const int32_t o0 = p->x0[x] * p->c, o1 = p->x1[x] * p->c;
                if (p->mode == 0) {
                    bilinear_ort(p, y, x, r0 + o0, r0 + o1, r1 + o0, r1 + o1, output);
                } else {
                    bilinear_tflite(p, y, x, r0 + o0, r0 + o1, r1 + o0, r1 + o1, output);
                }
                output += p->c;
            }
        }
    }
    return TINYAOT_OK;
}
