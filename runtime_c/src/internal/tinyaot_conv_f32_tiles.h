/* The fma tiles of onnxruntime's float Conv (tinyaot_convolve_f32_s8.c), shared by
 * tinyaot_convolve_f32_s8 (all tiles, float weights in flash) and
 * tinyaot_convolve_f32_b8_s8 (a block of tiles at a time, dequantized into the
 * scratch). Internal to runtime_c. */
#ifndef TINYAOT_CONV_F32_TILES_H
#define TINYAOT_CONV_F32_TILES_H

#include <stdint.h>

#include "tinyaot_kernels.h"

/* The segments' tiles [t_lo, t_hi) (4 output channels each) of every group: columns of
 * 4 pixels gathered into `scratch` (tinyaot_convolve_f32_s8_get_buffer_size bytes), sums
 * in MLAS's order, QuantizeLinear into `output`. `weights` starts with tile t_lo's packed
 * weights ([tile][k][4]). */
void tinyaot_convolve_f32_s8_tiles(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                                   const tinyaot_conv_f32_plan_t *pl, const float *weights,
                                   int32_t t_lo, int32_t t_hi, const int8_t *input,
                                   float *scratch, int8_t *output);

#endif
