/* Fast int8 2-D convolution (groups == 1) on int8 weights in flash, for layers
 * with few output pixels (each weight used by few of them): every output
 * pixel's int16 column is built once into the scratch (the fast kernel's
 * im2col, ../internal/tinyaot_im2col_q15.h: two pixels' columns interleaved
 * per quad), then per pair of output channels the two weight rows are widened
 * once (__SXTB16 / __SXTB16_ROR8 give the fast kernel's packed int16 words) into
 * the scratch and run against every pixel pair through the fast kernel's 2x2
 * GEMM core and requantization (../internal/tinyaot_gemm_q15.h); with the DSP
 * asm a layer of W8_GROUP_QUADS quads or more widens four rows at a time and
 * runs them through the fast kernel's group loop instead. Weights thus
 * cross the bus once per inference as 1 byte each, and the GEMM is the fast
 * kernel's, so the integers are tinyaot_convolve_s8's and the cost that of
 * tinyaot_convolve_fast_s8 plus one widening per weight and block; the price
 * is the scratch: the columns of a block of block_pairs pixel pairs
 * (tinyaot_convolve_fast_w8_s8_get_buffer_size; the compiler picks the
 * largest block that costs no arena, planner/w8_columns.py). Pixel pairs run
 * block by block, the weights widened again for each block.
 *
 * Weights: [out_c][kq] int8, kq = 4 * im2col_nquads(d), laid out as the columns
 * are (codegen/kernels/fast_pack.py: conv_gemm_weights). */
#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_gemm_q15.h"
#include "../internal/tinyaot_specialize.h"

#define W8_HAS_MODE(m) TINYAOT_SPEC_HAS(TINYAOT_SPEC_CONVW8_MODES, m)
#define W8_HAS_REM(r) TINYAOT_SPEC_HAS(TINYAOT_SPEC_CONVW8_REMS, r)

#include "../internal/tinyaot_im2col_q15.h"

/* Layers of at least this many quads run four channels at a time through the
 * fast kernel's group loop with the DSP asm (gemm_m): it takes 32 cycles a quad
 * where two channel pairs take 36, but a call per pixel pair (about 30 cycles
 * more than the pairs' calls), and 28 instructions a quad where they take 20. */
#define W8_GROUP_QUADS 16

/* The columns of block_pairs pixel pairs (4 words per quad) and the widened
 * weights of one channel pair (4 words per quad) or, from W8_GROUP_QUADS
 * quads, of a group of four (8), in bytes (on every core: one plan). */
int32_t tinyaot_convolve_fast_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d,
                                                    int32_t block_pairs)
{
    const int32_t nq = im2col_nquads(d);
    return (block_pairs + 1 + (nq >= W8_GROUP_QUADS)) * 4 * nq * (int32_t)sizeof(uint32_t);
}

/* Does the fast kernel's group loop take this layer's channel groups (the DSP
 * asm, a saturating record mode, W8_GROUP_QUADS)? Its odd last pixel then goes
 * in a pair with the one before it, whose outputs are stored again, the same
 * bytes (as in tinyaot_convolve_fast_s8: a conv's output never overlaps its
 * input); elsewhere it has a lone column. */
static inline __attribute__((always_inline)) int w8_group(const tinyaot_conv_dims_t *d, int mode)
{
#if TINYAOT_HAVE_DSP_ASM
    return (mode == TINYAOT_RQ_SMLAL_SAT || (mode == TINYAOT_RQ_FLOAT_SAT && TINYAOT_PW_HAVE_FSAT)) &&
           im2col_nquads(d) >= W8_GROUP_QUADS && d->out_h * d->out_w > 1;
#else
    (void)d;
    (void)mode;
    return 0;
#endif
}

/* Rows a and b (b NULL: zeros) of nq >= 1 quads -> the fast kernel's packed
 * words [quad][a {k0, k2}, a {k1, k3}, b {k0, k2}, b {k1, k3}]. */
