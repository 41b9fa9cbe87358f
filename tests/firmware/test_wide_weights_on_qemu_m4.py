"""Weights whose w - zp leaves int8 (uint8 weights with any zero point, asymmetric int8
weights: int16 in the IR, docs/numerics.md#weights-with-a-zero-point) on qemu-m4, where
the fast kernels run their DSP asm: onnxruntime's outputs under `ort` (or, where it
saturates int16 pairs on x86 without VNNI, the exact integers), the numpy TFLite
reference under `tflite`."""
import numpy as np
import pytest

from codegen.driver.verify import run_model

from tests.helpers import quantize_static_models as qmodels
from tests.helpers import tflite_int_reference as tfl_ref
from tests.helpers.env import require_arm_toolchain
from tests.helpers.qdq_builder import all_int8_inputs, run_ort, save
from tests.helpers.wide_weights import (WIDE_CONVS, WIDE_FORMS, X_Q, Y_Q,
                                        assert_ort_or_saturating, static_vs_ort, wide_conv_model)

pytestmark = pytest.mark.qemu


@pytest.mark.parametrize("kind,wtype", [("conv", "uint8"), ("depthwise", "int8"),
                                        ("grouped", "uint8")])
def test_wide_weight_convs_on_qemu_m4_ort(kind, wtype, tmp_path):
    require_arm_toolchain()
    model, in_shape, *_ = wide_conv_model(kind, wtype, True, between=True)
    path = save(model, tmp_path)
    x = all_int8_inputs(in_shape, 3)
    outs, info = run_model(path, x, board="qemu-m4", numerics="ort", build_dir=tmp_path / "b")
    assert info["status"] == [0] * len(x)
    assert WIDE_CONVS[kind][5] in info["report"]["kernels"]
    from codegen.compiler import compile_model
    c = compile_model(path, numerics="ort")
    want = run_ort(path, x)
    assert_ort_or_saturating(c, x, np.asarray(outs).reshape(want.shape), want)


def test_wide_weight_depthwise_on_qemu_m4_tflite(tmp_path):
    require_arm_toolchain()
    kind = "multiplier2"
    model, in_shape, d, bq, sw = wide_conv_model(kind, "uint8", False)
    _, _, group, pads, strides, kernel = WIDE_CONVS[kind]
    path = save(model, tmp_path)
    x = all_int8_inputs(in_shape, 3)
    outs, info = run_model(path, x, board="qemu-m4", numerics="tflite", build_dir=tmp_path / "b")
    assert info["status"] == [0] * len(x)
    assert kernel in info["report"]["kernels"]
    acc = tfl_ref.conv_acc(x.reshape((-1,) + in_shape[1:]), d, tuple(pads), strides, group, X_Q[1])
    want = tfl_ref.requantize(acc, bq, X_Q[0], sw, Y_Q[0], Y_Q[1], Y_Q[1], 127)
    np.testing.assert_array_equal(np.asarray(outs).reshape(want.shape), want)


@pytest.mark.parametrize("form,act,weights,per_channel,sym,model", [WIDE_FORMS[3], WIDE_FORMS[6]])
def test_quantize_static_wide_weights_on_qemu_m4(form, act, weights, per_channel, sym, model,
                                                tmp_path):
    """QLinearMatMul with uint8 constants; s8s8 QDQ with WeightSymmetric=False (convs and
    the Gemm: the FC's asm group kernel with int16 weights)."""
    require_arm_toolchain()
    path = qmodels.quantize(getattr(qmodels, model)(), tmp_path / "m.onnx", form, act, weights,
                            per_channel, weight_symmetric=sym)
    xs, outs, want, c = static_vs_ort(path, tmp_path, raw=True, board="qemu-m4")
    assert_ort_or_saturating(c, xs, outs, want)
    assert any(c.graph.tensors[n.inputs[1]].dtype == "int16" for n in c.graph.nodes
               if n.op == "fully_connected")
