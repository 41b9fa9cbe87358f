"""Generated C on the host (cffi) against the numpy oracle and onnxruntime."""
import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.reference import run_graph
from codegen.driver.verify import run_model

from tests.helpers.env import SHARED_MODELS, shared_model


def _host_outputs(model, inputs, numerics, tmp_path):
    c = compile_model(model, numerics=numerics)
    outs, info = run_model(model, inputs, board="host", numerics=numerics,
                           build_dir=tmp_path / "gen", compiled=c)
    assert info["status"] == [0] * len(inputs)
    return c, outs


def test_default_model_host_c_equals_reference_and_onnxruntime(default_model, default_golden, tmp_path):
    model, _ = default_model
    inputs = default_golden["inputs"]
    c, outs = _host_outputs(model, inputs, "ort", tmp_path)
    g = c.graph
    ref = np.stack([run_graph(g, "ort", {g.inputs[0]: x[None]}, c.params)[g.outputs[0]]
                    for x in inputs])
    np.testing.assert_array_equal(outs, ref)
    # the golden outputs were made by onnxruntime (models/make_digits_cnn.py)
    np.testing.assert_array_equal(outs.reshape(default_golden["outputs"].shape),
                                  default_golden["outputs"])
    assert len(inputs) == 64


GOLDEN_KEY = {"ort": "outputs_onnxruntime", "tflite": "outputs_tflm"}


@pytest.mark.shared
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
@pytest.mark.parametrize("key", sorted(SHARED_MODELS))
def test_shared_model_host_c_matches_golden(key, numerics, tmp_path):
    """ort: onnxruntime's outputs; tflite: TFLite Micro's. Both bit-exact."""
    onnx_path, golden = shared_model(key)
    gold = np.load(golden)
    c, outs = _host_outputs(onnx_path, gold["inputs"], numerics, tmp_path)
    expected = gold[GOLDEN_KEY[numerics]]
    np.testing.assert_array_equal(outs.reshape(expected.shape), expected)
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: x[None]}, c.params)[g.outputs[0]]
                    for x in gold["inputs"]])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)


def test_default_model_tflite_numerics_host_equals_reference(default_model, default_golden, tmp_path):
    model, _ = default_model
    inputs = default_golden["inputs"][:16]
    c, outs = _host_outputs(model, inputs, "tflite", tmp_path)
    g = c.graph
    ref = np.stack([run_graph(g, "tflite", {g.inputs[0]: x[None]}, c.params)[g.outputs[0]]
                    for x in inputs])
    np.testing.assert_array_equal(outs, ref)
    # different rounding than onnxruntime, but the same network: close to it
    diff = np.abs(outs.astype(int) - default_golden["outputs"][:16].reshape(outs.shape))
    assert diff.max() <= 8
