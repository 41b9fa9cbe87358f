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
loaded with the block's first weights), x of a pair of k groups in s0-s7,
the nonzero weights in s8-s23, loaded in whole (group, output) units so a
running sum is never overwritten by a refill. QuantizeLinear: VDIV by the
scale (onnxruntime divides), then round half to even (VCVTR, or adding
MAGIC + zp + 128 when that is even), then int8 bytes, eight per STRD.
"""
from __future__ import annotations

import re
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

# the layer's function (and GCC's clones of it, e.g. .constprop.0): the flash
# reports (driver/linkmap.py) count it as the model's code
FUNCTION_RE = re.compile(r"(?:^|\.)l\d+_fc_unrolled(?:\.|$)")


def function_name(lid):
    return f"{lid}_fc_unrolled"


X_BASE = 0    # x of a pair of k groups: s0-s7
W_BASE = 8    # weights: s8-s23
W_REGS = 16
T_BASE = 24   # the block's 8 totals: s24-s31
BLOCK = 8     # outputs per block
INT16_LIMIT = 32767 - 256  # |round(t/scale)| below it: the zero point add and clamps fit int16
# 1.5 * 2^23: for |v| < 2^22 and an even integer c, fl(v + MAGIC + c) = MAGIC + c +
# round_half_even(v) (the sum lies in [2^23, 2^24), spaced 1, and an even shift keeps
# ties going to even), and its bits' low halfword is round_half_even(v) + c
MAGIC = 12582912.0


# The straight-line code is ~5 bytes of flash per MAC (ad01: 0.4 MB for its first
# layer) against the loop kernel's 4 (its float weights), and skips the zero weights;
# but it adds each product by VMLA (3 cycles on the M4) where the loop kernel takes
# VMUL + VADD (2): modelled, 4.01 ideal cycles per nonzero MAC (5.76 on the STM32L4R5
# model) against the loop's 3.35 a MAC (5.08). It pays only from about 17 % zero
# weights (12 % on the STM32L4R5 model), so a layer is unrolled from 20 %: ad01's
# first layer (8.7 % zeros) now runs the loop, -28K ideal cycles and -0.38 MB.
MIN_ZERO_FRACTION = 0.2


def eligible(order, rows, wf):
    """GEMV4 (M == 1) with whole k groups, whole blocks of 8 outputs and at
    least MIN_ZERO_FRACTION zero weights."""
    from ..numerics.mlas_fc_order import GEMV4
    n, k = wf.shape
    return (order == GEMV4 and rows == 1 and k >= 4 and k % 4 == 0 and n % BLOCK == 0
            and float(np.mean(wf == 0)) >= MIN_ZERO_FRACTION)


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
    stream: np.ndarray   # float32: per block its weights and biases (see _block)
    asm: list            # one instruction per string
    pack: str            # "magic", "fast" (int16 packing) or "wide" (per value)
    z: int               # the asm's %[z]: MAGIC + zp + 128's bits, zp + 128 per halfword, or zp


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


def _fill(pend, room):
    """The units of `pend` (one k group's, in any order: each is another
    output's part) with the largest total size <= room, bigger units first on
    ties (sizes 1-4: choose how many of each size)."""
    by = {z: [u for u in pend if len(u[2]) == z] for z in (4, 3, 2, 1)}
    best, pick = 0, (0, 0, 0, 0)
    for n4 in range(min(len(by[4]), room // 4), -1, -1):
        for n3 in range(min(len(by[3]), (room - 4 * n4) // 3), -1, -1):
            for n2 in range(min(len(by[2]), (room - 4 * n4 - 3 * n3) // 2), -1, -1):
                n1 = min(len(by[1]), room - 4 * n4 - 3 * n3 - 2 * n2)
                tot = 4 * n4 + 3 * n3 + 2 * n2 + n1
                if tot > best:
                    best, pick = tot, (n4, n3, n2, n1)
    chosen = {id(u) for z, n in zip((4, 3, 2, 1), pick) for u in by[z][:n]}
    return [u for u in pend if id(u) in chosen]


def _chunks(units):
    """The block's units cut into VLDM refills of up to 16 weights, whole
    units only (a unit's running sum sits in its first weight's register, so
    a unit never spans a refill). Within a k group the units may come in any
    order, so each refill is filled as far as the group's unit sizes allow
    before the next group's. [[unit, ...] per refill]."""
    chunks, used = [[]], 0
    for g in sorted({u[0] for u in units}):
        pend = [u for u in units if u[0] == g]
        while pend:
            got = _fill(pend, W_REGS - used)
            if not got:
                chunks.append([])
                used = 0
                continue
            chunks[-1] += got
            used += sum(len(u[2]) for u in got)
            pend = [u for u in pend if all(u is not v for v in got)]
    return [c for c in chunks if c]


def _vlist(first, count):
    return f"{{s{first}}}" if count == 1 else f"{{s{first}-s{first + count - 1}}}"


def _block(wblk, bias, pack, zp, act_min, act_max, tail):
    """One block of 8 outputs: (stream floats, instructions). The first refill
    of weights and the 8 biases are one VLDM (weights in s(24-m)..s23, biases
    s24-s31); the constants of QuantizeLinear (`tail`: the scale, and MAGIC +
    zp + 128 for "magic") follow the last refill's weights when they fit, else
    one VMOV from core registers."""
    chunks = _chunks(_units(wblk))
    units = [u for c in chunks for u in c]  # emission order
    stream, a = [], ["mov %[xp], %[x]"]
    w_at = {}  # unit index -> register of its first weight
    starts = {}  # unit index -> size of the refill it starts
    tail_regs = None
    ui = 0
    for ci, ch in enumerate(chunks):
        m = sum(len(u[2]) for u in ch)
        r = T_BASE - m if ci == 0 else W_BASE
        starts[ui] = m
        for g, j, ks in ch:
            w_at[ui] = r
            r += len(ks)
            ui += 1
            stream.append(wblk[j, 4 * g + np.asarray(ks)])
        if ci == 0:
            stream.append(bias)
        elif ci == len(chunks) - 1 and m + len(tail) <= W_REGS:
            stream.append(np.asarray(tail, F32))
            tail_regs = list(range(W_BASE + m, W_BASE + m + len(tail)))
            starts[ui - len(ch)] += len(tail)
    if chunks:
        a.append(f"vldmia %[wp]!, {{s{T_BASE - starts[0]}-s31}}")
    else:
        stream.append(bias)
        a.append("vldmia %[wp]!, {s24-s31}")
    groups = wblk.shape[1] // 4
    used = {g for g, _, _ in units}
    skip = 0  # x bytes not loaded since the last x load (groups without a nonzero weight)
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
            a.append(f"vldmia %[xp]!, {_vlist(X_BASE + 4 * (first - g0), 4 * (last - first + 1))}")
            skip = 16 * (g0 + len(pair) - 1 - last)
        else:
            skip += 16 * len(pair)
        while ui < len(units) and units[ui][0] in pair:
            g, j, ks = units[ui]
            if ui in starts and ui:
                a.append(f"vldmia %[wp]!, {_vlist(W_BASE, starts[ui])}")
            xs = [f"s{X_BASE + 4 * (g - g0) + d}" for d in ks]
            ws = [f"s{w_at[ui] + i}" for i in range(len(ks))]
            t = f"s{T_BASE + j}"
            if len(ks) == 1:
                a.append(f"vmla.f32 {t}, {xs[0]}, {ws[0]}")
            else:
                a.append(f"vmul.f32 {ws[0]}, {xs[0]}, {ws[0]}")
                a += [f"vmla.f32 {ws[0]}, {x}, {w}" for x, w in zip(xs[1:], ws[1:])]
                a.append(f"vadd.f32 {t}, {ws[0]}, {t}")
            ui += 1
    if tail_regs is None:  # x's registers are free now
        tail_regs = [0, 1][:len(tail)]
        a.append("vmov s0, s1, %[sc], %[z]" if len(tail) > 1 else "vmov s0, %[sc]")
    a += [f"vdiv.f32 s{r}, s{r}, s{tail_regs[0]}" for r in range(T_BASE, 32)]
    if pack == "magic":
        a += [f"vadd.f32 s{r}, s{r}, s{tail_regs[1]}" for r in range(T_BASE, 32)]
    else:
        a += [f"vcvtr.s32.f32 s{r}, s{r}" for r in range(T_BASE, 32)]
    word = _pack4_wide if pack == "wide" else _pack4_fast
    a += word(24, "a", "c", "d", "e", pack == "fast" and zp != -128, act_min, act_max)
    a += word(28, "b", "c", "d", "e", pack == "fast" and zp != -128, act_min, act_max)
    a.append("strd %[a], %[b], [%[o]], #8")
    return stream, a


def _rep(byte):
    return f"#0x{(byte & 0xFF) * 0x01010101:08x}"


def _pack4_fast(r, dst, t1, t2, t3, add_zp, lo, hi):
    """Four rounded totals as int16 (the low halfword of VCVTR's int32, or of
    fl(v + MAGIC + zp + 128)'s bits, which holds round(v) + zp + 128) -> four
    int8 bytes in dst: halfword pairs (v0, v2) and (v1, v3) (PKHBT), + zp + 128
    (QADD16, unless MAGIC added it), USAT16 to [0, 255] (int8 shifted by 128),
    the odd bytes ORRed in, the clamp, 128 subtracted by EOR."""
    d, x, y, z = (f"%[{v}]" for v in (dst, t1, t2, t3))
    a = [f"vmov {d}, {x}, s{r}, s{r + 1}", f"vmov {y}, {z}, s{r + 2}, s{r + 3}",
         f"pkhbt {d}, {d}, {y}, lsl #16", f"pkhbt {x}, {x}, {z}, lsl #16"]
    if add_zp:
        a += [f"qadd16 {d}, {d}, %[z]", f"qadd16 {x}, {x}, %[z]"]
    a += [f"usat16 {d}, #8, {d}", f"usat16 {x}, #8, {x}", f"orr {d}, {d}, {x}, lsl #8"]
    if lo > -128:  # bytewise max / min in the shifted (unsigned) domain
        a += [f"mov {y}, {_rep(lo + 128)}", f"usub8 {z}, {d}, {y}", f"sel {d}, {d}, {y}"]
    if hi < 127:
        a += [f"mov {y}, {_rep(hi + 128)}", f"usub8 {z}, {y}, {d}", f"sel {d}, {d}, {y}"]
    a.append(f"eor {d}, {d}, #0x80808080")
    return a


def _pack4_wide(r, dst, t1, t2, t3, _add_zp, lo, hi):
    """Four rounded totals (any int32) -> four int8 bytes in dst: QADD of the
    zero point (no wrap), SSAT to int8, BFI; then the signed bytewise clamp."""
    d, x, y, z = (f"%[{v}]" for v in (dst, t1, t2, t3))
    a = [f"vmov {d}, {x}, s{r}, s{r + 1}",
         f"qadd {d}, {d}, %[z]", f"qadd {x}, {x}, %[z]",
         f"ssat {d}, #8, {d}", f"ssat {x}, #8, {x}", f"bfi {d}, {x}, #8, #8",
         f"vmov {x}, {y}, s{r + 2}, s{r + 3}",
         f"qadd {x}, {x}, %[z]", f"qadd {y}, {y}, %[z]",
         f"ssat {x}, #8, {x}", f"ssat {y}, #8, {y}",
         f"bfi {d}, {x}, #16, #8", f"bfi {d}, {y}, #24, #8"]
    if lo > -128:
        a += [f"mov {y}, {_rep(lo)}", f"ssub8 {z}, {d}, {y}", f"sel {d}, {d}, {y}"]
    if hi < 127:
        a += [f"mov {y}, {_rep(hi)}", f"ssub8 {z}, {y}, {d}", f"sel {d}, {d}, {y}"]
    return a


def unroll_fc(wf, bias, x_max, out_scale, out_zp, act_min, act_max):
    """wf [N, K] float32 (GEMV4, eligible()), bias [N] -> Unrolled."""
    wf = np.asarray(wf, F32)
    bias = np.asarray(bias, F32)
    n, _ = wf.shape
    scale = F32(out_scale)
    c = out_zp + 128
    if quotient_bound(wf, bias, x_max, scale).max() + c >= INT16_LIMIT:
        pack, z, tail = "wide", out_zp, [scale]
    elif c and c % 2 == 0:  # even: adding it before rounding keeps ties to even
        magic = F32(MAGIC + c)
        pack, z, tail = "magic", int(np.array(magic).view(np.uint32)), [scale, magic]
    else:
        pack, z, tail = "fast", c * 0x00010001, [scale]
    stream, asm = [], []
    for o in range(0, n, BLOCK):
        st, a = _block(wf[o:o + BLOCK], bias[o:o + BLOCK], pack, out_zp, act_min, act_max, tail)
        stream += st
        asm += a
    return Unrolled(np.concatenate(stream).astype(F32), asm, pack, z)


def c_function(fname, u: Unrolled, out_scale, stream_name):
    """static void fname(const float *x, int8_t *out): the whole layer in one
    __asm__ volatile (s0-s31 clobbered: GCC saves s16-s31, -fstack-usage sees it)."""
    scale_bits = int(np.array(out_scale, F32).view(np.uint32))
    body = "\n".join(f'        "{ins}\\n\\t"' for ins in u.asm)
    clob = ", ".join(f'"s{i}"' for i in range(32))
    return (
        f"/* {len(u.asm)} instructions straight-line (codegen/kernels/fc_float_unrolled.py) */\n"
        f"static __attribute__((noinline)) void {fname}(const float *x, int8_t *out)\n{{\n"
        f"    const float *wp = {stream_name};\n"
        f"    const float *xp;\n"
        f"    uint32_t a, b, c, d, e;\n"
        f"    __asm__ volatile(\n{body}\n"
        f"        : [wp] \"+r\"(wp), [o] \"+r\"(out), [xp] \"=&r\"(xp), [a] \"=&r\"(a),\n"
        f"          [b] \"=&r\"(b), [c] \"=&r\"(c), [d] \"=&r\"(d), [e] \"=&r\"(e)\n"
        f"        : [x] \"r\"(x), [sc] \"r\"({scale_bits}u), [z] \"r\"({u.z & 0xFFFFFFFF}u)\n"
        f"        : {clob}, \"memory\", \"cc\");\n}}\n")
