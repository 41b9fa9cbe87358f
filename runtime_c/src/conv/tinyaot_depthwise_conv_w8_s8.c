/* Depthwise int8 convolution for --optimize size: int8 weights read in place
 * ([k_h][k_w][out_c], the layout of tinyaot_depthwise_conv_s8), NHWC, channel
 * multiplier out_c / in_c. Per output pixel the window's rows and columns
 * inside the input are found once (not per channel and tap). With multiplier
 * 1, 4 channels at a time: one word of inputs and one of weights per tap,
 * widened by __SXTAB16 (input - zero point) / __SXTB16 into halfword pairs
 * {c0, c2}, {c1, c3} and summed with SMLABB / SMLATT; the other channels one
 * at a time. Exact int32 sums and the fast kernels' requantization
 * (tinyaot_requant_fast.h): the same integers as tinyaot_depthwise_conv_s8. */
#include "../internal/tinyaot_dot_w8.h"
#include "tinyaot_kernels.h"
#include "../internal/tinyaot_requant_fast.h"

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

/* One output pixel's window: the inside taps (ny rows of nx), the steps
 * between them in the input (xstep, ystep) and the filter (wstep, wrow), and
 * {-zp, -zp} for __SXTAB16. */
typedef struct {
    int32_t ny, nx, xstep, ystep, wstep, wrow;
    uint32_t nzp2;
} dw_window_t;

/* One tap of 4 channels: a[i] += (x[i] - zp) * w[i]. */
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

/* The sums of 4 channels over the window (x, w: the first inside tap of the
 * first channel). One copy for every requantization mode (small code). */
static __attribute__((noinline)) void dw_quad(const dw_window_t *g, const int8_t *x,
                                              const int8_t *w, int32_t acc[4])
{
    uint32_t a[4] = {0, 0, 0, 0};
    const uint32_t nzp2 = g->nzp2;
    const int32_t xs = g->xstep, ws = g->wstep;
    for (int32_t ky = 0; ky < g->ny; ++ky, x += g->ystep, w += g->wrow) {
        if (g->nx == 3) { /* a whole 3-wide row: no loop */
            dw_tap4(x, w, nzp2, a);
            dw_tap4(x + xs, w + ws, nzp2, a);
            dw_tap4(x + 2 * xs, w + 2 * ws, nzp2, a);
            continue;
        }
        const int8_t *xo = x, *wo = w;
        for (int32_t kx = 0; kx < g->nx; ++kx, xo += xs, wo += ws) {
            dw_tap4(xo, wo, nzp2, a);
        }
    }
    for (int32_t i = 0; i < 4; ++i) {
        acc[i] = tinyaot_fp_s32(a[i]);
    }
}

/* Channels oc0 .. out_c - 1 one at a time (channel multiplier > 1, or the
 * out_c % 4 left over), requantized by tinyaot_w8_rq_any. */
static __attribute__((noinline)) void dw_single(const dw_window_t *g, const tinyaot_rqc_t *r,
                                                int32_t in_zp, int32_t mult, int32_t oc0,
                                                int32_t oc_n, const int8_t *x00, const int8_t *w00,
                                                int8_t *out)
{
    for (int32_t oc = oc0; oc < oc_n; ++oc) {
        const int8_t *xr = x00 + (mult == 1 ? oc : oc / mult), *wr = w00 + oc;
        int32_t acc = 0;
        for (int32_t ky = 0; ky < g->ny; ++ky, xr += g->ystep, wr += g->wrow) {
            const int8_t *xo = xr, *wo = wr;
            for (int32_t kx = 0; kx < g->nx; ++kx, xo += g->xstep, wo += g->wstep) {
                acc += ((int32_t)*xo - in_zp) * (int32_t)*wo;
            }
        }
        out[oc] = tinyaot_w8_rq_any(r, acc, oc);
    }
}

static inline __attribute__((always_inline)) void dw_m(const tinyaot_conv_dims_t *d,
                                                       const tinyaot_rqc_t *r, int32_t in_zp,
                                                       const int8_t *input, const int8_t *filter,
                                                       int8_t *output, int mode)
{
    const int32_t mult = d->out_c / d->in_c, oc_n = d->out_c;
    const int32_t quads = mult == 1 ? oc_n / 4 : 0;
    dw_window_t g;
    g.xstep = d->dil_w * d->in_c;
    g.ystep = d->dil_h * d->in_w * d->in_c;
    g.wstep = oc_n;
    g.wrow = d->k_w * oc_n;
    g.nzp2 = ((uint32_t)-in_zp & 0xffffu) * 0x10001u;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        int32_t ky0, ky1;
        tap_range(iy0, d->dil_h, d->k_h, d->in_h, &ky0, &ky1);
        g.ny = ky1 - ky0;
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            const int32_t ix0 = ox * d->stride_w - d->pad_left;
            int32_t kx0, kx1;
            tap_range(ix0, d->dil_w, d->k_w, d->in_w, &kx0, &kx1);
            g.nx = kx1 - kx0;
            /* the first inside tap: input (channel 0) and filter (channel 0) */
            const int8_t *x00 =
                input + ((iy0 + ky0 * d->dil_h) * d->in_w + ix0 + kx0 * d->dil_w) * d->in_c;
            const int8_t *w00 = filter + (ky0 * d->k_w + kx0) * oc_n;
            int8_t *out = output + (oy * d->out_w + ox) * oc_n;
            for (int32_t c = 0; c < 4 * quads; c += 4) {
                int32_t a[4];
                dw_quad(&g, x00 + c, w00 + c, a);
                out[c] = tinyaot_w8_rq(r, a[0], c, mode);
                out[c + 1] = tinyaot_w8_rq(r, a[1], c + 1, mode);
                out[c + 2] = tinyaot_w8_rq(r, a[2], c + 2, mode);
                out[c + 3] = tinyaot_w8_rq(r, a[3], c + 3, mode);
            }
            if (4 * quads < oc_n) {
                dw_single(&g, r, in_zp, mult, 4 * quads, oc_n, x00, w00, out);
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
    case TINYAOT_RQ_SMLAL_SAT: dw_m(d, &r, zp, input, filter, output, TINYAOT_RQ_SMLAL_SAT); break;
    case TINYAOT_RQ_FLOAT_SAT: dw_m(d, &r, zp, input, filter, output, TINYAOT_RQ_FLOAT_SAT); break;
    default: dw_m(d, &r, zp, input, filter, output, TINYAOT_W8_RQ_ANY); break;
    }
    return TINYAOT_OK;
}
