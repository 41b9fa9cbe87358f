"""tinyaot_depthwise_conv_fast_s8 on 1-D kernels (k_w == 1, the streaming keyword models'
depthwise layers: [N, C, 1, L] as k_h x 1 windows) with the saturating records of both
numerics: on qemu-m4 the whole pixel's channel quads run in one asm statement (taps odd
then in pairs, bias start and requantization inline; a layer whose windows are all
inside, every row in the same statement), on the host the C path. Against the
numpy oracle of the conv operator (codegen/ops/conv2d.py: conv2d_int, groups = channels):
tap counts 1 to 10 odd and even, windows cut by padding (fewer taps than k_h, the
weights' skip), stride and dilation down the column, one and many channel quads."""
from __future__ import annotations

import numpy as np
import pytest

from codegen.kernels.fast_pack import pack_depthwise
from tests.helpers.env import require_arm_toolchain
from tests.helpers.kernels_cffi import conv_dims_fields
from tests.helpers.requant_cases import requant_fields

# (channels, in_h, k_h, stride_h, dil_h, pad top, pad bottom)
SHAPES = [(128, 28, 5, 1, 1, 0, 0),   # sww01's first depthwise layer
          (16, 24, 10, 1, 1, 0, 0),   # its second (an even tap count)
          (4, 7, 1, 1, 1, 0, 0),      # one tap, one quad
          (8, 9, 3, 2, 1, 1, 1),      # cut windows at both ends, stride 2
          (12, 11, 4, 1, 2, 3, 2),    # dilated, cut
          (20, 6, 7, 1, 1, 3, 3),     # every window cut
          (8, 13, 3, 2, 2, 0, 0)]     # no window cut, stride and dilation: one call, 5 rows
NUMERICS = ("tflite", "ort")


def _cases():
    from codegen.ops.conv2d import conv2d_int
    out = []
    for ni, numerics in enumerate(NUMERICS):
        rng = np.random.default_rng(40 + ni)
        for c, h, kh, sh, dh, pt, pb in SHAPES:
            attrs = {"kernel": (kh, 1), "strides": (sh, 1), "pads": (pt, 0, pb, 0),
                     "dilations": (dh, 1), "group": c}
            x = rng.integers(-128, 128, (1, c, h, 1)).astype(np.int8)
            w = rng.integers(-127, 128, (c, 1, kh, 1)).astype(np.int8)
            q, p = requant_fields(rng, c, int(rng.integers(-128, 128)), numerics, True)
            want = conv2d_int(x, w, attrs, p)[0]  # [c][oh][1]
            oh = want.shape[1]
            dims = conv_dims_fields(x.shape, (1, c, oh, 1), attrs)
            packed = pack_depthwise(w[:, 0].transpose(1, 2, 0).reshape(-1, c))
            out.append((dims, q, x[0].transpose(1, 2, 0), packed, want.transpose(1, 2, 0),
                        (c, h, kh, sh, dh, pt, pb, numerics)))
    return out


def test_depthwise_1d_equals_the_numpy_reference():
    from tests.helpers import kernels_cffi as kf
    kf.check_conv_cases(kf.depthwise_conv_fast_s8, _cases(), 8)


@pytest.mark.qemu
def test_depthwise_1d_on_qemu_m4(tmp_path):
    require_arm_toolchain()
    from tests.helpers.kernel_firmware import depthwise_fast_cases_on_qemu_m4
    asm = depthwise_fast_cases_on_qemu_m4(tmp_path, "dw1d", _cases())
    assert "vcvtr.s32.f32" in asm and "smlal" in asm  # both records' asm compiled
