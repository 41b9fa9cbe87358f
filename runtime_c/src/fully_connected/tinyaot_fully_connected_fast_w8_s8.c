/* Fast fully connected with int8 weights in flash: two output rows per int16
 * lane. The weights of a row pair (lo, hi) are stored as one halfword per
 * input k, H = 256 * w_hi[k] + w_lo[k] (codegen/kernels/fast_pack.py:
 * pack_fc_pairs; one byte a weight, as int8 weights take). Against a column
 * word {x_a, x_b} (the fast FC's int16 column, tinyaot_widen_row):
 *   SMLAD(word, x)          adds 256 * (hi's two MACs) + lo's two MACs,
 *   SMLAD(SXTB16(word), x)  adds lo's two MACs (the low bytes, sign-extended),
 * so per weight word (4 MACs) one load, one SXTB16 and two SMLADs, where
 * int8 weights otherwise take two SXTB16s and int16 weights two loads. With
 * A and S those two sums, A started at lo's bias + 256 * hi's and S at lo's
 * bias, hi's sum with its bias is (A - S) / 256, exact as long as it is within
 * [-2^23, 2^23): the compiler checks that bound for every row from the
 * weights, the input range and the bias (pack_fc_pairs) and H within int16
 * (TFLite's weights are in [-127, 127]), and keeps the int16 kernel where
 * either fails. A and S wrap mod 2^32, as SMLAD does, and the difference is
 * still exact.
 *
 * Stream: per group of up to four pairs (rows 8g .. 8g + 7), per quad of k
 * (column words {x0, x2}, {x1, x3}), the pairs' words {H0, H2}, then their
 * words {H1, H3}; the last group has the pairs left (a zero hi row pads an
 * odd N). The
 * requantization is the one-SMLAL records' (tinyaot_requant_fast.h) over
 * the whole int8 range, the mode every TFLite layer the compiler gives this
 * kernel has; others are refused (TINYAOT_ERR_ARG). Its records are split
 * (fast_pack.fc_pair_records): q->bias the pairs' starts {A, S} (lo's bias
 * + 256 * hi's, lo's bias: one LDM a group), and q->rq = {step, the headers
 * {m, e - 1, R lo, R hi} of the first group's eight channels, ...} with step
 * the words from one group's headers to the next: 32 (a header per channel),
 * or 0 (a per-tensor layer, TFLite's FULLY_CONNECTED: one group of eight
 * serves every group, 4 bytes a channel where whole records take 20; the asm
 * then holds the one header in registers for all eight outputs of a group).
 *
 * With the DSP extension (optimized builds) every whole group runs in one asm
 * statement: per quad 37 cycles for 32 MACs on the M4 (three runs of single
 * loads, FCP_QUAD_AT), its 32 bytes of weights one flash cache line when the
 * stream starts 8 bytes past a 16-byte boundary (the compiler pads it so:
 * ops/fully_connected.py, FC_PAIR_PAD; docs/cycle-model.md); the loop,
 * requantization included, stays within the STM32L4R5's 1 KB instruction
 * cache (eight quads a pass would leave it: ideal -1.4 %, STM32L4R5 model
 * +21 % on ad01). Elsewhere, and for
 * the last group's pairs, the same integers in C on the intrinsics of
 * tinyaot_intrinsics.h. */
#include "tinyaot_fast_kernels.h"
#include "../internal/tinyaot_fixedpoint.h"
#include "../internal/tinyaot_gemm_q15.h"

#if TINYAOT_HAVE_DSP_ASM && defined(__OPTIMIZE__)
#define FCP_ASM 1
#else
#define FCP_ASM 0
#endif

int32_t tinyaot_fully_connected_fast_w8_s8_get_buffer_size(int32_t in_features)
{
    return ((in_features + 3) / 4) * 4 * (int32_t)sizeof(int16_t);
}

/* One group of np <= 4 pairs (2 np rows, n of them real; their headers head,
 * pairs' starts b, outputs o) over nq quads of the column. Returns the next group's
 * weights. */
