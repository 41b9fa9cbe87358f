/* onnxruntime's float Gemm / MatMul for --optimize size: the same sums as
 * tinyaot_fully_connected_f32_s8 in MLAS's order (codegen/reference/
 * fc_float_order.py), but the weights stay int8 in flash ([out][in], 1 byte
 * each instead of 4) and are dequantized as they are read, float(q) * scale:
 * the exact float32 ORT's DequantizeLinear gives, so the bits do not change.
 * One output at a time, no unrolling: small code, not fast.
 * Built with -ffp-contract=off (products rounded before they are added). */
#include "../internal/tinyaot_f32_w8.h"

int32_t tinyaot_fully_connected_f32_w8_s8_get_buffer_size(int32_t in_features)
{
    return in_features * (int32_t)sizeof(float);
}

/* KBLOCK: per block of k_block, one fma chain from 0, added onto t = bias. */
static float kblock(const float *x, const int8_t *w, float ws, int32_t k, int32_t k_block,
                    float t)
{
    for (int32_t k0 = 0; k0 < k; k0 += k_block) {
        const int32_t k1 = k0 + k_block < k ? k0 + k_block : k;
        t = tinyaot_w8_fma_chain(x, w, ws, k0, k1) + t;
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
            if (order == TINYAOT_FC_F32_GEMV4) { /* MLAS's M=1 sum from t = bias */
                t = mlas_m1_sum(scratch, w, ws, 0, k, p->bias_f[o], mlas_weight_w8);
            } else if (order == TINYAOT_FC_F32_LANES8) {
                float lane[8];
                tinyaot_w8_lanes8(scratch, w, ws, 0, k, lane);
                /* N == 1 with rows > 1: MLAS swapped A and B, rows take the outputs' place */
                t = (n == 1 && rows > 1) ? mlas_m1tb_reduce8(lane, r, rows)
                                         : mlas_m1tb_reduce8(lane, o, n);
                t = t + p->bias_f[o];
            } else {
                t = kblock(scratch, w, ws, k, k_block, p->bias_f[o]);
            }
            output[r * n + o] = tinyaot_w8_quantize(t, p);
        }
    }
    return TINYAOT_OK;
}