static void widen_pair(const int8_t *a, const int8_t *b, int32_t nq, uint32_t *dst)
{
#if TINYAOT_HAVE_DSP_ASM
    if (b) { /* 10 instructions per quad (GCC's C: 15) */
        uint32_t u, v, t0, t1;
        const int8_t *end = a + 4 * nq;
        /* volatile: its only effect is the stores */
        __asm__ volatile("1:\n\t"
                "ldr %[u], [%[a]], #4\n\t"
                "ldr %[v], [%[b]], #4\n\t"
                "sxtb16 %[t0], %[u]\n\t"
                "sxtb16 %[t1], %[u], ror #8\n\t"
                "sxtb16 %[u], %[v]\n\t"
                "sxtb16 %[v], %[v], ror #8\n\t"
                "strd %[u], %[v], [%[d], #8]\n\t"
                "strd %[t0], %[t1], [%[d]], #16\n\t"
                "cmp %[a], %[end]\n\t"
                "bne 1b"
                /* "+&r": end is often where b starts (row b follows row a), and the
                 * loop moves b before it compares with end */
                : [u] "=&r"(u), [v] "=&r"(v), [t0] "=&r"(t0), [t1] "=&r"(t1), [a] "+&r"(a),
                  [b] "+&r"(b), [d] "+&r"(dst)
                : [end] "r"(end)
                : "cc", "memory");
        return;
    }
#endif
    for (int32_t j = 0; j < nq; ++j, a += 4, dst += 4) {
        uint32_t u;
        memcpy(&u, a, sizeof u);
        dst[0] = __SXTB16(u);
        dst[1] = __SXTB16_ROR8(u);
        if (b) {
            memcpy(&u, b, sizeof u);
            b += 4;
            dst[2] = __SXTB16(u);
            dst[3] = __SXTB16_ROR8(u);
        } else {
            dst[2] = 0u;
            dst[3] = 0u;
        }
    }
}

#if TINYAOT_HAVE_DSP_ASM
/* Rows a .. a + 3 * kq of a group of four output channels (nq >= 1 quads) ->
 * the group loop's packed words [quad][half][channel] (half 0: {k0, k2}, 1:
 * {k1, k3}; tinyaot_gemm_q15.h): 16 instructions per quad. */
static void widen_group(const int8_t *a, int32_t kq, int32_t nq, uint32_t *dst)
{
    const int8_t *c = a + 2 * kq, *end = a + 4 * nq;
    /* volatile: its only effect is the stores */
    __asm__ volatile("1:\n\t"
                     "ldr r5, [%[a], %[kq]]\n\t"
                     "ldr r4, [%[a]], #4\n\t"
                     "ldr r7, [%[c], %[kq]]\n\t"
                     "ldr r6, [%[c]], #4\n\t"
                     "sxtb16 r8, r4\n\t"
                     "sxtb16 r9, r5\n\t"
                     "sxtb16 r10, r6\n\t"
                     "sxtb16 r11, r7\n\t"
                     "stmia %[d]!, {r8, r9, r10, r11}\n\t"
                     "sxtb16 r8, r4, ror #8\n\t"
                     "sxtb16 r9, r5, ror #8\n\t"
                     "sxtb16 r10, r6, ror #8\n\t"
                     "sxtb16 r11, r7, ror #8\n\t"
                     "stmia %[d]!, {r8, r9, r10, r11}\n\t"
                     "cmp %[a], %[end]\n\t"
                     "bne 1b"
                     : [a] "+&r"(a), [c] "+&r"(c), [d] "+&r"(dst)
                     : [kq] "r"(kq), [end] "r"(end)
                     : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "cc", "memory");
}
#endif

/* The two columns of each pixel pair of the block (pixels pix0 .. pix0 + 2 *
 * npairs - 1), pair i at cols + 4 * nq * i; an odd last pixel of the layer
 * gets a lone column (2 words per quad) in its pair's place or, with `back`
 * (w8_group), the pair of it and the pixel before it. */