static const uint32_t *fcp_group(const uint32_t *col, int32_t nq, const uint32_t *w, int32_t np,
                                 const int32_t *head, const int32_t *b, int32_t n, int8_t *o)
{
    uint32_t a[4], s[4];
    for (int32_t p = 0; p < np; ++p) {
        a[p] = (uint32_t)b[2 * p];
        s[p] = (uint32_t)b[2 * p + 1];
    }
    for (int32_t j = 0; j < nq; ++j, w += 2 * np) {
        const uint32_t xa = col[2 * j], xb = col[2 * j + 1];
        for (int32_t p = 0; p < np; ++p) {
            a[p] = __SMLAD(w[p], xa, a[p]);
            s[p] = __SMLAD(__SXTB16(w[p]), xa, s[p]);
            a[p] = __SMLAD(w[np + p], xb, a[p]);
            s[p] = __SMLAD(__SXTB16(w[np + p]), xb, s[p]);
        }
    }
    for (int32_t p = 0; p < np; ++p) {
        o[2 * p] = tinyaot_rq_split_out(tinyaot_fp_s32(s[p]), head + 8 * p);
        if (2 * p + 1 < n) {
            o[2 * p + 1] = tinyaot_rq_split_out(tinyaot_fp_asr(tinyaot_fp_s32(a[p] - s[p]), 8), head + 8 * p + 4);
        }
    }
    return w;
}

#if FCP_ASM
/* The whole groups of four pairs in one asm statement. Registers: column r0,
 * weights r1, column and weight words in r2-r5 (FCP_QUAD_AT; the weights'
 * SXTB16 in place), sums A/S of pair p in r6/r7, r8/r9, r10/r11, r12/lr; the
 * loads between low registers are 16-bit instructions. Every register is the
 * loop's, so its state is in memory operands (this frame's locals). */
typedef struct {
    const uint32_t *col, *end4, *end; /* the column, its last whole 4 quads, its end */
    const uint32_t *w;
    const int32_t *h;  /* this group's headers, 4 words a channel */
    int32_t hstep;     /* bytes to the next group's: 128, or 0 (per tensor) */
    const int32_t *b;  /* this group's pairs' starts {A, S} */
    int8_t *o;
    const int8_t *o_end;
    uint64_t spill; /* pair 0's sums while the others are requantized */
} fcp_loop_t;

/* pair (A, S) += weight word W against column word X (W's SXTB16 in place) */
#define FCP_W(A, S, W, X)                                                                          \
    "smlad " A ", " W ", " X ", " A "\n\t" "sxtb16 " W ", " W "\n\t" "smlad " S ", " W ", " X ", " S "\n\t"
/* quad Q: column words Xa, Xb, the pairs' words W0a..W3a, then W0b..W3b, in three runs
 * of single LDRs (a run of n costs n + 1 cycles on the M4, pipelined) that fill the four
 * registers free: {Xa, W0a, W1a, W2a} (Xa stays for W3a), {W3a, Xb, W0b}, {W1b, W2b,
 * W3b}: 13 cycles of loads and 24 of SMLAD / SXTB16, 37 for 32 MACs (a run per pair
 * after the first took 38). The column and the weights step by post-indexed first loads
 * (their pass's bytes), the others read back from there: CO, WO the quad's offsets from
 * the stepped cursors. */
#define FCP_QUAD_AT(C0, W0, CO, WO)                                                                \
    "ldr r2, " C0 "\n\t" "ldr r3, " W0 "\n\t"                                                       \
    "ldr r4, [r1, #(" WO " + 4)]\n\t" "ldr r5, [r1, #(" WO " + 8)]\n\t"                             \
    FCP_W("r6", "r7", "r3", "r2") FCP_W("r8", "r9", "r4", "r2") FCP_W("r10", "r11", "r5", "r2")    \
    "ldr r3, [r1, #(" WO " + 12)]\n\t" "ldr r4, [r0, #(" CO " + 4)]\n\t"                            \
    "ldr r5, [r1, #(" WO " + 16)]\n\t"                                                             \
    FCP_W("r12", "lr", "r3", "r2") FCP_W("r6", "r7", "r5", "r4")                                   \
    "ldr r2, [r1, #(" WO " + 20)]\n\t" "ldr r3, [r1, #(" WO " + 24)]\n\t"                           \
    "ldr r5, [r1, #(" WO " + 28)]\n\t"                                                             \
    FCP_W("r8", "r9", "r2", "r4") FCP_W("r10", "r11", "r3", "r4") FCP_W("r12", "lr", "r5", "r4")
