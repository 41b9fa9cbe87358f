"""tinyaot_convolve_fast_w8_s8 (int8 weights widened per channel pair and block of pixel
pairs, the block's columns in the scratch, the fast kernel's GEMM) against the numpy
oracle of the conv operator (codegen/ops/conv2d.py: conv2d_int, int64 sums, both
requantizations), with and without the per-channel records, a clamped output range, on
the host (portable C) and on qemu-m4 (the DSP inline asm): odd pixel counts (the last
pixel alone in its pair), odd channel counts (the last channel alone), nquads % 8 from 0
to 7, padding, strides, dilation, blocks of every size the planner tries, of one pair,
and a partial last block. The scratch size the compiler plans (kernels/fast_pack.py) is
the kernel's own.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from codegen.kernels.fast_pack import conv_gemm_weights, conv_pixel_pairs
from codegen.kernels.fast_pack import conv_w8_scratch_bytes as columns_bytes
from codegen.planner.w8_columns import block_sizes
from tests.helpers.env import require_arm_toolchain
from tests.helpers.kernels_cffi import conv_dims_fields
from tests.helpers.requant_cases import requant_fields

# (cin, cout, hw, kernel, strides, pads (t, l, b, r), dilations); nquads % 8 in the comment
SHAPES = [(128, 16, (6, 6), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),    # 32 quads: 0
          (36, 6, (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),      # 9: 1, 9 pixels
          (8, 5, (5, 5), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),       # 3 x 6 quads: 2
          (3, 4, (4, 4), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),       # 3 x 2 quads + 3 tails: 7
          (1, 3, (6, 5), (5, 5), (2, 1), (2, 2, 1, 2), (1, 1)),       # 5 x 1 + 5 tails: 7, edges
          (7, 3, (3, 4), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),       # one row of 7: 2
          (28, 7, (3, 5), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),      # 7, 15 pixels
          (20, 9, (4, 4), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),      # 5
          (4, 3, (7, 7), (3, 3), (2, 2), (0, 1, 1, 0), (2, 2)),       # 3 x 3 dilated: 1
          (44, 2, (2, 3), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),      # 11: 3
          (16, 1, (3, 3), (2, 2), (1, 1), (0, 0, 1, 1), (1, 1)),      # 2 x 8 quads: 0, one channel
          (24, 4, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),      # 6, one pixel
          (52, 8, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1))]      # 13: 5 ... and 4, 6 below
SHAPES += [(16 * 4, 4, (3, 1), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),  # 16: 0
           (12 * 4, 3, (1, 3), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),  # 12: 4
           (14 * 4, 2, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1))]  # 14: 6
# 16 quads and more (the DSP asm's group loop, W8_GROUP_QUADS) with nquads % 4 from 1 to
# 3, channels left over, odd pixel counts
SHAPES += [(17 * 4, 7, (3, 5), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),  # 17: 1, 15 pixels
           (19 * 4, 6, (1, 5), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),  # 19: 3, 5 pixels
           (22 * 4, 8, (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),  # 22: 6, 9 pixels
           (12, 4, (4, 4), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1))]      # 3 x 9 quads: 3, edges

VARIANTS = [("ort", False, False), ("ort", True, False), ("ort", False, True),
            ("tflite", False, False), ("tflite", True, False), ("tflite", True, True)]


def _cases():
    """(dims, q, x NHWC, w int8 [oc][kq], want NHWC) for every shape and variant."""
    from codegen.ops.conv2d import conv2d_int
    out = []
    for vi, (numerics, records, clamp) in enumerate(VARIANTS):
        rng = np.random.default_rng(40 + vi)
        for cin, cout, hw, k, s, pads, d in SHAPES:
            attrs = {"kernel": k, "strides": s, "pads": pads, "dilations": d, "group": 1}
            x = rng.integers(-128, 128, (1, cin) + hw).astype(np.int8)
            w = rng.integers(-127, 128, (cout, cin) + k).astype(np.int8)
            q, p = requant_fields(rng, cout, int(rng.integers(-128, 128)), numerics, records)
            if clamp:  # a fused Relu-like range: no whole-range record mode
                q["act_min"] = p.act_min = -20
                q["act_max"] = p.act_max = 90
            want = conv2d_int(x, w, attrs, p)[0]
            dims = conv_dims_fields(x.shape, (1, cout) + want.shape[1:], attrs)
            out.append((dims, q, x[0].transpose(1, 2, 0), conv_gemm_weights(w).astype(np.int8),
                        want.transpose(1, 2, 0), (x.shape, w.shape, (1, cout) + want.shape[1:])))
    return out


def _blocks(shapes):
    """Blocks of pixel pairs to run a case with: the planner's (all pairs, then equal parts), one pair."""
    return sorted(set(block_sizes(conv_pixel_pairs(shapes[2])) + [1]), reverse=True)


