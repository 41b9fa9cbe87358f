"""Which specializations of the fast kernels a model's layers use -> tinyaot_model_config.h.

The fast conv, depthwise and FC kernels inline one copy of their loops per
requantization mode (and the conv GEMM one per nquads % 8), chosen at run time
from the layer's tinyaot_requant_t. A firmware build compiles runtime_c with the
generated directory on its include path, so this header tells the kernels
(runtime_c/src/internal/tinyaot_specialize.h) which copies to compile; a call
needing another returns TINYAOT_ERR_NOT_BUILT. The classification here mirrors
the kernels' own: tinyaot_rqc / tinyaot_rqc_records (tinyaot_requant_fast.h),
fc_mode (tinyaot_fully_connected_fast_s8.c), is_pointwise and nquads
(tinyaot_convolve_fast_s8.c, tinyaot_convolve_fast_w8_s8.c).
"""
from __future__ import annotations

from .fast_pack import conv_column_k, conv_column_tails

HEADER = "tinyaot_model_config.h"

# TINYAOT_RQ_* (runtime_c/src/internal/tinyaot_requant_fast.h)
RQ_ORT, RQ_TFLITE, RQ_SMLAL, RQ_SMLAL_SAT, RQ_FLOAT_SAT = range(5)
# the FC's own modes beyond TINYAOT_RQ_SMLAL_SAT (tinyaot_fully_connected_fast_s8.c)
FC_ORT_SAT, FC_ORT_USAT, FC_FIXED = 4, 5, 6
KIND_POINTWISE, KIND_IM2COL = 0, 1

CONV_MODES = "TINYAOT_SPEC_CONV_MODES"
CONV_REMS = "TINYAOT_SPEC_CONV_REMS"
CONV_KINDS = "TINYAOT_SPEC_CONV_KINDS"
CONVW8_MODES = "TINYAOT_SPEC_CONVW8_MODES"
CONVW8_REMS = "TINYAOT_SPEC_CONVW8_REMS"
IM2COL = "TINYAOT_SPEC_IM2COL"
IM2COL_QUADS, IM2COL_TAILS, IM2COL_WORD = 0, 1, 2
WINO_MODES = "TINYAOT_SPEC_WINO_MODES"
WINO_REMS = "TINYAOT_SPEC_WINO_REMS"
DW_MODES = "TINYAOT_SPEC_DW_MODES"
DW_KINDS = "TINYAOT_SPEC_DW_KINDS"
DW_ROW3 = 0
DW_ROW3G = 1  # the rows' pass group by group (dw3_group_major)
DW_ROW3S2 = 2  # the rows' three outputs at stride 2
DW_COLS = 3  # a 1-D layer's rows in one asm statement (tflite)
# a model compiles the three-output passes (about 6 KB of code) when one of its layers of
# 8 or more channel quads runs some outputs through them (the rule since they came), or any
# layer at least this many groups of three outputs x channel quads (measured: 100 to 180
# cycles saved per group and quad, so some 25K cycles or more for the code's 6 KB)
DW_ROW3_MIN_QUADS = 8
DW_ROW3_MIN_GROUPS = 256
# dw3_group_major's constants (tinyaot_depthwise_conv_fast_s8_3x3.inc)
DW3_CODE_BYTES = 1300
DW3_QUAD_BYTES = 152
FC_MODES = "TINYAOT_SPEC_FC_MODES"
NARROW_MODES = "TINYAOT_SPEC_NARROW_MODES"
POOL_KINDS = "TINYAOT_SPEC_POOL_KINDS"
POOL_QUADS = 0
# the one-SMLAL requantization's sign fix (tinyaot_requant_fast.h: TINYAOT_RQ_NEG_FIX), per
# kernel (TINYAOT_SPEC_FIX_*): compiled where one of the kernel's layers clamps below its
# output zero point; a kernel whose layers all clamp at or above it (fused ReLUs) saves two
# instructions an output
RQ_FIX = "TINYAOT_SPEC_RQ_FIX"
FIX_BITS = {"tinyaot_convolve_fast_s8": 0, "tinyaot_convolve_1x1_w8_s8": 1,
            "tinyaot_depthwise_conv_fast_s8": 2, "tinyaot_convolve_narrow_s8": 3,
            "tinyaot_convolve_sparse_s8": 4}