static void build_columns(const tinyaot_conv_dims_t *d, const int8_t *input, int32_t in_zp,
                          int32_t pix0, int32_t npairs, uint32_t *cols, int back)
{
    const int32_t nq = im2col_nquads(d), npix = d->out_h * d->out_w, out_w = d->out_w;
    const uint32_t off = tinyaot_pack16(-in_zp, -in_zp);
    for (int32_t i = 0; i < npairs; ++i, cols += 4 * nq) {
        int32_t p0 = pix0 + 2 * i, p1 = p0 + 1;
        if (p1 == npix && back) {
            p1 = p0--;
        } else if (p1 == npix) {
            im2col_pixel_1(d, input, p0 / out_w, p0 % out_w, cols, off, in_zp);
            break;
        }
        im2col_pixel(d, input, p0 / out_w, p0 % out_w, cols, off, in_zp);
        im2col_pixel(d, input, p1 / out_w, p1 % out_w, cols + 2, off, in_zp);
    }
}

/* One channel pair (widened weights w) against every pixel pair of a block,
 * record mode `mode` (accumulators start at the biases), nq % 8 = rem
 * (constants); lone: the last pair is an odd last pixel alone (a lone column,
 * tinyaot_dot_2x1). A function of its own with few live values: the GEMM
 * core's unrolled loop needs r4-r11 besides its six operands. */
static inline __attribute__((always_inline)) void pair_m(const uint32_t *x, const uint32_t *w,
                                                         int32_t nq, int32_t npairs,
                                                         const int32_t *p, int32_t zp,
                                                         int8_t *o, int32_t out_c, int lone,
                                                         int mode, int rem)
{
    const int32_t rw = TINYAOT_RQ_WORDS(mode), rb = TINYAOT_RQ_BIAS(mode);
    const int32_t full = npairs - lone;
    for (int32_t i = 0; i < full; ++i, x += 4 * nq, o += 2 * out_c) {
        uint32_t acc[4] = {(uint32_t)p[rb], (uint32_t)p[rb], (uint32_t)p[rw + rb],
                           (uint32_t)p[rw + rb]};
        tinyaot_dot_2x2_p(x, w, nq, acc, rem);
        if (mode == TINYAOT_RQ_FLOAT_SAT) {
            tinyaot_rqf_2x2_sat(acc, p, zp, o, o + out_c);
        } else {
            tinyaot_rq_2x2_sat(acc, p, o, o + out_c);
        }
    }
    if (lone) {
        uint32_t acc[2] = {(uint32_t)p[rb], (uint32_t)p[rw + rb]};
        tinyaot_dot_2x1(x, w, nq, acc);
        if (mode == TINYAOT_RQ_FLOAT_SAT) {
            tinyaot_rqf_2x1_sat(acc, p, zp, o);
        } else {
            tinyaot_rq_2x1_sat(acc, p, o);
        }
    }
}

/* The GEMM of one block (npairs pixel pairs from pixel pix0) over all channel
 * pairs in mode `mode` (a constant): a whole-range record mode with rem = nq % 8
 * (a constant), or another mode with rem -1. */
