/* int8 average pooling, NHWC. Four channels share each pass over the window:
 * the integer sums (TFLite) as two int16 pairs per word (__SXTAB16: one
 * instruction adds two channels' bytes), onnxruntime's float sums (from the
 * dequantization table) as four accumulators, each still in window order.
 * Every sum is the one the per-channel loop gives. */
#include <string.h>

#include "tinyaot_kernels.h"
#include "../internal/tinyaot_intrinsics.h"
#include "../internal/tinyaot_requant.h"
#include "../internal/tinyaot_specialize.h"

/* The four-channel passes (about 400 B of code): speed builds
 * (TINYAOT_SPEC_POOL_KINDS); a size build sums each channel on its own. */
#define AVG_QUADS TINYAOT_SPEC_HAS(TINYAOT_SPEC_POOL_KINDS, TINYAOT_SPEC_POOL_QUADS)

/* The int16 halves hold a window's sum exactly while it lies in
 * [-128 * count, 127 * count] within [-32768, 32767]: up to 256 values. */
#define AVG_QUAD_MAX_COUNT 256

/* onnxruntime's float window sum of one channel, in window order (rows ya..yb,
 * columns xa..xb), each value dequantized by the table (or computed). */
static float window_sum_f32(const tinyaot_pool_params_t *p, const int8_t *src, int32_t rows,
                            int32_t cols)
{
    const int32_t c = p->c, row_step = p->in_w * c;
    float acc = 0.0f;
    if (p->dq_lut) {
        const float *lut = p->dq_lut + 128;
#if defined(__GNUC__)
        __asm__("" : "+r"(lut)); /* keeps lut[*s] one indexed load (GCC re-associates the +128) */
#endif
        for (int32_t y = 0; y < rows; ++y) {
            const int8_t *s = src, *end = src + cols * c;
            while (s != end) {
                acc = acc + lut[*s];
                s += c;
            }
            src += row_step;
        }
        return acc;
    }
    for (int32_t y = 0; y < rows; ++y) {
        for (int32_t x = 0; x < cols; ++x) {
            acc = acc + (float)(src[x * c] - p->in_zp) * p->in_scale;
        }
        src += row_step;
    }
    return acc;
}

/* The same sums for channels c..c+3 (src: channel c's first value), the four
 * accumulators side by side: each is channel k's window_sum_f32, add for add
 * (the table's values: the emitter gives onnxruntime's average one). */