#define FCP_QUAD(CO, WO) FCP_QUAD_AT("[r0, #" CO "]", "[r1, #" WO "]", CO, WO)
/* requantize sum A (bias included) of the channel whose header is HOFF bytes on
 * (r0) into [r1, #OOFF]; 0x80000000 in r6 (TINYAOT_RQ_SMLAL_REGS_S: the flags are dead) */
#define FCP_RQ(A, HOFF, OOFF)                                                                      \
    TINYAOT_LDR4("r0", HOFF, "r2", "r3", "r4", "r5")                                               \
    TINYAOT_RQ_SMLAL_REGS_S(A, "r2", "r3", "r4", "r5", "r6") "strb r5, [r1, #" OOFF "]\n\t"
/* the same with a per-tensor layer's one header {m, e - 1, R lo, R hi} held in
 * r2-r5: R less the sign fix's [A < 0] * 2^31 as a 64-bit difference into r0:r7
 * (AND, SUBS, SBC: three cycles, where reloading R takes four and the fix two
 * more), then SMLAL, ASR, SSAT: the same 64-bit sum modulo 2^64 */
#if TINYAOT_RQ_NEG_FIX
#define FCP_RQT_R(A)                                                                               \
    "and r0, " A ", #0x80000000\n\t" "subs r0, r4, r0\n\t" "sbc r7, r5, #0\n\t"
#else
#define FCP_RQT_R(A) "mov r0, r4\n\t" "mov r7, r5\n\t"
#endif
#define FCP_RQT(A, OOFF)                                                                           \
    FCP_RQT_R(A) "smlal r0, r7, " A ", r2\n\t" "asrs r7, r7, r3\n\t" "ssat r7, #8, r7\n\t"         \
    "strb r7, [r1, #" OOFF "]\n\t"

