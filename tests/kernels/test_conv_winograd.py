"""tinyaot_convolve_winograd_s8 (3x3 stride-1 convs by Winograd F(2x2, 3x3) in exact
integers: transformed input by __SADD16 / __SSUB16, weights transformed at compile time
with 2G, the fast kernel's GEMM per position, the output transform divided by 4) against
the numpy oracle of the conv operator (codegen/ops/conv2d.py: conv2d_int, direct int64
sums, both requantizations), with and without the per-channel records, a clamped output
range, on the host (portable C) and on qemu-m4 (the DSP inline asm): every in_c / 4 % 8,
odd output sizes (tiles cut by the layer's edge), an odd tile count (the last pair's
second tile absent), odd channel counts, asymmetric and no padding, and the extremes of
the int16 transforms (inputs at both ends of int8 with zero points -128 and 127, weights
-128 and 127, in_c 192: the largest sums the kernel accepts). The transform matrices are
checked against the direct convolution, and the scratch size the compiler plans
(kernels/winograd_pack.py) is the kernel's own.

A layer with no scratch of its own (winograd_pack.consume_bands: two bands of output rows,
the first's scratch in the output's last bytes, the second's in the input's first bytes)
gives the same outputs, input and output in one guarded buffer as in the arena: on ic01's
geometry and on every layer of a grid that it accepts, in every record variant.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from codegen.kernels import winograd_pack as wino
from tests.helpers.env import require_arm_toolchain
from tests.helpers.kernels_cffi import conv_dims_fields
from tests.helpers.requant_cases import requant_fields

# (cin, cout, hw, pads (t, l, b, r)); in_c / 4 % 8 and the tiles in the comment
SHAPES = [(16, 16, (8, 8), (1, 1, 1, 1)),   # 4, 16 tiles
          (4, 3, (5, 7), (1, 1, 1, 1)),     # 1, 3 x 4 tiles, the last row and column cut
          (8, 5, (6, 5), (0, 0, 0, 0)),     # 2, out 4 x 3
          (32, 6, (4, 4), (1, 1, 1, 1)),    # 0 (8 quads)
          (20, 9, (5, 5), (1, 0, 1, 2)),    # 5, 3 x 3 tiles: the last pair one tile
          (12, 2, (3, 3), (1, 1, 1, 1)),    # 3
          (24, 4, (2, 6), (1, 1, 1, 1)),    # 6
          (28, 7, (4, 3), (1, 1, 1, 1)),    # 7
          (36, 3, (3, 3), (0, 0, 0, 0)),    # 1 (9 quads), one output pixel
          (64, 2, (3, 4), (2, 1, 0, 1))]    # 0 (16 quads), more top padding than bottom

VARIANTS = [("ort", False, False), ("ort", True, False), ("ort", False, True),
            ("tflite", False, False), ("tflite", True, False), ("tflite", True, True)]


def _case(rng, numerics, records, clamp, cin, cout, hw, pads, x=None, w=None, in_zp=None):
    from codegen.ops.conv2d import conv2d_int
    attrs = {"kernel": (3, 3), "strides": (1, 1), "pads": pads, "dilations": (1, 1),
             "group": 1}
    if x is None:
        x = rng.integers(-128, 128, (1, cin) + hw).astype(np.int8)
    if w is None:
        w = rng.integers(-128, 128, (cout, cin, 3, 3)).astype(np.int8)
    if in_zp is None:
        in_zp = int(rng.integers(-128, 128))
    q, p = requant_fields(rng, cout, in_zp, numerics, records)
    if clamp:  # a fused Relu-like range: no whole-range record mode
        q["act_min"] = p.act_min = -20
        q["act_max"] = p.act_max = 90
    want = conv2d_int(x, w, attrs, p)[0]
    dims = conv_dims_fields(x.shape, (1, cout) + want.shape[1:], attrs)
    return (dims, q, x[0].transpose(1, 2, 0), wino.pack_winograd(w).astype(np.int32),
            want.transpose(1, 2, 0), (x.shape, w.shape, (1, cout) + want.shape[1:]))


def _extremes(rng, numerics, records):
    """The largest transforms: inputs at the two ends of int8 in a checkerboard (the
    differences of B^T d B reach 4 * 255), zero points at the ends, weights -128 / 127 in
    the sign pattern that makes (2G) g (2G)^T reach 9 * 128, in_c 192."""
    out = []
    for in_zp, cin in ((-128, 192), (127, 192), (-128, 8)):
        cb = np.indices((6, 6)).sum(axis=0) % 2
        x = np.where(cb, 127, -128).astype(np.int8)[None, None].repeat(cin, axis=1)
        g = np.array([[-128, 127, -128], [127, -128, 127], [-128, 127, -128]])
        w = np.stack([g, -g - 1]).astype(np.int8)[:, None].repeat(cin, axis=1)
        out.append(_case(rng, numerics, records, False, cin, 2, (6, 6), (1, 1, 1, 1), x, w,
                         in_zp))
    return out


def _cases():
    """(dims, q, x NHWC, packed weights, want NHWC, shapes) for every shape and variant."""
    out = []
    for vi, (numerics, records, clamp) in enumerate(VARIANTS):
        rng = np.random.default_rng(60 + vi)
        for cin, cout, hw, pads in SHAPES:
            out.append(_case(rng, numerics, records, clamp, cin, cout, hw, pads))
        if not clamp:
            out += _extremes(rng, numerics, records)
    return out


def test_transforms_are_four_times_the_direct_convolution():
    """A^T [((2G) g (2G)^T) * (B^T d B)] A = 4 * the 2x2 correlation of d with g (the
    identity the kernel's exactness rests on), and the packing keeps U's integers."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        d = rng.integers(-255, 256, (4, 4))
        g = rng.integers(-128, 128, (3, 3))
        direct = np.array([[(d[i:i + 3, j:j + 3] * g).sum() for j in range(2)]
                           for i in range(2)])
        u = wino.transform_weights(g[None, None])[0, 0]
        np.testing.assert_array_equal(wino.AT @ (u * (wino.BT @ d @ wino.BT.T)) @ wino.AT.T,
                                      4 * direct)
    assert np.abs(wino.transform_weights(np.full((1, 1, 3, 3), -128))).max() == 9 * 128


def test_fits_refuses_what_the_kernel_cannot_run():
    w = np.ones((2, 4, 3, 3), np.int8)
    assert wino.fits(w, 4)
    assert not wino.fits(np.ones((2, 6, 3, 3), np.int8), 6)  # in_c % 4
    assert not wino.fits(np.full((2, 196, 3, 3), -128, np.int8), 196)  # int32 sums
    assert wino.fits(np.full((2, 192, 3, 3), -128, np.int8), 192)


def test_winograd_equals_the_numpy_reference():
    from tests.helpers import kernels_cffi as kf
    rng = np.random.default_rng(3)
    for i, (dims, q, x, w, want, shapes) in enumerate(_cases()):
        dims = dict(zip(kf.struct_fields("tinyaot_conv_dims_t"), dims))
        nbytes = kf.buffer_size("tinyaot_convolve_winograd_s8", dims)
        assert nbytes == wino.scratch_bytes(shapes[0][1]), f"case {i}"
        got = kf.convolve_winograd_s8(dims, q, x, w, nbytes, rng).reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"case {i}: {shapes}")


