/* Which specializations the fast kernels compile (conv, depthwise, FC).
 *
 * Their loops are inlined once per requantization mode (and, for the conv
 * GEMM, per nquads % 8), because the mode is a field of the layer's
 * tinyaot_requant_t, read at run time. A firmware build compiles runtime_c
 * with the model's generated directory on the include path, and that
 * directory holds tinyaot_model_config.h (codegen/kernels/specialize.py):
 * bit masks of what the model's layers use. The kernels then compile those
 * copies only, and a call needing one that was not compiled returns
 * TINYAOT_ERR_NOT_BUILT (never a wrong result). Without the header (the
 * host kernel cache, runtime_c built on its own) every copy is compiled.
 *
 * Masks (bit n set: compiled):
 *   TINYAOT_SPEC_CONV_MODES  tinyaot_convolve_fast_s8, bit TINYAOT_RQ_* mode
 *   TINYAOT_SPEC_CONV_REMS   its record modes (SMLAL_SAT, FLOAT_SAT), bit nquads % 8
 *   TINYAOT_SPEC_CONV_KINDS  bit 0: pointwise (1x1, stride 1, no pad), bit 1: im2col
 *   TINYAOT_SPEC_CONVW8_MODES tinyaot_convolve_fast_w8_s8: bit TINYAOT_RQ_SMLAL_SAT,
 *                            TINYAOT_RQ_FLOAT_SAT, or TINYAOT_RQ_ORT for all the others
 *   TINYAOT_SPEC_CONVW8_REMS its record modes, bit nquads % 8
 *   TINYAOT_SPEC_IM2COL      the two convs' im2col columns (tinyaot_im2col_q15.h): bit 0
 *                            window rows of whole quads (or one row), bit 1 rows with
 *                            tails (k_h > 1, k_w * in_c % 4 != 0), bit 2 rows of at most
 *                            one quad cut by an edge as one shifted word
 *   TINYAOT_SPEC_WINO_MODES  tinyaot_convolve_winograd_s8: as TINYAOT_SPEC_CONVW8_MODES
 *   TINYAOT_SPEC_WINO_REMS   its record modes, bit (in_c / 4) % 8
 *   TINYAOT_SPEC_DW_MODES    tinyaot_depthwise_conv_fast_s8, bit TINYAOT_RQ_* mode
 *   TINYAOT_SPEC_DW_KINDS    its bit 0: rows of 3x3 stride-1 outputs three at a time
 *                            (codegen/kernels/specialize.py: depthwise_row3), bit 1
 *                            their pass group by group (dw3_group_major), bit 2 the
 *                            rows' three outputs at stride 2
 *   TINYAOT_SPEC_FC_MODES    tinyaot_fully_connected_fast_s8: bits 0-3 TINYAOT_RQ_ORT ..
 *                            SMLAL_SAT, 4 ort over the whole int8 range, 5 the same
 *                            with zero point -128, 6 the fixed-point records
 *   TINYAOT_SPEC_NARROW_MODES tinyaot_convolve_narrow_s8, bit TINYAOT_RQ_* mode
 *   TINYAOT_SPEC_POOL_KINDS  tinyaot_avgpool_s8: bit 0 its four-channel passes (speed
 *                            builds; a size build sums each channel on its own)
 *   TINYAOT_SPEC_RQ_FIX      the one-SMLAL requantization's sign fix (tinyaot_requant_fast.h:
 *                            TINYAOT_RQ_NEG_FIX), bit TINYAOT_SPEC_FIX_* of a kernel: set
 *                            when one of its layers clamps below its output zero point */
#ifndef TINYAOT_SPECIALIZE_H
#define TINYAOT_SPECIALIZE_H

#if defined(__has_include)
#if __has_include("tinyaot_model_config.h")
#include "tinyaot_model_config.h"
#endif
#endif

#ifndef TINYAOT_SPEC_CONV_MODES
#define TINYAOT_SPEC_CONV_MODES 0xffu
#endif
#ifndef TINYAOT_SPEC_CONV_REMS
#define TINYAOT_SPEC_CONV_REMS 0xffu
#endif
#ifndef TINYAOT_SPEC_CONV_KINDS
#define TINYAOT_SPEC_CONV_KINDS 0x3u
#endif
#ifndef TINYAOT_SPEC_CONVW8_MODES
#define TINYAOT_SPEC_CONVW8_MODES 0xffu
#endif
#ifndef TINYAOT_SPEC_CONVW8_REMS
#define TINYAOT_SPEC_CONVW8_REMS 0xffu
#endif
#ifndef TINYAOT_SPEC_IM2COL
#define TINYAOT_SPEC_IM2COL 0x7u
#endif
#ifndef TINYAOT_SPEC_WINO_MODES
#define TINYAOT_SPEC_WINO_MODES 0xffu
#endif
#ifndef TINYAOT_SPEC_WINO_REMS
#define TINYAOT_SPEC_WINO_REMS 0xffu
#endif
#ifndef TINYAOT_SPEC_DW_MODES
#define TINYAOT_SPEC_DW_MODES 0xffu
#endif
#ifndef TINYAOT_SPEC_DW_KINDS
#define TINYAOT_SPEC_DW_KINDS 0xfu
#endif
#ifndef TINYAOT_SPEC_FC_MODES
#define TINYAOT_SPEC_FC_MODES 0xffu
#endif
#ifndef TINYAOT_SPEC_NARROW_MODES
#define TINYAOT_SPEC_NARROW_MODES 0xffu
#endif
#ifndef TINYAOT_SPEC_POOL_KINDS
#define TINYAOT_SPEC_POOL_KINDS 0x1u
#endif
#ifndef TINYAOT_SPEC_RQ_FIX
#define TINYAOT_SPEC_RQ_FIX 0xffu
#endif

/* Is bit n of mask set? (a constant wherever n is) */
#define TINYAOT_SPEC_HAS(mask, n) ((((unsigned)(mask)) >> (n)) & 1u)

#define TINYAOT_SPEC_KIND_POINTWISE 0
#define TINYAOT_SPEC_KIND_IM2COL 1
#define TINYAOT_SPEC_IM2COL_QUADS 0
#define TINYAOT_SPEC_IM2COL_TAILS 1
#define TINYAOT_SPEC_IM2COL_WORD 2
#define TINYAOT_SPEC_DW_ROW3 0
#define TINYAOT_SPEC_DW_ROW3G 1
#define TINYAOT_SPEC_DW_ROW3S2 2
#define TINYAOT_SPEC_DW_COLS 3
#define TINYAOT_SPEC_POOL_QUADS 0
#define TINYAOT_SPEC_FIX_CONV 0   /* tinyaot_convolve_fast_s8 */
#define TINYAOT_SPEC_FIX_1X1 1    /* tinyaot_convolve_1x1_w8_s8 */
#define TINYAOT_SPEC_FIX_DW 2     /* tinyaot_depthwise_conv_fast_s8 */
#define TINYAOT_SPEC_FIX_NARROW 3 /* tinyaot_convolve_narrow_s8 */
#define TINYAOT_SPEC_FIX_SPARSE 4 /* tinyaot_convolve_sparse_s8 */

#endif