MASKS = (CONV_MODES, CONV_REMS, CONV_KINDS, CONVW8_MODES, CONVW8_REMS, IM2COL, WINO_MODES,
         WINO_REMS, DW_MODES, DW_KINDS, FC_MODES, NARROW_MODES, POOL_KINDS, RQ_FIX)

_NULL = "NULL"


def _full_range(r) -> bool:
    return r.act_min <= -128 and r.act_max >= 127


def rq_mode(r, records=True) -> int:
    """The TINYAOT_RQ_* mode a fast kernel reads from RequantRecord r (tinyaot_rqc, or
    tinyaot_rqc_records for the conv and depthwise kernels: records=True)."""
    if (records and r.scale != _NULL and r.rq != _NULL and r.post_bias == _NULL
            and _full_range(r)):
        return RQ_FLOAT_SAT
    if r.scale != _NULL:
        return RQ_ORT
    if r.rq == _NULL:
        return RQ_TFLITE
    return RQ_SMLAL_SAT if _full_range(r) else RQ_SMLAL


def im2col_uses(d) -> dict:
    """{mask: bits} of the im2col columns of a fast conv (whole-quad rows or tails; rows
    of at most one quad cut by an edge as one shifted word: im2col_word_rows, where an
    undilated window row is at most a quad, the input row at least one, and a window
    crosses the left or right edge)."""
    tails = conv_column_tails(d.k_h, d.k_w, d.in_c)
    bits = 1 << (IM2COL_TAILS if tails else IM2COL_QUADS)
    cut = d.pad_left > 0 or (d.out_w - 1) * d.stride_w - d.pad_left + d.k_w > d.in_w
    if (not tails and d.dil_w == 1 and d.k_w * d.in_c <= 4 and d.in_c % 4
            and d.in_w * d.in_c >= 4 and cut):
        bits |= 1 << IM2COL_WORD
    return {IM2COL: bits}


def conv_uses(r, d) -> dict:
    """{mask: bits} of one tinyaot_convolve_fast_s8 call: RequantRecord r, ConvDims d."""
    mode = rq_mode(r)
    pointwise = (d.k_h == 1 and d.k_w == 1 and d.stride_h == 1 and d.stride_w == 1
                 and d.pad_top == 0 and d.pad_left == 0 and d.in_h == d.out_h
                 and d.in_w == d.out_w)
    out = {CONV_MODES: 1 << mode, CONV_KINDS: 1 << (KIND_POINTWISE if pointwise else KIND_IM2COL)}
    if not pointwise or d.out_h * d.out_w % 2:  # (a pointwise conv's odd last pixel: im2col)
        out.update(im2col_uses(d))
    if mode in (RQ_SMLAL_SAT, RQ_FLOAT_SAT):  # their loops come per nquads % 8
        nquads = conv_column_k(d.k_h, d.k_w, d.in_c) // 4
        out[CONV_REMS] = 1 << (nquads & 7)
    return out


def _records_uses(r, modes, rems, nquads) -> dict:
    """{mask: bits} of a kernel with one copy of its loops per whole-range record mode
    (SMLAL_SAT, FLOAT_SAT: bit `modes`, with nquads % 8 in `rems`) and one for every other
    mode (bit RQ_ORT)."""
    mode = rq_mode(r)
    if mode not in (RQ_SMLAL_SAT, RQ_FLOAT_SAT):
        return {modes: 1 << RQ_ORT}
    return {modes: 1 << mode, rems: 1 << (nquads & 7)}