static __attribute__((noinline)) const uint32_t *fcp_groups_asm(fcp_loop_t *Lp)
{
    fcp_loop_t L = *Lp;
    __asm__ volatile(
        "1:\n\t"
        /* the group's sums start at its pairs' starts {A, S}, in their registers' order */
        "ldr r0, %[b]\n\t"
        "ldm r0, {r6-r12, lr}\n\t"
        "ldr r0, %[col]\n\t"
        "ldr r1, %[w]\n\t"
        "ldr r2, %[end4]\n\t"
        "cmp r0, r2\n\t"
        "beq 3f\n\t"
        "2:\n\t"
        FCP_QUAD_AT("[r0], #32", "[r1], #128", "-32", "-128") FCP_QUAD("-24", "-96")
        FCP_QUAD("-16", "-64") FCP_QUAD("-8", "-32")
        "ldr r2, %[end4]\n\t"
        "cmp r0, r2\n\t"
        "bne 2b\n\t"
        "3:\n\t"
        "ldr r2, %[end]\n\t"
        "cmp r0, r2\n\t"
        "beq 5f\n\t"
        "4:\n\t" FCP_QUAD_AT("[r0], #8", "[r1], #32", "-8", "-32")
        "ldr r2, %[end]\n\t"
        "cmp r0, r2\n\t"
        "bne 4b\n\t"
        "5:\n\t"
        "str r1, %[w]\n\t"
        /* the hi rows' sums (A - S) / 256 */
        "sub r6, r6, r7\n\t" "asr r6, r6, #8\n\t"
        "sub r8, r8, r9\n\t" "asr r8, r8, #8\n\t"
        "sub r10, r10, r11\n\t" "asr r10, r10, #8\n\t"
        "sub r12, r12, lr\n\t" "asr r12, r12, #8\n\t"
        "ldr r0, %[h]\n\t"
        "ldr r1, %[o]\n\t"
        "ldr r2, %[hstep]\n\t"
        "cmp r2, #0\n\t"
        "beq 7f\n\t"
        /* per channel: each output's header loaded (hstep 128) */
        "strd r6, r7, %[spill]\n\t"
        "mov r6, #0x80000000\n\t"
        FCP_RQ("r9", "32", "2") FCP_RQ("r8", "48", "3")
        FCP_RQ("r11", "64", "4") FCP_RQ("r10", "80", "5")
        FCP_RQ("lr", "96", "6") FCP_RQ("r12", "112", "7")
        "ldrd r8, r9, %[spill]\n\t"
        FCP_RQ("r9", "0", "0") FCP_RQ("r8", "16", "1")
        "adds r0, r0, #128\n\t"
        "str r0, %[h]\n\t"
        "b 8f\n\t"
        /* per tensor (hstep 0): one header for every output, in r2-r5 */
        "7:\n\t"
        TINYAOT_LDR4("r0", "0", "r2", "r3", "r4", "r5")
        "str r7, %[spill]\n\t"
        FCP_RQT("r9", "2") FCP_RQT("r8", "3") FCP_RQT("r11", "4") FCP_RQT("r10", "5")
        FCP_RQT("lr", "6") FCP_RQT("r12", "7") FCP_RQT("r6", "1")
        "ldr r6, %[spill]\n\t"
        FCP_RQT("r6", "0")
        "8:\n\t"
        "ldr r0, %[b]\n\t"
        "adds r0, r0, #32\n\t"
        "str r0, %[b]\n\t"
        "adds r1, r1, #8\n\t"
        "str r1, %[o]\n\t"
        "ldr r2, %[o_end]\n\t"
        "cmp r1, r2\n\t"
        "bne 1b"
        : [w] "+m"(L.w), [h] "+m"(L.h), [b] "+m"(L.b), [o] "+m"(L.o), [spill] "+m"(L.spill)
        : [col] "m"(L.col), [end4] "m"(L.end4), [end] "m"(L.end), [o_end] "m"(L.o_end),
          [hstep] "m"(L.hstep)
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr",
          "cc", "memory");
    return L.w;
}
#undef FCP_W
#undef FCP_QUAD_AT
#undef FCP_QUAD
#undef FCP_RQ
#undef FCP_RQT_R
#undef FCP_RQT
#endif

int tinyaot_fully_connected_fast_w8_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                       const tinyaot_requant_t *q, const int8_t *input,
                                       const int32_t *packed_weights, uint32_t *scratch,
                                       int8_t *output)
{
    if (!tinyaot_rq_split_ok(q) || in_features < 1 || out_features < 1) {
        return TINYAOT_ERR_ARG;
    }
    const int32_t nq = (in_features + 3) / 4;
    const uint32_t off = tinyaot_pack16(-q->in_zp, -q->in_zp);
    for (int32_t r = 0; r < rows; ++r) {
        int8_t *o = output + r * out_features;
        const uint32_t *w = (const uint32_t *)(const void *)packed_weights;
        int32_t ch = 0;
        tinyaot_widen_row(input + r * in_features, in_features, scratch, off, q->in_zp);
#if FCP_ASM
        const int32_t groups = out_features / 8;
        if (groups > 0) {
            fcp_loop_t L;
            L.col = scratch;
            L.end4 = scratch + 2 * (nq & ~3);
            L.end = scratch + 2 * nq;
            L.w = w;
            L.h = q->rq + 1;
            L.hstep = 4 * q->rq[0];
            L.b = q->bias;
            L.o = o;
            L.o_end = o + 8 * groups;
            L.spill = 0u;
            w = fcp_groups_asm(&L);
            ch = 8 * groups;
        }
#endif
        for (; ch < out_features; ch += 8) {
            const int32_t n = out_features - ch < 8 ? out_features - ch : 8;
            w = fcp_group(scratch, nq, w, (n + 1) / 2, tinyaot_rq_split_head(q, ch), q->bias + ch,
                          n, o + ch);
        }
    }
    return TINYAOT_OK;
}
