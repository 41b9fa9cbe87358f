"""The float32 value of onnxruntime's Conv, before QuantizeLinear, bit for bit.

onnxruntime keeps some QDQ convs in float (here: a bias whose scale is not
s_x * s_w, as in the shared models' float layers). MLAS sums such a conv in
an order that depends on the shape and on ORT's intra-op thread count
(K blocks of 128 or more, pixel segments per thread, its M=1 kernels for one
output channel per group or one output pixel). int8 outputs hide almost
every rounding difference, so the order is checked on the float itself:

* onnxruntime's float output of DQ(x), DQ(w), DQ(b) -> Conv [-> Relu] with
  intra_op_num_threads = 1 and 2 (the independent oracle), against
* the numpy reference (codegen/ops/conv2d.conv2d_f32 with the same
  thread count), and
* the C kernel runtime_c/src/conv/tinyaot_convolve_f32_s8.c (its tiles:
  tinyaot_convolve_f32_tiles_s8.c) with the compile-time
  data the backend emits, compiled with TINYAOT_F32_CAPTURE recording the
  float before its QuantizeLinear: on the host (portable C, every shape) and
  in a qemu-m4 firmware (the FPv4 inline-asm path, a subset).
"""
import subprocess

import numpy as np
import pytest

from codegen.kernels.conv_f32_pack import plan_fields, scratch_bytes
from codegen.numerics.ort_float import float_bias
from codegen.ops.conv2d import conv2d_f32
from codegen.numerics.mlas_conv_order import node_segments

from tests.helpers.float_conv_firmware import case_header, qemu_m4, run_case
from tests.helpers.kernels_cffi import CONV_F32_STRUCTS_CDEF, capture_library, conv_dims_fields
from tests.helpers.ort_conv_cases import SHAPES, ort_case

CAPTURE_C = r"""
static float *cap_;
#define TINYAOT_F32_CAPTURE(y) (*cap_++ = (y))
#include "conv/tinyaot_convolve_f32_m1_s8.c"
#include "conv/tinyaot_convolve_f32_tiles_s8.c"
#include "conv/tinyaot_convolve_f32_s8.c"
int run_capture(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                const tinyaot_conv_f32_plan_t *pl, const int8_t *input, float *scratch,
                int8_t *output, float *y)
{
    cap_ = y;
    return pl->tiles ? tinyaot_convolve_f32_s8(d, p, pl, input, scratch, output)
                     : tinyaot_convolve_f32_m1_s8(d, p, pl, input, scratch, output);
}
"""

CDEF = CONV_F32_STRUCTS_CDEF + """
typedef struct { const float *table; const float *weights; const int32_t *segments;
                 const int32_t *taps; int32_t nseg; int32_t k; int32_t tiles;
                 int32_t padded; } tinyaot_conv_f32_plan_t;
int run_capture(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                const tinyaot_conv_f32_plan_t *pl, const int8_t *input, float *scratch,
                int8_t *output, float *y);
int32_t tinyaot_convolve_f32_s8_get_buffer_size(const tinyaot_conv_dims_t *d,
                                                const tinyaot_conv_f32_plan_t *pl);
"""


@pytest.fixture(scope="module")
def capture_lib(tmp_path_factory):
    return capture_library(tmp_path_factory.mktemp("capture"), CAPTURE_C, CDEF)


