/* Fast int8 3x3 convolution (stride 1, undilated, groups 1, in_c % 4 == 0) by
 * Winograd's minimal filtering F(2x2, 3x3) in exact integers.
 *
 * Each 2x2 block of outputs ("tile") reads a 4x4 input patch d (minus the
 * input zero point: int16, |d| <= 255). Its transform V = B^T d B is sums and
 * differences of at most four values (|V| <= 1020, still int16: __SADD16 /
 * __SSUB16 on two channels at once). The weights come transformed at compile
 * time with G scaled by 2 so that they stay integers: U = (2G) g (2G)^T, |U| <=
 * 9 * 128 (codegen/kernels/winograd_pack.py). For each of the 16 positions the
 * products U V summed over the input channels are the fast kernel's int16
 * GEMM (../internal/tinyaot_gemm_q15.h: __SMLAD, two output channels against
 * two tiles), and the output transform A^T M A of those 16 sums is exactly 4
 * times the direct convolution's int32 sum (Winograd's identity holds in the
 * integers; |A^T M A| <= 9 * in_c * 1020 * 1152 < 2^31 for in_c <= 192, which
 * the compiler checks), so dividing by 4 gives tinyaot_convolve_s8's integers
 * and the requantization is the fast kernel's. 16 multiplies per tile and
 * channel pair where the direct form has 36.
 *
 * Tiles run in pairs (row-major, the second of the last pair absent when the
 * count is odd); outputs of a tile beyond the layer's edge are not written.
 * Scratch: one tile pair's transformed input, 16 positions x in_c / 4 quads x
 * 4 words (tinyaot_convolve_winograd_s8_get_buffer_size).
 *
 * Weights: per output channel pair, per position, the fast kernel's packed
 * quads of U over the input channels (pack_gemm's layout, an odd last channel
 * padded with a zero row). */
#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_gemm_q15.h"
#include "../internal/tinyaot_specialize.h"

#define WG_HAS_MODE(m) TINYAOT_SPEC_HAS(TINYAOT_SPEC_WINO_MODES, m)
#define WG_HAS_REM(r) TINYAOT_SPEC_HAS(TINYAOT_SPEC_WINO_REMS, r)

int32_t tinyaot_convolve_winograd_s8_get_buffer_size(const tinyaot_conv_dims_t *d)
{
    return 16 * 4 * (d->in_c / 4) * (int32_t)sizeof(uint32_t);
}

/* B^T x for a line x of four: {x0 - x2, x1 + x2, x2 - x1, x1 - x3}, two int16
 * lanes per word. */
#define WG_BT(X0, X1, X2, X3, Y0, Y1, Y2, Y3)                                                      \
    do {                                                                                           \
        (Y0) = __SSUB16((X0), (X2));                                                               \
        (Y1) = __SADD16((X1), (X2));                                                               \
        (Y2) = __SSUB16((X2), (X1));                                                               \
        (Y3) = __SSUB16((X1), (X3));                                                               \
    } while (0)

/* A quad of channels of a 4x4 patch wholly inside the input (b: its top-left
 * word, rows rs bytes apart, columns ch), half h (0: channels {0, 2}, 1: {1,
 * 3}; a constant): V = B^T d B into v[position * ps]. Row k of B^T d takes two
 * patch rows (k 1 and 2 the same two), so each pass loads two rows (8 words)
 * and writes one or two rows of V. */
static inline __attribute__((always_inline)) uint32_t wg_ld(const int8_t *p, uint32_t off, int h)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return h ? __SXTAB16_ROR8(off, w) : __SXTAB16(off, w);
}

