"""Pinned modelled cycles of the shared models on qemu-m4, both numerics.

What a kernel change optimizes is cycles on a part, not QEMU instructions
(issue 19): the cycle model (codegen/cycles, priced from the cores' manuals and
the parts' memory systems; its tables are checked against hand counts in
test_cycle_model.py) turns one inference of the verification firmware into
cycles. Pinned: the ideal zero-wait part, which depends on the instructions
executed alone. The STM32L4R5's figure (flash wait states behind the ART
accelerator) also depends on code placement, so it is bounded, not pinned. The counts are deterministic (-icount
shift=0, a table lookup per executed instruction), so any change fails here,
a slowdown as well as a speedup: update the numbers on purpose, with
`tinyaot bench` for docs/results.md. The instruction pins stay in
test_instruction_counts.py (exact to one instruction).
"""
from __future__ import annotations

import pytest

from codegen.cycles import compare
from codegen.driver.verify import load_golden, run_model
from codegen.targets.boards import board_or_error

from tests.helpers.env import require_arm_toolchain, shared_model

# ideal-part cycles of one inference (tinyaot_harness_run: input and output in the arena).
# Re-measured when few-pixel convs took int8 weights in flash (tinyaot_convolve_fast_w8_s8:
# sww01 +8 %, a trade for flash and for the cycles of parts with wait states), vww01's
# mostly-zero pointwise convs their nonzero weights alone (-20 %) and im2col its
# inside-the-input path (kws01, ic01 tflite -0.2 to -0.4 %; ic01 ort +0.5 %: its one
# few-pixel integer conv) and ic01's 3x3 stride-1 convs Winograd (tflite -8.9 %, ort -3.0 %),
# and when im2col stopped padding window rows that are not whole quads (3x3 on 3 channels:
# 7 quads, not 9; ic01 and vww01 tflite -0.9 % and -1.0 %; the rest within 0.05 %), and
# when vww01's first conv (3 -> 8 channels) took tinyaot_convolve_narrow_s8 (-1.8 %), and
# when the one-SMLAL channel pairs of the fast conv became one asm statement and the sparse
# conv's four-pixel sums asm (vww01 tflite -1.7 %, kws01 -1.7 %, ic01 -0.3 %, sww01 -0.5 %,
# vww01 ort -0.1 %), and when 1-D depthwise layers (k_w = 1) ran a pixel's channel quads in
# one asm statement (sww01 tflite -8.5 %, ort -6.3 %; the others within 0.05 %), and when
# the fast conv's onnxruntime {bias, scale} channel pairs did the same as the one-SMLAL ones
# (vww01 ort -0.7 %, kws01 ort -1.0 %, sww01 ort -0.4 %; tflite runs moved by up to 0.2 %
# with branch-target alignment), and when ic01's second 16-channel 3x3 conv (the arena's
# peak) ran Winograd with no scratch of its own (tflite -4.3 %, ort -2.4 %), and when the
# table add's loop became asm with the output zero point folded (ic01 tflite -1.2 %), and
# when Winograd's tile pairs wholly inside the layer skipped the per-output edge tests
# (ic01 -0.3 %, ort -0.1 %), and when Winograd's input transform ran in two passes (asm)
# and patches cut by the input's edge were copied first (ic01 tflite -2.9 %, ort -1.0 %), and
# when the few-pixel convs' blocks of pixel pairs became equal parts, not halves (ic01's 8x8
# 64-channel conv in 3 blocks, not 4: tflite -0.5 %, ort -0.2 %), and when the depthwise 3x3
# windows cut by the input's edge ran straight-line (kws01 -1.5 % / -1.0 %, vww01 -1.1 % /
# -0.8 %), and when Winograd's cut patches listed their inside words without a branch (ic01
# -0.1 %); and rose when onnxruntime's float convs took int8 weights dequantized a block of
# channels at a time (flash, not cycles, on the ideal part: ic01 ort +2.6 %, kws01 ort
# +1.5 %, with the dequantization in asm; on the STM32L4R5 model ic01 ort is faster); and fell
# when average pooling summed four channels per pass and 3x3 stride-1 depthwise layers of
# 8+ channel quads took a row's inside outputs three at a time (together: kws01 tflite
# -3.9 %, ort -2.2 %; vww01 -1.9 % / -1.2 %; ic01 -0.2 % / -0.1 %), and when the one-SMLAL
# records took the output zero point into their rounding constant (tflite: kws01 -2.7 %,
# vww01 -3.1 %, sww01 -1.4 %, ic01 -0.4 %, ad01 -0.6 %); and rose when layers with free
# arena bytes read their weights and tables from a copy made there before the call (the
# copies: vww01 +0.35 % / +0.25 %, ic01 +0.14 % / +0.03 %, kws01 +0.1 %, sww01 +0.06 % /
# +0.12 %; on the STM32L4R5 model vww01 tflite -10 %, ic01 -3 %) and when the narrow conv
# ran one copy of its requantization for both pixels of a pair, to fit a 1 KB instruction
# cache (vww01 tflite +0.2 %; on the STM32L4R5 model its first layer -12 %); and fell
# when a 'same' 3x3 depthwise layer's edge outputs went three at a time over two kernel
# lines (kws01 -3.0 % / -3.2 %, vww01 -1.2 % / -1.4 %; sww01 +0.02 %: the new per-row tests);
# and fell when the fast conv's GEMM took four output channels x two pixels per block
# (kws01 -6.0 % / -4.8 %, vww01 -3.4 % / -3.6 %, sww01 -3.2 % / -3.2 %, ic01 -1.5 %),
# and when a layer's odd last pixel joined the pair loops and one-quad window rows cut by
# an edge became one shifted word, with the depthwise 3x3 passes run quad by quad where
# that reads less flash (together: kws01 -1.7 % / -0.26 %, its first conv -70K and the
# depthwise layers +1.7K each; vww01 -0.03 % / +0.05 %, ic01 tflite +0.03 %, sww01 0.0 %;
# on the STM32L4R5 model kws01 tflite -0.25M), and when the depthwise 3x3 passes took
# layers of any number of quads and a stride-2 pass came (vww01 -2.8 % / -1.9 %: its
# 8-channel 48x48 layer -27 %, its stride-2 layers -11 % and -7 %), and when the
# few-pixel convs of 16 quads or more took the fast kernel's four-channel group loop
# (ic01 -2.9 % / -0.94 %, vww01 -0.65 % / -0.67 %, sww01 -7.0 % / -6.9 %: its 15-pixel
# layer on the int16 kernel; on the STM32L4R5 model ic01 tflite -0.45M), and when records'
# and taps' words that follow a load became single LDRs (pipelined; an LDRD is not): vww01
# -1.7 % / -0.25 %, sww01 -1.4 % / -0.6 %, kws01 -0.96 % / -0.05 %, ic01 tflite -0.17 %,
# and when onnxruntime's float convs stored by STRs, not STRDs (ort: ic01 -0.49 %, vww01
# -0.25 %, sww01 -0.19 %, kws01 -0.14 %), and when the depthwise 3x3 passes loaded their
# state one load after another (vww01 -0.25 % / -0.22 %, kws01 -0.27 % / -0.22 %), as did
# the 1-D depthwise loop's end and the narrow conv's row end (sww01 -0.23 % / -0.18 %,
# vww01 tflite -0.06 %), and when tflite FC layers took int8 weights two rows to an int16
# lane (tinyaot_fully_connected_fast_w8_s8: ad01 -0.65 %; on the STM32L4R5 model -27 %),
# and when pointwise layers of 10 quads or more did too (tinyaot_convolve_1x1_w8_s8: sww01
# -8.3 %, vww01 -1.6 %, kws01 -1.2 %), and when that kernel's passes lost their straight
# tail where nquads % 4 == 0, a one-pixel pointwise layer ran as a fully connected row and
# a tflite 1-D depthwise layer's rows went in one call of its column kernel (sww01 -2.3 %,
# kws01 -1.0 %, vww01 -0.2 %; ort as it was); ad01 -1 cycle when the FC pair kernel's C tail
# took the shared requantization helper (8 bytes less code before the asm); and fell when
# kernels whose layers all end in ReLU dropped the requantization's sign fix, a model's
# choice (kws01 -3.4 %, vww01 -4.9 %, sww01 -1.5 %), the 3x3 depthwise inside passes took a
# quad's runs in one call, the group loops stepped their cursors by post-indexed loads, the
# 1x1 pair conv's hi channels took scaled records, one function for all its pixel pairs
# and a two-quad widen, and average pooling two quads and two pixels a pass (together
# with the above: kws01 tflite 4,319,110 -> 4,059,067, 0.447x TFLM + CMSIS-NN; vww01 tflite
# -6.2 %, sww01 tflite -3.6 %, ic01 tflite -0.55 %; ort, whose group loops keep their ADDs
# for the STM32L4R5's instruction cache: vww01 -0.22 % (the depthwise runs), kws01
# -0.07 %, sww01 -0.05 %, ic01 as it was); and fell when the FC pair kernel started its
# hi sums at their biases and stepped its cursors by post-indexed loads (ad01 tflite -1.2 %,
# sww01 tflite -48 cycles); and fell when onnxruntime's unfused float products were added
# by VMUL + VADD (2 cycles) instead of VMLA (3) and ad01's first float layer left its
# straight-line code for the loop kernel, now the faster (ad01 ort -11.1 %, 1.09x -> 0.969x;
# sww01 ort -0.69 %; kws01 ort +0.014 %, ic01 ort +0.009 % and vww01 ort +0.001 %, the float
# conv's code placed anew); and fell when the FC pair kernel's first pair of each quad
# loaded its words and the column's by four single LDRs (one cycle less than two LDRDs:
# ad01 tflite -2.2 %, sww01 tflite -128 cycles); and fell when that kernel held a per-tensor
# layer's header in registers for a group's eight outputs and started a group's sums by one
# LDM (ad01 tflite -2.1 %), and loaded each quad in three runs of single LDRs from a stream
# padded off the flash lines' starts (ad01 tflite -2.3 %, 360,591 -> 344,694, 0.482x;
# STM32L4R5 model 417,010 -> 396,042; sww01 tflite -133); and fell when the pair and bits
# kernels shared one check of their split records (tinyaot_rq_split_ok: a shorter entry,
# ad01 tflite -60, sww01 tflite -6).
PINNED = {
    ("ad01", "tflite"): {"ideal": 344634},
    ("kws01", "tflite"): {"ideal": 4059067},
    ("ic01", "tflite"): {"ideal": 15081799},
    ("vww01", "tflite"): {"ideal": 10072427},
    ("sww01", "tflite"): {"ideal": 1148995},
    ("ad01", "ort"): {"ideal": 692335},
    ("kws01", "ort"): {"ideal": 5348089},
    ("ic01", "ort"): {"ideal": 31368541},
    ("vww01", "ort"): {"ideal": 12120747},
    ("sww01", "ort"): {"ideal": 1402548},
}