def test_fast_w8_equals_the_numpy_reference():
    from tests.helpers import kernels_cffi as kf
    rng = np.random.default_rng(3)
    for i, (dims, q, x, w, want, shapes) in enumerate(_cases()):
        dims = dict(zip(kf.struct_fields("tinyaot_conv_dims_t"), dims))
        for block in _blocks(shapes):
            nbytes = kf.buffer_size("tinyaot_convolve_fast_w8_s8", dims, block)
            assert nbytes == columns_bytes(shapes[1], block), f"case {i}"
            got = kf.convolve_fast_w8_s8(dims, q, x, w, block, nbytes, rng).reshape(want.shape)
            np.testing.assert_array_equal(got, want, err_msg=f"case {i}: {shapes}, block {block}")


@pytest.mark.qemu
def test_fast_w8_asm_on_qemu_m4(tmp_path):
    """The same cases through the DSP inline asm (the widening loops, the fast kernel's
    group loop for four channels at a time, the GEMM core's unrolled LDM loops for the
    channels left, every nquads % 8, the asm requantizations). An odd last pixel goes in
    a pair with the one before it, also when it is alone in its block; nothing is stored
    past a case's output."""
    require_arm_toolchain()
    from codegen.targets.qemu import load_board, run_firmware
    from tests.helpers.kernel_firmware import assert_outputs, cases_firmware, conv_case_c

    board = load_board("qemu-m4")
    cases = [c for c in _cases() if c[4].size <= 4096]
    src = ["#include <stdint.h>", "#include <string.h>", '#include "harness.h"',
           '#include "tinyaot_fast_kernels.h"']
    calls, scratch = [], 4
    for i, (dims, q, x, w, want, shapes) in enumerate(cases):
        src += conv_case_c(i, dims, q, x, w)
        # one of 3 pairs, the largest block, or all pairs but one (blocks, a last partial
        # block, a last block of one pair on the M4)
        pairs = conv_pixel_pairs(shapes[2])
        block = (3, pairs, max(1, pairs - 1))[i % 3]
        scratch = max(scratch, columns_bytes(shapes[1], block))
        calls.append(f"    case {i}: return tinyaot_convolve_fast_w8_s8(&d{i}, &q{i}, x{i}, w{i}, "
                     f"{block}, scratch, output);")
    out_size = max(c[4].size for c in cases) + 256  # room to see a store past the output
    elf, asm = cases_firmware(tmp_path, board, "fast_w8", src, calls, scratch, out_size,
                              "tinyaot_convolve_fast_w8_s8.c")
    for insn in ("sxtb16", "smlad", "ldmia", "strd", "smlal", "ssat"):
        assert re.search(rf"\s{re.escape(insn)}(\.w)?\s", asm), f"{insn} not in the firmware"
    for pat in (r"stmia(\.w)?\s+\w+!, \{r8, r9, sl, fp\}", r"smlad\s+lr, r3, r5, lr"):
        assert re.search(pat, asm), f"{pat} not in the firmware"  # widen_group, group loop
    res = run_firmware(elf, board, timeout=300)
    assert len(res.outputs) == len(calls)
    assert_outputs(res, [c[4] for c in cases], [c[5] for c in cases])
    for c, r in zip(cases, res.outputs):  # (the harness zeroes the output buffer)
        assert not np.frombuffer(r.data, np.int8)[c[4].size:].any(), (c[5], "stored past")