@pytest.mark.qemu
def test_winograd_asm_on_qemu_m4(tmp_path):
    """The same cases through the DSP inline asm (SADD16 / SSUB16 transforms, the GEMM
    core's unrolled LDM loops for every in_c / 4 % 8, the asm requantizations)."""
    require_arm_toolchain()
    from codegen.targets.qemu import load_board, run_firmware
    from tests.helpers.kernel_firmware import assert_outputs, cases_firmware, conv_case_c

    board = load_board("qemu-m4")
    cases = _cases()
    src = ["#include <stdint.h>", "#include <string.h>", '#include "harness.h"',
           '#include "tinyaot_fast_kernels.h"']
    calls, scratch = [], 4
    for i, (dims, q, x, w, want, shapes) in enumerate(cases):
        src += conv_case_c(i, dims, q, x, w, "int32_t")
        scratch = max(scratch, wino.scratch_bytes(shapes[0][1]))
        calls.append(f"    case {i}: return tinyaot_convolve_winograd_s8(&d{i}, &q{i}, x{i}, "
                     f"w{i}, scratch, output);")
    out_size = max(c[4].size for c in cases)
    elf, asm = cases_firmware(tmp_path, board, "winograd", src, calls, scratch, out_size,
                              "tinyaot_convolve_winograd_s8.c")
    for insn in ("sadd16", "ssub16", "sxtab16", "smlad", "ldmia", "smlal", "ssat"):
        assert re.search(rf"\s{re.escape(insn)}(\.w)?\s", asm), f"{insn} not in the firmware"
    res = run_firmware(elf, board, timeout=300)
    assert len(res.outputs) == len(calls)
    assert_outputs(res, [c[4] for c in cases], [c[5] for c in cases])


