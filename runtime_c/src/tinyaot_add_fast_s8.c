/* Elementwise int8 Add, as tinyaot_add_s8 computes it (bit-identical), with
 * the per-layer constants hoisted out of the loop and the TFLite fixed-point
 * steps in the cheaper exact forms of tinyaot_requant_fast.h. With the
 * compile-time tables (a_lut, b_lut: each input's rescaled value depends on
 * that int8 alone) an element is two table reads, an add and the one-SMLAL
 * output rescale. */
#include "tinyaot_fast_kernels.h"
#include "tinyaot_requant_fast.h"

/* gemmlowp RoundingDivideByPOT with mask = 2^e - 1, half = mask >> 1 */
static inline int32_t rdbpot_c(int32_t x, int32_t e, int32_t mask, int32_t half)
{
    const int32_t rem = (int32_t)((uint32_t)x & (uint32_t)mask);
    return tinyaot_fp_asr(x, e) + (int32_t)(rem > half + (int32_t)((uint32_t)x >> 31));
}

int tinyaot_add_fast_s8(int32_t n, const tinyaot_add_params_t *p, const int8_t *a,
                        const int8_t *b, int32_t b_stride, int8_t *output)
{
    const int32_t a_zp = p->a_zp, b_zp = p->b_zp, out_zp = p->out_zp;
    const int32_t lo = p->act_min, hi = p->act_max;
    if (p->use_float || p->a_mult < 0 || p->b_mult < 0 || p->out_mult < 0 || p->a_shift > 0 ||
        p->b_shift > 0 || p->out_shift > 0) {
        return tinyaot_add_s8(n, p, a, b, b_stride, output);
    }
    if (p->a_lut && p->b_lut && p->out_rq) {
        const int32_t *la = p->a_lut + 128, *lb = p->b_lut + 128, *r = p->out_rq;
        const int32_t m = r[0], sh = r[1], rhi = r[3];
        const uint32_t rlo = (uint32_t)r[2];
        if (lo <= -128 && hi >= 127) {
            for (int32_t i = 0; i < n; ++i) {
                const int32_t sum = tinyaot_fp_wrap_add(la[a[i]], lb[b[i * b_stride]]);
                output[i] = (int8_t)__SSAT(tinyaot_mbqm_smlal(sum, m, sh, rlo, rhi) + out_zp, 8);
            }
        } else {
            for (int32_t i = 0; i < n; ++i) {
                const int32_t sum = tinyaot_fp_wrap_add(la[a[i]], lb[b[i * b_stride]]);
                output[i] = (int8_t)tinyaot_fp_clamp(tinyaot_mbqm_smlal(sum, m, sh, rlo, rhi) + out_zp,
                                                     lo, hi);
            }
        }
        return TINYAOT_OK;
    }
    const int32_t ls = p->left_shift;
    const int32_t am = p->a_mult, bm = p->b_mult, om = p->out_mult;
    const int32_t ae = -p->a_shift, be = -p->b_shift, oe = -p->out_shift;
    const int32_t amask = (int32_t)(((uint32_t)1 << ae) - 1u);
    const int32_t bmask = (int32_t)(((uint32_t)1 << be) - 1u);
    const int32_t omask = (int32_t)(((uint32_t)1 << oe) - 1u);
    const int32_t ahalf = amask >> 1, bhalf = bmask >> 1, ohalf = omask >> 1;
    for (int32_t i = 0; i < n; ++i) {
        const int32_t v1 = tinyaot_fp_wrap_shl((int32_t)a[i] - a_zp, ls);
        const int32_t v2 = tinyaot_fp_wrap_shl((int32_t)b[i * b_stride] - b_zp, ls);
        const int32_t s1 = rdbpot_c(tinyaot_srdhm_fast(v1, am), ae, amask, ahalf);
        const int32_t s2 = rdbpot_c(tinyaot_srdhm_fast(v2, bm), be, bmask, bhalf);
        const int32_t sum = tinyaot_fp_wrap_add(s1, s2);
        const int32_t v = tinyaot_fp_wrap_add(rdbpot_c(tinyaot_srdhm_fast(sum, om), oe, omask, ohalf),
                                              out_zp);
        output[i] = (int8_t)tinyaot_fp_clamp(v, lo, hi); /* branch-free: data-independent count */
    }
    return TINYAOT_OK;
}