static inline __attribute__((always_inline)) void transform_quad_inside(const int8_t *b,
                                                                       int32_t rs, int32_t ch,
                                                                       uint32_t off, uint32_t *v,
                                                                       int32_t ps, int h)
{
    const int8_t *r0 = b, *r1 = b + rs, *r2 = r1 + rs, *r3 = r2 + rs;
    uint32_t a0, a1, a2, a3, c0, c1, c2, c3, t0, t1, t2, t3, u0, u1, u2, u3;
    /* rows 1 and 2: V rows 1 (d1 + d2) and 2 (d2 - d1) */
    a0 = wg_ld(r1, off, h), a1 = wg_ld(r1 + ch, off, h);
    a2 = wg_ld(r1 + 2 * ch, off, h), a3 = wg_ld(r1 + 3 * ch, off, h);
    c0 = wg_ld(r2, off, h), c1 = wg_ld(r2 + ch, off, h);
    c2 = wg_ld(r2 + 2 * ch, off, h), c3 = wg_ld(r2 + 3 * ch, off, h);
    t0 = __SADD16(a0, c0), t1 = __SADD16(a1, c1), t2 = __SADD16(a2, c2), t3 = __SADD16(a3, c3);
    WG_BT(t0, t1, t2, t3, v[4 * ps], v[5 * ps], v[6 * ps], v[7 * ps]);
    u0 = __SSUB16(c0, a0), u1 = __SSUB16(c1, a1), u2 = __SSUB16(c2, a2), u3 = __SSUB16(c3, a3);
    WG_BT(u0, u1, u2, u3, v[8 * ps], v[9 * ps], v[10 * ps], v[11 * ps]);
    /* row 0: d0 - d2 (row 2 still in c) */
    a0 = wg_ld(r0, off, h), a1 = wg_ld(r0 + ch, off, h);
    a2 = wg_ld(r0 + 2 * ch, off, h), a3 = wg_ld(r0 + 3 * ch, off, h);
    t0 = __SSUB16(a0, c0), t1 = __SSUB16(a1, c1), t2 = __SSUB16(a2, c2), t3 = __SSUB16(a3, c3);
    WG_BT(t0, t1, t2, t3, v[0], v[ps], v[2 * ps], v[3 * ps]);
    /* row 3: d1 - d3 */
    a0 = wg_ld(r1, off, h), a1 = wg_ld(r1 + ch, off, h);
    a2 = wg_ld(r1 + 2 * ch, off, h), a3 = wg_ld(r1 + 3 * ch, off, h);
    c0 = wg_ld(r3, off, h), c1 = wg_ld(r3 + ch, off, h);
    c2 = wg_ld(r3 + 2 * ch, off, h), c3 = wg_ld(r3 + 3 * ch, off, h);
    t0 = __SSUB16(a0, c0), t1 = __SSUB16(a1, c1), t2 = __SSUB16(a2, c2), t3 = __SSUB16(a3, c3);
    WG_BT(t0, t1, t2, t3, v[12 * ps], v[13 * ps], v[14 * ps], v[15 * ps]);
}

/* The same for a patch cut by the input's edges: words outside the input
 * (bit c of ok[r] clear) are zero. */
static void transform_quad_cut(const int8_t *b, int32_t rs, int32_t ch, uint32_t off,
                               const uint8_t ok[4], uint32_t *v, int32_t ps)
{
    for (int32_t h = 0; h < 2; ++h) {
        uint32_t t[4][4]; /* B^T d, column by column */
        for (int32_t c = 0; c < 4; ++c) {
            uint32_t x[4];
            for (int32_t r = 0; r < 4; ++r) {
                x[r] = ((ok[r] >> c) & 1u) ? wg_ld(b + r * rs + c * ch, off, h) : 0u;
            }
            WG_BT(x[0], x[1], x[2], x[3], t[0][c], t[1][c], t[2][c], t[3][c]);
        }
        for (int32_t k = 0; k < 4; ++k) { /* then (B^T d) B, row by row */
            WG_BT(t[k][0], t[k][1], t[k][2], t[k][3], v[(4 * k + 0) * ps + h],
                  v[(4 * k + 1) * ps + h], v[(4 * k + 2) * ps + h], v[(4 * k + 3) * ps + h]);
        }
    }
}

/* One tile's transformed input into slot `slot` of the pair's columns v
 * ([position][quad][4 words]; v points at the slot's first word): the 4x4
 * patch at input row iy0, column ix0 (parts outside the input are the zero
 * point: 0 once it is subtracted). */
static __attribute__((noinline)) void transform_tile(const tinyaot_conv_dims_t *d,
                                                     const int8_t *input, int32_t iy0,
                                                     int32_t ix0, uint32_t off, uint32_t *v)
{
    const int32_t ch = d->in_c, nq = ch >> 2, in_w = d->in_w, in_h = d->in_h;
    const int32_t ps = 4 * nq, rs = in_w * ch;
    const int8_t *b = input + (iy0 * in_w + ix0) * ch;
    if (iy0 >= 0 && iy0 + 4 <= in_h && ix0 >= 0 && ix0 + 4 <= in_w) {
        for (int32_t j = 0; j < nq; ++j, b += 4, v += 4) {
            transform_quad_inside(b, rs, ch, off, v, ps, 0);
            transform_quad_inside(b, rs, ch, off, v + 1, ps, 1);
        }
        return;
    }
    uint8_t ok[4];
    for (int32_t r = 0; r < 4; ++r) {
        ok[r] = 0u;
        for (int32_t c = 0; c < 4; ++c) {
            const int in = iy0 + r >= 0 && iy0 + r < in_h && ix0 + c >= 0 && ix0 + c < in_w;
            ok[r] = (uint8_t)(ok[r] | (in << c));
        }
    }
    for (int32_t j = 0; j < nq; ++j, b += 4, v += 4) {
        transform_quad_cut(b, rs, ch, off, ok, v, ps);
    }
}

