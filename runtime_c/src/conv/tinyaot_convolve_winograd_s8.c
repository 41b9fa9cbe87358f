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

/* One word of channels {0, 2} (h 0) or {1, 3} (h 1) of a patch word, minus the
 * zero point (off: -zp in both lanes). */
static inline __attribute__((always_inline)) uint32_t wg_ld(uint32_t w, uint32_t off, int h)
{
    return h ? __SXTAB16_ROR8(off, w) : __SXTAB16(off, w);
}

/* V = B^T d B of one quad of channels, both halves, in two passes through t
 * (fewer values live at once than V's 16 sums). Pass 1, each patch row r
 * (words at b + r * rs + c * ch): (d B)[r] = B^T of the row, half h's column j
 * into t[h][j][r]. Pass 2, each column j: B^T of (d B)'s column into V's
 * positions 4k + j, half h at v[(4k + j) * ps + h]. Exact: |d B| <= 510 and |V|
 * <= 1020 fit int16 lanes. */
static inline __attribute__((always_inline)) void transform_quad(const int8_t *b, int32_t rs,
                                                                int32_t ch, uint32_t off,
                                                                uint32_t *v, int32_t ps)
{
    uint32_t t[2][4][4];
#if TINYAOT_HAVE_DSP_ASM
    { /* pass 1: 13 registers; pass 2: 8 (the C below: GCC spills its offsets) */
        uint32_t w0, w1, w2, w3, x0, x1, x2, x3;
/* patch row R's four words (then b moves to the next row), and half H of them (ROR:
 * "" or ", ror #8") through B^T into t[H][j][R] (byte offset 4R + 64H + 16j) */
#define WG_ROW_LOAD                                                                                \
    "ldr %[w0], [%[b]]\n\t"                                                                        \
    "ldr %[w1], [%[b], %[ch]]\n\t"                                                                 \
    "ldr %[w2], [%[b], %[ch], lsl #1]\n\t"                                                         \
    "add %[x0], %[b], %[ch]\n\t"                                                                   \
    "ldr %[w3], [%[x0], %[ch], lsl #1]\n\t"                                                        \
    "add %[b], %[b], %[rs]\n\t"
#define WG_T(R, H, J) "[%[t], #(4*" #R "+64*" #H "+16*" #J ")]\n\t"
#define WG_ROW_HALF(R, H, ROR)                                                                     \
    "sxtab16 %[x0], %[off], %[w0]" ROR "\n\t"                                                      \
    "sxtab16 %[x1], %[off], %[w1]" ROR "\n\t"                                                      \
    "sxtab16 %[x2], %[off], %[w2]" ROR "\n\t"                                                      \
    "sxtab16 %[x3], %[off], %[w3]" ROR "\n\t"                                                      \
    "ssub16 %[x0], %[x0], %[x2]\n\t"                                                               \
    "str %[x0], " WG_T(R, H, 0)                                                                    \
    "sadd16 %[x0], %[x1], %[x2]\n\t"                                                               \
    "str %[x0], " WG_T(R, H, 1)                                                                    \
    "ssub16 %[x2], %[x2], %[x1]\n\t"                                                               \
    "str %[x2], " WG_T(R, H, 2)                                                                    \
    "ssub16 %[x1], %[x1], %[x3]\n\t"                                                               \
    "str %[x1], " WG_T(R, H, 3)
#define WG_ROW(R) WG_ROW_LOAD WG_ROW_HALF(R, 0, "") WG_ROW_HALF(R, 1, ", ror #8")
        __asm__(WG_ROW(0) WG_ROW(1) WG_ROW(2) WG_ROW(3) /* straight-line; t's offsets immediate */
                : [w0] "=&r"(w0), [w1] "=&r"(w1), [w2] "=&r"(w2), [w3] "=&r"(w3),
                  [x0] "=&r"(x0), [x1] "=&r"(x1), [x2] "=&r"(x2), [x3] "=&r"(x3),
                  [b] "+&r"(b), "=m"(t)
                : [rs] "r"(rs), [ch] "r"(ch), [off] "r"(off), [t] "r"(&t[0][0][0])
                : "memory");
#undef WG_ROW
#undef WG_ROW_HALF
#undef WG_T
#undef WG_ROW_LOAD
        uint32_t *o = v, c0, c1, c2, c3;
        const int32_t pj = ps * (int32_t)sizeof(uint32_t); /* one position, in bytes */
/* column K = 4h + j of (d B) (t[h][j], byte offset 16K) through B^T into positions 4k + j,
 * half h: o, o + 4 pj, o + 8 pj, o + 12 pj */
#define WG_COL(K)                                                                                  \
    "ldrd %[c0], %[c1], [%[t], #(16*" #K ")]\n\t"                                                  \
    "ldrd %[c2], %[c3], [%[t], #(16*" #K "+8)]\n\t"                                                \
    "ssub16 %[c0], %[c0], %[c2]\n\t"                                                               \
    "str %[c0], [%[o]]\n\t"                                                                        \
    "sadd16 %[c0], %[c1], %[c2]\n\t"                                                               \
    "str %[c0], [%[o], %[pj], lsl #2]\n\t"                                                         \
    "ssub16 %[c2], %[c2], %[c1]\n\t"                                                               \
    "str %[c2], [%[o], %[pj], lsl #3]\n\t"                                                         \
    "ssub16 %[c1], %[c1], %[c3]\n\t"                                                               \
    "add %[c3], %[o], %[pj], lsl #2\n\t"                                                           \
    "str %[c1], [%[c3], %[pj], lsl #3]\n\t"
#define WG_NEXT "add %[o], %[o], %[pj]\n\t" /* the next column j */
        /* volatile: its only effect is the stores */
        __asm__ volatile(WG_COL(0) WG_NEXT WG_COL(1) WG_NEXT WG_COL(2) WG_NEXT WG_COL(3)
                         "add %[o], %[v], #4\n\t" /* half 1 */
                         WG_COL(4) WG_NEXT WG_COL(5) WG_NEXT WG_COL(6) WG_NEXT WG_COL(7)
                         : [c0] "=&r"(c0), [c1] "=&r"(c1), [c2] "=&r"(c2), [c3] "=&r"(c3),
                           [o] "+&r"(o)
                         : [t] "r"(&t[0][0][0]), [pj] "r"(pj), [v] "r"(v), "m"(t)
                         : "memory");
#undef WG_NEXT
#undef WG_COL
        return;
    }
#endif
    for (int32_t r = 0; r < 4; ++r, b += rs) {
        uint32_t w0, w1, w2, w3;
        memcpy(&w0, b, 4);
        memcpy(&w1, b + ch, 4);
        memcpy(&w2, b + 2 * ch, 4);
        memcpy(&w3, b + 3 * ch, 4);
        for (int h = 0; h < 2; ++h) {
            const uint32_t x0 = wg_ld(w0, off, h), x1 = wg_ld(w1, off, h);
            const uint32_t x2 = wg_ld(w2, off, h), x3 = wg_ld(w3, off, h);
            WG_BT(x0, x1, x2, x3, t[h][0][r], t[h][1][r], t[h][2][r], t[h][3][r]);
        }
    }
    for (int32_t h = 0; h < 2; ++h) {
        for (int32_t j = 0; j < 4; ++j) {
            const uint32_t *c = t[h][j];
            uint32_t *o = v + j * ps + h;
            WG_BT(c[0], c[1], c[2], c[3], o[0], o[4 * ps], o[8 * ps], o[12 * ps]);
        }
    }
}

