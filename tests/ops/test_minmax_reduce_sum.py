"""TFLite MAXIMUM / MINIMUM (ops/minmax.py), SUM and MEAN not over H, W (ops/reduce_sum.py),
int8, against TFLite Micro's own interpreter (the tflite-micro package) on .tflite files
written here the way the converter writes them (tests/helpers/tflite_builders.py):

* every layer of the numpy reference equals TFLM's tensors, and the host C equals TFLM's
  output, for SUM over H, W / channels / one middle axis, keep_dims or not, after a CONV_2D
  (an NHWC-stored input read through a zero-copy view) and with input and output scales
  whose ratio is above and below one; for MEAN over the time axis of [N, T, C], the
  channels or rows, with equal and different quantization; for MAXIMUM / MINIMUM of two
  activations of one shape, an activation and a broadcast activation ([1, 1, 1, C]), a
  per-channel constant [C] and a scalar constant;
* SUM's arithmetic also against a numpy model written here from TFLite Micro's source
  (reduce_common.cc, reference/reduce.h QuantizedMeanOrSum): MBQM(sum - zp * count) + zp;
* one model with both builtins on qemu-m4;
* refused with one line naming the builtin and operator: differently quantized MAXIMUM
  operands, SUM over axes that are not one run.
"""
from __future__ import annotations

import numpy as np
import pytest

from codegen.driver.verify import run_model
from codegen.errors import UnsupportedError
from codegen.frontend import load_model
from codegen.numerics import tflite_fixedpoint as tfp

from tests.helpers.env import _missing, require_arm_toolchain
from tests.helpers.tflite_builders import TflBuilder
from tests.helpers.tflm_oracle import layers_equal_tflm


@pytest.fixture(autouse=True)
def _tflite_micro():
    try:
        import tflite_micro  # noqa: F401
    except ImportError:
        _missing("the tflite-micro package (pip install tflite-micro)")