/* A^T m A / 4 of one channel and tile: m[16 positions] with stride 4 (the
 * dot's four accumulators interleaved): y[0..3] = outputs (0,0) (0,1) (1,0)
 * (1,1). The sum is 4 times the direct one, so the division is exact. */
static inline __attribute__((always_inline)) void output_transform(const int32_t *m, int32_t y[4])
{
#define WG_M(R, C) m[((R) * 4 + (C)) * 4]
    /* A^T down each column, then along the two rows */
    const int32_t a0 = WG_M(0, 0) + WG_M(1, 0) + WG_M(2, 0);
    const int32_t a1 = WG_M(0, 1) + WG_M(1, 1) + WG_M(2, 1);
    const int32_t a2 = WG_M(0, 2) + WG_M(1, 2) + WG_M(2, 2);
    const int32_t a3 = WG_M(0, 3) + WG_M(1, 3) + WG_M(2, 3);
    const int32_t b0 = WG_M(1, 0) - WG_M(2, 0) - WG_M(3, 0);
    const int32_t b1 = WG_M(1, 1) - WG_M(2, 1) - WG_M(3, 1);
    const int32_t b2 = WG_M(1, 2) - WG_M(2, 2) - WG_M(3, 2);
    const int32_t b3 = WG_M(1, 3) - WG_M(2, 3) - WG_M(3, 3);
#undef WG_M
    y[0] = tinyaot_fp_asr(a0 + a1 + a2, 2);
    y[1] = tinyaot_fp_asr(a1 - a2 - a3, 2);
    y[2] = tinyaot_fp_asr(b0 + b1 + b2, 2);
    y[3] = tinyaot_fp_asr(b1 - b2 - b3, 2);
}

/* The 16 positions' 2x2 dots of a channel pair (weights u) and a tile pair
 * (columns v) into m[position][oc0 t0, oc0 t1, oc1 t0, oc1 t1]; nq % 8 = rem, a
 * constant (-1: any). In a function of its own (dots16) with few live values:
 * the dot's unrolled loop needs r4-r11 besides its six operands. Returns the
 * next pair's weights. */
