"""The float32 value of onnxruntime's ConvTranspose, before QuantizeLinear, bit for bit.

int8 outputs hide almost every float rounding difference (one ulp of y flips
a rounded output only near a tie), so the summation order that `--numerics
ort` must repeat (MLAS SGEMM: fma over input channels in blocks of 128, its
M=1 kernel for a one-pixel input; col2im in (kh, kw) order; then the bias)
is checked here on the float itself:

* onnxruntime's float output of DQ(x), DQ(w), DQ(b) -> ConvTranspose (the
  independent oracle), against
* the numpy reference (codegen/ops/conv_transpose.py), and
* the C kernel runtime_c/src/conv/tinyaot_transpose_conv_f32_s8.c, compiled here
  with its QuantizeLinear replaced by a function that records the float.
"""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from codegen.ops.conv_transpose import (conv_transpose_f32, conv_transpose_filter,
                                        transpose_conv_scratch_bytes)

from tests.helpers.kernels_cffi import (CAPTURE_QUANTIZE_C, CONV_F32_STRUCTS_CDEF, INCLUDE, SRC,
                                        capture_library, conv_dims_fields)

CAPTURE_C = CAPTURE_QUANTIZE_C + r"""
#include "conv/tinyaot_transpose_conv_f32_s8.c"
int run_capture(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                const int8_t *input, float *scratch, int8_t *output, float *y)
{
    cap_ = y;
    return tinyaot_transpose_conv_f32_s8(d, p, input, scratch, output);
}
"""

CDEF = CONV_F32_STRUCTS_CDEF + """
int run_capture(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                const int8_t *input, float *scratch, int8_t *output, float *y);
int32_t tinyaot_transpose_conv_f32_s8_get_buffer_size(const tinyaot_conv_dims_t *d);
"""


@pytest.fixture(scope="module")
def capture_lib(tmp_path_factory):
    return capture_library(tmp_path_factory.mktemp("capture"), CAPTURE_C, CDEF, "-O1")


def ort_float_case(rng, cin, og, group, hw, k, s, pads, d):
    """(onnxruntime's float y NCHW, the integer x, w, bias and the scales)."""
    import onnxruntime as ort
    sx, zx = np.float32(rng.uniform(0.01, 0.1)), int(rng.integers(-20, 20))
    wf = rng.normal(size=(cin, og) + k).astype(np.float32) * 0.3
    ws = (np.abs(wf).max(axis=(0, 2, 3)) / 127).astype(np.float32)
    wq = np.clip(np.rint(wf / ws.reshape(1, -1, 1, 1)), -127, 127).astype(np.int8)
    cout = og * group
    bs = (sx * np.resize(ws, cout)).astype(np.float32)
    bq = rng.integers(-3000, 3000, size=cout).astype(np.int32)
    inits = [numpy_helper.from_array(v, n) for n, v in [
        ("sx", sx), ("zx", np.int8(zx)), ("wq", wq), ("ws", ws), ("wz", np.zeros(og, np.int8)),
        ("bq", bq), ("bs", bs), ("bz", np.zeros(cout, np.int32))]]
    nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], axis=1),
             helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bf"], axis=0),
             helper.make_node("ConvTranspose", ["xf", "wf", "bf"], ["y"], kernel_shape=list(k),
                              strides=list(s), dilations=list(d), group=group, pads=list(pads))]
    g = helper.make_graph(nodes, "ct", [helper.make_tensor_value_info("x", TensorProto.INT8,
                                                                      [1, cin, *hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.log_severity_level = 3
    x = rng.integers(-128, 128, size=(1, cin) + hw).astype(np.int8)
    y = ort.InferenceSession(m.SerializeToString(), so,
                             providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    p = {"in_scale": sx, "in_zp": zx, "filter_scale": ws,
         "bias_f": (bq.astype(np.float32) * bs).astype(np.float32)}
    return y, x, wq, p


def c_float(capture_lib, x, wq, p, attrs, out_hw):
    ffi, lib = capture_lib
    group = attrs["group"]
    cout = wq.shape[1] * group
    dims = ffi.new("tinyaot_conv_dims_t *", conv_dims_fields(
        x.shape, (1, cout, *out_hw), {**attrs, "kernel": wq.shape[2:]}))
    keep = [np.ascontiguousarray(conv_transpose_filter(wq, group)),
            np.ascontiguousarray(np.tile(p["filter_scale"], group)),
            np.ascontiguousarray(p["bias_f"])]
    fp = ffi.new("tinyaot_float_conv_t *", [p["in_scale"], p["in_zp"], 1.0, 0, -128, 127,
                                            ffi.from_buffer("int8_t[]", keep[0]),
                                            ffi.from_buffer("float[]", keep[1]),
                                            ffi.from_buffer("float[]", keep[2])])
    xin = np.ascontiguousarray(x[0].transpose(1, 2, 0))
    out = np.zeros(out_hw[0] * out_hw[1] * cout, np.int8)
    y = np.zeros(out.size, np.float32)
    nbytes = lib.tinyaot_transpose_conv_f32_s8_get_buffer_size(dims)
    assert nbytes == transpose_conv_scratch_bytes(cout)
    scratch = np.full(nbytes // 4, np.nan, np.float32)  # the kernel must not read it first
    assert lib.run_capture(dims, fp, ffi.from_buffer("int8_t[]", xin),
                           ffi.from_buffer("float[]", scratch),
                           ffi.from_buffer("int8_t[]", out), ffi.from_buffer("float[]", y)) == 0
    return y.reshape(out_hw[0], out_hw[1], cout).transpose(2, 0, 1)[None]


# input channels per group: below, at and across MLAS's K block of 128, and around its
# groups of four in the M=1 kernel; one-pixel inputs use that kernel
CG = [1, 2, 3, 4, 5, 7, 9, 16, 31, 127, 128, 129, 255, 257, 300]


@pytest.mark.parametrize("hw", [(1, 1), (2, 3), (4, 4)])
@pytest.mark.parametrize("group", [1, 2])
def test_float_value_bit_exact_with_onnxruntime(capture_lib, hw, group):
    rng = np.random.default_rng(100 * hw[0] + 10 * hw[1] + group)
    diffs = []
    for cg in CG:
        og = int(rng.integers(1, 5))
        k = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
        s = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        d = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pads = (int(rng.integers(0, k[0])), int(rng.integers(0, k[1])), 0, 0)
        y, x, wq, p = ort_float_case(rng, cg * group, og, group, hw, k, s, pads, d)
        attrs = {"group": group, "strides": s, "dilations": d, "pads": pads}
        ref = conv_transpose_f32(x, wq, attrs, p["in_scale"], p["in_zp"], p["filter_scale"],
                                 p["bias_f"], y.shape[2:])
        cy = c_float(capture_lib, x, wq, p, attrs, y.shape[2:])
        diffs.append((cg, int((ref.view(np.uint32) != y.view(np.uint32)).sum()),
                      int((cy.view(np.uint32) != y.view(np.uint32)).sum()), y.size))
    assert all(r == 0 and c == 0 for _, r, c, _ in diffs), diffs