def _i8(rng, shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


def _check(path, x, tmp_path, board="host"):
    """Every layer equals TFLM; the compiled C on `board` gives TFLM's output."""
    g, env, outs, _ = layers_equal_tflm(path, x)
    np.testing.assert_array_equal(env[g.outputs[0]].reshape(outs[0].shape), outs[0])
    got, _ = run_model(path, np.asarray(x)[None], board=board, numerics="tflite",
                       build_dir=tmp_path / board)
    np.testing.assert_array_equal(got.reshape(outs[0].shape), outs[0])
    return g, outs[0]


def _conv_front(b, rng, x, shape, q):
    """x -> 1x1 CONV_2D (so the next layer reads an NHWC-stored IR tensor)."""
    c = shape[-1]
    w = b.const("w", _i8(rng, (c, 1, 1, c)), 0.01, 0)
    bias = b.const("bias", rng.integers(-500, 500, c).astype(np.int32),
                   np.float32(0.05) * np.float32(0.01), 0)
    y = b.tensor("conv", shape, *q)
    b.op("CONV_2D", [x, w, bias], [y], "Conv2DOptions", padding=1, strideW=1, strideH=1)
    return y


def _sum_tflm_model(x, axes, in_q, out_q):
    """reference_ops::QuantizedMeanOrSum, compute_sum, written from TFLite Micro's source."""
    m, s = tfp.quantize_multiplier(float(np.float64(np.float32(in_q[0])) /
                                         np.float64(np.float32(out_q[0]))))
    total = x.astype(np.int64).sum(axis=tuple(axes))
    count = int(np.prod([x.shape[a] for a in axes]))
    v = tfp.multiply_by_quantized_multiplier((total - in_q[1] * count).astype(np.int32), m, s)
    return np.clip(np.asarray(v, np.int64) + out_q[1], -128, 127)


SUM_CASES = [  # id, input shape, axes, keep_dims, input q, output q, after a conv
    ("hw_keep", [1, 5, 7, 16], [1, 2], True, (0.05, -3), (0.9, 4), False),
    ("hw", [1, 5, 7, 16], [2, 1], False, (0.05, -3), (0.9, 4), True),
    ("channels", [1, 4, 6, 24], [3], False, (0.05, 7), (0.5, -10), True),
    ("channels_keep_neg_axis", [1, 4, 6, 24], [-1], True, (0.05, 7), (0.5, -10), False),
    ("middle_axis_3d", [2, 9, 5], [1], False, (0.02, 0), (0.11, 1), False),
    ("ratio_above_one", [1, 2, 3, 4], [1, 2], False, (0.05, -3), (0.02, 0), False),
    ("all_rows", [3, 10], [0, 1], True, (0.1, 2), (2.0, -5), False),
]


MEAN_CASES = [  # MEAN not over H, W of a 4-D tensor: reduce_sum's node with 1 / count
    ("time_axis", [1, 20, 16], [1], False, (0.05, -3), (0.02, 5), False),
    ("time_axis_same_q", [1, 20, 16], [1], True, (0.05, -3), (0.05, -3), False),
    ("channels_same_q", [1, 4, 6, 24], [3], False, (0.05, 7), (0.05, 7), True),
    ("rows", [3, 50], [-1], True, (0.1, 2), (0.03, -1), False),
]


@pytest.mark.parametrize("case,shape,axes,keep,in_q,out_q,conv", MEAN_CASES,
                         ids=[c[0] for c in MEAN_CASES])
def test_mean_over_other_axes_equals_tflite_micro(case, shape, axes, keep, in_q, out_q, conv,
                                                  tmp_path):
    rng = np.random.default_rng(len(case) + 50)
    b = TflBuilder()
    x = b.input("x", shape, *in_q)
    src = _conv_front(b, rng, x, shape, in_q) if conv else x
    red = {a % len(shape) for a in axes}
    ys = [1 if i in red else d for i, d in enumerate(shape)] if keep else \
        [d for i, d in enumerate(shape) if i not in red]
    ax = b.const("axes", np.array(axes, np.int32))
    y = b.tensor("y", ys, *out_q)
    b.op("MEAN", [src, ax], [y], "ReducerOptions", keepDims=keep)
    p = b.save(tmp_path / "mean.tflite", [y])
    g, _ = _check(p, _i8(rng, shape), tmp_path)
    assert [n.attrs.get("mean") for n in g.nodes if n.op == "reduce_sum"] == [True]


@pytest.mark.parametrize("case,shape,axes,keep,in_q,out_q,conv", SUM_CASES,
                         ids=[c[0] for c in SUM_CASES])
def test_sum_equals_tflite_micro(case, shape, axes, keep, in_q, out_q, conv, tmp_path):
    rng = np.random.default_rng(len(case))
    b = TflBuilder()
    x = b.input("x", shape, *in_q)
    src = _conv_front(b, rng, x, shape, in_q) if conv else x
    r = len(shape)
    red = {a % r for a in axes}
    ys = [1 if i in red else d for i, d in enumerate(shape)] if keep else \
        [d for i, d in enumerate(shape) if i not in red]
    ax = b.const("axes", np.array(axes, np.int32))
    y = b.tensor("y", ys, *out_q)
    b.op("SUM", [src, ax], [y], "ReducerOptions", keepDims=keep)
    p = b.save(tmp_path / "sum.tflite", [y])
    xv = _i8(rng, shape)
    g, want = _check(p, xv, tmp_path)
    assert any(n.op == "reduce_sum" for n in g.nodes)
    if not conv:  # the TFLM numbers themselves follow the kernel's documented arithmetic
        np.testing.assert_array_equal(_sum_tflm_model(xv, sorted(red), in_q, out_q)
                                      .reshape(want.shape), want)
    if case == "ratio_above_one":  # the sum saturates somewhere: the clamp is exercised
        assert (np.abs(want.astype(int)) >= 127).any()


def _minmax_model(tmp_path, builtin, operand, rng, q=(0.05, -3), q_other=None):
    shape = [1, 4, 5, 6]
    b = TflBuilder()
    x = b.input("x", shape, *q)
    conv = _conv_front(b, rng, x, shape, q)
    if operand == "same_shape":
        o = b.tensor("relu", shape, *(q_other or q))
        b.op("RELU", [x], [o])
    elif operand == "broadcast_act":
        ax = b.const("axes", np.array([1, 2], np.int32))
        o = b.tensor("mean", [1, 1, 1, 6], *(q_other or q))
        b.op("MEAN", [x, ax], [o], "ReducerOptions", keepDims=True)
    elif operand == "channel_const":
        o = b.const("c", _i8(rng, (6,)), *(q_other or q))
    else:
        o = b.const("c", np.array(rng.integers(-60, 60), np.int8), *(q_other or q))
    y = b.tensor("y", shape, *q)
    b.op(builtin, [conv, o] if operand != "scalar_const" else [o, conv], [y])
    return b.save(tmp_path / f"{builtin.lower()}.tflite", [y])


@pytest.mark.parametrize("builtin", ["MAXIMUM", "MINIMUM"])
@pytest.mark.parametrize("operand", ["same_shape", "broadcast_act", "channel_const",
                                     "scalar_const"])
def test_maximum_minimum_equal_tflite_micro(builtin, operand, tmp_path):
    rng = np.random.default_rng(3)
    p = _minmax_model(tmp_path, builtin, operand, rng)
    xv = _i8(rng, (1, 4, 5, 6))
    g, want = _check(p, xv, tmp_path)
    assert [n.op for n in g.nodes].count("minmax") == 1


def test_sum_and_maximum_on_qemu_m4(tmp_path):
    require_arm_toolchain()
    rng = np.random.default_rng(5)
    b = TflBuilder()
    shape = [1, 6, 5, 8]
    x = b.input("x", shape, 0.05, -3)
    conv = _conv_front(b, rng, x, shape, (0.05, -3))
    c = b.const("c", _i8(rng, (8,)), 0.05, -3)
    mx = b.tensor("mx", shape, 0.05, -3)
    b.op("MAXIMUM", [conv, c], [mx])
    ax = b.const("axes", np.array([1, 2], np.int32))
    y = b.tensor("y", [1, 8], 0.7, 2)
    b.op("SUM", [mx, ax], [y], "ReducerOptions", keepDims=False)
    p = b.save(tmp_path / "sum_max.tflite", [y])
    _check(p, _i8(rng, shape), tmp_path, board="qemu-m4")


def test_differently_quantized_maximum_and_split_axes_are_refused(tmp_path):
    rng = np.random.default_rng(7)
    p = _minmax_model(tmp_path, "MAXIMUM", "channel_const", rng, q_other=(0.07, 1))
    with pytest.raises(UnsupportedError) as ei:
        load_model(p)
    msg = str(ei.value)
    assert "MAXIMUM (operator 1)" in msg and "share the output's quantization" in msg
    b = TflBuilder()
    x = b.input("x", [1, 4, 5, 6], 0.05, -3)
    ax = b.const("axes", np.array([1, 3], np.int32))
    y = b.tensor("y", [1, 5], 0.5, 0)
    b.op("SUM", [x, ax], [y], "ReducerOptions", keepDims=False)
    p = b.save(tmp_path / "sum_split.tflite", [y])
    with pytest.raises(UnsupportedError) as ei:
        load_model(p)
    assert "SUM (operator 0)" in str(ei.value) and "not one run of axes" in str(ei.value)
