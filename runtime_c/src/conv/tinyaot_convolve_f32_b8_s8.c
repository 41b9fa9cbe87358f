/* onnxruntime's float Conv with its weights as int8 in flash (1 byte each instead of 4),
 * for the speed build: the layer's output channels run in blocks of block_tiles tiles
 * (4 channels each); each block's weights are dequantized once into the scratch, float(q)
 * * scale (one exact conversion, one rounded multiply: the float32 DequantizeLinear
 * gives, the value tinyaot_convolve_f32_s8 stores), packed as tinyaot_convolve_f32_s8
 * reads them, and its tiles run there (tinyaot_convolve_f32_tiles_s8). The sums are that
 * kernel's, so are the bits. What it costs: each weight converted once per inference,
 * and the pixel columns gathered once per block instead of once. The compiler sizes the
 * block to the arena free at the layer (codegen/planner/float_conv_blocks.py). */
#include "tinyaot_kernels.h"

#define TILE 4

int32_t tinyaot_convolve_f32_b8_s8_get_buffer_size(const tinyaot_conv_dims_t *d,
                                                   const tinyaot_conv_f32_plan_t *pl,
                                                   int32_t block_tiles)
{
    return block_tiles * pl->k * TILE * (int32_t)sizeof(float) +
           tinyaot_convolve_f32_s8_get_buffer_size(d, pl);
}

/* One tile's k rows of 4 int8 weights (q, 4-byte aligned) times the 4 channels' scales
 * s into w. With FPv4-SP on Thumb-2 (and the optimizer: see TINYAOT_HAVE_DSP_ASM), asm:
 * one LDR per row, SXTB / SBFX / ASR, two paired VMOV, 4 VCVT and 4 VMUL (the same
 * exact conversion and rounded product as the C below), one VSTM: about 6.5 cycles a
 * weight on a Cortex-M4 against about 9 for GCC's code of the C. */
#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__thumb2__) && defined(__GNUC__) && \
    defined(__OPTIMIZE__)
static void dequantize_tile(const int8_t *q, const float *s, int32_t k, float *w)
{
    __asm__ volatile("vldm %[s], {s4-s7}\n\t"
                     "1:\n\t"
                     "ldr r0, [%[q]], #4\n\t"
                     "sxtb r1, r0\n\t"
                     "sbfx r2, r0, #8, #8\n\t"
                     "vmov s0, s1, r1, r2\n\t"
                     "sbfx r1, r0, #16, #8\n\t"
                     "asrs r2, r0, #24\n\t"
                     "vmov s2, s3, r1, r2\n\t"
                     "vcvt.f32.s32 s0, s0\n\t"
                     "vcvt.f32.s32 s1, s1\n\t"
                     "vcvt.f32.s32 s2, s2\n\t"
                     "vcvt.f32.s32 s3, s3\n\t"
                     "vmul.f32 s0, s0, s4\n\t"
                     "vmul.f32 s1, s1, s5\n\t"
                     "vmul.f32 s2, s2, s6\n\t"
                     "vmul.f32 s3, s3, s7\n\t"
                     "vstmia %[w]!, {s0-s3}\n\t"
                     "subs %[k], %[k], #1\n\t"
                     "bne 1b\n\t"
                     : [q] "+r"(q), [w] "+r"(w), [k] "+r"(k)
                     : [s] "r"(s)
                     : "r0", "r1", "r2", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "cc",
                       "memory");
}
#else
static void dequantize_tile(const int8_t *q, const float *s, int32_t k, float *w)
{
    for (int32_t i = 0; i < k; ++i, q += TILE, w += TILE) {
        w[0] = (float)q[0] * s[0];
        w[1] = (float)q[1] * s[1];
        w[2] = (float)q[2] * s[2];
        w[3] = (float)q[3] * s[3];
    }
}
#endif

/* Tiles [t0, t0 + nt) of q ([tile][k][4] int8) as floats into w; channels past out_c
 * (the last tile's zero rows) are 0.0f. */
static void dequantize_tiles(const int8_t *q, const float *scale, int32_t out_c, int32_t t0,
                             int32_t nt, int32_t k, float *w)
{
    for (int32_t t = t0; t < t0 + nt; ++t, w += k * TILE) {
        float s[TILE];
        for (int32_t j = 0; j < TILE; ++j) {
            s[j] = t * TILE + j < out_c ? scale[t * TILE + j] : 0.0f;
        }
        dequantize_tile(q + t * k * TILE, s, k, w);
    }
}

int tinyaot_convolve_f32_b8_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                               const tinyaot_conv_f32_plan_t *pl, int32_t block_tiles,
                               const int8_t *input, float *scratch, int8_t *output)
{
    if (pl->tiles == 0 || d->groups != 1 || block_tiles < 1) {
        return TINYAOT_ERR_ARG;
    }
    float *w = scratch;
    float *rest = scratch + block_tiles * pl->k * TILE;
    for (int32_t t0 = 0; t0 < pl->tiles; t0 += block_tiles) {
        const int32_t nt = pl->tiles - t0 < block_tiles ? pl->tiles - t0 : block_tiles;
        dequantize_tiles(p->filter, p->filter_scale, d->out_c, t0, nt, pl->k, w);
        const int rc = tinyaot_convolve_f32_tiles_s8(d, p, pl, w, t0, t0 + nt, input, rest, output);
        if (rc != TINYAOT_OK) {
            return rc;
        }
    }
    return TINYAOT_OK;
}