static inline __attribute__((always_inline)) void gemm_m(const tinyaot_conv_dims_t *d,
                                                         const tinyaot_rqc_t *rq,
                                                         const int8_t *filter, int32_t pix0,
                                                         int32_t npairs, uint32_t *scratch,
                                                         int8_t *output, int mode, int rem)
{
    const int32_t nq = im2col_nquads(d), npix = d->out_h * d->out_w, out_c = d->out_c;
    const int32_t kq = 4 * nq;
    const int odd = pix0 + 2 * npairs > npix; /* the block's last pair: the odd pixel */
    const int group = w8_group(d, mode), back = odd && group, lone = odd && !back;
    const int rec = mode == TINYAOT_RQ_SMLAL_SAT || mode == TINYAOT_RQ_FLOAT_SAT;
    uint32_t *wbuf = scratch + npairs * 4 * nq;
    int32_t oc = 0;
    output += pix0 * out_c;
#if TINYAOT_HAVE_DSP_ASM
    /* Four channels at a time through the fast kernel's group loop (32 cycles
     * per 32 MACs, where the channel pair's 2x2 core takes 18 per 16), a call
     * per pixel pair (W8_GROUP_QUADS); the channels left (out_c % 4) in pairs
     * below. */
    if (group) {
        const int32_t rw = TINYAOT_RQ_WORDS(mode);
        for (; oc + 3 < out_c; oc += 4) {
            const uint32_t *x = scratch;
            int8_t *o = output + oc;
            widen_group(filter + oc * kq, kq, nq, wbuf);
            for (int32_t i = 0; i < npairs; ++i, x += 4 * nq, o += 2 * out_c) {
                tinyaot_gemm_group_sat(x, nq, wbuf, out_c, rq->rq + rw * oc, rq->zp,
                                       back && i + 1 == npairs ? o - out_c : o, mode, rem);
            }
        }
    }
#endif
    for (; oc < out_c; oc += 2) {
        const int two = oc + 1 < out_c;
        widen_pair(filter + oc * kq, two ? filter + (oc + 1) * kq : 0, nq, wbuf);
        if (rec && two && !back) { /* (back: the channels left after the groups, below) */
            pair_m(scratch, wbuf, nq, npairs, rq->rq + TINYAOT_RQ_WORDS(mode) * oc, rq->zp,
                   output + oc, out_c, lone, mode, rem);
            continue;
        }
        const uint32_t *x = scratch;
        for (int32_t i = 0; i < npairs; ++i, x += 4 * nq) {
            int8_t *o0 = output + (2 * i - (back && i + 1 == npairs)) * out_c + oc;
            int8_t *o1 = o0 + out_c;
            uint32_t acc[4] = {0u, 0u, 0u, 0u};
            const int one = lone && i + 1 == npairs;
            if (one) { /* acc[0], acc[1]: channels oc, oc + 1 of the lone pixel */
                tinyaot_dot_2x1(x, wbuf, nq, acc);
            } else {
                tinyaot_dot_2x2(x, wbuf, nq, acc);
            }
            for (int32_t j = 0; j < 1 + two; ++j) {
                const int32_t a0 = tinyaot_fp_s32(acc[one ? j : 2 * j]);
                if (one) {
                    o0[j] = tinyaot_rqc_apply_m(rq, a0, oc + j, mode);
                } else {
                    tinyaot_rqc_apply2_m(rq, a0, tinyaot_fp_s32(acc[2 * j + 1]), oc + j, o0 + j,
                                         o1 + j, mode);
                }
            }
        }
    }
}

/* gemm_m with nq % 8 a constant (the record modes: tinyaot_dot_2x2_p's
 * unrolled LDM loop); a remainder this build does not compile:
 * TINYAOT_ERR_NOT_BUILT. */
static inline __attribute__((always_inline)) int gemm_rem(const tinyaot_conv_dims_t *d,
                                                          const tinyaot_rqc_t *rq,
                                                          const int8_t *filter, int32_t pix0,
                                                          int32_t npairs, uint32_t *scratch,
                                                          int8_t *output, int mode)
{
#define TINYAOT_W8_REM(R)                                                                          \
    case R:                                                                                        \
        if (W8_HAS_REM(R)) {                                                                       \
            gemm_m(d, rq, filter, pix0, npairs, scratch, output, mode, R);                         \
            return TINYAOT_OK;                                                                     \
        }                                                                                          \
        break
    switch (im2col_nquads(d) & 7) {
        TINYAOT_W8_REM(0);
        TINYAOT_W8_REM(1);
        TINYAOT_W8_REM(2);
        TINYAOT_W8_REM(3);
        TINYAOT_W8_REM(4);
        TINYAOT_W8_REM(5);
        TINYAOT_W8_REM(6);
        default: TINYAOT_W8_REM(7);
    }
#undef TINYAOT_W8_REM
    return TINYAOT_ERR_NOT_BUILT;
}

/* Each record mode in a function of its own (its own copy of the parameters,
 * so the loops keep them in registers). */
