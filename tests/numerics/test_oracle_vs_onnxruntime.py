"""The numpy oracle against onnxruntime (the independent reference)."""
import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.reference import run_graph
from codegen.reference.onnxruntime_oracle import run_onnxruntime

from tests.helpers.env import SHARED_MODELS, shared_model


def test_every_intermediate_tensor_of_default_model_equals_onnxruntime(default_model, default_golden):
    model, _ = default_model
    c = compile_model(model, numerics="ort")
    g = c.graph
    # Intermediate tensors that exist under the same name in the ONNX model.
    names = [t for t in g.activations() if "@" not in t]
    assert len(names) >= 8
    compared = 0
    for x in default_golden["inputs"][:16]:
        feeds = {g.inputs[0]: x[None]}
        ort_out = run_onnxruntime(model, feeds, names, disable_opt=True)
        ours = run_graph(g, "ort", feeds, c.params)
        for name in names:
            assert name in ort_out, name
            np.testing.assert_array_equal(ours[name].astype(np.int32),
                                          ort_out[name].astype(np.int32), err_msg=name)
            compared += 1
    assert compared == 16 * len(names)


def test_default_model_final_output_equals_default_onnxruntime_session(default_model, default_golden):
    model, _ = default_model
    c = compile_model(model, numerics="ort")
    g = c.graph
    for x in default_golden["inputs"][:16]:
        feeds = {g.inputs[0]: x[None]}
        ort_out = run_onnxruntime(model, feeds)[g.outputs[0]]
        ours = run_graph(g, "ort", feeds, c.params)[g.outputs[0]]
        np.testing.assert_array_equal(ours, ort_out)


@pytest.mark.shared
@pytest.mark.parametrize("key", sorted(SHARED_MODELS))
def test_reference_ort_matches_shared_golden(key):
    onnx_path, golden = shared_model(key)
    gold = np.load(golden)
    c = compile_model(onnx_path, numerics="ort")
    g = c.graph
    for i, x in enumerate(gold["inputs"]):
        out = run_graph(g, "ort", {g.inputs[0]: x[None]}, c.params)[g.outputs[0]]
        np.testing.assert_array_equal(out.reshape(gold["outputs_onnxruntime"][i].shape),
                                      gold["outputs_onnxruntime"][i], err_msg=f"{key} vector {i}")