static inline __attribute__((always_inline)) const uint32_t *dots16_m(const uint32_t *v,
                                                                      const uint32_t *u,
                                                                      int32_t nq, int32_t *m,
                                                                      int rem)
{
#if TINYAOT_HAVE_DSP_ASM
    if (rem > 0 && nq == rem) { /* fewer than 8 quads: each position's dot straight-line, the
                                 * 16 positions one asm loop (m and its end in memory: the
                                 * registers are the dot's) */
        int32_t *mp = m;
        const uintptr_t mend = (uintptr_t)(void *)m + 64 * sizeof(int32_t); /* (an address) */
        uint32_t a00, a01, a10, a11;
#define TINYAOT_WG_LOOP(QUADS)                                                                     \
    __asm__ volatile("1:\n\t"                                                                     \
                     "movs %[a00], #0\n\t"                                                         \
                     "movs %[a01], #0\n\t"                                                         \
                     "movs %[a10], #0\n\t"                                                         \
                     "movs %[a11], #0\n\t" QUADS "ldr r4, %[mp]\n\t"                              \
                     "strd %[a00], %[a01], [r4], #8\n\t"                                           \
                     "strd %[a10], %[a11], [r4], #8\n\t"                                           \
                     "str r4, %[mp]\n\t"                                                           \
                     "ldr r5, %[mend]\n\t"                                                         \
                     "cmp r4, r5\n\t"                                                              \
                     "bne 1b"                                                                      \
                     : [a00] "=&r"(a00), [a01] "=&r"(a01), [a10] "=&r"(a10), [a11] "=&r"(a11),    \
                       [x] "+r"(v), [w] "+r"(u), [mp] "+m"(mp)                                    \
                     : [mend] "m"(mend)                                                            \
                     : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "cc", "memory")
#define WG_Q TINYAOT_DOT2X2_LDM /* one quad (../internal/tinyaot_gemm_q15.h) */
        switch (rem) {
        case 1: TINYAOT_WG_LOOP(WG_Q); break;
        case 2: TINYAOT_WG_LOOP(WG_Q WG_Q); break;
        case 3: TINYAOT_WG_LOOP(WG_Q WG_Q WG_Q); break;
        case 4: TINYAOT_WG_LOOP(WG_Q WG_Q WG_Q WG_Q); break;
        case 5: TINYAOT_WG_LOOP(WG_Q WG_Q WG_Q WG_Q WG_Q); break;
        case 6: TINYAOT_WG_LOOP(WG_Q WG_Q WG_Q WG_Q WG_Q WG_Q); break;
        default: TINYAOT_WG_LOOP(WG_Q WG_Q WG_Q WG_Q WG_Q WG_Q WG_Q); break;
        }
#undef WG_Q
#undef TINYAOT_WG_LOOP
        return u;
    }
#endif
    for (int32_t pos = 0; pos < 16; ++pos, v += 4 * nq) {
        uint32_t acc[4] = {0u, 0u, 0u, 0u};
        u = tinyaot_dot_2x2_p(v, u, nq, acc, rem);
        memcpy(m + 4 * pos, acc, sizeof acc);
    }
    return u;
}
/* dots16_m with nq % 8 a constant: the record modes' copies (the unrolled LDM
 * dot; a remainder this build does not compile: nothing, and the caller has
 * returned TINYAOT_ERR_NOT_BUILT before), or any nq (rem -1, the other modes). */
static __attribute__((noinline)) const uint32_t *dots16(const uint32_t *v, const uint32_t *u,
                                                        int32_t nq, int32_t *m, int rec)
{
#define TINYAOT_WG_REM(R)                                                                          \
    case R:                                                                                        \
        if (WG_HAS_REM(R)) {                                                                       \
            return dots16_m(v, u, nq, m, R);                                                       \
        }                                                                                          \
        break
    if (rec) {
        switch (nq & 7) {
            TINYAOT_WG_REM(0);
            TINYAOT_WG_REM(1);
            TINYAOT_WG_REM(2);
            TINYAOT_WG_REM(3);
            TINYAOT_WG_REM(4);
            TINYAOT_WG_REM(5);
            TINYAOT_WG_REM(6);
            default: TINYAOT_WG_REM(7);
        }
        return u;
    }
#undef TINYAOT_WG_REM
    return dots16_m(v, u, nq, m, -1);
}

/* Output k of the four columns y ([oc0 t0, oc0 t1, oc1 t0, oc1 t1][output]),
 * plus the biases b0, b1 of oc, oc + 1, through a saturating record mode's 2x2
 * requantization (p: oc's records, oc + 1's after them): tile 0's two
 * channels to o0[0], o0[1], tile 1's to o1[0], o1[1]. */
static inline __attribute__((always_inline)) void rq_2x2_k(const int32_t y[4][4], int32_t k,
                                                           int32_t b0, int32_t b1,
                                                           const int32_t *p, int32_t zp,
                                                           int8_t *o0, int8_t *o1, int mode)
{
    const uint32_t acc[4] = {(uint32_t)(y[0][k] + b0), (uint32_t)(y[1][k] + b0),
                             (uint32_t)(y[2][k] + b1), (uint32_t)(y[3][k] + b1)};
    if (mode == TINYAOT_RQ_FLOAT_SAT) {
        tinyaot_rqf_2x2_sat(acc, p, zp, o0, o1);
    } else {
        tinyaot_rq_2x2_sat(acc, p, zp, o0, o1);
    }
}

/* One channel pair (oc, oc + 1; `two` 0 when oc is the last channel) of a
 * tile pair: its 16 positions' 2x2 dots from u, the output transforms, and the
 * requantization of the outputs that lie inside the layer (pix[t][k]: tile t's
 * output k's pixel index, -1 outside). Mode `mode` (a constant). Returns the
 * next pair's weights. */
