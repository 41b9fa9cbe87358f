"""The float fallback on the boards: the same float32 layers on qemu-m4 (FPv4-SP in
hardware) and on qemu-m3 (no FPU: libgcc's soft float, and the double arithmetic of
glibc's expf / logf in software) give the bits onnxruntime gives (--numerics ort) and the
bits TFLite Micro's interpreter gives (--numerics tflite), as the host does:

* DQ -> LogSoftmax -> Q (int8 out), ort;
* MatMul -> Q -> DQ -> Softmax -> float32 out, ort and tflite;
* DQ -> Exp -> Mul / Add / Div -> Q, ort.
"""
import numpy as np
import pytest

from codegen.driver.verify import run_model

from tests.helpers.env import require_arm_toolchain
from tests.helpers.float_models import (float_chain, gemm_softmax_float_out, run_tflite_micro,
                                        softmax_float_out, softmax_qdq, softmax_tflite_file)
from tests.helpers.qdq_builder import all_int8_inputs, run_ort, save

pytestmark = pytest.mark.qemu


def _same_bits(got, want):
    want = np.asarray(want)
    got = np.asarray(got).astype(want.dtype, copy=False).reshape(want.shape)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m3"])
@pytest.mark.parametrize("case", ["logsoftmax_q", "softmax_float_out", "float_chain"])
def test_float_fallback_on_qemu_equals_onnxruntime(board, case, tmp_path):
    require_arm_toolchain()
    model, shape = {"logsoftmax_q": (softmax_qdq("LogSoftmax", (2, 40)), (2, 40)),
                    "softmax_float_out": (gemm_softmax_float_out((1, 16), 100), (1, 16)),
                    "float_chain": (float_chain(), (1, 3, 4, 5))}[case]
    path = save(model, tmp_path)
    x = all_int8_inputs(shape, 3, seed=11)
    outs, info = run_model(path, x, board=board, numerics="ort", build_dir=tmp_path / "b")
    assert info["status"] == [0] * len(x)
    assert "tinyaot_" + {"logsoftmax_q": "softmax", "softmax_float_out": "softmax",
                         "float_chain": "binary"}[case] + "_f32" in info["report"]["kernels"]
    _same_bits(outs, run_ort(path, x))


@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m3"])
def test_float_softmax_on_qemu_equals_tflite_micro(board, tmp_path):
    require_arm_toolchain()
    pytest.importorskip("tflite_micro", reason="pip install tflite-micro")
    shape = (2, 50)
    path = save(softmax_float_out("Softmax", shape), tmp_path)
    x = all_int8_inputs(shape, 3, seed=12)
    outs, info = run_model(path, x, board=board, numerics="tflite", build_dir=tmp_path / "b")
    assert info["status"] == [0] * len(x)
    _same_bits(outs, run_tflite_micro(softmax_tflite_file("SOFTMAX", shape), x))
