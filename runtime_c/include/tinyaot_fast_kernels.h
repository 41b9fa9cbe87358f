/* tinyaot fast kernels: DSP-friendly int8 conv / depthwise / fully connected.
 *
 * Selected per layer by the code generator (codegen/passes/kernel_select.py)
 * and bit-exact with the reference kernels of tinyaot_kernels.h: the int32
 * accumulators are the same exact sums (only the order of the additions
 * differs, which cannot change an integer sum that does not overflow), and
 * requantization is tinyaot_requant_ort / a bit-identical form of
 * tinyaot_requant_tflite (src/internal/tinyaot_requant_fast.h).
 *
 * Their speed is the DSP extension's (SMLAD, SXTAB16, SMLABB, SSAT, ...):
 * where the compiler targets it (TINYAOT_HAVE_DSP_ASM,
 * src/internal/tinyaot_intrinsics.h) the inner loops are inline asm; on the
 * host and Cortex-M3 the same kernels compile to C on portable versions of
 * those instructions: the same bits, slower.
 *
 * Weight packing (done at compile time, codegen/kernels/fast_pack.py):
 *   GEMM weights W[oc][k] (FC: k = in feature; conv: k in the order the
 *   im2col writes a column, fast_pack.conv_gemm_weights: (ky, kx, ic) with
 *   each window row's whole quads, then all rows' last k_w * in_c % 4
 *   values), widened to int16, K padded with zeros to Kp = roundup(K, 4),
 *   out channels padded with a zero row to an even count. Stored as int32
 *   words holding two int16 (low half first), in pairs of output channels:
 *   for pair P, for quad j of k, for row r of the pair:
 *       word 0 = { W[2P+r][4j+0], W[2P+r][4j+2] }
 *       word 1 = { W[2P+r][4j+1], W[2P+r][4j+3] }
 *   which is the order __SXTAB16 / __SXTAB16_ROR8 widen four int8 inputs.
 *   The conv kernel (tinyaot_convolve_fast_s8) reads its first out_c / 4 * 4
 *   rows in groups of four, the words of a quad by half (fast_pack.
 *   pack_conv_gemm): for group G, for quad j, word 0 of rows 0..3, then word
 *   1 of rows 0..3; the out_c % 4 rows left follow as pairs (above).
 *   The FC kernel reads groups of four rows instead of pairs (rows padded
 *   with zero rows to a multiple of 4; pack_gemm(w, 4)): for group G, for
 *   quad j, for row r of the group, the same two words.
 *   ort layers with an exact fixed-point requantization (q's bias, scale,
 *   mult, shift and rq all NULL; codegen/kernels/ort_requant_fixed.py) put
 *   each group's records around its weights: [B0..B3] (the accumulators'
 *   start), the weights as above, [M0..M3, R0..R3]; output r of the group
 *   is USAT8(SMMLAR(acc_r, M_r, R_r)) - 128 (fast_pack.pack_gemm_fixed).
 *   Depthwise weights W[tap][c] (tap = ky * k_w + kx, in_c == out_c,
 *   in_c % 4 == 0): for channel quad j, for tap t: the same two words.
 *
 * Scratch: the conv and FC kernels widen their input (minus the input zero
 * point) into `scratch`, planned in the arena by the compiler and live only
 * during the call (FC: one int16 column of roundup(K, 4), each input row in
 * turn); *_get_buffer_size gives its size in bytes (mirrored by
 * codegen/passes/kernel_select.py via kernels/fast_pack.py).
 */
#ifndef TINYAOT_FAST_KERNELS_H
#define TINYAOT_FAST_KERNELS_H

#include <stdint.h>

#include "tinyaot_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* groups == 1. Returns TINYAOT_ERR_ARG otherwise. */
int tinyaot_convolve_fast_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                             const int8_t *input, const int32_t *packed_weights,
                             uint32_t *scratch, int8_t *output);
int32_t tinyaot_convolve_fast_s8_get_buffer_size(const tinyaot_conv_dims_t *d);

/* The same on int8 weights [out_c][kq] (in the columns' order, as the fast
 * kernel's), widened per channel pair at run time; the scratch holds the
 * columns of block_pairs pixel pairs (the weights are widened once per block).
 * groups == 1. */
int tinyaot_convolve_fast_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                const int8_t *input, const int8_t *filter, int32_t block_pairs,
                                uint32_t *scratch, int8_t *output);
int32_t tinyaot_convolve_fast_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d,
                                                    int32_t block_pairs);

/* 3x3, stride 1, undilated, groups 1, in_c % 4 == 0, in_c <= 192: Winograd
 * F(2x2, 3x3) in exact integers (the same outputs as tinyaot_convolve_s8),
 * weights transformed at compile time (codegen/kernels/winograd_pack.py);
 * the scratch holds one pair of 2x2 tiles' transformed input. */
int tinyaot_convolve_winograd_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                 const int8_t *input, const int32_t *packed_weights,
                                 uint32_t *scratch, int8_t *output);
int32_t tinyaot_convolve_winograd_s8_get_buffer_size(const tinyaot_conv_dims_t *d);

/* 1x1 stride-1 unpadded conv (groups 1, out_c % 4 == 0) with int8 weights, two channels
 * per int16 lane (codegen/kernels/fast_pack.py:pack_conv_pairs, which checks the
 * layer's bound), one-SMLAL records over the whole int8 range whose odd channels'
 * fifth word is the pair's start (fast_pack.pair_records); else TINYAOT_ERR_ARG. */
int tinyaot_convolve_1x1_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                               const int8_t *input, const int32_t *packed_weights,
                               uint32_t *scratch, int8_t *output);
int32_t tinyaot_convolve_1x1_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d);

/* in_c == out_c, in_c % 4 == 0. No scratch. */
int tinyaot_depthwise_conv_fast_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                   const int8_t *input, const int32_t *packed_weights,
                                   int8_t *output);

int tinyaot_fully_connected_fast_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                    const tinyaot_requant_t *q, const int8_t *input,
                                    const int32_t *packed_weights, uint32_t *scratch,
                                    int8_t *output);
int32_t tinyaot_fully_connected_fast_s8_get_buffer_size(int32_t in_features);

/* tinyaot_fully_connected_fast_s8 with int8 weights, two rows per int16 lane
 * (codegen/kernels/fast_pack.py:pack_fc_pairs, which checks the layer's bound);
 * one-SMLAL records over the whole int8 range only (else TINYAOT_ERR_ARG). */
int tinyaot_fully_connected_fast_w8_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                       const tinyaot_requant_t *q, const int8_t *input,
                                       const int32_t *packed_weights, uint32_t *scratch,
                                       int8_t *output);
int32_t tinyaot_fully_connected_fast_w8_s8_get_buffer_size(int32_t in_features);

/* tinyaot_add_s8, bit-identical; the tflite path is faster (falls back to
 * tinyaot_add_s8 for float numerics or parameters outside its preconditions:
 * multipliers >= 0, shifts <= 0). */
int tinyaot_add_fast_s8(int32_t n, const tinyaot_add_params_t *p, const int8_t *a,
                        const int8_t *b, int32_t b_stride, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif
