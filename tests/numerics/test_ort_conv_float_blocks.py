"""tinyaot_convolve_f32_b8_s8: onnxruntime's float Conv on int8 weights dequantized a block of
output channels at a time, bit for bit.

The oracle is onnxruntime itself (tests/helpers/ort_conv_cases.py: DQ(x), DQ(w), DQ(b) ->
Conv [-> Relu] with intra_op_num_threads 1 and 2): the float each output has before its
QuantizeLinear, recorded by the kernel (TINYAOT_F32_CAPTURE), must be onnxruntime's float,
for blocks of one tile (4 channels), about half the tiles and all of them; and the int8
output must be QuantizeLinear of onnxruntime's float. On the host (portable C) for every
groups-1 shape with fma tiles, and in a qemu-m4 firmware (the FPv4 asm tiles) for a subset.
The scratch starts as NaN: a weight or column read before it is written would show.
"""
import subprocess

import numpy as np
import pytest

from codegen.kernels.conv_f32_pack import block_scratch_bytes, blocks_candidate, plan_fields
from codegen.numerics.mlas_conv_order import node_segments

from tests.helpers.float_conv_firmware import case_header, qemu_m4, run_case
from tests.helpers.kernels_cffi import CONV_F32_STRUCTS_CDEF, capture_library, conv_dims_fields
from tests.helpers.ort_conv_cases import SHAPES, ort_case

CAPTURE_C = r"""
static float *cap_;
#define TINYAOT_F32_CAPTURE(y) (*cap_++ = (y))
#include "conv/tinyaot_convolve_f32_tiles_s8.c"
#include "conv/tinyaot_convolve_f32_s8.c"
#include "conv/tinyaot_convolve_f32_b8_s8.c"
int run_capture(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                const tinyaot_conv_f32_plan_t *pl, int32_t block, const int8_t *input,
                float *scratch, int8_t *output, float *y)
{
    cap_ = y;
    return tinyaot_convolve_f32_b8_s8(d, p, pl, block, input, scratch, output);
}
"""

CDEF = CONV_F32_STRUCTS_CDEF + """
typedef struct { const float *table; const float *weights; const int32_t *segments;
                 const int32_t *taps; int32_t nseg; int32_t k; int32_t tiles;
                 int32_t padded; } tinyaot_conv_f32_plan_t;
int run_capture(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                const tinyaot_conv_f32_plan_t *pl, int32_t block, const int8_t *input,
                float *scratch, int8_t *output, float *y);
int32_t tinyaot_convolve_f32_b8_s8_get_buffer_size(const tinyaot_conv_dims_t *d,
                                                   const tinyaot_conv_f32_plan_t *pl,
                                                   int32_t block_tiles);
"""

# ORT's 2 threads split M = 3 channels 2 + 1: an M=1 segment among the fma tiles
MIXED = [
    (7282, 3, 1, (1, 3), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), False),
    (1214, 3, 1, (1, 2), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True),
]


def _attrs(shape, threads):
    cin, cout, group, hw, k, s, pads, d, relu = shape
    return {"group": group, "kernel": k, "strides": s, "pads": pads, "dilations": d,
            "ort_threads": threads}


