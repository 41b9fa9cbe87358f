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

/* Tiles [t0, t0 + nt) of q ([tile][k][4] int8) as floats into w; channels past out_c
 * (the last tile's zero rows) are 0.0f. */
static void dequantize_tiles(const int8_t *q, const float *scale, int32_t out_c, int32_t t0,
                             int32_t nt, int32_t k, float *w)
{
    for (int32_t t = t0; t < t0 + nt; ++t) {
        float s[TILE];
        for (int32_t j = 0; j < TILE; ++j) {
            s[j] = t * TILE + j < out_c ? scale[t * TILE + j] : 0.0f;
        }
        const int8_t *qt = q + t * k * TILE;
        for (int32_t i = 0; i < k; ++i, qt += TILE, w += TILE) {
            w[0] = (float)qt[0] * s[0];
            w[1] = (float)qt[1] * s[1];
            w[2] = (float)qt[2] * s[2];
            w[3] = (float)qt[3] * s[3];
        }
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
