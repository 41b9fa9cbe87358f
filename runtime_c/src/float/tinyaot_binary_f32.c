/* a op b on float32 with broadcasting (the float fallback): each output element is one IEEE
 * operation, so the order of the walk does not change a bit. */
#include "tinyaot_kernels.h"

static float binary(int32_t op, float a, float b)
{
    switch (op) {
    case TINYAOT_F32_ADD:
        return a + b;
    case TINYAOT_F32_SUB:
        return a - b;
    case TINYAOT_F32_MUL:
        return a * b;
    case TINYAOT_F32_MAX:
        return (a < b) ? b : a;
    case TINYAOT_F32_MIN:
        return (b < a) ? b : a;
    default:
        return a / b;
    }
}

/* TFLite's ActivationFunctionWithMinMax(v, lowest, max): std::min(std::max(v, lo), hi),
 * which turns an infinity into +-FLT_MAX and lets a NaN through. */
static float tflm_clamp(float v)
{
    const float lo = -3.402823466e+38f;
    const float hi = 3.402823466e+38f;
    v = (v < lo) ? lo : v;
    return (hi < v) ? hi : v;
}

int tinyaot_binary_f32(int32_t op, int32_t mode, const int32_t d[18], const float *a,
                       const float *b, float *output)
{
    if (op < TINYAOT_F32_ADD || op > TINYAOT_F32_MIN) {
        return TINYAOT_ERR_ARG;
    }
    const int32_t *sa = d + 6;
    const int32_t *sb = d + 12;
    int32_t o = 0;
    for (int32_t i0 = 0; i0 < d[0]; ++i0) {
        for (int32_t i1 = 0; i1 < d[1]; ++i1) {
            for (int32_t i2 = 0; i2 < d[2]; ++i2) {
                for (int32_t i3 = 0; i3 < d[3]; ++i3) {
                    for (int32_t i4 = 0; i4 < d[4]; ++i4) {
                        const int32_t ia = i0 * sa[0] + i1 * sa[1] + i2 * sa[2] + i3 * sa[3] +
                                           i4 * sa[4];
                        const int32_t ib = i0 * sb[0] + i1 * sb[1] + i2 * sb[2] + i3 * sb[3] +
                                           i4 * sb[4];
                        for (int32_t i5 = 0; i5 < d[5]; ++i5) {
                            const float v = binary(op, a[ia + i5 * sa[5]], b[ib + i5 * sb[5]]);
                            output[o++] = mode ? tflm_clamp(v) : v;
                        }
                    }
                }
            }
        }
    }
    return TINYAOT_OK;
}