static __attribute__((unused)) void window_sum4_f32(const tinyaot_pool_params_t *p,
                                                    const int8_t *src, int32_t rows,
                                                    int32_t cols, float acc[4])
{
    const int32_t c = p->c, row_step = p->in_w * c;
    const float *lut = p->dq_lut + 128;
#if defined(__GNUC__)
    __asm__("" : "+r"(lut)); /* as in window_sum_f32 */
#endif
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    for (int32_t y = 0; y < rows; ++y) {
        const int8_t *s = src, *end = src + cols * c;
        while (s != end) {
            a0 = a0 + lut[s[0]];
            a1 = a1 + lut[s[1]];
            a2 = a2 + lut[s[2]];
            a3 = a3 + lut[s[3]];
            s += c;
        }
        src += row_step;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* The integer window sums of channels c..c+3 (src: channel c's first value)
 * over at most AVG_QUAD_MAX_COUNT values each: one word load and two
 * __SXTAB16 per pixel. */
static __attribute__((unused)) void window_sum4_s32(const tinyaot_pool_params_t *p,
                                                    const int8_t *src, int32_t rows,
                                                    int32_t cols, int32_t acc[4])
{
    const int32_t c = p->c, row_step = p->in_w * c;
    uint32_t e = 0u, o = 0u; /* channels {0, 2} and {1, 3}, int16 each */
    for (int32_t y = 0; y < rows; ++y) {
        const int8_t *s = src, *end = src + cols * c;
        while (s != end) {
            uint32_t w;
            memcpy(&w, s, 4);
            e = __SXTAB16(e, w);
            o = __SXTAB16_ROR8(o, w);
            s += c;
        }
        src += row_step;
    }
    acc[0] = (int32_t)(int16_t)(uint16_t)(e & 0xffffu);
    acc[1] = (int32_t)(int16_t)(uint16_t)(o & 0xffffu);
    acc[2] = (int32_t)(int16_t)(uint16_t)(e >> 16);
    acc[3] = (int32_t)(int16_t)(uint16_t)(o >> 16);
}

/* The same for channels c..c+7 (two quads, c + 8 <= channels), two pixels a pass: four
 * loads and eight __SXTAB16 for sixteen values, where a quad a pixel takes one load and
 * two (with the loop's compare and branch for each). */
static __attribute__((unused)) void window_sum8_s32(const tinyaot_pool_params_t *p,
                                                    const int8_t *src, int32_t rows,
                                                    int32_t cols, int32_t acc[8])
{
    const int32_t c = p->c, row_step = p->in_w * c;
    uint32_t e0 = 0u, o0 = 0u, e1 = 0u, o1 = 0u;
    for (int32_t y = 0; y < rows; ++y) {
        const int8_t *s = src, *end = src + (cols & ~1) * c;
        while (s != end) {
            uint32_t w0, w1, v0, v1;
            memcpy(&w0, s, 4);
            memcpy(&w1, s + 4, 4);
            memcpy(&v0, s + c, 4);
            memcpy(&v1, s + c + 4, 4);
            e0 = __SXTAB16(e0, w0);
            o0 = __SXTAB16_ROR8(o0, w0);
            e1 = __SXTAB16(e1, w1);
            o1 = __SXTAB16_ROR8(o1, w1);
            e0 = __SXTAB16(e0, v0);
            o0 = __SXTAB16_ROR8(o0, v0);
            e1 = __SXTAB16(e1, v1);
            o1 = __SXTAB16_ROR8(o1, v1);
            s += 2 * c;
        }
        if (cols & 1) {
            uint32_t w0, w1;
            memcpy(&w0, s, 4);
            memcpy(&w1, s + 4, 4);
            e0 = __SXTAB16(e0, w0);
            o0 = __SXTAB16_ROR8(o0, w0);
            e1 = __SXTAB16(e1, w1);
            o1 = __SXTAB16_ROR8(o1, w1);
        }
        src += row_step;
    }
    const uint32_t e[2] = {e0, e1}, o[2] = {o0, o1};
    for (int32_t q = 0; q < 2; ++q) {
        acc[4 * q] = (int32_t)(int16_t)(uint16_t)(e[q] & 0xffffu);
        acc[4 * q + 1] = (int32_t)(int16_t)(uint16_t)(o[q] & 0xffffu);
        acc[4 * q + 2] = (int32_t)(int16_t)(uint16_t)(e[q] >> 16);
        acc[4 * q + 3] = (int32_t)(int16_t)(uint16_t)(o[q] >> 16);
    }
}

/* One output value from channel c's window sum (use_float 1, 3: the float sum). */
static int8_t avg_out_f32(const tinyaot_pool_params_t *p, float acc, int32_t count)
{
    if (p->use_float == 3) {
        /* onnxruntime QLinearAveragePool: nearbyintf(mean / s + zp); mean_bias
         * is the zero point shift of a uint8 model (passes/uint8.py). */
        float t = acc / (float)count / p->out_scale + (float)(p->out_zp + p->mean_bias);
        if (t < -4194304.0f) t = -4194304.0f; /* saturates below; keeps the */
        if (t > 4194304.0f) t = 4194304.0f;   /* round-to-even trick exact */
        int32_t r = tinyaot_round_even_f32(t) - p->mean_bias;
        if (r < p->act_min) r = p->act_min;
        if (r > p->act_max) r = p->act_max;
        return (int8_t)r;
    }
    /* onnxruntime: sum of dequantized values in window order, / count. */
    return tinyaot_quantize_f32(acc / (float)count, p->out_scale, p->out_zp, p->act_min,
                                p->act_max);
}

/* One output value from channel c's integer window sum (use_float 0, 2). */
static int8_t avg_out_s32(const tinyaot_pool_params_t *p, int32_t acc, int32_t count)
{
    if (p->use_float == 2) {
        /* TFLM MEAN (reference_ops::QuantizedMeanOrSum): the sum less
         * the input zero points, rescaled with 1 / count folded in. */
        acc = tinyaot_mbqm(acc - p->in_zp * count, p->mean_mult, p->mean_shift) + p->mean_bias;
    } else {
        /* TFLite: integer sum, rounded division (ties away from zero). */
        acc = tinyaot_avgpool_round_tflite(acc, count);
    }
    return (int8_t)tinyaot_fp_clamp(acc, p->act_min, p->act_max);
}

int tinyaot_avgpool_s8(const tinyaot_pool_params_t *p, const int8_t *input, int8_t *output)
{
    for (int32_t oy = 0; oy < p->out_h; ++oy) {
        const int32_t y0 = oy * p->stride_h - p->pad_top;
        const int32_t ya = y0 < 0 ? 0 : y0;
        const int32_t yb = (y0 + p->k_h) > p->in_h ? p->in_h : (y0 + p->k_h);
        for (int32_t ox = 0; ox < p->out_w; ++ox) {
            const int32_t x0 = ox * p->stride_w - p->pad_left;
            const int32_t xa = x0 < 0 ? 0 : x0;
            const int32_t xb = (x0 + p->k_w) > p->in_w ? p->in_w : (x0 + p->k_w);
            const int32_t count = p->count_include_pad ? p->k_h * p->k_w : (yb - ya) * (xb - xa);
            int8_t *out = output + (oy * p->out_w + ox) * p->c;
            const int32_t rows = yb - ya, cols = xb - xa;
            const int8_t *win0 = input + (ya * p->in_w + xa) * p->c;
            const int is_float = p->use_float == 1 || p->use_float == 3;
            int32_t c = 0;
            if (AVG_QUADS && (is_float ? p->dq_lut != 0 : rows * cols <= AVG_QUAD_MAX_COUNT)) {
                for (; !is_float && c + 8 <= p->c; c += 8) {
                    int32_t acc[8];
                    window_sum8_s32(p, win0 + c, rows, cols, acc);
                    for (int32_t k = 0; k < 8; ++k) out[c + k] = avg_out_s32(p, acc[k], count);
                }
                for (; c + 4 <= p->c; c += 4) {
                    if (is_float) {
                        float acc[4];
                        window_sum4_f32(p, win0 + c, rows, cols, acc);
                        for (int32_t k = 0; k < 4; ++k) out[c + k] = avg_out_f32(p, acc[k], count);
                    } else {
                        int32_t acc[4];
                        window_sum4_s32(p, win0 + c, rows, cols, acc);
                        for (int32_t k = 0; k < 4; ++k) out[c + k] = avg_out_s32(p, acc[k], count);
                    }
                }
            }
            for (; c < p->c; ++c) {
                const int8_t *win = win0 + c;
                if (is_float) {
                    out[c] = avg_out_f32(p, window_sum_f32(p, win, rows, cols), count);
                } else {
                    int32_t acc = 0;
                    for (int32_t y = 0; y < rows; ++y) {
                        for (int32_t x = 0; x < cols; ++x) {
                            acc += win[y * p->in_w * p->c + x * p->c];
                        }
                    }
                    out[c] = avg_out_s32(p, acc, count);
                }
            }
        }
    }
    return TINYAOT_OK;
}
