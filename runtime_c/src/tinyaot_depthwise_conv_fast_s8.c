/* Fast int8 depthwise convolution (channel multiplier 1, in_c % 4 == 0):
 * four channels at a time, inputs widened with the zero point folded in by
 * __SXTAB16, products accumulated by __SMLABB / __SMLATT against packed
 * int16 weights (tinyaot_fast_kernels.h). */
#include <string.h>

#include "tinyaot_fast_kernels.h"
#include "tinyaot_gemm_q15.h"

/* acc = four channels' sums over nky x nkx taps */
static inline __attribute__((always_inline)) void dw_taps(const int8_t *srow, const uint32_t *wrow,
                                                          int32_t nky, int32_t nkx, int32_t sstep,
                                                          int32_t rstep, int32_t wstep,
                                                          int32_t wrstep, uint32_t off,
                                                          uint32_t acc[4])
{
    uint32_t a0 = 0u, a1 = 0u, a2 = 0u, a3 = 0u;
    for (int32_t ky = 0; ky < nky; ++ky) {
        const int8_t *src = srow;
        const uint32_t *wp = wrow;
        for (int32_t kx = 0; kx < nkx; ++kx) {
            uint32_t x;
            memcpy(&x, src, 4);
            const uint32_t xa = __SXTAB16(off, x);
            const uint32_t xb = __SXTAB16_ROR8(off, x);
            const uint32_t wa = wp[0], wb = wp[1];
            a0 = __SMLABB(xa, wa, a0);
            a2 = __SMLATT(xa, wa, a2);
            a1 = __SMLABB(xb, wb, a1);
            a3 = __SMLATT(xb, wb, a3);
            src += sstep;
            wp += wstep;
        }
        srow += rstep;
        wrow += wrstep;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

int tinyaot_depthwise_conv_fast_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                   const int8_t *input, const int32_t *packed_weights,
                                   int8_t *output)
{
    const int32_t ch = d->in_c;
    if (d->out_c != ch || (ch & 3) != 0) {
        return TINYAOT_ERR_ARG;
    }
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    const int32_t nq = ch >> 2;
    const uint32_t off = tinyaot_pack16(-q->in_zp, -q->in_zp);
    const uint32_t *wbase = (const uint32_t *)(const void *)packed_weights;
    const int32_t in_w = d->in_w, in_h = d->in_h, k_w = d->k_w, k_h = d->k_h;
    const int32_t dil_w = d->dil_w, dil_h = d->dil_h;
    const int32_t sstep = dil_w * ch;          /* next kx, bytes */
    const int32_t rstep = dil_h * in_w * ch;   /* next ky, bytes */
    const int32_t wstep = 2 * nq;              /* next kx, words */
    const int32_t wrstep = k_w * 2 * nq;       /* next ky, words */
    int8_t *out = output;
    for (int32_t oy = 0; oy < d->out_h; ++oy) {
        const int32_t iy0 = oy * d->stride_h - d->pad_top;
        int32_t ky_lo = 0, ky_hi = k_h;
        while (ky_lo < ky_hi && iy0 + ky_lo * dil_h < 0) ++ky_lo;
        while (ky_hi > ky_lo && iy0 + (ky_hi - 1) * dil_h >= in_h) --ky_hi;
        for (int32_t ox = 0; ox < d->out_w; ++ox) {
            const int32_t ix0 = ox * d->stride_w - d->pad_left;
            int32_t kx_lo = 0, kx_hi = k_w;
            while (kx_lo < kx_hi && ix0 + kx_lo * dil_w < 0) ++kx_lo;
            while (kx_hi > kx_lo && ix0 + (kx_hi - 1) * dil_w >= in_w) --kx_hi;
            const int32_t nky = ky_hi - ky_lo, nkx = kx_hi - kx_lo;
            const int8_t *s0 = input + ((iy0 + ky_lo * dil_h) * in_w + ix0 + kx_lo * dil_w) * ch;
            const uint32_t *w0 = wbase + (ky_lo * k_w + kx_lo) * wstep;
            for (int32_t j = 0; j < nq; ++j) {
                uint32_t acc[4];
                if (nky == 3 && nkx == 3) { /* the interior of a 3x3: unrolled */
                    dw_taps(s0, w0, 3, 3, sstep, rstep, wstep, wrstep, off, acc);
                } else {
                    dw_taps(s0, w0, nky, nkx, sstep, rstep, wstep, wrstep, off, acc);
                }
                const uint32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
                s0 += 4;
                w0 += 2;
                out[0] = tinyaot_rqc_apply(&rq, tinyaot_fp_s32(a0), 4 * j);
                out[1] = tinyaot_rqc_apply(&rq, tinyaot_fp_s32(a1), 4 * j + 1);
                out[2] = tinyaot_rqc_apply(&rq, tinyaot_fp_s32(a2), 4 * j + 2);
                out[3] = tinyaot_rqc_apply(&rq, tinyaot_fp_s32(a3), 4 * j + 3);
                out += 4;
            }
        }
    }
    return TINYAOT_OK;
}
