/* Depthwise int8 convolution for --optimize size: int8 weights read in place
 * ([k_h][k_w][out_c], the layout of tinyaot_depthwise_conv_s8), NHWC, channel
 * multiplier out_c / in_c. Per output pixel the window's rows and columns
 * inside the input are found once (not per channel and tap). With multiplier
 * 1, 4 channels at a time: one word of inputs and one of weights per tap,
 * widened by __SXTAB16 (input - zero point) / __SXTB16 into halfword pairs
 * {c0, c2}, {c1, c3} and summed with SMLABB / SMLATT; the other channels one
 * at a time. Exact int32 sums and the fast kernels' requantization
 * (tinyaot_requant_fast.h): the same integers as tinyaot_depthwise_conv_s8. */
#include "tinyaot_dot_w8.h"
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

/* One tap of 4 channels: a[i] += (x[i] - zp) * w[i]; nzp2 = {-zp, -zp}. */
static inline __attribute__((always_inline)) void dw_tap4(const int8_t *x, const int8_t *w,
                                                          uint32_t nzp2, uint32_t a[4])
{
    const uint32_t xv = tinyaot_w8_ld32(x), wv = tinyaot_w8_ld32(w);
    const uint32_t x02 = __SXTAB16(nzp2, xv), w02 = __SXTB16(wv);
    const uint32_t x13 = __SXTAB16_ROR8(nzp2, xv), w13 = __SXTB16_ROR8(wv);
    a[0] = __SMLABB(x02, w02, a[0]);
    a[2] = __SMLATT(x02, w02, a[2]);
    a[1] = __SMLABB(x13, w13, a[1]);
    a[3] = __SMLATT(x13, w13, a[3]);
}

static inline __attribute__((always_inline)) void dw_m(const tinyaot_conv_dims_t *d,
                                                       const tinyaot_rqc_t *r, int32_t in_zp,
                                                       const int8_t *input, const int8_t *filter,
                                                       int8_t *output, int mode)
{
    const int32_t mult = d->out_c / d->in_c, oc_n = d->out_c;
    const int32_t quads = mult == 1 ? oc_n / 4 : 0;
    /* {-zp, -zp}: __SXTAB16 adds it to each widened input byte */
    const uint32_t nzp2 = (((uint32_t)-in_zp & 0xffffu) << 16) | ((uint32_t)-in_zp & 0xffffu);
    const int32_t xstep = d->dil_w * d->in_c, ystep = d->dil_h * d->in_w * d->in_c;
    const int32_t wrow = d->k_w * oc_n;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        int32_t ky0, ky1;
        tap_range(iy0, d->dil_h, d->k_h, d->in_h, &ky0, &ky1);
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            const int32_t ix0 = ox * d->stride_w - d->pad_left;
            int32_t kx0, kx1;
            tap_range(ix0, d->dil_w, d->k_w, d->in_w, &kx0, &kx1);
            /* the first inside tap: input (channel 0) and filter (channel 0) */
            const int8_t *x00 =
                input + ((iy0 + ky0 * d->dil_h) * d->in_w + ix0 + kx0 * d->dil_w) * d->in_c;
            const int8_t *w00 = filter + (ky0 * d->k_w + kx0) * oc_n;
            int8_t *out = output + (oy * d->out_w + ox) * oc_n;
            for (int32_t j = 0; j < quads; ++j) {
                uint32_t a[4] = {0, 0, 0, 0};
                const int8_t *xr = x00 + 4 * j, *wr = w00 + 4 * j;
                for (int32_t ky = ky0; ky < ky1; ++ky, xr += ystep, wr += wrow) {
                    if (kx1 - kx0 == 3) { /* a whole 3-wide row: no loop */
                        dw_tap4(xr, wr, nzp2, a);
                        dw_tap4(xr + xstep, wr + oc_n, nzp2, a);
                        dw_tap4(xr + 2 * xstep, wr + 2 * oc_n, nzp2, a);
                        continue;
                    }
                    const int8_t *xo = xr, *wo = wr;
                    for (int32_t kx = kx0; kx < kx1; ++kx, xo += xstep, wo += oc_n) {
                        dw_tap4(xo, wo, nzp2, a);
                    }
                }
                const uint32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
                const int32_t c = 4 * j;
                out[c] = tinyaot_rqc_apply_m(r, tinyaot_fp_s32(a0), c, mode);
                out[c + 1] = tinyaot_rqc_apply_m(r, tinyaot_fp_s32(a1), c + 1, mode);
                out[c + 2] = tinyaot_rqc_apply_m(r, tinyaot_fp_s32(a2), c + 2, mode);
                out[c + 3] = tinyaot_rqc_apply_m(r, tinyaot_fp_s32(a3), c + 3, mode);
            }
            for (int32_t oc = 4 * quads; oc < oc_n; ++oc) {
                const int8_t *xr = x00 + (mult == 1 ? oc : oc / mult), *wr = w00 + oc;
                int32_t acc = 0;
                for (int32_t ky = ky0; ky < ky1; ++ky, xr += ystep, wr += wrow) {
                    const int8_t *xo = xr, *wo = wr;
                    for (int32_t kx = kx0; kx < kx1; ++kx, xo += xstep, wo += oc_n) {
                        acc += ((int32_t)*xo - in_zp) * (int32_t)*wo;
                    }
                }
                out[oc] = tinyaot_rqc_apply_m(r, acc, oc, mode);
            }
        }
    }
}

int tinyaot_depthwise_conv_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                 const int8_t *input, const int8_t *filter, int8_t *output)
{
    const tinyaot_rqc_t r = tinyaot_rqc_records(q);
    const int32_t zp = q->in_zp;
    switch (r.mode) {
    case TINYAOT_RQ_ORT: dw_m(d, &r, zp, input, filter, output, TINYAOT_RQ_ORT); break;
    case TINYAOT_RQ_TFLITE: dw_m(d, &r, zp, input, filter, output, TINYAOT_RQ_TFLITE); break;
    case TINYAOT_RQ_SMLAL: dw_m(d, &r, zp, input, filter, output, TINYAOT_RQ_SMLAL); break;
    case TINYAOT_RQ_SMLAL_SAT: dw_m(d, &r, zp, input, filter, output, TINYAOT_RQ_SMLAL_SAT); break;
    default: dw_m(d, &r, zp, input, filter, output, TINYAOT_RQ_FLOAT_SAT); break;
    }
    return TINYAOT_OK;
}
