"""Float ops between DequantizeLinear and QuantizeLinear, as exporters write them.

tf2onnx writes `DQ -> Conv -> Relu -> Concat -> Q` (a float op reading another float op's
result), onnxruntime's quantize_static leaves MaxPool / Reshape / Transpose / ... between a
Conv and its QuantizeLinear, and tf2onnx also runs Concat / MaxPool / Pad on the int8
tensors themselves (`Q -> Concat -> DQ`). Each form is compiled and run on the host:

* `ort`: bit-exact with onnxruntime's default session on the same file;
* `tflite`: equal to the same graph written with an explicit QuantizeLinear ->
  DequantizeLinear (with the final parameters) after the computing op, the form TFLite's
  converter writes (quantization commutes with moving elements, with the maximum and with a
  clamp, so both forms are the same integers);
* both: the C equals the numpy oracle (tests.helpers.qdq_builder.host_run_checked).

Forms that are not exact in integers (a LeakyRelu or Sigmoid of a float Conv result with no
QuantizeLinear between) are refused in one line that says so.
"""
import zlib

import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.errors import TinyAotError

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save

RNG = np.random.default_rng(7)
X_Q = (0.05, 3)
Y_Q = (0.11, -6)


def conv(b, x, cin, cout, k=3, pads=1):
    w, ws = b.weight(RNG.normal(size=(cout, cin, k, k)).astype(np.float32) * 0.3)
    bias = b.bias(RNG.normal(size=cout) * 0.5, X_Q[0] * ws)
    return b.op("Conv", [x, w, bias], pads=[pads] * 4)


def explicit(b, f, explicit_q, q=Y_Q):
    """The computing op's float result, or (explicit form) Q -> DQ of it with q."""
    return b.dq(b.q(f, *q), *q) if explicit_q else f


# (name, builder(b, x, explicit) -> float result quantized with Y_Q, input shape, output shape)
def _relu_concat(b, x, e):  # tf2onnx: Conv -> Relu -> Concat -> Q, a DQ'd second input
    f = explicit(b, b.op("Relu", [conv(b, x, 4, 6)]), e)
    return b.op("Concat", [f, b.dq("x", *X_Q)], axis=1)


def _two_convs_concat(b, x, e):
    f1 = explicit(b, b.op("Relu", [conv(b, x, 4, 3)]), e)
    f2 = explicit(b, b.op("Clip", [conv(b, x, 4, 5), b.const_f(0.0), b.const_f(6.0)]), e)
    return b.op("Concat", [f1, f2], axis=1)


def _maxpool(b, x, e):
    return b.op("MaxPool", [explicit(b, conv(b, x, 4, 6), e)], kernel_shape=[2, 2], strides=[2, 2])


def _relu_maxpool_pads(b, x, e):
    f = explicit(b, b.op("Relu", [conv(b, x, 4, 6)]), e)
    return b.op("MaxPool", [f], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])


def _global_maxpool(b, x, e):
    return b.op("GlobalMaxPool", [explicit(b, conv(b, x, 4, 6), e)])


def _reduce_max_hw(b, x, e):
    return b.op("ReduceMax", [explicit(b, conv(b, x, 4, 6), e)], axes=[2, 3], keepdims=1)


def _dropout(b, x, e):  # an eval-mode export that kept its Dropout (ratio given, no training)
    return b.op("Dropout", [explicit(b, conv(b, x, 4, 6), e), b.const_f(0.3)])


def _reshape(b, x, e):
    return b.op("Reshape", [explicit(b, conv(b, x, 4, 6), e), b.const_i64([1, 6, 36])])


def _flatten(b, x, e):
    return b.op("Flatten", [explicit(b, conv(b, x, 4, 6), e)], axis=1)


def _transpose(b, x, e):
    return b.op("Transpose", [explicit(b, conv(b, x, 4, 6), e)], perm=[0, 2, 3, 1])


def _squeeze_unsqueeze(b, x, e):
    f = explicit(b, b.op("GlobalMaxPool", [conv(b, x, 4, 6)]), e)
    s = b.op("Squeeze", [f, b.const_i64([2, 3])])
    return b.op("Unsqueeze", [s, b.const_i64([1])])


def _pad(b, x, e):
    return b.op("Pad", [explicit(b, conv(b, x, 4, 6), e), b.const_i64([0, 0, 1, 2, 0, 0, 2, 1])])


def _slice(b, x, e):
    f = explicit(b, conv(b, x, 4, 6), e)
    return b.op("Slice", [f, b.const_i64([1, 1]), b.const_i64([5, 6]), b.const_i64([1, 3])])


def _gemm_relu_reshape(b, x, e):
    r = b.op("Reshape", [b.dq("x", *X_Q), b.const_i64([1, 144])])
    w, ws = b.weight(RNG.normal(size=(144, 10)).astype(np.float32) * 0.1, axis=1)
    g = b.op("Relu", [b.op("Gemm", [r, w])])
    return b.op("Reshape", [explicit(b, g, e), b.const_i64([1, 2, 5])])