static inline __attribute__((always_inline)) const uint32_t *pair_m(
    const tinyaot_rqc_t *rq, const uint32_t *v, const uint32_t *u, int32_t nq,
    const int32_t pix[2][4], int32_t oc, int two, int8_t *output, int32_t out_c, int mode)
{
    int32_t m[16 * 4]; /* [position][oc0 t0, oc0 t1, oc1 t0, oc1 t1] */
    const int rec = mode == TINYAOT_RQ_SMLAL_SAT || mode == TINYAOT_RQ_FLOAT_SAT;
    u = dots16(v, u, nq, m, rec);
    int32_t y[4][4]; /* [oc0 t0, oc0 t1, oc1 t0, oc1 t1][output] */
    for (int32_t i = 0; i < 4; ++i) {
        output_transform(m + i, y[i]);
    }
    const int32_t rw = TINYAOT_RQ_WORDS(mode), rb = TINYAOT_RQ_BIAS(mode);
    if (rec && two && pix[0][3] >= 0 && pix[1][3] >= 0) {
        /* both tiles wholly inside (output 3, the bottom right, is inside only then):
         * outputs k at a fixed offset from each tile's first, no test per output */
        const int32_t *p = rq->rq + rw * oc;
        const int32_t b0 = p[rb], b1 = p[rw + rb];
        int8_t *o0 = output + pix[0][0] * out_c + oc, *o1 = output + pix[1][0] * out_c + oc;
        const int32_t dy = (pix[0][2] - pix[0][0]) * out_c; /* one output row */
        for (int32_t k = 0; k < 4; ++k) {
            const int32_t off = (k & 1) * out_c + (k >> 1) * dy;
            rq_2x2_k(y, k, b0, b1, p, rq->zp, o0 + off, o1 + off, mode);
        }
        return u;
    }
    for (int32_t k = 0; k < 4; ++k) {
        const int32_t p0 = pix[0][k], p1 = pix[1][k];
        /* no pointer is formed outside the output */
        int8_t *o0 = p0 >= 0 ? output + p0 * out_c + oc : output;
        int8_t *o1 = p1 >= 0 ? output + p1 * out_c + oc : output;
        if (rec && two && p0 >= 0 && p1 >= 0) {
            const int32_t *p = rq->rq + rw * oc;
            rq_2x2_k(y, k, p[rb], p[rw + rb], p, rq->zp, o0, o1, mode);
            continue;
        }
        for (int32_t j = 0; j < 1 + two; ++j) {
            if (p0 >= 0 && p1 >= 0) {
                tinyaot_rqc_apply2_m(rq, y[2 * j][k], y[2 * j + 1][k], oc + j, o0 + j, o1 + j,
                                     mode);
            } else if (p0 >= 0) {
                o0[j] = tinyaot_rqc_apply_m(rq, y[2 * j][k], oc + j, mode);
            } else if (p1 >= 0) { /* the first tile's output is beyond the edge */
                o1[j] = tinyaot_rqc_apply_m(rq, y[2 * j + 1][k], oc + j, mode);
            }
        }
    }
    return u;
}

/* Output pixel indices of tile number t (-1: outside the layer, or no tile). */
static void tile_pixels(const tinyaot_conv_dims_t *d, int32_t t, int32_t tiles_w, int32_t ntiles,
                        int32_t pix[4])
{
    for (int32_t k = 0; k < 4; ++k) {
        pix[k] = -1;
    }
    if (t >= ntiles) {
        return;
    }
    const int32_t oy = 2 * (t / tiles_w), ox = 2 * (t % tiles_w);
    for (int32_t k = 0; k < 4; ++k) {
        const int32_t y = oy + (k >> 1), x = ox + (k & 1);
        if (y < d->out_h && x < d->out_w) {
            pix[k] = y * d->out_w + x;
        }
    }
}

/* The whole layer in mode `mode` (a constant). */
static inline __attribute__((always_inline)) void run_m(const tinyaot_conv_dims_t *d,
                                                        const tinyaot_rqc_t *rq,
                                                        const int8_t *input, const uint32_t *u,
                                                        uint32_t off, uint32_t *scratch,
                                                        int8_t *output, int mode)
{
    const int32_t nq = d->in_c >> 2, out_c = d->out_c;
    const int32_t tiles_w = (d->out_w + 1) >> 1, tiles_h = (d->out_h + 1) >> 1;
    const int32_t ntiles = tiles_w * tiles_h;
    for (int32_t t = 0; t < ntiles; t += 2) {
        int32_t pix[2][4];
        for (int32_t s = 0; s < 2; ++s) {
            const int32_t tt = t + s;
            tile_pixels(d, tt, tiles_w, ntiles, pix[s]);
            if (tt < ntiles) {
                transform_tile(d, input, 2 * (tt / tiles_w) - d->pad_top,
                               2 * (tt % tiles_w) - d->pad_left, off, scratch + 2 * s);
            } else { /* no second tile: zero columns */
                for (int32_t i = 0; i < 16 * nq; ++i) {
                    scratch[4 * i + 2] = 0u;
                    scratch[4 * i + 3] = 0u;
                }
            }
        }
        const uint32_t *w = u;
        for (int32_t oc = 0; oc < out_c; oc += 2) {
            w = pair_m(rq, scratch, w, nq, (const int32_t(*)[4])pix, oc, oc + 1 < out_c, output,
                       out_c, mode);
        }
    }
}

