"""tinyaot_depthwise_conv_fast_s8 on 3x3 windows at stride 1, where on DSP cores the
outputs of a row whose windows lie inside the input go three at a time through one asm
pass per channel-quad half (dw3x3_row3_sat / dw3x3_row3_fsat: each input column widened
once for the three outputs that use it, the sums requantized in the same statement), any
number of channel quads; the rest of the row takes the one-pixel path. Against the numpy oracle of the conv operator (codegen/ops/conv2d.py:
conv2d_int, groups = channels), on the host (the C path) and on qemu-m4 (the asm), with
the saturating records of both numerics: rows of 1 to 11 inner outputs (so 0 to 3
groups of three and every remainder), padding on either side, 1, 4, 8, 12 and 16
quads, stride 2 (its own pass, seven input columns for three outputs); and 'same' layers, whose edge outputs
(the side columns below the top row, the top and bottom rows) go three at a time
through two-line passes (dw3x3_left3_*, _right3_, _top3_, _bottom3_), with 0 to 3
groups and every remainder. The passes run quad by quad over all their groups of three
(the rows' inner outputs: all rows at once), or an edge with few groups group by group
over all quads."""
from __future__ import annotations

import numpy as np
import pytest

from codegen.kernels.fast_pack import pack_depthwise
from tests.helpers.env import require_arm_toolchain
from tests.helpers.kernels_cffi import conv_dims_fields
from tests.helpers.requant_cases import requant_fields

# (channels, in_h, in_w, stride, pad top, pad left, pad bottom, pad right)
SHAPES = [(64, 12, 5, 1, 1, 1, 1, 1),    # kws01's depthwise layers (fewer rows): 3 inner
          (32, 4, 13, 1, 1, 1, 1, 1),    # 11 inner: three groups and two more
          (48, 3, 7, 1, 0, 0, 0, 0),     # no padding: 5 inner, one group and two
          (32, 5, 6, 1, 0, 1, 0, 0),     # left padding only: 4 inner
          (64, 4, 3, 1, 1, 1, 1, 1),     # 1 inner output: no group
          (16, 5, 9, 1, 1, 1, 1, 1),     # 4 quads
          (4, 7, 8, 1, 1, 1, 1, 1),      # one quad
          # stride 2: three outputs from seven input columns (dw3x3_row3s2_*)
          (32, 7, 9, 2, 1, 1, 1, 1),     # 3 inner: one group
          (16, 9, 15, 2, 1, 1, 1, 1),    # 6 inner: two groups
          (8, 8, 12, 2, 0, 0, 1, 1),     # no padding: 5 inner, one group and two
          # 'same' at stride 1, the edges three at a time (nv groups down each side
          # column, nh along the top and bottom rows): nv 2, nh 3, none left
          (32, 8, 11, 1, 1, 1, 1, 1),
          (32, 10, 7, 1, 1, 1, 1, 1),    # nv 2 and two rows left, nh 1 and two left
          (32, 5, 2, 1, 1, 1, 1, 1),     # two columns: nv 1, no row groups
          (36, 2, 6, 1, 1, 1, 1, 1),     # two rows: nh 1, no column groups; 9 quads
          (32, 6, 6, 1, 1, 1, 1, 0),     # padding not 'same': no edge groups
          # an edge with at least a third as many groups as quads goes quad by quad
          # over its groups (here the side columns: nv 4 on 8 quads), one with fewer
          # group by group over the quads (the top and bottom rows: nh 1)
          (32, 14, 5, 1, 1, 1, 1, 1)]
NUMERICS = ("tflite", "ort")


def _cases():
    from codegen.ops.conv2d import conv2d_int
    out = []
    for ni, numerics in enumerate(NUMERICS):
        rng = np.random.default_rng(70 + ni)
        for c, h, w_, s, pt, pl, pb, pr in SHAPES:
            attrs = {"kernel": (3, 3), "strides": (s, s), "pads": (pt, pl, pb, pr),
                     "dilations": (1, 1), "group": c}
            x = rng.integers(-128, 128, (1, c, h, w_)).astype(np.int8)
            w = rng.integers(-127, 128, (c, 1, 3, 3)).astype(np.int8)
            q, p = requant_fields(rng, c, int(rng.integers(-128, 128)), numerics, True)
            want = conv2d_int(x, w, attrs, p)[0]  # [c][oh][ow]
            dims = conv_dims_fields(x.shape, (1, c) + want.shape[1:], attrs)
            packed = pack_depthwise(w[:, 0].transpose(1, 2, 0).reshape(-1, c))
            out.append((dims, q, x[0].transpose(1, 2, 0), packed, want.transpose(1, 2, 0),
                        (c, h, w_, s, pt, pl, pb, pr, numerics)))
    return out


def test_depthwise_3x3_rows_equal_the_numpy_reference():
    from tests.helpers import kernels_cffi as kf
    kf.check_conv_cases(kf.depthwise_conv_fast_s8, _cases(), 8)


@pytest.mark.qemu
def test_depthwise_3x3_rows_on_qemu_m4(tmp_path):
    require_arm_toolchain()
    from tests.helpers.kernel_firmware import depthwise_fast_cases_on_qemu_m4
    asm = depthwise_fast_cases_on_qemu_m4(tmp_path, "dw3x3", _cases())
    # both records' three-pixel passes are in the firmware (and the cases above reach them)
    for kind in ("row3", "top3", "bottom3", "left3", "right3"):
        assert f"<dw3x3_{kind}_sat>:" in asm and f"<dw3x3_{kind}_fsat>:" in asm