def _out_shape(shape):
    cin, cout, group, hw, k, s, pads, d, _ = shape
    oh = (hw[0] + pads[0] + pads[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (hw[1] + pads[1] + pads[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    return (1, cout, oh, ow)


CASES = [(shape, 1) for shape in SHAPES if blocks_candidate(
    (1, shape[0], *shape[3]), _out_shape(shape), _attrs(shape, 1))] + [(shape, 2) for shape in MIXED]


def _blocks(tiles):
    return sorted({1, max(1, tiles // 2), tiles})


def store_order(attrs, out_shape, segs, block, tiles):
    """Output index (pixel, channel) of each value the block kernel quantizes, in order:
    per block of tiles, the segments' pixel groups and the block's tiles in them."""
    order = []
    for t0 in range(0, tiles, block):
        t1 = min(t0 + block, tiles)
        for s in segs:
            if s.m1 <= 4 * t0 or s.m0 >= 4 * t1:
                continue
            if s.kind != "fma":  # one channel, pixel by pixel
                order += [(n, m) for n in range(s.n0, s.n1) for m in range(s.m0, s.m1)]
                continue
            for n in range(s.n0, s.n1, 4):
                npx = min(4, s.n1 - n)
                for t in range(max(s.m0 // 4, t0), min(-(-s.m1 // 4), t1)):
                    order += [(n + px, m) for m in range(4 * t, 4 * t + 4)
                              if s.m0 <= m < s.m1 for px in range(npx)]
    return order


@pytest.fixture(scope="module")
def capture_lib(tmp_path_factory):
    return capture_library(tmp_path_factory.mktemp("capture_b8"), CAPTURE_C, CDEF)


def test_cases_cover_m1_segments_padded_band_and_plain_columns():
    """The cases keep covering what the blocks meet: an M=1 segment among tiles, and each
    way tinyaot_convolve_f32_s8 gathers its columns (padded copy, band, the int8 input)."""
    modes, kinds = set(), set()
    for shape, threads in CASES:
        attrs = _attrs(shape, threads)
        x, y = (1, shape[0], *shape[3]), _out_shape(shape)
        modes.add(plan_fields(x, y, _weights(shape), attrs, 0.1, 0)["padded"])
        kinds |= {s.kind for s in node_segments(x, y, attrs, threads)}
    assert modes == {0, 1, 2} and "m1" in kinds


def _weights(shape):
    from tests.helpers.ort_conv_cases import _T
    cin, cout, group, hw, k = shape[:5]
    return _T(np.ones((cout, cin // group) + k, np.int8), np.ones(cout, np.float32))


def _structs(ffi, x, wt, bf, sx, zx, attrs, out_shape, osc=1.0, ozp=0, lo=-128, hi=127):
    """dims, tinyaot_float_conv_t (int8 filter, scales), plan (weights NULL), plan fields,
    and the arrays they point into (kept alive by the caller)."""
    f = plan_fields(x.shape, out_shape, wt, attrs, sx, zx, int8=True)
    keep = [np.ascontiguousarray(a) for a in (f["table"], f["weights"], f["segments"], bf,
                                              f["taps"], wt.q.scale.astype(np.float32))]
    dims = ffi.new("tinyaot_conv_dims_t *", conv_dims_fields(x.shape, out_shape, attrs))
    fp = ffi.new("tinyaot_float_conv_t *", [sx, zx, osc, ozp, lo, hi,
                                            ffi.from_buffer("int8_t[]", keep[1]),
                                            ffi.from_buffer("float[]", keep[5]),
                                            ffi.from_buffer("float[]", keep[3])])
    pl = ffi.new("tinyaot_conv_f32_plan_t *", [ffi.from_buffer("float[]", keep[0]), ffi.NULL,
                                               ffi.from_buffer("int32_t[]", keep[2]),
                                               ffi.from_buffer("int32_t[]", keep[4]),
                                               f["nseg"], f["k"], f["tiles"], f["padded"]])
    return dims, fp, pl, f, keep


def _run(capture_lib, x, wt, bf, sx, zx, attrs, out_shape, block, osc=1.0, ozp=0, lo=-128,
         hi=127):
    ffi, lib = capture_lib
    _, cout, oh, ow = out_shape
    dims, fp, pl, f, keep = _structs(ffi, x, wt, bf, sx, zx, attrs, out_shape, osc, ozp, lo, hi)
    nbytes = lib.tinyaot_convolve_f32_b8_s8_get_buffer_size(dims, pl, block)
    assert nbytes == block_scratch_bytes(x.shape, wt.shape, out_shape, attrs, block)
    scratch = np.full(nbytes // 4, np.nan, np.float32)
    xin = np.ascontiguousarray(x[0].transpose(1, 2, 0))
    out = np.zeros(oh * ow * cout, np.int8)
    y = np.full(out.size, np.nan, np.float32)
    assert lib.run_capture(dims, fp, pl, block, ffi.from_buffer("int8_t[]", xin),
                           ffi.from_buffer("float[]", scratch), ffi.from_buffer("int8_t[]", out),
                           ffi.from_buffer("float[]", y)) == 0
    return y, out, f["tiles"]


def test_block_kernel_float_bit_exact_with_onnxruntime(capture_lib):
    rng = np.random.default_rng(23)
    bad, runs = [], 0
    for shape, threads in CASES:
        cin, cout, group, hw, k, s, pads, d, relu = shape
        y, x, wt, bt, sx, zx = ort_case(rng, cin, cout, group, hw, k, s, pads, d, threads, relu)
        attrs = _attrs(shape, threads)
        bf = (bt.data.astype(np.float32) * bt.q.scale).astype(np.float32)
        segs = node_segments(x.shape, y.shape, attrs, threads)
        osc = np.float32(np.abs(y).max() / 150 + 1e-6)  # saturates the largest values
        ozp, lo = (9, 9) if relu else (-7, -128)
        want8 = np.clip(np.rint(y / osc) + ozp, lo, 127).astype(np.int8)
        want8 = want8[0].transpose(1, 2, 0).reshape(-1)  # NHWC
        tiles = -(-cout // 4)
        for block in _blocks(tiles):
            yc, q, t = _run(capture_lib, x, wt, bf, sx, zx, attrs, y.shape, block, osc, ozp, lo)
            assert t == tiles
            cy = np.full(y.shape, np.nan, np.float32)
            order = store_order(attrs, y.shape, segs, block, tiles)
            assert len(order) == y.size
            for v, (n, oc) in zip(yc, order):
                cy[0, oc, n // y.shape[3], n % y.shape[3]] = v
            if relu:  # onnxruntime's value is after its Relu
                cy = np.maximum(cy, 0)
            mism = int((cy.view(np.uint32) != y.view(np.uint32)).sum())
            mism8 = int((q != want8).sum())
            runs += 1
            if mism or mism8:
                bad.append(((cin, cout, hw, k), threads, block, mism, mism8, y.size))
    assert runs >= 2 * len(CASES) and not bad, bad


def test_block_kernel_refuses_what_it_cannot_run(capture_lib):
    """Groups other than 1 and a block of no tiles are refused (TINYAOT_ERR_ARG), not run."""
    ffi, lib = capture_lib
    shape = SHAPES[0]
    attrs = _attrs(shape, 1)
    x = np.zeros((1, shape[0], *shape[3]), np.int8)
    out_shape = _out_shape(shape)
    wt = _weights(shape)
    dims, fp, pl, f, keep = _structs(ffi, x, wt, np.ones(shape[1], np.float32), 0.1, 0, attrs,
                                     out_shape)
    scratch = np.zeros(block_scratch_bytes(x.shape, wt.shape, out_shape, attrs, 1) // 4,
                       np.float32)
    out = np.zeros(int(np.prod(out_shape)), np.int8)
    y = np.zeros(out.size, np.float32)
    args = (ffi.from_buffer("int8_t[]", x), ffi.from_buffer("float[]", scratch),
            ffi.from_buffer("int8_t[]", out), ffi.from_buffer("float[]", y))
    grouped = ffi.new("tinyaot_conv_dims_t *", conv_dims_fields(x.shape, out_shape, attrs)[:-1]
                      + [2])
    assert lib.run_capture(grouped, fp, pl, 1, *args) != 0
    assert lib.run_capture(dims, fp, pl, 0, *args) != 0
    assert not out.any()


# the asm tiles with blocks: ic01's layers 2 (band), 1 (padded copy) and a stride-2 layer
# (int8 input columns), partial tiles (24 and 6 channels), an M=1 segment among tiles
KERNELS = ["conv/tinyaot_convolve_f32_tiles_s8.c", "conv/tinyaot_convolve_f32_s8.c",
           "conv/tinyaot_convolve_f32_b8_s8.c"]
QEMU_CASES = [(SHAPES[0], 1, 2), (SHAPES[2], 1, 3), (SHAPES[1], 1, 3), (SHAPES[7], 1, 2),
              (SHAPES[9], 1, 1), (MIXED[1], 2, 1)]


@pytest.mark.qemu
def test_block_kernel_asm_bit_exact_on_qemu_m4(tmp_path):
    board = qemu_m4()
    rng = np.random.default_rng(29)
    bad = []
    for i, (shape, threads, block) in enumerate(QEMU_CASES):
        cin, cout, group, hw, k, s, pads, d, relu = shape
        y, x, wt, bt, sx, zx = ort_case(rng, cin, cout, group, hw, k, s, pads, d, threads, relu)
        attrs = _attrs(shape, threads)
        bf = (bt.data.astype(np.float32) * bt.q.scale).astype(np.float32)
        f = plan_fields(x.shape, y.shape, wt, attrs, sx, zx, int8=True)
        osc = np.float32(np.abs(y).max() / 150 + 1e-6)
        ozp, lo = (9, 9) if relu else (-7, -128)
        dims = conv_dims_fields(x.shape, y.shape, attrs)
        xin = np.ascontiguousarray(x[0].transpose(1, 2, 0)).reshape(-1)
        header = case_header(
            xin.size, y.size, block_scratch_bytes(x.shape, wt.shape, y.shape, attrs, block), dims,
            [("float", "tbl", f["table"]), ("int8_t", "w8", f["weights"]),
             ("int32_t", "segs", f["segments"]), ("float", "ws", wt.q.scale),
             ("float", "bias", bf), ("int32_t", "taps", f["taps"])],
            ["1.0f", str(zx), f"{osc.item():.9e}f", str(ozp), str(lo), "127", "w8", "ws", "bias"],
            ["tbl", "0", "segs", "taps", f["nseg"], f["k"], f["tiles"], f["padded"]],
            extra=f"#define BLOCK {block}\n")
        elf, got, got8 = run_case(
            board, tmp_path / f"case{i}", KERNELS,
            "tinyaot_convolve_f32_b8_s8(&dims, &fp, &plan, BLOCK, input, scratch, out8)",
            header, xin, y.size)
        if i == 0:  # the asm dequantization (4 weights a row, one VSTM), not GCC's loop
            asm = subprocess.run([board["toolchain_prefix"] + "objdump", "-d", str(elf)],
                                 capture_output=True, text=True, check=True).stdout
            body = asm[asm.index("<tinyaot_convolve_f32_b8_s8>:"):]
            body = body[:body.index("\n\n")]
            assert "sbfx" in body and "vstmia" in body and "{s0-s3}" in body, body
        want8 = np.clip(np.rint(y / osc) + ozp, lo, 127).astype(np.int8)
        want8 = want8[0].transpose(1, 2, 0).reshape(-1)
        cy = np.full(y.shape, np.nan, np.float32)
        order = store_order(attrs, y.shape, node_segments(x.shape, y.shape, attrs, threads),
                            block, f["tiles"])
        for v, (n, oc) in zip(got, order):
            cy[0, oc, n // y.shape[3], n % y.shape[3]] = v
        if relu:
            cy = np.maximum(cy, 0)
        mism = int((cy.view(np.uint32) != y.view(np.uint32)).sum())
        mism8 = int((got8 != want8).sum())
        if mism or mism8:
            bad.append(((cin, cout, hw, k), threads, block, mism, mism8, y.size))
    assert not bad, bad
