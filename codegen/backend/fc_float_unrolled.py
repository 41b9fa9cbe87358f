"""A float FC layer (MLAS GEMV4 order) as straight-line Thumb-2/VFP code
specialized to its weights, zero weights left out (`--numerics ort`,
`--optimize speed`, Cortex-M with an FPv4+ FPU and the DSP extension).

Why dropping a zero weight is exact: a dequantized int8 weight of 0 is
exactly 0.0f, and x * 0 is +-0 for the finite dequantized x. MLAS sums, per
output, t = bias, then per k group of 4 part = ((p0 + p1) + p2) + p3 (each
product rounded, no fma) and t = part + t. Adding +-0 to a nonzero float
returns it unchanged and +-0 + +-0 is +-0, so leaving the zero products out
gives every partial sum the same value up to the sign of an exact zero; no
later operation multiplies t, and QuantizeLinear maps +0 and -0 to the same
integer. Per (k group, output) with nz nonzero weights: VMUL, nz-1 VMLA
(product rounded, then added: FPv4 VMLA is not fused) on the first weight's
register, then VADD onto the total; nz == 1 is one VMLA straight onto the
total (t + fl(x*w)); nz == 0 costs nothing.

Registers: the 8 totals of a block of outputs in s24-s31 (from the biases,
which lead each block in the weight stream), x of a pair of k groups in
s16-s23, the nonzero weights in s0-s15, loaded in whole (group, output)
units so a running sum is never overwritten by a refill. QuantizeLinear:
VDIV by the scale (onnxruntime divides), VCVTR (round half to even), then
int8 bytes, four per STR.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F32 = np.float32

# Where the generated model uses the unrolled code; elsewhere (host, qemu-m3,
# the float-capture test builds that redefine tinyaot_quantize_f32) the loop
# kernel tinyaot_fully_connected_f32_s8 with its packed weights.
GUARD_MACRO = "TINYAOT_FC_UNROLLED"
GUARD_C = (f"#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__thumb2__) && "
           f"defined(__ARM_FEATURE_DSP) && !defined(tinyaot_quantize_f32)\n"
           f"#define {GUARD_MACRO} 1\n#endif\n")

W_REGS = 16   # s0-s15
BLOCK = 8     # outputs per block (totals s24-s31)
INT16_LIMIT = 32767 - 256  # |round(t/scale)| below it: the zero point add and clamps fit int16


def eligible(order, rows, k, n):
    """GEMV4 (M == 1) with whole k groups and whole blocks of 8 outputs."""
    from ..reference.fc_float_order import GEMV4
    return order == GEMV4 and rows == 1 and k >= 4 and k % 4 == 0 and n % BLOCK == 0


def quotient_bound(wf, bias, x_max, out_scale):
    """An upper bound of |total / out_scale| over every input, per output:
    (|bias| + sum |w| * max |x|) with a margin for the K+1 float roundings
    (each at most 2^-24 relative to the running sum of magnitudes), plus 1
    for the division's and VCVTR's rounding."""
    mag = np.abs(bias.astype(np.float64)) + np.abs(wf.astype(np.float64)).sum(1) * float(x_max)
    k = wf.shape[1]
    return mag * (1.0 + (k + 4) * 2.0 ** -23) / float(out_scale) + 1.0


@dataclass
class Unrolled:
    stream: np.ndarray   # float32: per block its 8 biases, then its nonzero weights
    asm: list            # one instruction per string
    fast_pack: bool      # int16 packing (QADD16/USAT16) rather than per value


def _units(wblk):
    """[(group, output, [k in group with a nonzero weight])] of one block, in stream order."""
    groups = wblk.shape[1] // 4
    out = []
    for g in range(groups):
        for j in range(BLOCK):
            ks = [d for d in range(4) if wblk[j, 4 * g + d] != 0]
            if ks:
                out.append((g, j, ks))
    return out


def _chunks(units):
    """Greedy VLDM refills: as many whole units as fit 16 registers. Returns
    {index of the unit a refill precedes: its register count}."""
    loads, i = {}, 0
    while i < len(units):
        j, used = i, 0
        while j < len(units) and used + len(units[j][2]) <= W_REGS:
            used += len(units[j][2])
            j += 1
        loads[i] = used
        i = j
    return loads


def _vlist(first, count):
    return f"{{s{first}}}" if count == 1 else f"{{s{first}-s{first + count - 1}}}"


def _block_asm(wblk, fast, zp, act_min, act_max):
    """The instructions of one block of 8 outputs (x pointer reset, biases,
    products, QuantizeLinear, 8 bytes stored)."""
    a = ["mov %[xp], %[x]", "vldmia %[wp]!, {s24-s31}"]
    units = _units(wblk)
    loads = _chunks(units)
    used = {g for g, _, _ in units}
    groups = wblk.shape[1] // 4
    skip = 0  # x bytes not loaded since the last x load (groups without a nonzero weight)
    reg = 0   # next weight register
    ui = 0
    for g0 in range(0, groups, 2):
        pair = [g for g in (g0, g0 + 1) if g < groups]
        live = [g for g in pair if g in used]
        if live:
            first, last = live[0], live[-1]
            skip += 16 * (first - g0)
            while skip:  # ADDW takes up to 4095
                step = min(skip, 4080)
                a.append(f"add %[xp], %[xp], #{step}")
                skip -= step
            a.append(f"vldmia %[xp]!, {_vlist(16 + 4 * (first - g0), 4 * (last - first + 1))}")
            skip = 16 * (g0 + len(pair) - 1 - last)
        else:
            skip += 16 * len(pair)
        while ui < len(units) and units[ui][0] in pair:
            g, j, ks = units[ui]
            if ui in loads:
                a.append(f"vldmia %[wp]!, {_vlist(0, loads[ui])}")
                reg = 0
            xs = [f"s{16 + 4 * (g - g0) + d}" for d in ks]
            ws = [f"s{reg + i}" for i in range(len(ks))]
            t = f"s{24 + j}"
            if len(ks) == 1:
                a.append(f"vmla.f32 {t}, {xs[0]}, {ws[0]}")
            else:
                a.append(f"vmul.f32 {ws[0]}, {xs[0]}, {ws[0]}")
                a += [f"vmla.f32 {ws[0]}, {x}, {w}" for x, w in zip(xs[1:], ws[1:])]
                a.append(f"vadd.f32 {t}, {ws[0]}, {t}")
            reg += len(ks)
            ui += 1
    a.append("vmov s0, %[sc]")
    a += [f"vdiv.f32 s{r}, s{r}, s0" for r in range(24, 32)]
    a += [f"vcvtr.s32.f32 s{r}, s{r}" for r in range(24, 32)]
    for r in (24, 28):
        a += (_pack4_fast if fast else _pack4_wide)(r, zp, act_min, act_max)
        a.append("str %[a], [%[o]], #4")
    return a


def _rep(byte):
    return f"#0x{(byte & 0xFF) * 0x01010101:08x}"


def _pack4_fast(r, zp, lo, hi):
    """Four rounded totals (|v| < INT16_LIMIT) -> four int8 bytes in a: halfword
    pairs (v0, v2) and (v1, v3), + zp + 128 (QADD16), USAT16 to [0, 255] (int8
    shifted by 128), the odd bytes ORRed in, 128 subtracted by EOR."""
    a = [f"vmov %[a], %[b], s{r}, s{r + 1}", f"vmov %[c], %[d], s{r + 2}, s{r + 3}",
         "pkhbt %[a], %[a], %[c], lsl #16", "pkhbt %[b], %[b], %[d], lsl #16"]
    if zp != -128:
        a += ["qadd16 %[a], %[a], %[z]", "qadd16 %[b], %[b], %[z]"]
    a += ["usat16 %[a], #8, %[a]", "usat16 %[b], #8, %[b]", "orr %[a], %[a], %[b], lsl #8"]
    if lo > -128:  # bytewise max / min in the shifted (unsigned) domain
        a += [f"mov %[c], {_rep(lo + 128)}", "usub8 %[d], %[a], %[c]", "sel %[a], %[a], %[c]"]
    if hi < 127:
        a += [f"mov %[c], {_rep(hi + 128)}", "usub8 %[d], %[c], %[a]", "sel %[a], %[a], %[c]"]
    a.append("eor %[a], %[a], #0x80808080")
    return a


def _pack4_wide(r, zp, lo, hi):
    """Four rounded totals (any int32) -> four int8 bytes in a: QADD of the zero
    point (no wrap), SSAT to int8, BFI; then the signed bytewise clamp."""
    a = [f"vmov %[a], %[b], s{r}, s{r + 1}",
         "qadd %[a], %[a], %[z]", "qadd %[b], %[b], %[z]",
         "ssat %[a], #8, %[a]", "ssat %[b], #8, %[b]", "bfi %[a], %[b], #8, #8",
         f"vmov %[b], %[c], s{r + 2}, s{r + 3}",
         "qadd %[b], %[b], %[z]", "qadd %[c], %[c], %[z]",
         "ssat %[b], #8, %[b]", "ssat %[c], #8, %[c]",
         "bfi %[a], %[b], #16, #8", "bfi %[a], %[c], #24, #8"]
    if lo > -128:
        a += [f"mov %[c], {_rep(lo)}", "ssub8 %[d], %[a], %[c]", "sel %[a], %[a], %[c]"]
    if hi < 127:
        a += [f"mov %[c], {_rep(hi)}", "ssub8 %[d], %[c], %[a]", "sel %[a], %[a], %[c]"]
    return a


def unroll_fc(wf, bias, x_max, out_scale, out_zp, act_min, act_max):
    """wf [N, K] float32 (GEMV4, eligible()), bias [N] -> Unrolled."""
    wf = np.asarray(wf, F32)
    bias = np.asarray(bias, F32)
    n, _ = wf.shape
    fast = bool(quotient_bound(wf, bias, x_max, out_scale).max() + abs(out_zp) + 128
                < INT16_LIMIT)
    stream, asm = [], []
    for o in range(0, n, BLOCK):
        blk = wf[o:o + BLOCK]
        stream.append(bias[o:o + BLOCK])
        order = blk.reshape(BLOCK, -1, 4).transpose(1, 0, 2).reshape(-1)  # [group][output][4]
        stream.append(order[order != 0])
        asm += _block_asm(blk, fast, out_zp, act_min, act_max)
    return Unrolled(np.concatenate(stream).astype(F32), asm, fast)


def zp_operand(u: Unrolled, out_zp):
    """The value of the asm's %[z]: zp + 128 in both halfwords (fast packing), or zp."""
    if u.fast_pack:
        return (out_zp + 128) * 0x00010001
    return out_zp


