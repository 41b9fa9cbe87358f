"""validate --numerics ort: every layer against onnxruntime's own tensors.

The taps come from the graph the plain onnxruntime session runs
(codegen/driver/ort_taps.py). Here: that graph is not changed by the taps,
the tapped session's final output is the plain session's and the golden
one, each model's layers are found in it, the generated C equals ORT on
every exposed layer, and a corrupted weight is pinned on ORT's tensor.
"""
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, SHARED, _missing, shared_model

from codegen.compiler import compile_model
from codegen.driver.ort_taps import run_taps
from codegen.driver.validate import validate_model

# Layers of each model that ORT computes as a tensor of their own (the rest
# are folded away by ORT and validated against the oracle, listed as such).
NOT_IN_ORT = {
    # /Clip, /Relu_1, /Relu_2: ORT drops the Clip / Relu in front of a
    # QuantizeLinear whose range already clips; layer 11 is an IR-only tensor.
    "digits": {3, 6, 9, 11},
    "ad01": set(), "kws01": set(), "ic01": set(), "vww01": set(), "sww01": set(),
}
# ic01 layer 12 is the last residual Add: ORT fuses it into com.microsoft
# QLinearAdd, whose rounding differs from DequantizeLinear -> Add ->
# QuantizeLinear; tinyaot's ort numerics repeat QLinearAdd's formula there
# (numerics/ort_qlinear_add.py), so every exposed layer must match ORT.
IC01_FUSED_ADD = 12


def _model(key):
    if key == "digits":
        return DEFAULT_MODEL, DEFAULT_GOLDEN
    return shared_model(key)


@pytest.mark.parametrize("key", ["digits", "ad01", "kws01", "ic01", "vww01", "sww01"])
def test_taps_leave_ort_unchanged_and_end_at_its_output(key):
    model, golden = _model(key)
    gold = np.load(golden)
    expected = gold["outputs_onnxruntime"] if "outputs_onnxruntime" in gold.files else gold["outputs"]
    g = compile_model(model, numerics="ort").graph
    run = run_taps(model, g, list(gold["inputs"]))
    # The session that exposes the tensors runs node for node the plain
    # session's optimized graph, and ends at the plain session's output.
    assert run.proof["graph_unchanged"]
    assert run.proof["final_mismatches_vs_plain_session"] == 0
    exposed = {i for i, n in enumerate(g.nodes) if n.outputs[0] in run.proof["exposed"]}
    assert set(range(len(g.nodes))) - exposed == NOT_IN_ORT[key], run.missing
    for i in NOT_IN_ORT[key]:
        assert run.missing[g.nodes[i].outputs[0]]
    # The last layer's ORT tensor is ORT's final output and the golden one.
    last = g.outputs[0]
    assert last in run.proof["exposed"]
    for k, v in enumerate(run.values):
        assert np.array_equal(v[last].reshape(-1), np.asarray(run.finals[k][0]).reshape(-1))
        assert np.array_equal(v[last].reshape(-1).astype(np.int64),
                              expected[k].reshape(-1).astype(np.int64))


@pytest.mark.parametrize("key", ["digits", "ad01", "kws01", "ic01", "vww01", "sww01"])
def test_generated_c_equals_ort_on_every_exposed_layer(key):
    model, golden = _model(key)
    x = np.load(golden)["inputs"]
    r = validate_model(model, x, board="host", numerics="ort")
    assert r["onnxruntime_taps"]["graph_unchanged"]
    assert r["final_output_vs_onnxruntime"] == 0
    rows = r["layers"]
    assert {x["index"] for x in rows if x["reference"] == "oracle"} == NOT_IN_ORT[key]
    for row in rows:
        assert row["compared"], row
        if row["reference"] == "oracle":
            assert row["reference_note"] and row["mismatches"] == 0, row
        else:
            assert row["reference"] == "onnxruntime" and row["mismatches"] == 0, row
    assert r["first_divergent_layer"] is None


def test_channels_last_leaky_relu_taps_are_read_in_their_layout():
    """Yolo-Fastest: onnxruntime's NhwcTransformer leaves QLinearLeakyRelu nodes between two
    channels-last QLinearConvs with no Transpose around them, so their tensors are NHWC.
    validate reads them in that layout: every layer against onnxruntime's own tensors is
    exact on a golden input (it reported 30 LeakyRelu layers divergent when it read them
    as NCHW)."""
    stem = SHARED / "person_detection_yolo_fastest" / "yolo-fastest-1.1-person-int8"
    model, golden = Path(f"{stem}.onnx"), Path(f"{stem}_golden.npz")
    if not model.exists():
        _missing(f"shared model {model}")
    x = np.load(golden)["inputs"][:1]
    r = validate_model(model, x, board="host", numerics="ort")
    assert r["final_output_vs_onnxruntime"] == 0
    leaky = [row for row in r["layers"] if row["op"] == "lut" and row["reference"] == "onnxruntime"]
    assert len(leaky) >= 50
    assert all(row["mismatches"] == 0 for row in leaky)
    assert r["first_divergent_layer"] is None


