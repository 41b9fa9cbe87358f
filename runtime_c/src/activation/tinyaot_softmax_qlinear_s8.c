/* int8 Softmax over the last axis as onnxruntime's QLinearSoftmax computes it
 * (com.microsoft QLinearSoftmax, float lookup table; codegen/frontend/ort_facts.py):
 *   e_i  = table[255 - (max - x_i)]        table built at compile time
 *   sum  = float32 sum of e_i in order
 *   q_i  = round_half_even((e_i * y_mult) / sum),  y_mult = floor(1 / y_scale)
 *   y_i  = q_i + zp, saturated at 255 in ORT's type: u8 != 0 when ORT ran the
 *          kernel on uint8 (y = min(q + zp, 127) here, int8 = uint8 - 128);
 *          u8 == 0: ORT's int8 kernel, which casts q + zp (> 255 -> 255) to int8. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

int tinyaot_softmax_qlinear_s8(int32_t rows, int32_t n, const float *table, float y_mult,
                               int32_t out_zp, int32_t u8, const int8_t *input, int8_t *output)
{
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *x = input + r * n;
        int8_t *y = output + r * n;
        int32_t mx = x[0];
        for (int32_t i = 1; i < n; ++i) {
            if (x[i] > mx) mx = x[i];
        }
        float sum = 0.0f;
        for (int32_t i = 0; i < n; ++i) {
            sum = sum + table[255 - (mx - x[i])];
        }
        for (int32_t i = 0; i < n; ++i) {
            const float t = (table[255 - (mx - x[i])] * y_mult) / sum;
            int32_t v = tinyaot_round_even_f32(t) + out_zp;
            if (u8) {
                if (v > 127) v = 127;
                y[i] = (int8_t)v;
            } else {
                if (v > 255) v = 255;
                y[i] = (int8_t)(uint8_t)(v & 0xFF);
            }
        }
    }
    return TINYAOT_OK;
}