def c_function(fname, u: Unrolled, out_scale, out_zp, stream_name):
    """static void fname(const float *x, int8_t *out): the whole layer in one
    __asm__ volatile (s0-s31 clobbered: GCC saves s16-s31, -fstack-usage sees it)."""
    scale_bits = int(np.array(out_scale, F32).view(np.uint32))
    body = "\n".join(f'        "{ins}\\n\\t"' for ins in u.asm)
    clob = ", ".join(f'"s{i}"' for i in range(32))
    return (
        f"/* {len(u.asm)} instructions straight-line (backend/fc_float_unrolled.py) */\n"
        f"static void {fname}(const float *x, int8_t *out)\n{{\n"
        f"    const float *wp = {stream_name};\n"
        f"    const float *xp;\n"
        f"    uint32_t a, b, c, d;\n"
        f"    __asm__ volatile(\n{body}\n"
        f"        : [wp] \"+r\"(wp), [o] \"+r\"(out), [xp] \"=&r\"(xp), [a] \"=&r\"(a),\n"
        f"          [b] \"=&r\"(b), [c] \"=&r\"(c), [d] \"=&r\"(d)\n"
        f"        : [x] \"r\"(x), [sc] \"r\"({scale_bits}u), [z] \"r\"({zp_operand(u, out_zp)})\n"
        f"        : {clob}, \"memory\", \"cc\");\n}}\n")