def test_ic01_last_add_is_qlinearadd_in_ort():
    """Why ic01's last Add needs ORT's QLinearAdd formula: ORT's own QLinearAdd
    kernel, run alone on ORT's tapped inputs, reproduces the tap exactly, while
    DequantizeLinear -> Add -> Relu -> QuantizeLinear does not."""
    from onnx import TensorProto as TP
    from onnx import helper as h
    import onnxruntime as ort
    from codegen.frontend.ort_facts import optimized_graph
    model, golden = shared_model("ic01")
    assert any(n.op_type == "QLinearAdd" for n in optimized_graph(model).graph.node)
    g = compile_model(model, numerics="ort").graph
    run = run_taps(model, g, list(np.load(golden)["inputs"]))
    n = g.nodes[IC01_FUSED_ADD]
    assert n.op == "add"
    ta, tb = (g.tensors[i] for i in n.inputs[:2])
    ty = g.tensors[n.outputs[0]]
    (sa, za), (sb, zb), (sy, zy) = ta.q.scalar(), tb.q.scalar(), ty.q.scalar()
    inits = [h.make_tensor(k, TP.FLOAT, [], [v]) for k, v in (("sa", sa), ("sb", sb), ("sy", sy))]
    inits += [h.make_tensor(k, TP.UINT8, [], [v + 128]) for k, v in (("za", za), ("zb", zb),
                                                                    ("zy", zy))]
    shape = list(ta.shape)
    node = h.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"],
                       domain="com.microsoft")
    m = h.make_model(h.make_graph([node], "qladd",
                                  [h.make_tensor_value_info("a", TP.UINT8, shape),
                                   h.make_tensor_value_info("b", TP.UINT8, shape)],
                                  [h.make_tensor_value_info("y", TP.UINT8, shape)], inits),
                     opset_imports=[h.make_opsetid("", 13), h.make_opsetid("com.microsoft", 1)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    kernel_vs_tap = float_vs_tap = 0
    for v in run.values:
        a, b, y = v[ta.name], v[tb.name], v[ty.name]
        got = sess.run(None, {"a": (a + 128).astype(np.uint8), "b": (b + 128).astype(np.uint8)})[0]
        kernel_vs_tap += np.count_nonzero(got.astype(np.int64) - 128 != y)
        f = np.maximum((a - za).astype(np.float32) * sa + (b - zb).astype(np.float32) * sb, 0)
        q = np.clip(np.rint(f / sy) + zy, -128, 127)
        float_vs_tap += np.count_nonzero(q != y)
    assert kernel_vs_tap == 0
    assert float_vs_tap > 0


def _corrupt_weight(c, layer, flat_index=3, bit=0x40):
    w = c.graph.tensors[c.graph.nodes[layer].inputs[1]]
    w.data = w.data.copy()
    w.data.flat[flat_index] = np.int8(int(w.data.flat[flat_index]) ^ bit)


@pytest.mark.parametrize("key,layer", [("digits", 8), ("kws01", 3), ("vww01", 5)])
def test_corrupted_weight_is_found_on_orts_tensor(key, layer):
    model, golden = _model(key)
    c = compile_model(model, numerics="ort")
    _corrupt_weight(c, layer)
    r = validate_model(model, np.load(golden)["inputs"][:2], board="host", numerics="ort",
                       compiled=c)
    assert r["first_divergent_layer"] == layer
    bad = r["layers"][layer]
    assert bad["reference"] == "onnxruntime" and bad["mismatches"] > 0
    assert all(x["mismatches"] == 0 for x in r["layers"][:layer])


def test_exposing_original_tensors_would_change_orts_graph():
    """Why the taps come from the optimized graph: adding an intermediate of
    the original ic01 model as a graph output changes what ORT runs."""
    import os
    import tempfile
    import onnxruntime as ort
    from codegen.frontend.ort_facts import optimized_graph
    model, _ = shared_model("ic01")
    g = compile_model(model, numerics="ort").graph
    m = onnx.load(str(model))
    m.graph.output.append(onnx.helper.make_empty_tensor_value_info(g.nodes[2].outputs[0]))
    with tempfile.TemporaryDirectory() as tmp:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.optimized_model_filepath = os.path.join(tmp, "o.onnx")
        ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        tapped = [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]
    plain = [n.op_type for n in optimized_graph(model).graph.node]
    assert tapped != plain


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
@pytest.mark.parametrize("act", ["QInt8", "QUInt8"])
def test_quantize_static_models_float_io_and_uint8(tmp_path, fmt, act):
    """Float-I/O models from quantize_static (QDQ and QOperator, int8 and
    uint8 activations): ORT gets the dequantized input, its uint8 tensors are
    shifted back, and the convolutions, add, pools and FC are ORT's own."""
    from tests.helpers import quantize_static_models as qmodels
    path = tmp_path / f"m_{fmt}_{act}.onnx"
    qmodels.quantize(qmodels.cnn(avgpool=True, softmax=True), path, fmt=fmt, activations=act)
    g = compile_model(path, numerics="ort").graph
    xin = g.tensors[g.inputs[0]]
    s, zp = xin.q.scalar()
    lo, hi = (0, 255) if xin.dtype == "uint8" else (-128, 127)
    x = np.clip(np.rint(np.stack(qmodels.sample_inputs(6)) / s) + zp, lo, hi).astype(xin.dtype)
    r = validate_model(path, x, board="host", numerics="ort")
    assert r["onnxruntime_taps"]["graph_unchanged"]
    assert r["final_output_vs_onnxruntime"] == 0 and r["first_divergent_layer"] is None
    ort_ops = [row["op"] for row in r["layers"] if row["reference"] == "onnxruntime"]
    assert ort_ops.count("conv2d") == 3 and "add" in ort_ops and "fully_connected" in ort_ops
    assert all(row["mismatches"] == 0 for row in r["layers"])
