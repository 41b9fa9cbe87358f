/* onnxruntime's float Conv on dequantized int8, bit for bit (MLAS's summation
 * order: tinyaot_convolve_f32_tiles_s8, which runs the tiles), with its weights
 * dequantized at compile time: float32 in flash, packed [group][tile][k][4].
 * Built with -ffp-contract=off so only fmaf() / VFMA fuse. */
#include "tinyaot_kernels.h"

#define TILE 4 /* output channels x pixels of one accumulator tile */

int32_t tinyaot_convolve_f32_s8_get_buffer_size(const tinyaot_conv_dims_t *d,
                                                const tinyaot_conv_f32_plan_t *pl)
{
    const int32_t cg = d->in_c / d->groups;
    const int32_t k = cg * d->k_h * d->k_w;
    /* rows / columns of the input the windows reach, padding included */
    const int32_t hp = (d->out_h - 1) * d->stride_h + (d->k_h - 1) * d->dil_h + 1;
    const int32_t wp = (d->out_w - 1) * d->stride_w + (d->k_w - 1) * d->dil_w + 1;
    /* the padded float copy; or the band (k_h padded rows, planar); or a row of
     * the input zero point (padding taps' source) */
    const int32_t extra =
        pl->padded == 1   ? hp * wp * d->in_c * (int32_t)sizeof(float)
        : pl->padded == 2 ? d->k_h * d->in_c * wp * (int32_t)sizeof(float)
                          : (cg + 3) & ~3;
    return (k * TILE + TILE * TILE) * (int32_t)sizeof(float) + extra;
}

int tinyaot_convolve_f32_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                            const tinyaot_conv_f32_plan_t *pl, const int8_t *input,
                            float *scratch, int8_t *output)
{
    if (pl->tiles == 0) { /* M=1-only plans are tinyaot_convolve_f32_m1_s8's (the emitter picks it) */
        return TINYAOT_ERR_ARG;
    }
    return tinyaot_convolve_f32_tiles_s8(d, p, pl, pl->weights, 0, pl->tiles, input, scratch,
                                         output);
}
