"""tinyaot_convolve_sparse_s8 (pointwise conv on the nonzero weights alone, the input zero
point folded into the bias) against the numpy oracle of the conv operator
(codegen/ops/conv2d.py: conv2d_int with the layer's own bias, int64 sums), both
requantizations, with and without the per-channel records, a clamped output range: on the
host (portable C) and on qemu-m4. Weights from all-zero rows to dense ones, pixel counts
of every remainder mod 4 (the four-pixel passes and the single ones), one pixel."""
from __future__ import annotations

import numpy as np
import pytest

from codegen.kernels.fast_pack import fold_input_zero_point, pack_sparse
from tests.helpers.env import require_arm_toolchain
from tests.helpers.kernels_cffi import conv_dims_fields
from tests.helpers.requant_cases import requant_fields

# (cin, cout, hw, density)
SHAPES = [(128, 16, (6, 6), 0.03), (256, 8, (3, 3), 0.01), (16, 9, (5, 3), 0.25),
          (8, 4, (2, 3), 1.0), (40, 6, (1, 1), 0.1), (64, 5, (7, 2), 0.0),
          (100, 12, (3, 5), 0.5)]
VARIANTS = [("ort", False, False), ("ort", True, False), ("ort", False, True),
            ("tflite", False, False), ("tflite", True, False), ("tflite", True, True)]
ATTRS = {"kernel": (1, 1), "strides": (1, 1), "pads": (0, 0, 0, 0), "dilations": (1, 1),
         "group": 1}


def _cases():
    """(dims, q with the folded bias, x NHWC, packed words, want NHWC, shapes)."""
    from codegen.kernels.fast_pack import float_requant, smlal_requant
    from codegen.ops.conv2d import conv2d_int
    out = []
    for vi, (numerics, records, clamp) in enumerate(VARIANTS):
        rng = np.random.default_rng(70 + vi)
        for cin, cout, hw, density in SHAPES:
            x = rng.integers(-128, 128, (1, cin) + hw).astype(np.int8)
            w = rng.integers(-127, 128, (cout, cin, 1, 1)).astype(np.int8)
            w[rng.random(w.shape) >= density] = 0
            w[cout // 2] = 0  # a channel with no weight at all
            q, p = requant_fields(rng, cout, int(rng.integers(-128, 128)), numerics, False)
            if clamp:
                q["act_min"] = p.act_min = -30
                q["act_max"] = p.act_max = 100
            want = conv2d_int(x, w, ATTRS, p)[0]  # the oracle: the layer's own bias
            w2d = w.reshape(cout, cin)
            folded = fold_input_zero_point(p.bias, w2d, p.in_zp).astype(np.int32)
            q["bias"] = folded
            if records:
                q["rq"] = (float_requant(q["scale"], folded) if numerics == "ort"
                           else smlal_requant(q["mult"], q["shift"], folded, q["out_zp"]))
                q["bias"] = None  # the records hold it
            dims = conv_dims_fields(x.shape, (1, cout) + hw, ATTRS)
            out.append((dims, q, x[0].transpose(1, 2, 0), pack_sparse(w2d),
                        want.transpose(1, 2, 0), (cin, cout, hw, density, numerics, records)))
    return out


def test_pack_sparse_words():
    w = np.array([[0, 3, 0, -2], [0, 0, 0, 0], [-128, 0, 0, 127]], np.int8)
    words = pack_sparse(w).astype(np.int64) & 0xFFFFFFFF
    assert list(words) == [2, (3 << 16) | 1, (0xFFFE << 16) | 3, 0,
                           2, (0xFF80 << 16) | 0, (127 << 16) | 3]


def test_sparse_equals_the_numpy_reference():
    from tests.helpers import kernels_cffi as kf
    kf.check_conv_cases(kf.convolve_sparse_s8, _cases(), 5)


@pytest.mark.qemu
def test_sparse_on_qemu_m4(tmp_path):
    require_arm_toolchain()
    from tests.helpers.kernel_firmware import conv_cases_on_qemu_m4
    conv_cases_on_qemu_m4(tmp_path, "sparse", _cases(), "tinyaot_kernels.h",
                          "tinyaot_convolve_sparse_s8.c",
                          lambda i: f"tinyaot_convolve_sparse_s8(&d{i}, &q{i}, x{i}, "
                                    f"(const uint32_t *)(const void *)w{i}, output)")