def _add_relu_concat(b, x, e):
    c = b.dq(b.q(conv(b, x, 4, 4), 0.07, 1), 0.07, 1)
    a = explicit(b, b.op("Relu", [b.op("Add", [c, b.dq("x", *X_Q)])]), e)
    return b.op("Concat", [a, b.dq("x", *X_Q)], axis=1)


def _add_clip_maxpool(b, x, e):
    c = b.dq(b.q(conv(b, x, 4, 4), 0.07, 1), 0.07, 1)
    a = b.op("Clip", [b.op("Add", [c, b.dq("x", *X_Q)]), b.const_f(-0.5), b.const_f(2.0)])
    return b.op("MaxPool", [explicit(b, a, e)], kernel_shape=[2, 2], strides=[2, 2])


def _nearest_resize(b, x, e):
    f = explicit(b, conv(b, x, 4, 6), e)
    roi = b.const_f32([])
    return b.op("Resize", [f, roi, b.const_f32([1, 1, 2, 2])], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")


IN_SHAPE = (1, 4, 6, 6)
FORMS = {
    "conv_relu_concat": (_relu_concat, (1, 10, 6, 6)),
    "two_convs_relu_clip_concat": (_two_convs_concat, (1, 8, 6, 6)),
    "conv_maxpool": (_maxpool, (1, 6, 3, 3)),
    "conv_relu_maxpool_pads": (_relu_maxpool_pads, (1, 6, 6, 6)),
    "conv_globalmaxpool": (_global_maxpool, (1, 6, 1, 1)),
    "conv_reducemax_hw": (_reduce_max_hw, (1, 6, 1, 1)),
    "conv_dropout": (_dropout, (1, 6, 6, 6)),
    "conv_reshape": (_reshape, (1, 6, 36)),
    "conv_flatten": (_flatten, (1, 216)),
    "conv_transpose": (_transpose, (1, 6, 6, 6)),
    "conv_globalmaxpool_squeeze_unsqueeze": (_squeeze_unsqueeze, (1, 1, 6)),
    "conv_pad": (_pad, (1, 6, 9, 9)),
    "conv_slice": (_slice, (1, 4, 6, 5)),
    "gemm_relu_reshape": (_gemm_relu_reshape, (1, 2, 5)),
    "add_relu_concat": (_add_relu_concat, (1, 8, 6, 6)),
    "add_clip_maxpool": (_add_clip_maxpool, (1, 4, 3, 3)),
    "conv_nearest_resize": (_nearest_resize, (1, 6, 12, 12)),
}


class Builder(QdqBuilder):
    def const_f(self, v):
        return self.const_int(np.float32(v), np.float32)

    def const_f32(self, v):
        return self.const_int(np.asarray(v, np.float32), np.float32)

    def const_i64(self, v):
        return self.const_int(np.asarray(v, np.int64), np.int64)


def form_model(name, explicit_q, tmp_path):
    fn, out_shape = FORMS[name]
    global RNG
    RNG = np.random.default_rng(zlib.crc32(name.encode()))  # the same weights in both forms
    b = Builder(name)
    f = fn(b, b.dq("x", *X_Q), explicit_q)
    b.q(f, *Y_Q, out="y")
    return save(b.model("x", IN_SHAPE, "y", out_shape), tmp_path,
                f"{name}{'_explicit' if explicit_q else ''}.onnx")


@pytest.mark.parametrize("name", sorted(FORMS))
def test_form_ort_bit_exact_with_onnxruntime(name, tmp_path):
    path = form_model(name, False, tmp_path)
    x = all_int8_inputs(IN_SHAPE, 4, seed=1)
    outs, _ = host_run_checked(path, x, "ort", tmp_path, None)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))


@pytest.mark.parametrize("name", sorted(FORMS))
def test_form_tflite_equals_explicit_quantize(name, tmp_path):
    path = form_model(name, False, tmp_path)
    ref_path = form_model(name, True, tmp_path)
    x = all_int8_inputs(IN_SHAPE, 3, seed=2)
    outs, _ = host_run_checked(path, x, "tflite", tmp_path / "a", None)
    ref, _ = host_run_checked(ref_path, x, "tflite", tmp_path / "b", None)
    np.testing.assert_array_equal(outs, ref)


def test_dropout_in_training_mode_is_refused(tmp_path):
    from codegen.compiler import compile_model
    from codegen.errors import TinyAotError
    b = Builder("dropout_training")
    t = b.const_int(np.asarray(True), np.bool_)
    b.q(b.op("Dropout", [b.dq("x", *X_Q), b.const_f(0.3), t]), *Y_Q, out="y")
    path = save(b.model("x", IN_SHAPE, "y", IN_SHAPE), tmp_path)
    with pytest.raises(TinyAotError, match="Dropout in training mode"):
        compile_model(path, numerics="ort")