def _bands_run(rng, dims, q, x, w, want, gap=16):
    """The layer as the compiler emits it with no scratch: consume_bands' calls on one buffer
    (input at 16, output `gap` bytes after it, canaries around), checked against want."""
    from codegen.ops.conv_records import ConvDims
    from tests.helpers import kernels_cffi as kf
    d = ConvDims(*dims)
    bands = wino.consume_bands(d)
    assert bands is not None, d
    nx, ny = x.size, want.size
    x_at, y_at = 16, 16 + (nx + gap + 3) // 4 * 4
    buf = kf.OutBuf(y_at + ny, rng)
    buf.raw[kf.GUARD + x_at:kf.GUARD + x_at + nx] = x.reshape(-1)
    keep = []
    qs = kf.new_struct("tinyaot_requant_t", q, keep)
    ws = kf.cbuf(w, np.int32, keep)
    for bd, x_off, y_off, (where, s_off) in bands:
        ds = kf.new_struct("tinyaot_conv_dims_t", {f: getattr(bd, f) for f in
                                                   kf.struct_fields("tinyaot_conv_dims_t")}, keep)
        scratch = (x_at if where == "input" else y_at) + s_off
        kf._call("tinyaot_convolve_winograd_s8", ds, qs, buf.ptr + x_at + x_off, ws,
                 kf.ffi.cast("uint32_t *", buf.ptr + scratch), buf.ptr + y_at + y_off)
    got = buf.result("the bands")[y_at:y_at + ny]
    np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=str(d))


def test_no_scratch_bands_equal_the_numpy_reference():
    """ic01's second 16-channel layer in every variant, then a grid of geometries: each one
    consume_bands accepts runs exact in its two bands (its scratch overwrites the input's
    head and the output's tail while they are free), and it refuses layers too small."""
    from codegen.ops.conv_records import ConvDims
    rng = np.random.default_rng(12)
    for vi, (numerics, records, clamp) in enumerate(VARIANTS):
        dims, q, x, w, want, _ = _case(np.random.default_rng(90 + vi), numerics, records, clamp,
                                       16, 16, (32, 32), (1, 1, 1, 1))
        _bands_run(rng, dims, q, x, w, want)
    ran = refused = 0
    for cin in (4, 8, 20, 32):
        for cout in (3, 16, 40):
            for hw in ((3, 3), (6, 16), (9, 7), (14, 11), (16, 5)):
                for pads in ((0, 0, 0, 0), (1, 1, 1, 1), (2, 0, 1, 2)):
                    oh, ow = hw[0] + pads[0] + pads[2] - 2, hw[1] + pads[1] + pads[3] - 2
                    x = np.zeros((1, cin) + hw, np.int8)
                    attrs = {"kernel": (3, 3), "strides": (1, 1), "dilations": (1, 1),
                             "group": 1, "pads": pads}
                    if wino.consume_bands(ConvDims(*conv_dims_fields(
                            x.shape, (1, cout, oh, ow), attrs))) is None:
                        refused += 1
                        continue
                    numerics, records, clamp = VARIANTS[ran % len(VARIANTS)]
                    dims, q, x, w, want, _ = _case(rng, numerics, records, clamp, cin, cout, hw,
                                                   pads)
                    _bands_run(rng, dims, q, x, w, want, gap=int(rng.integers(0, 64)))
                    ran += 1
    assert ran >= 20 and refused >= 40, (ran, refused)
