/* Depthwise int8 convolution for --optimize size: int8 weights read in place
 * ([k_h][k_w][out_c], the layout of tinyaot_depthwise_conv_s8), NHWC, channel
 * multiplier out_c / in_c. Per output pixel the window's rows and columns
 * inside the input are found once (not per channel and tap), then per
 * channel an exact int32 sum and tinyaot_rqc_apply (tinyaot_requant_channel's
 * results, branch-free): the same integers as tinyaot_depthwise_conv_s8. */
#include "tinyaot_kernels.h"
#include "tinyaot_requant_fast.h"

/* [lo, hi) of the taps t with 0 <= o0 + t * dil < n. */
static void tap_range(int32_t o0, int32_t dil, int32_t taps, int32_t n, int32_t *lo, int32_t *hi)
{
    int32_t a = 0, b = taps;
    while (a < b && o0 + a * dil < 0) {
        ++a;
    }
    while (b > a && o0 + (b - 1) * dil >= n) {
        --b;
    }
    *lo = a;
    *hi = b;
}

int tinyaot_depthwise_conv_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                 const int8_t *input, const int8_t *filter, int8_t *output)
{
    const int32_t mult = d->out_c / d->in_c;
    const int32_t in_zp = q->in_zp;
    const tinyaot_rqc_t r = tinyaot_rqc(q);
    const int32_t xstep = d->dil_w * d->in_c, ystep = d->dil_h * d->in_w * d->in_c;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        int32_t ky0, ky1;
        tap_range(iy0, d->dil_h, d->k_h, d->in_h, &ky0, &ky1);
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            const int32_t ix0 = ox * d->stride_w - d->pad_left;
            int32_t kx0, kx1;
            tap_range(ix0, d->dil_w, d->k_w, d->in_w, &kx0, &kx1);
            /* offsets of the first inside tap: input (channel 0) and filter (channel 0) */
            const int32_t x00 = ((iy0 + ky0 * d->dil_h) * d->in_w + ix0 + kx0 * d->dil_w) * d->in_c;
            const int32_t w00 = (ky0 * d->k_w + kx0) * d->out_c;
            int8_t *out = output + (oy * d->out_w + ox) * d->out_c;
            for (int32_t oc = 0; oc < d->out_c; ++oc) {
                int32_t xr = x00 + (mult == 1 ? oc : oc / mult), wr = w00 + oc;
                int32_t acc = 0;
                for (int32_t ky = ky0; ky < ky1; ++ky, xr += ystep, wr += d->k_w * d->out_c) {
                    int32_t xo = xr, wo = wr;
                    for (int32_t kx = kx0; kx < kx1; ++kx, xo += xstep, wo += d->out_c) {
                        acc += ((int32_t)input[xo] - in_zp) * (int32_t)filter[wo];
                    }
                }
                out[oc] = tinyaot_rqc_apply(&r, acc, oc);
            }
        }
    }
    return TINYAOT_OK;
}
