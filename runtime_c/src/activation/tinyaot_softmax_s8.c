/* int8 Softmax over the last axis, in both numerics. */
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant.h"

/* exp(x) for x <= 0 in float32 without FMA: the same operations as
 * codegen/numerics/ort_float.py:expf, so host, target and oracle agree. */
static float tinyaot_expf(float x)
{
    /* No branch on x, so the cost is the same for every input: the clamp is a
     * select on the bits, the floor correction an integer 0/1. */
    union {
        uint32_t u;
        float f;
    } xc, lim;
    xc.f = x;
    lim.f = -87.0f;
    {
        const uint32_t m = 0u - (uint32_t)(x < -87.0f);
        xc.u = (xc.u & ~m) | (lim.u & m);
    }
    x = xc.f;
    const float t = x * 1.44269504088896341f + 0.5f;
    /* floor for the negative range used here */
    int32_t k = (int32_t)t;
    k -= (int32_t)((float)k > t);
    const float kf = (float)k;
    float r = x - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float r2 = r * r;
    float y = p * r2 + r;
    y = y + 1.0f;
    union {
        uint32_t u;
        float f;
    } pow2;
    pow2.u = (uint32_t)(k + 127) << 23;
    return y * pow2.f;
}

int tinyaot_softmax_s8(int32_t rows, int32_t n, const tinyaot_softmax_params_t *p,
                       const int8_t *input, int8_t *output)
{
    for (int32_t r = 0; r < rows; ++r) {
        const int8_t *in = input + r * n;
        int8_t *out = output + r * n;
        if (!p->use_float) {
            tinyaot_softmax_tflite_row_s8(in, out, n, p->input_multiplier, p->input_left_shift,
                                          p->diff_min);
            continue;
        }
        /* onnxruntime: dequantize, subtract the max, exp, sum in order, divide. */
        float m = (float)(in[0] - p->in_zp) * p->in_scale;
        for (int32_t i = 1; i < n; ++i) {
            const float v = (float)(in[i] - p->in_zp) * p->in_scale;
            if (v > m) m = v;
        }
        float sum = 0.0f;
        for (int32_t i = 0; i < n; ++i) {
            sum = sum + tinyaot_expf((float)(in[i] - p->in_zp) * p->in_scale - m);
        }
        for (int32_t i = 0; i < n; ++i) {
            const float e = tinyaot_expf((float)(in[i] - p->in_zp) * p->in_scale - m);
            out[i] = tinyaot_quantize_f32(e / sum, p->out_scale, p->out_zp, -128, 127);
        }
    }
    return TINYAOT_OK;
}
