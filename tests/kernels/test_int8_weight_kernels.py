"""The kernels of `--optimize size` (int8 weights in flash), each alone against its oracle:

* The float kernels on int8 weights (tinyaot_convolve_f32_w8_s8,
  tinyaot_fully_connected_f32_w8_s8), compiled with their QuantizeLinear
  replaced by a recorder: the float before quantization equals onnxruntime's
  float output bit for bit, on the shapes of tests/numerics/test_ort_conv_float_order.py
  (1 and 2 ORT threads) and tests/numerics/test_ort_gemm_float_order.py (every MLAS order).
* The integer kernels on int8 weights (tinyaot_convolve_w8_s8,
  tinyaot_depthwise_conv_w8_s8, tinyaot_fully_connected_w8_s8) against the
  numpy oracles of the operators (codegen/ops/conv2d.py, fully_connected.py),
  both requantizations, on the host and (inline asm) on qemu-m4.

The whole models under `--optimize size` are tests/end_to_end/test_optimize_size.py's.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from codegen.numerics.mlas_fc_order import ORDER_CODE
from codegen.numerics.mlas_conv_order import node_segments
from codegen.kernels.conv_f32_pack import segment_words

from tests.helpers.env import require_arm_toolchain
from tests.helpers.kernels_cffi import (CAPTURE_QUANTIZE_C, CONV_F32_STRUCTS_CDEF, capture_library,
                                        conv_dims_fields)
from tests.helpers.ort_conv_cases import SHAPES, ort_case
from tests.helpers.ort_gemm_cases import bits_differ, cases, reference
from tests.helpers.requant_cases import requant_fields as _requant_fields

F32 = np.float32

CAPTURE_C = CAPTURE_QUANTIZE_C + r"""
#include "conv/tinyaot_convolve_f32_w8_s8.c"
#include "fully_connected/tinyaot_fully_connected_f32_w8_s8.c"
int conv_capture(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                 const int32_t *seg, int32_t nseg, const int8_t *input, float *scratch,
                 int8_t *output, float *y)
{
    cap_ = y;
    return tinyaot_convolve_f32_w8_s8(d, p, seg, nseg, input, scratch, output);
}
int fc_capture(int32_t rows, int32_t k, int32_t n, int32_t order, int32_t k_block,
               const tinyaot_float_conv_t *p, const int8_t *input, float *scratch,
               int8_t *output, float *y)
{
    cap_ = y;
    return tinyaot_fully_connected_f32_w8_s8(rows, k, n, order, k_block, p, input, scratch,
                                             output);
}
"""

CDEF = CONV_F32_STRUCTS_CDEF + """
int conv_capture(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                 const int32_t *seg, int32_t nseg, const int8_t *input, float *scratch,
                 int8_t *output, float *y);
int32_t tinyaot_convolve_f32_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d);
int fc_capture(int32_t rows, int32_t k, int32_t n, int32_t order, int32_t k_block,
               const tinyaot_float_conv_t *p, const int8_t *input, float *scratch,
               int8_t *output, float *y);
