/* onnxruntime's float Gemm / MatMul for --optimize size: the same sums as
 * tinyaot_fully_connected_f32_s8 in MLAS's order (codegen/reference/
 * fc_float_order.py), but the weights stay int8 in flash ([out][in], 1 byte
 * each instead of 4) and are dequantized as they are read, float(q) * scale:
 * the exact float32 ORT's DequantizeLinear gives, so the bits do not change.
 * One output at a time, no unrolling: small code, not fast.
 * Built with -ffp-contract=off (products rounded before they are added). */
#include <math.h>

#include "tinyaot_f32_w8.h"

int32_t tinyaot_fully_connected_f32_w8_s8_get_buffer_size(int32_t in_features)
{
    return in_features * (int32_t)sizeof(float);
}

/* GEMV4: t = bias; k in groups of 4 (then 2, 1) of rounded products summed
 * left to right, each group added onto t. */
static float gemv4(const float *x, const int8_t *w, float ws, int32_t k, float t)
{
    int32_t i = 0;
    for (; i + 4 <= k; i += 4) {
        float part = x[i] * tinyaot_w8_dequant(w[i], ws);
        part = part + x[i + 1] * tinyaot_w8_dequant(w[i + 1], ws);
        part = part + x[i + 2] * tinyaot_w8_dequant(w[i + 2], ws);
        part = part + x[i + 3] * tinyaot_w8_dequant(w[i + 3], ws);
        t = part + t;
    }
    if (k - i >= 2) {
        const float part = x[i] * tinyaot_w8_dequant(w[i], ws) +
                           x[i + 1] * tinyaot_w8_dequant(w[i + 1], ws);
        t = part + t;
        i += 2;
    }
    if (i < k) {
        t = x[i] * tinyaot_w8_dequant(w[i], ws) + t;
    }
    return t;
}

/* KBLOCK: per block of k_block, one fma chain from 0, added onto t = bias. */
static float kblock(const float *x, const int8_t *w, float ws, int32_t k, int32_t k_block,
                    float t)
{
    for (int32_t k0 = 0; k0 < k; k0 += k_block) {
        const int32_t k1 = k0 + k_block < k ? k0 + k_block : k;
        float part = 0.0f;
        for (int32_t i = k0; i < k1; ++i) {
            part = fmaf(x[i], tinyaot_w8_dequant(w[i], ws), part);
        }
        t = part + t;
    }
    return t;
}

/* p: the float layer's parameters (tinyaot_float_conv_t: int8 weights
 * [out_features][in_features], one scale per output, float bias). order,
 * k_block: TINYAOT_FC_F32_* and MLAS's K stride, as tinyaot_float_fc_t. */
int tinyaot_fully_connected_f32_w8_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                      int32_t order, int32_t k_block,
                                      const tinyaot_float_conv_t *p, const int8_t *input,
                                      float *scratch, int8_t *output)
{
    const int32_t k = in_features, n = out_features;
    if (order == TINYAOT_FC_F32_KBLOCK && k_block <= 0) {
        return TINYAOT_ERR_ARG;
    }
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t i = 0; i < k; ++i) { /* the row's DequantizeLinear */
            scratch[i] = (float)((int32_t)input[r * k + i] - p->in_zp) * p->in_scale;
        }
        for (int32_t o = 0; o < n; ++o) {
            const int8_t *w = p->filter + o * k;
            const float ws = p->filter_scale[o];
            float t;
            if (order == TINYAOT_FC_F32_GEMV4) {
                t = gemv4(scratch, w, ws, k, p->bias_f[o]);
            } else if (order == TINYAOT_FC_F32_LANES8) {
                float lane[8];
                tinyaot_w8_lanes8(scratch, w, ws, 0, k, lane);
                /* N == 1 with rows > 1: MLAS swapped A and B, rows take the outputs' place */
                t = (n == 1 && rows > 1) ? tinyaot_w8_lanes8_reduce(lane, r, rows)
                                         : tinyaot_w8_lanes8_reduce(lane, o, n);
                t = t + p->bias_f[o];
            } else {
                t = kblock(scratch, w, ws, k, k_block, p->bias_f[o]);
            }
            output[r * n + o] = tinyaot_w8_quantize(t, p);
        }
    }
    return TINYAOT_OK;
}
