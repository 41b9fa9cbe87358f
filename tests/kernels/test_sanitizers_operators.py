"""The new operator kernels (lut, mul, concat, pad, 1-D conv, ConvTranspose, slice, resize,
avgpool, transpose, matmul, softmax, prelu, minmax, reduce_sum, the float fallback's float32
kernels) under ASan/UBSan and strict warnings, through the regression models, a Concat, a
PRelu, a LogSoftmax, a float-chain model and a .tflite with MAXIMUM / SUM / float TANH /
MINIMUM."""
from pathlib import Path

import numpy as np
import pytest

from codegen.compiler import compile_model, write_outputs
from codegen.reference import run_graph

from tests.helpers import sanitizers as ts
from tests.helpers.env import REPO
from tests.helpers.float_models import float_chain, softmax_qdq
from tests.helpers.op_models import concat_model, prelu_model
from tests.helpers.qdq_builder import all_int8_inputs, save
from tests.helpers.regression_models import tflite_variant
from tests.helpers.tflite_builders import sum_max_island_model

# one worker builds the sanitized kernels for every ASan test (pytest-xdist)
pytestmark = pytest.mark.xdist_group("asan")


def _model(key, tmp_path):
    if key == "concat":
        m, shape = concat_model((3, 5, 1), ((0.03, 1), (0.08, -4), (0.05, 2)), conv=True)
        return save(m, tmp_path, "concat.onnx"), all_int8_inputs(shape, 4)
    if key == "prelu":  # after a Conv (NHWC, per-channel slope), in place, fused Relu
        shape = (1, 5, 4, 6)
        m, _ = prelu_model(shape, (5, 1, 1), after_conv=True, act="relu")
        return save(m, tmp_path, "prelu.onnx"), all_int8_inputs(shape, 4)
    if key == "logsoftmax":  # the float fallback: dequantize, softmax_f32, quantize
        return save(softmax_qdq("LogSoftmax", (3, 40)), tmp_path), all_int8_inputs((3, 40), 4)
    if key == "float_chain":  # dequantize, unary_f32, binary_f32 (broadcast), quantize
        return save(float_chain(), tmp_path), all_int8_inputs((1, 3, 4, 5), 4)
    if key == "sum_max_island":  # a .tflite: minmax, reduce_sum, dequantize, unary_f32
        path = sum_max_island_model(tmp_path / "sum_max_island.tflite")
        return path, all_int8_inputs((1, 6, 5, 8), 4)
    if key == "misc_ops_tflite":  # misc_ops without what tflite numerics reject
        path, inputs = _model("misc_ops", tmp_path)
        return tflite_variant(path, tmp_path), inputs
    path = REPO / "models" / f"{key}_int8.onnx"
    return path, np.load(REPO / "models" / f"{key}_int8_golden.npz")["inputs"]


CASES = [("mbv2_block", "ort"), ("mbv2_block", "tflite"), ("conv1d", "ort"),
         ("conv1d", "tflite"), ("concat", "ort"), ("decoder", "ort"), ("decoder", "tflite"),
         ("data_ops", "ort"), ("data_ops", "tflite"), ("misc_ops", "ort"),
         ("misc_ops_tflite", "tflite"), ("prelu", "ort"), ("prelu", "tflite"),
         ("logsoftmax", "ort"), ("logsoftmax", "tflite"), ("float_chain", "ort"),
         ("float_chain", "tflite"), ("sum_max_island", "tflite")]


@pytest.mark.parametrize("key,numerics", CASES)
def test_new_ops_asan_ubsan_and_strict_warnings(key, numerics, asan_runtime_objs, tmp_path):
    path, inputs = _model(key, tmp_path)
    c = compile_model(path, numerics=numerics)
    g = c.graph
    expected = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]]
                         for v in inputs])
    name = c.module.name
    gen = Path(write_outputs(c, tmp_path / "gen"))
    diag = ts.strict_compile([gen / f"{name}.c"], [ts.RUNTIME_INC, gen], tmp_path)
    assert not diag, "\n".join(diag[:10])
    (gen / "main.c").write_text(ts.MAIN_C.format(name=name, NAME=name.upper()))
    exe = tmp_path / (name + "_asan")
    p = ts.run_tool(["gcc", *ts.SAN_FLAGS, *ts.BASE_FLAGS, f"-I{ts.RUNTIME_INC}", f"-I{gen}",
                    gen / f"{name}.c", gen / "main.c", *asan_runtime_objs, "-lm", "-o", exe])
    assert p.returncode == 0, p.stdout + p.stderr
    flat = np.ascontiguousarray(inputs.astype(np.int8).reshape(len(inputs), -1))
    fin, fout = tmp_path / "in.bin", tmp_path / "out.bin"
    fin.write_bytes(flat.tobytes())
    import os
    p = ts.run_tool([exe, fin, fout, len(flat)], env=dict(os.environ, **ts.SAN_ENV), timeout=120)
    report = (p.stdout + p.stderr).strip()
    assert p.returncode == 0 and report == "", report[-4000:]
    outs = np.frombuffer(fout.read_bytes(), dtype=np.int8).reshape(expected.shape)
    np.testing.assert_array_equal(outs, expected)