def conv_w8_uses(r, d) -> dict:
    """{mask: bits} of one tinyaot_convolve_fast_w8_s8 call: its two record modes, with
    their nquads % 8, or bit RQ_ORT for every other mode (one copy of its loops)."""
    return merge(_records_uses(r, CONVW8_MODES, CONVW8_REMS,
                               conv_column_k(d.k_h, d.k_w, d.in_c) // 4), im2col_uses(d))


def winograd_uses(r, d) -> dict:
    """{mask: bits} of one tinyaot_convolve_winograd_s8 call: as conv_w8_uses, its GEMM's
    quads being the input channels'."""
    return _records_uses(r, WINO_MODES, WINO_REMS, d.in_c // 4)


def _dw3_row_groups(d) -> tuple[int, int]:
    """(rows, groups per row) of a 3x3 depthwise layer's three-output rows, as dw_run
    finds them: the rows whose window rows all lie inside the input, and in each the
    outputs [x_a, x_b) whose windows do, three to a group."""
    sw = d.stride_w
    x_a = -(-d.pad_left // sw)
    x_b = min((d.in_w - 3 + d.pad_left) // sw + 1, d.out_w)
    rows = sum(0 <= oy * d.stride_h - d.pad_top <= d.in_h - 3 for oy in range(d.out_h))
    return rows, max(x_b - x_a, 0) // 3


def depthwise_row3(mode: int, d) -> bool:
    """Does tinyaot_depthwise_conv_fast_s8 run enough of this layer's outputs three at a
    time to compile its passes (dw_run: a record mode, 3x3 undilated at stride 1 along
    the row; three outputs of a row whose windows lie inside the input, in a row whose
    window rows all do; in a 'same' layer at stride 1 also three edge outputs down a side
    column or along the top and bottom rows): on DW_ROW3_MIN_QUADS quads or more, or
    DW_ROW3_MIN_GROUPS groups x quads?"""
    if (mode not in (RQ_SMLAL_SAT, RQ_FLOAT_SAT) or (d.k_h, d.k_w) != (3, 3)
            or (d.dil_h, d.dil_w) != (1, 1) or d.stride_w != 1
            or d.in_w - 3 + d.pad_left < 0):
        return False
    rows, n3 = _dw3_row_groups(d)
    groups = rows * n3
    # a 'same' layer at stride 1 also takes its edges three at a time (dw_run: nv, nh)
    if (d.stride_h == 1 and d.pad_top == 1 and d.pad_left == 1 and d.out_h == d.in_h
            and d.out_w == d.in_w and d.in_h >= 2 and d.in_w >= 2):
        groups += 2 * ((d.in_h - 2) // 3) + 2 * ((d.in_w - 2) // 3)
    nq = d.in_c // 4
    return groups > 0 and (nq >= DW_ROW3_MIN_QUADS or groups * nq >= DW_ROW3_MIN_GROUPS)


def dw3_group_major(nq: int, ngroups: int, ncol: int) -> bool:
    """The kernel's dw3_group_major: does a three-output pass of ngroups groups (ncol
    runs) on nq quads read fewer bytes from flash group by group (a call per group: the
    pass's code and every quad's weights and records) than quad by quad (a call per quad
    and run: the code and one quad's)?"""
    return (ngroups * (DW3_CODE_BYTES + nq * DW3_QUAD_BYTES)
            < nq * ncol * (DW3_CODE_BYTES + DW3_QUAD_BYTES))


def depthwise_row3_group_major(d) -> bool:
    """Do the inner outputs of this layer's rows (depthwise_row3) go group by group
    (dw_run: n3 groups of three from x_a in each row whose window rows are inside)?"""
    rows, n3 = _dw3_row_groups(d)
    return n3 > 0 and rows > 0 and dw3_group_major(d.in_c // 4, rows * n3, n3)


def depthwise_row3_s2(mode: int, d) -> bool:
    """Does a 3x3 stride-2 depthwise layer run DW_ROW3_MIN_GROUPS groups x quads through
    the rows' stride-2 pass (dw_run: three outputs of a row whose windows lie inside the
    input, x_a .. x_b, in the rows whose window rows all do)?"""
    if (mode not in (RQ_SMLAL_SAT, RQ_FLOAT_SAT) or (d.k_h, d.k_w) != (3, 3)
            or (d.dil_h, d.dil_w) != (1, 1) or d.stride_w != 2
            or d.in_w - 3 + d.pad_left < 0):
        return False
    rows, n3 = _dw3_row_groups(d)
    return rows * n3 * (d.in_c // 4) >= DW_ROW3_MIN_GROUPS


def depthwise_cols(mode: int, d) -> bool:
    """Does tinyaot_depthwise_conv_fast_s8 run this layer's rows in one asm statement
    (dw_columns_sat: one-SMLAL records, a 1-D layer down one column whose windows all lie
    inside the input)?"""
    return (mode == RQ_SMLAL_SAT and d.k_w == 1 and d.in_w == 1 and d.out_w == 1
            and d.in_c % 4 == 0 and d.in_c > 0 and d.pad_top == 0 and d.pad_left == 0
            and (d.out_h - 1) * d.stride_h + (d.k_h - 1) * d.dil_h < d.in_h)


def depthwise_uses(r, d=None) -> dict:
    """{mask: bits} of one tinyaot_depthwise_conv_fast_s8 call (ConvDims d: whether its
    three-output rows run, group by group, or at stride 2)."""
    mode = rq_mode(r)
    out = {DW_MODES: 1 << mode}
    if d is not None and depthwise_row3(mode, d):
        out[DW_KINDS] = 1 << DW_ROW3 | (1 << DW_ROW3G if depthwise_row3_group_major(d) else 0)
    if d is not None and depthwise_row3_s2(mode, d):
        out[DW_KINDS] = out.get(DW_KINDS, 0) | 1 << DW_ROW3S2
    if d is not None and depthwise_cols(mode, d):
        out[DW_KINDS] = out.get(DW_KINDS, 0) | 1 << DW_COLS
    return out


def narrow_uses(r) -> dict:
    """{mask: bits} of one tinyaot_convolve_narrow_s8 call."""
    return {NARROW_MODES: 1 << rq_mode(r)}


def fc_uses(r, fixed: bool) -> dict:
    """{mask: bits} of one tinyaot_fully_connected_fast_s8 call (fixed: the ort
    fixed-point records in the weight stream, r without bias)."""
    if fixed:
        return {FC_MODES: 1 << FC_FIXED}
    mode = rq_mode(r, records=False)
    if mode == RQ_ORT and _full_range(r):
        mode = FC_ORT_USAT if r.out_zp == -128 else FC_ORT_SAT
    return {FC_MODES: 1 << mode}


def rq_fix_uses(kernel: str, r) -> dict:
    """{mask: bits} of a call of `kernel` with RequantRecord r for the sign fix: its bit
    when the layer may clamp below its output zero point (act_min < out_zp, as the
    kernel's tinyaot_rq_fix_built tests, whatever its mode), else nothing."""
    if kernel in FIX_BITS and r.act_min < r.out_zp:
        return {RQ_FIX: 1 << FIX_BITS[kernel]}
    return {}


def merge(into: dict, uses: dict) -> dict:
    for k, v in uses.items():
        into[k] = into.get(k, 0) | v
    return into


def header_text(masks: dict, models=()) -> str:
    """tinyaot_model_config.h for the union `masks` of the calls of `models` (C names)."""
    who = ", ".join(models) if models else "the model"
    lines = [f"/* Generated by tinyaot for {who}. Do not edit.",
             " * The fast kernels' specializations these layers use (runtime_c/src/internal/",
             " * tinyaot_specialize.h): a build with this directory on its include path compiles",
             " * only these; a call needing another returns TINYAOT_ERR_NOT_BUILT. */",
             "#ifndef TINYAOT_MODEL_CONFIG_H", "#define TINYAOT_MODEL_CONFIG_H", ""]
    for m in MASKS:
        lines.append(f"#define {m} 0x{masks.get(m, 0):02x}u")
    lines += ["", "#endif", ""]
    return "\n".join(lines)