def c_float(capture_lib, x, wt, bf, sx, zx, attrs, out_shape):
    """The C kernel's float y (bias included), NCHW."""
    ffi, lib = capture_lib
    _, cout, oh, ow = out_shape
    dims = ffi.new("tinyaot_conv_dims_t *", conv_dims_fields(x.shape, out_shape, attrs))
    f = plan_fields(x.shape, out_shape, wt, attrs, sx, zx)
    keep = [np.ascontiguousarray(a) for a in (f["table"], f["weights"], f["segments"], bf,
                                              f["taps"])]
    fp = ffi.new("tinyaot_float_conv_t *", [sx, zx, 1.0, 0, -128, 127, ffi.NULL, ffi.NULL,
                                            ffi.from_buffer("float[]", keep[3])])
    pl = ffi.new("tinyaot_conv_f32_plan_t *", [ffi.from_buffer("float[]", keep[0]),
                                               ffi.from_buffer("float[]", keep[1]),
                                               ffi.from_buffer("int32_t[]", keep[2]),
                                               ffi.from_buffer("int32_t[]", keep[4]),
                                               f["nseg"], f["k"], f["tiles"], f["padded"]])
    nbytes = lib.tinyaot_convolve_f32_s8_get_buffer_size(dims, pl)
    assert nbytes == scratch_bytes(x.shape, wt.shape, out_shape, attrs)
    scratch = np.full(nbytes // 4, np.nan, np.float32)  # the kernel must not read it first
    xin = np.ascontiguousarray(x[0].transpose(1, 2, 0))
    out = np.zeros(oh * ow * cout, np.int8)
    y = np.full(out.size, np.nan, np.float32)
    assert lib.run_capture(dims, fp, pl, ffi.from_buffer("int8_t[]", xin),
                           ffi.from_buffer("float[]", scratch), ffi.from_buffer("int8_t[]", out),
                           ffi.from_buffer("float[]", y)) == 0
    # captured in the kernel's store order: fma tiles are (pixel tile, channel, pixel)
    return y, out.reshape(oh, ow, cout).transpose(2, 0, 1)[None]


def c_store_order(attrs, out_shape, segs):
    """Output index (pixel, channel) of each value the C kernel quantizes, in order."""
    _, cout, oh, ow = out_shape
    group = attrs["group"]
    og = cout // group
    order = []
    for gi in range(group):
        for s in segs:
            if s.kind != "fma":  # one pixel at a time, its channels in order
                order += [(n, gi * og + m) for n in range(s.n0, s.n1) for m in range(s.m0, s.m1)]
                continue
            for n in range(s.n0, s.n1, 4):
                npx = min(4, s.n1 - n)
                for t in range(s.m0 // 4, -(-s.m1 // 4)):
                    order += [(n + px, gi * og + m) for m in range(4 * t, 4 * t + 4)
                              if s.m0 <= m < s.m1 for px in range(npx)]
    return order


# With 2 threads MLAS splits M = 3 output channels (per group) 2 + 1: fma tiles
# and an M=1 segment in one plan (K large enough for 2 threads).
MIXED_SHAPES = [
    (7282, 3, 1, (1, 3), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), False),      # pointwise: m1
    (1, 3, 1, (4, 3641), (2, 3641), (1, 1), (0, 0, 0, 0), (1, 1), False),  # kernel = input width: m1tb
    (1214, 3, 1, (1, 2), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True),       # padded windows, Relu
    (2428, 6, 2, (1, 2), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),      # grouped
]


def _segments(shape, threads):
    cin, cout, group, hw, k, s, pads, d, _ = shape
    oh = (hw[0] + pads[0] + pads[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (hw[1] + pads[1] + pads[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    attrs = {"group": group, "kernel": k, "strides": s, "pads": pads, "dilations": d}
    return node_segments((1, cin, *hw), (1, cout, oh, ow), attrs, threads)


def test_mixed_shapes_mix_fma_tiles_and_an_m1_segment():
    """MIXED_SHAPES keep covering tinyaot_convolve_f32_s8's M=1 segments."""
    kinds = [[sg.kind for sg in _segments(shape, 2)] for shape in MIXED_SHAPES]
    assert kinds == [["fma", "m1"], ["fma", "m1tb"], ["fma", "m1"], ["fma", "m1"]]


@pytest.mark.parametrize("threads", [1, 2])
def test_float_value_bit_exact_with_onnxruntime(capture_lib, threads):
    rng = np.random.default_rng(7 + threads)
    bad = []
    for cin, cout, group, hw, k, s, pads, d, relu in SHAPES + MIXED_SHAPES:
        y, x, wt, bt, sx, zx = ort_case(rng, cin, cout, group, hw, k, s, pads, d, threads, relu)
        attrs = {"group": group, "kernel": k, "strides": s, "pads": pads, "dilations": d,
                 "ort_threads": threads}
        ref = conv2d_f32(x, wt, float_bias(bt, cout), attrs, sx, zx)
        bf = (bt.data.astype(np.float32) * bt.q.scale).astype(np.float32)
        yc, q = c_float(capture_lib, x, wt, bf, sx, zx, attrs, y.shape)
        if not relu:  # the int8 at its place: QuantizeLinear(y, 1, 0) of onnxruntime's y
            qbad = int((q != np.clip(np.rint(y), -128, 127)).sum())
            if qbad:
                bad.append(((cin, cout, group, hw, k), "int8", qbad))
        cy = np.full(y.shape, np.nan, np.float32)
        for v, (n, oc) in zip(yc, c_store_order(attrs, y.shape, node_segments(
                x.shape, y.shape, attrs, threads))):
            cy[0, oc, n // y.shape[3], n % y.shape[3]] = v
        if relu:  # ORT's Relu (fused into MLAS's activation); the C kernel clamps the int8
            ref, cy = np.maximum(ref, 0), np.maximum(cy, 0)
        r = int((ref.view(np.uint32) != y.view(np.uint32)).sum())
        c = int((cy.view(np.uint32) != y.view(np.uint32)).sum())
        if r or c:
            bad.append(((cin, cout, group, hw, k), r, c, y.size))
    assert not bad, bad


# the Cortex-M4 inline-asm path: K blocks of 128 + 16, 256 + 256 + 64 and 27
# (every remainder of 8), channels and pixels not multiples of 4, the M=1 kernels
# (1 thread), and the M=1 segments among fma tiles (2 threads)
QEMU_SHAPES = [SHAPES[0], SHAPES[4], SHAPES[2], SHAPES[12], SHAPES[16], SHAPES[14], SHAPES[10],
               *SHAPES[26:33], SHAPES[13], SHAPES[17], SHAPES[19]]
QEMU_CASES = [(shape, 1) for shape in QEMU_SHAPES] + [(shape, 2) for shape in MIXED_SHAPES]
KERNELS = ["conv/tinyaot_convolve_f32_m1_s8.c", "conv/tinyaot_convolve_f32_tiles_s8.c",
           "conv/tinyaot_convolve_f32_s8.c"]


@pytest.mark.qemu
def test_asm_float_value_bit_exact_on_qemu_m4(tmp_path):
    board = qemu_m4()
    rng = np.random.default_rng(11)
    bad = []
    for i, ((cin, cout, group, hw, k, s, pads, d, relu), threads) in enumerate(QEMU_CASES):
        y, x, wt, bt, sx, zx = ort_case(rng, cin, cout, group, hw, k, s, pads, d, threads, relu)
        attrs = {"group": group, "kernel": k, "strides": s, "pads": pads, "dilations": d,
                 "ort_threads": threads}
        bf = (bt.data.astype(np.float32) * bt.q.scale).astype(np.float32)
        f = plan_fields(x.shape, y.shape, wt, attrs, sx, zx)
        # QuantizeLinear after the conv: a scale that saturates the largest values, a
        # zero point, and with Relu the clamp at the zero point (lo > -128)
        osc = np.float32(np.abs(y).max() / 150 + 1e-6)
        ozp = 9 if relu else -7
        lo, hi = (ozp, 127) if relu else (-128, 127)
        ow = y.shape[3]
        dims = conv_dims_fields(x.shape, y.shape, attrs)
        xin = np.ascontiguousarray(x[0].transpose(1, 2, 0)).reshape(-1)
        header = case_header(
            xin.size, y.size, scratch_bytes(x.shape, wt.shape, y.shape, attrs), dims,
            [("float", "tbl", f["table"]), ("float", "wts", f["weights"]),
             ("int32_t", "segs", f["segments"]), ("float", "bias", bf),
             ("int32_t", "taps", f["taps"])],
            ["1.0f", str(zx), f"{osc.item():.9e}f", str(ozp), str(lo), str(hi), "0", "0", "bias"],
            ["tbl", "wts", "segs", "taps", f["nseg"], f["k"], f["tiles"], f["padded"]])
        elf, got, got8 = run_case(
            board, tmp_path / f"case{i}", KERNELS,
            "plan.tiles ? tinyaot_convolve_f32_s8(&dims, &fp, &plan, input, scratch, out8)"
            " : tinyaot_convolve_f32_m1_s8(&dims, &fp, &plan, input, scratch, out8)",
            header, xin, y.size)
        if i == 0:
            asm = subprocess.run([board["toolchain_prefix"] + "objdump", "-d", str(elf)],
                                 capture_output=True, text=True, check=True).stdout
            assert "vfma.f32" in asm and "vcvtr.s32.f32" in asm, "not the FPv4 asm path"
        # ONNX QuantizeLinear of onnxruntime's float y (half to even, saturate), then the clamp
        want8 = np.clip(np.rint(y / osc) + ozp, lo, hi).astype(np.int8)
        want8 = want8[0].transpose(1, 2, 0).reshape(-1)  # NHWC
        mism8 = int((got8 != want8).sum())
        cy = np.full(y.shape, np.nan, np.float32)
        for v, (n, oc) in zip(got, c_store_order(attrs, y.shape, node_segments(x.shape, y.shape,
                                                                                attrs, threads))):
            cy[0, oc, n // ow, n % ow] = v
        if relu:  # ORT's value is after its Relu
            cy = np.maximum(cy, 0)
        mism = int((cy.view(np.uint32) != y.view(np.uint32)).sum())
        if mism or mism8:
            bad.append(((cin, cout, group, hw, k), threads, mism, mism8, y.size))
    assert not bad, bad