static __attribute__((noinline)) int gemm_float_sat(const tinyaot_conv_dims_t *d,
                                                     const tinyaot_requant_t *q,
                                                     const int8_t *filter, int32_t pix0,
                                                     int32_t npairs, uint32_t *scratch,
                                                     int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc_records(q);
    return gemm_rem(d, &rq, filter, pix0, npairs, scratch, output, TINYAOT_RQ_FLOAT_SAT);
}

static __attribute__((noinline)) int gemm_smlal_sat(const tinyaot_conv_dims_t *d,
                                                     const tinyaot_requant_t *q,
                                                     const int8_t *filter, int32_t pix0,
                                                     int32_t npairs, uint32_t *scratch,
                                                     int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    return gemm_rem(d, &rq, filter, pix0, npairs, scratch, output, TINYAOT_RQ_SMLAL_SAT);
}

/* The other modes (no whole-range records): one copy of the loops per mode, the
 * mode a constant in each (as in tinyaot_convolve_fast_s8: the requantization
 * then compiles without data-dependent branches, so every input costs the same). */
static __attribute__((noinline)) int gemm_other(const tinyaot_conv_dims_t *d,
                                                const tinyaot_requant_t *q, const int8_t *filter,
                                                int32_t pix0, int32_t npairs, uint32_t *scratch,
                                                int8_t *output)
{
    const tinyaot_rqc_t rq = tinyaot_rqc(q);
    switch (rq.mode) {
    case TINYAOT_RQ_ORT:
        gemm_m(d, &rq, filter, pix0, npairs, scratch, output, TINYAOT_RQ_ORT, -1);
        break;
    case TINYAOT_RQ_TFLITE:
        gemm_m(d, &rq, filter, pix0, npairs, scratch, output, TINYAOT_RQ_TFLITE, -1);
        break;
    default: /* TINYAOT_RQ_SMLAL: records with a clamp */
        gemm_m(d, &rq, filter, pix0, npairs, scratch, output, TINYAOT_RQ_SMLAL, -1);
        break;
    }
    return TINYAOT_OK;
}

/* scratch: *_get_buffer_size(d, block_pairs) bytes, 4-byte aligned (planned in the
 * arena); block_pairs >= 1 pixel pairs per block. */
int tinyaot_convolve_fast_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                const int8_t *input, const int8_t *filter, int32_t block_pairs,
                                uint32_t *scratch, int8_t *output)
{
    if (d->groups != 1 || block_pairs < 1) {
        return TINYAOT_ERR_ARG;
    }
    if (!im2col_built(d)) {
        return TINYAOT_ERR_NOT_BUILT; /* its columns' kind is not compiled */
    }
    int mode;
    if (tinyaot_rq_float_records(q)) {
        mode = TINYAOT_RQ_FLOAT_SAT;
    } else {
        mode = tinyaot_rqc(q).mode == TINYAOT_RQ_SMLAL_SAT ? TINYAOT_RQ_SMLAL_SAT : TINYAOT_RQ_ORT;
    }
    /* TINYAOT_RQ_ORT stands for every mode without whole-range records here (their
     * loops are compiled or not together: TINYAOT_SPEC_CONVW8_MODES) */
    if (!W8_HAS_MODE(mode)) {
        return TINYAOT_ERR_NOT_BUILT;
    }
    const int32_t npairs = (d->out_h * d->out_w + 1) / 2;
    for (int32_t i = 0; i < npairs; i += block_pairs) {
        const int32_t n = npairs - i < block_pairs ? npairs - i : block_pairs;
        int r;
        build_columns(d, input, q->in_zp, 2 * i, n, scratch, w8_group(d, mode));
        if (mode == TINYAOT_RQ_FLOAT_SAT) {
            r = gemm_float_sat(d, q, filter, 2 * i, n, scratch, output);
        } else if (mode == TINYAOT_RQ_SMLAL_SAT) {
            r = gemm_smlal_sat(d, q, filter, 2 * i, n, scratch, output);
        } else {
            r = gemm_other(d, q, filter, 2 * i, n, scratch, output);
        }
        if (r != TINYAOT_OK) {
            return r;
        }
    }
    return TINYAOT_OK;
}