/* One tile's transformed input into slot `slot` of the pair's columns v
 * ([position][quad][4 words]; v points at the slot's first word): the 4x4
 * patch at input row iy0, column ix0 (parts outside the input are the zero
 * point: 0 once it is subtracted). A patch cut by the input's edges is copied
 * quad by quad into p first, the zero point's word where it is outside, and
 * transformed as one inside. */
static __attribute__((noinline)) void transform_tile(const tinyaot_conv_dims_t *d,
                                                     const int8_t *input, int32_t iy0,
                                                     int32_t ix0, uint32_t off, uint32_t *v)
{
    const int32_t ch = d->in_c, nq = ch >> 2, in_w = d->in_w, in_h = d->in_h;
    const int32_t ps = 4 * nq, rs = in_w * ch;
    const int8_t *b = input + (iy0 * in_w + ix0) * ch;
    if (iy0 >= 0 && iy0 + 4 <= in_h && ix0 >= 0 && ix0 + 4 <= in_w) {
        for (int32_t j = 0; j < nq; ++j, b += 4, v += 4) {
            transform_quad(b, rs, ch, off, v, ps);
        }
        return;
    }
    /* the zero point's byte in each of a word's four: x - zp = 0; the words outside
     * the input are that in every quad, the inside ones (n of them) are copied */
    const uint32_t zpw = (uint32_t)(uint8_t)(-(int16_t)(off & 0xffffu)) * 0x01010101u;
    uint32_t p[16];     /* the quad's patch, word r * 4 + c */
    int32_t src[16], n = 0; /* the first n: an inside word's offset from b */
    uint8_t dst[16];        /* and its place in p */
    for (int32_t r = 0; r < 4; ++r) {
        for (int32_t c = 0; c < 4; ++c) {
            p[4 * r + c] = zpw;
            src[n] = r * rs + c * ch; /* kept only when inside: n moves on */
            dst[n] = (uint8_t)(4 * r + c);
            n += iy0 + r >= 0 && iy0 + r < in_h && ix0 + c >= 0 && ix0 + c < in_w;
        }
    }
    for (int32_t j = 0; j < nq; ++j, b += 4, v += 4) {
        for (int32_t k = 0; k < n; ++k) {
            memcpy(&p[dst[k]], b + src[k], 4);
        }
        transform_quad((const int8_t *)p, 16, 4, off, v, ps);
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
        tinyaot_rq_2x2_sat(acc, p, o0, o1);
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