/* Each record mode in a function of its own (its own copy of the loops). */
static __attribute__((noinline)) int run_float_sat(const tinyaot_conv_dims_t *d,
                                                    const tinyaot_requant_t *q,
                                                    const int8_t *input, const uint32_t *u,
                                                    uint32_t off, uint32_t *scratch, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc_records(q);
    run_m(d, &rq, input, u, off, scratch, output, TINYAOT_RQ_FLOAT_SAT);
    return TINYAOT_OK;
}

static __attribute__((noinline)) int run_smlal_sat(const tinyaot_conv_dims_t *d,
                                                    const tinyaot_requant_t *q,
                                                    const int8_t *input, const uint32_t *u,
                                                    uint32_t off, uint32_t *scratch, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    run_m(d, &rq, input, u, off, scratch, output, TINYAOT_RQ_SMLAL_SAT);
    return TINYAOT_OK;
}

/* The other modes: one copy of the loops per mode, the mode a constant in each. */
static __attribute__((noinline)) int run_other(const tinyaot_conv_dims_t *d,
                                               const tinyaot_requant_t *q, const int8_t *input,
                                               const uint32_t *u, uint32_t off,
                                               uint32_t *scratch, int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    switch (rq.mode) {
    case TINYAOT_RQ_ORT: run_m(d, &rq, input, u, off, scratch, output, TINYAOT_RQ_ORT); break;
    case TINYAOT_RQ_TFLITE:
        run_m(d, &rq, input, u, off, scratch, output, TINYAOT_RQ_TFLITE);
        break;
    default: /* TINYAOT_RQ_SMLAL: records with a clamp */
        run_m(d, &rq, input, u, off, scratch, output, TINYAOT_RQ_SMLAL);
        break;
    }
    return TINYAOT_OK;
}

/* scratch: tinyaot_convolve_winograd_s8_get_buffer_size(d) bytes, 4-byte aligned. */
int tinyaot_convolve_winograd_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                 const int8_t *input, const int32_t *packed_weights,
                                 uint32_t *scratch, int8_t *output)
{
    if (d->groups != 1 || d->k_h != 3 || d->k_w != 3 || d->stride_h != 1 || d->stride_w != 1 ||
        d->dil_h != 1 || d->dil_w != 1 || (d->in_c & 3) != 0 || d->in_c > 192) {
        return TINYAOT_ERR_ARG;
    }
    const uint32_t *u = (const uint32_t *)(const void *)packed_weights;
    const uint32_t off = tinyaot_pack16(-q->in_zp, -q->in_zp);
    int mode;
    if (tinyaot_rq_float_records(q)) {
        mode = TINYAOT_RQ_FLOAT_SAT;
    } else {
        mode = tinyaot_rqc(q).mode == TINYAOT_RQ_SMLAL_SAT ? TINYAOT_RQ_SMLAL_SAT : TINYAOT_RQ_ORT;
    }
    /* TINYAOT_RQ_ORT stands for every mode without whole-range records here */
    if (!WG_HAS_MODE(mode)) {
        return TINYAOT_ERR_NOT_BUILT;
    }
    if (mode != TINYAOT_RQ_ORT && !WG_HAS_REM((d->in_c >> 2) & 7)) {
        return TINYAOT_ERR_NOT_BUILT;
    }
    if (mode == TINYAOT_RQ_FLOAT_SAT) {
        return run_float_sat(d, q, input, u, off, scratch, output);
    }
    if (mode == TINYAOT_RQ_SMLAL_SAT) {
        return run_smlal_sat(d, q, input, u, off, scratch, output);
    }
    return run_other(d, q, input, u, off, scratch, output);
}