int32_t tinyaot_fully_connected_f32_w8_s8_get_buffer_size(int32_t in_features);
"""


@pytest.fixture(scope="module")
def w8_lib(tmp_path_factory):
    return capture_library(tmp_path_factory.mktemp("w8_capture"), CAPTURE_C, CDEF, "-O2")


def _float_params(ffi, keep, sx, zx, wq, ws, bf):
    keep += [np.ascontiguousarray(wq, np.int8).reshape(-1), np.ascontiguousarray(ws, F32),
             np.ascontiguousarray(bf, F32)]
    return ffi.new("tinyaot_float_conv_t *", [
        sx, zx, 1.0, 0, -128, 127, ffi.from_buffer("int8_t[]", keep[-3]),
        ffi.from_buffer("float[]", keep[-2]), ffi.from_buffer("float[]", keep[-1])])


def conv_w8_float(w8_lib, x, wt, bf, sx, zx, attrs, out_shape):
    """The size conv kernel's float y (bias included), NCHW, from the int8 weights."""
    ffi, lib = w8_lib
    _, cin, _, _ = x.shape
    _, cout, oh, ow = out_shape
    group = attrs["group"]
    kh, kw = attrs["kernel"]
    dims = ffi.new("tinyaot_conv_dims_t *", conv_dims_fields(x.shape, out_shape, attrs))
    keep = []
    fp = _float_params(ffi, keep, sx, zx, wt.data, np.broadcast_to(wt.q.scale, (cout,)), bf)
    words, nseg = segment_words(x.shape, out_shape, attrs)
    words = np.ascontiguousarray(words, np.int32)
    nbytes = lib.tinyaot_convolve_f32_w8_s8_get_buffer_size(dims)
    assert nbytes == 16 * (cin // group) * kh * kw  # 4 columns of K floats
    scratch = np.full(nbytes // 4, np.nan, F32)  # the kernel must write it before reading
    xin = np.ascontiguousarray(x[0].transpose(1, 2, 0))
    out = np.zeros(oh * ow * cout, np.int8)
    y = np.full(out.size, np.nan, F32)
    assert lib.conv_capture(dims, fp, ffi.from_buffer("int32_t[]", words), nseg,
                            ffi.from_buffer("int8_t[]", xin), ffi.from_buffer("float[]", scratch),
                            ffi.from_buffer("int8_t[]", out), ffi.from_buffer("float[]", y)) == 0
    # store order: per group, per segment: fma segments 4 pixels at a time (per
    # channel its 4 pixels), then one pixel at a time (per pixel its channels)
    og = cout // group
    cy = np.full(out_shape, np.nan, F32)
    order = []
    for gi in range(group):
        for s in node_segments(x.shape, out_shape, attrs, attrs["ort_threads"]):
            n = s.n0
            while s.kind == "fma" and n + 4 <= s.n1:
                order += [(n + j, gi * og + m) for m in range(s.m0, s.m1) for j in range(4)]
                n += 4
            order += [(p, gi * og + m) for p in range(n, s.n1) for m in range(s.m0, s.m1)]
    for i, (n, oc) in enumerate(order):
        cy[0, oc, n // ow, n % ow] = y[i]
    i = len(order)
    assert i == y.size
    return cy


@pytest.mark.parametrize("threads", [1, 2])
def test_conv_w8_float_bit_exact_with_onnxruntime(w8_lib, threads):
    """Every shape of test_conv_float_order (fma blocks, M=1 and transpose-B kernels,
    padding, strides, dilation, groups, depthwise): onnxruntime's float, bit for bit."""
    rng = np.random.default_rng(17 + threads)
    bad = []
    for cin, cout, group, hw, k, s, pads, d, relu in SHAPES:
        y, x, wt, bt, sx, zx = ort_case(rng, cin, cout, group, hw, k, s, pads, d, threads, relu)
        attrs = {"group": group, "kernel": k, "strides": s, "pads": pads, "dilations": d,
                 "ort_threads": threads}
        bf = (bt.data.astype(F32) * bt.q.scale).astype(F32)
        cy = conv_w8_float(w8_lib, x, wt, bf, sx, zx, attrs, y.shape)
        if relu:  # ORT's Relu; the C kernel clamps the int8 instead
            cy = np.maximum(cy, 0)
        differ = bits_differ(cy, y)
        if differ:
            bad.append(((cin, cout, group, hw, k, s), differ, y.size))
    assert not bad, bad


@pytest.mark.parametrize("which", ["m1", "mn"])
def test_fc_w8_float_bit_exact_with_onnxruntime(w8_lib, which):
    """Every form and shape of test_fc_float_order (GEMV4, LANES8 incl. N == 1 over
    rows, KBLOCK): onnxruntime's float, bit for bit, from int8 weights."""
    ffi, lib = w8_lib
    bad, orders = [], set()
    for form, m, k, n, y, xq, wq, p, tb, _ in cases(which):
        _, order, kb = reference(xq, wq, p, tb, False)
        orders.add(order)
        keep = []
        fp = _float_params(ffi, keep, p["in_scale"], p["in_zp"], wq, p["w_scale"], p["bias_f"])
        assert lib.tinyaot_fully_connected_f32_w8_s8_get_buffer_size(k) == 4 * k
        scratch = np.full(k, np.nan, F32)
        out = np.zeros(m * n, np.int8)
        cy = np.full(m * n, np.nan, F32)
        x = np.ascontiguousarray(xq)
        assert lib.fc_capture(m, k, n, ORDER_CODE[order], kb, fp, ffi.from_buffer("int8_t[]", x),
                              ffi.from_buffer("float[]", scratch), ffi.from_buffer("int8_t[]", out),
                              ffi.from_buffer("float[]", cy)) == 0
        cy = cy.reshape(m, n)
        if form == "gemm_relu":
            cy = np.maximum(cy, F32(0))
        if bits_differ(cy, y):
            bad.append((form, m, k, n, order, bits_differ(cy, y), y.size))
    assert not bad, bad
    assert len(orders) >= (1 if which == "m1" else 2)


# ------------------------------------------------------------------ integer int8-weight kernels

# (cin, cout, hw, kernel, strides, pads (t, l, b, r), dilations): K % 4 = 0..3,
# padding on every side, strides, dilation, one pixel, K = 1
INT_SHAPES = [(1, 64, (49, 10), (10, 4), (2, 2), (4, 1, 5, 1), (1, 1)),
              (64, 64, (5, 5), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
              (3, 8, (12, 12), (3, 3), (2, 2), (0, 0, 1, 1), (1, 1)),
              (5, 7, (9, 8), (3, 2), (1, 2), (1, 0, 2, 1), (2, 1)),
              (6, 3, (4, 4), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
              (1, 2, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), (1, 1)),
              (13, 9, (3, 3), (3, 3), (1, 1), (0, 0, 0, 0), (1, 1)),
              # odd pixel count (last column alone), odd channels, K odd (odd column stride)
              (3, 5, (5, 3), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
              (7, 1, (3, 3), (1, 3), (1, 1), (0, 1, 0, 1), (1, 1))]


@pytest.mark.parametrize("records", [False, True])
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_int_w8_kernels_equal_the_numpy_reference(numerics, records):
    """tinyaot_convolve_w8_s8 / tinyaot_fully_connected_w8_s8 (host: the portable
    intrinsics) against the operators' oracles (numpy int64 sums, both requantizations,
    with and without the per-channel records), weights packed as the compiler
    stores them (ops/size_kernels.py:w8_pack)."""
    from tests.helpers import kernels_cffi as kf
    from codegen.ops.conv2d import conv2d_int
    from codegen.ops.fully_connected import fully_connected_int
    from codegen.ops.size_kernels import w8_pack
    rng = np.random.default_rng((5 if numerics == "ort" else 6) + 10 * records)
    for cin, cout, hw, k, s, pads, d in INT_SHAPES:
        attrs = {"kernel": k, "strides": s, "pads": pads, "dilations": d, "group": 1}
        x = rng.integers(-128, 128, (1, cin) + hw).astype(np.int8)
        w = rng.integers(-127, 128, (cout, cin) + k).astype(np.int8)
        q, p = _requant_fields(rng, cout, int(rng.integers(-128, 128)), numerics, records)
        want = conv2d_int(x, w, attrs, p)[0]           # [cout, oh, ow]
        oh, ow = want.shape[1:]
        keep = []
        dims = dict(zip(kf.struct_fields("tinyaot_conv_dims_t"),
                        conv_dims_fields(x.shape, (1, cout, oh, ow), attrs)))
        dp = kf.new_struct("tinyaot_conv_dims_t", dims, keep)
        nbytes = kf.kernels().lib.tinyaot_convolve_w8_s8_get_buffer_size(dp)
        kk = cin * k[0] * k[1]
        assert nbytes == 2 * 2 * ((kk + 3) // 4 * 4)  # two columns of k rounded up to 4
        scratch = np.zeros(nbytes // 2 + 1, np.int16)
        out = kf.OutBuf(oh * ow * cout, rng)
        kf._call("tinyaot_convolve_w8_s8", dp, kf.new_struct("tinyaot_requant_t", q, keep),
                 kf.cbuf(x[0].transpose(1, 2, 0), np.int8, keep),
                 kf.cbuf(w8_pack(w.transpose(0, 2, 3, 1).reshape(cout, -1)), np.int8, keep),
                 kf.ffi.from_buffer("int16_t[]", scratch), out.ptr)
        got = out.result("tinyaot_convolve_w8_s8").reshape(oh, ow, cout).transpose(2, 0, 1)
        np.testing.assert_array_equal(got, want, err_msg=f"conv {cin, cout, hw, k}")
        # the same weights as a fully connected layer over rows of K inputs
        # (3 rows: a pair and a single row; 1 row: the batch-1 path)
        for rows in (3, 1):
            xf = rng.integers(-128, 128, (rows, kk)).astype(np.int8)
            wf = w.reshape(cout, kk)
            want = fully_connected_int(xf, wf, p)
            nbytes = kf.kernels().lib.tinyaot_fully_connected_w8_s8_get_buffer_size(kk)
            assert nbytes == 2 * ((kk + 3) // 4 * 4)
            scratch = np.zeros(nbytes // 2, np.int16)
            out = kf.OutBuf(rows * cout, rng)
            kf._call("tinyaot_fully_connected_w8_s8", rows, kk, cout,
                     kf.new_struct("tinyaot_requant_t", q, keep), kf.cbuf(xf, np.int8, keep),
                     kf.cbuf(w8_pack(wf, 4), np.int8, keep), kf.ffi.from_buffer("int16_t[]", scratch),
                     out.ptr)
            np.testing.assert_array_equal(out.result("fc").reshape(rows, cout), want,
                                          err_msg=f"fc {kk, cout, rows}")


# (cin, multiplier, hw, kernel, strides, pads, dilations)
DW_SHAPES = [(8, 1, (12, 12), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
             (16, 1, (1, 49), (1, 5), (1, 1), (0, 2, 0, 2), (1, 1)),
             (12, 2, (9, 7), (3, 3), (2, 2), (0, 1, 2, 0), (1, 1)),
             (4, 1, (10, 10), (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
             (8, 1, (3, 3), (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),   # window wider than the input
             # channels not a multiple of 4 (quads + 1..3 single channels), fewer than 4
             (13, 1, (6, 5), (3, 3), (2, 1), (1, 1, 1, 1), (1, 1)),
             (6, 1, (5, 5), (3, 3), (1, 1), (0, 1, 1, 0), (1, 1)),
             (3, 1, (4, 4), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1))]


@pytest.mark.parametrize("records", [False, True])
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_depthwise_w8_equals_the_numpy_reference(numerics, records):
    from tests.helpers import kernels_cffi as kf
    rng = np.random.default_rng((9 if numerics == "ort" else 10) + 10 * records)
    for shape in DW_SHAPES:
        dims, q, x, w, want = _dw_case(rng, shape, numerics, records)
        keep = []
        out = kf.OutBuf(want.size, rng)
        kf._call("tinyaot_depthwise_conv_w8_s8",
                 kf.new_struct("tinyaot_conv_dims_t",
                               dict(zip(kf.struct_fields("tinyaot_conv_dims_t"), dims)), keep),
                 kf.new_struct("tinyaot_requant_t", q, keep), kf.cbuf(x, np.int8, keep),
                 kf.cbuf(w, np.int8, keep), out.ptr)
        got = out.result("tinyaot_depthwise_conv_w8_s8").reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"depthwise {shape}")


def _dw_case(rng, shape, numerics, records):
    """One DW_SHAPES case: conv dims fields, tinyaot_requant_t fields, the input
    [h][w][c], the weights [k_h][k_w][c] and the reference output [h][w][c]."""
    from codegen.ops.conv2d import conv2d_int
    cin, mult, hw, k, s, pads, d = shape
    cout = cin * mult
    attrs = {"kernel": k, "strides": s, "pads": pads, "dilations": d, "group": cin}
    x = rng.integers(-128, 128, (1, cin) + hw).astype(np.int8)
    w = rng.integers(-127, 128, (cout, 1) + k).astype(np.int8)
    q, p = _requant_fields(rng, cout, int(rng.integers(-128, 128)), numerics, records)
    want = conv2d_int(x, w, attrs, p)[0]
    dims = conv_dims_fields(x.shape, (1, cout) + want.shape[1:], attrs)
    return dims, q, x[0].transpose(1, 2, 0), w[:, 0].transpose(1, 2, 0), want.transpose(1, 2, 0)


def _int_w8_cases():
    """Every INT_SHAPES conv / FC and DW_SHAPES depthwise case in both numerics,
    with and without records: (kernel, C call args builder data, expected)."""
    from codegen.ops.conv2d import conv2d_int
    from codegen.ops.fully_connected import fully_connected_int
    from codegen.ops.size_kernels import w8_pack
    rng = np.random.default_rng(21)
    cases = []
    for numerics in ("ort", "tflite"):
        for records in (False, True):
            for cin, cout, hw, k, s, pads, d in INT_SHAPES:
                attrs = {"kernel": k, "strides": s, "pads": pads, "dilations": d, "group": 1}
                x = rng.integers(-128, 128, (1, cin) + hw).astype(np.int8)
                w = rng.integers(-127, 128, (cout, cin) + k).astype(np.int8)
                q, p = _requant_fields(rng, cout, int(rng.integers(-128, 128)), numerics, records)
                want = conv2d_int(x, w, attrs, p)[0]
                dims = conv_dims_fields(x.shape, (1, cout) + want.shape[1:], attrs)
                cases.append(("conv", dims, q, x[0].transpose(1, 2, 0),
                              w8_pack(w.transpose(0, 2, 3, 1).reshape(cout, -1)),
                              want.transpose(1, 2, 0)))
                kk = cin * k[0] * k[1]
                xf = rng.integers(-128, 128, (2, kk)).astype(np.int8)
                wf = w.reshape(cout, kk)
                cases.append(("fc", (2, kk, cout), q, xf, w8_pack(wf, 4),
                              fully_connected_int(xf, wf, p)))
            for shape in DW_SHAPES:
                cases.append(("dw",) + _dw_case(rng, shape, numerics, records))
    return cases


@pytest.mark.qemu
def test_int_w8_kernels_asm_on_qemu_m4(tmp_path):
    """The size kernels' inline-asm loops (tinyaot_dot_w8.h: 2x2 LDRD block, 4-row
    LDM block; DSP depthwise) on qemu-m4, every host-test shape, both numerics,
    with and without records, against the numpy reference."""
    require_arm_toolchain()
    from codegen.targets.qemu import load_board, run_firmware
    from tests.helpers.kernel_firmware import assert_outputs, cases_firmware, conv_case_c

    board = load_board("qemu-m4")
    # the harness holds 4096 output bytes: the big kws-like case runs in the model tests
    cases = [c for c in _int_w8_cases() if c[5].size <= 4096]
    src = ["#include <stdint.h>", "#include <string.h>", '#include "harness.h"',
           '#include "tinyaot_kernels.h"']
    calls, scratch = [], 4
    for i, (kind, dims, q, x, w, want) in enumerate(cases):
        src += conv_case_c(i, None if kind == "fc" else dims, q, x, w)
        if kind == "fc":
            rows, kk, cout = dims
            scratch = max(scratch, 2 * ((kk + 3) // 4 * 4))
            calls.append(f"    case {i}: return tinyaot_fully_connected_w8_s8({rows}, {kk}, {cout}, "
                         f"&q{i}, x{i}, w{i}, (int16_t *)(void *)scratch, output);")
            continue
        if kind == "conv":
            scratch = max(scratch, 4 * ((len(w) // dims[5] + 3) // 4 * 4))
            calls.append(f"    case {i}: return tinyaot_convolve_w8_s8(&d{i}, &q{i}, x{i}, w{i}, "
                         "(int16_t *)(void *)scratch, output);")
        else:
            calls.append(f"    case {i}: return tinyaot_depthwise_conv_w8_s8(&d{i}, &q{i}, x{i}, "
                         f"w{i}, output);")
    out_size = max(c[5].size for c in cases)
    elf, asm = cases_firmware(tmp_path, board, "w8", src, calls, scratch, out_size,
                               ["tinyaot_convolve_w8_s8.c", "tinyaot_fully_connected_w8_s8.c",
                                "tinyaot_depthwise_conv_w8_s8.c"])
    for insn in ("ldmia.w", "ldrd", "sxtb16", "smlad", "sxtab16", "smlatt", "smlal"):
        assert re.search(rf"\s{re.escape(insn)}\s", asm), f"{insn} not in the firmware"
    res = run_firmware(elf, board, timeout=300)
    assert len(res.outputs) == len(calls)
    assert_outputs(res, [c[5] for c in cases], [f"{c[0]} {c[1]}" for c in cases])