@pytest.mark.shared
@pytest.mark.qemu
@pytest.mark.parametrize("key,numerics", sorted(PINNED))
def test_qemu_m4_modelled_cycles_are_pinned(key, numerics, tmp_path):
    require_arm_toolchain()
    model, golden = shared_model(key)
    gkey = {"ort": "outputs_onnxruntime", "tflite": "outputs_tflm"}[numerics]
    inputs, expected = load_golden(golden, gkey)
    out, _ = run_model(model, inputs[:1], board="qemu-m4", numerics=numerics, build_dir=tmp_path)
    assert (out.reshape(-1) == expected[:1].reshape(-1)).all()
    elves = sorted(tmp_path.glob("*-qemu-m4.elf"))
    assert len(elves) == 1, elves
    priced = compare.price_tinyaot(elves[0], board_or_error("qemu-m4"))
    got = {"ideal": priced["cycles"]["ideal"]}
    # the STM32L4R5's figure is not pinned: behind its flash wait states and the ART
    # accelerator's small instruction cache it moves with where the linker puts the hot
    # loops (measured: ad01 tflite 966,702 -> 628,190 cycles when only the harness's
    # output buffer changed, the ideal count unchanged); it can only cost more than the
    # zero-wait part
    assert priced["cycles"]["stm32l4r5"] >= got["ideal"]
    assert got == PINNED[(key, numerics)], (
        f"{key} {numerics}: modelled cycles {got}, pinned {PINNED[(key, numerics)]}; "
        "update PINNED if intended")
