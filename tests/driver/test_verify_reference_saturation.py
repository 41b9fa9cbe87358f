"""verify / validate when onnxruntime's reference is itself inexact.

onnxruntime on x86 without VNNI saturates uint8 x int8 pair sums in int16
(tests/numerics/test_ort_x86_pair_saturation.py); golden outputs and tensors made there
differ from the exact integer computation tinyaot does. Checked here:

- `verify` on the two shared models whose golden onnxruntime outputs saturate: it passes
  with one note, and fails again as soon as one golden value is not what onnxruntime's
  saturation gives;
- `validate` with onnxruntime tensors that saturate: those layers are compared with the
  exact computation and named; a tensor that saturation does not explain stays divergent.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.env import SHARED, _missing
from tests.helpers.qdq_builder import save
from tests.helpers.saturating_models import conv_model, saturating_inputs

from codegen.compiler import compile_model
from codegen.reference.run import run_graph
from codegen.reference.x86_saturation import run_graph_x86


# ---- verify on the shared models ------------------------------------------------------------

SATURATING = {  # model -> (golden vectors that differ, elements)
    "keyword_spotting_mobilenetv2/keyword_spotting_mobilenetv2": ([0, 1, 2, 4, 5, 7], 24),
    "image_classification_mbnet128/mbnet128_0.25_q": (list(range(8)), 472),
}


def _shared(stem):
    onnx_path = SHARED / f"{stem}.onnx"
    golden = SHARED / f"{stem}_golden.npz"
    if not onnx_path.exists():
        _missing(f"shared model {onnx_path}")
    return onnx_path, golden


@pytest.mark.parametrize("stem", sorted(SATURATING))
def test_verify_tells_reference_saturation(stem, tmp_path, capsys):
    from codegen.driver.verify import print_verify, verify_model
    model, golden = _shared(stem)
    vectors, elements = SATURATING[stem]
    r = verify_model(model, golden, numerics="ort", key="outputs_onnxruntime")
    assert r["mismatches"] == 0 and r["vectors_passed"] == 8
    s = r["reference_saturates"]
    assert s["vectors"] == vectors and s["golden_mismatches"] == elements == r["golden_mismatches"]
    assert s["op"] == "conv2d"
    print_verify(r)
    out = capsys.readouterr().out
    assert out.count("saturates int16 pair sums") == 1 and out.rstrip().endswith("PASS")
    # one golden value that onnxruntime's saturation does not give: that vector fails
    g = dict(np.load(golden))
    v = vectors[0]
    y = g["outputs_onnxruntime"].copy()
    flat = y[v].reshape(-1)
    flat[0] = flat[0] + 1 if flat[0] < 127 else flat[0] - 1
    y[v] = flat.reshape(y[v].shape)
    g["outputs_onnxruntime"] = y
    bad = tmp_path / "bad_golden.npz"
    np.savez(bad, **g)
    r = verify_model(model, bad, numerics="ort", key="outputs_onnxruntime")
    assert r["mismatches"] > 0 and r["vectors_passed"] == 7
    assert v not in r["reference_saturates"]["vectors"]
    assert any(m["vector"] == v for m in r["first_mismatches"])


def test_verify_tells_reference_saturation_at_float_ends(tmp_path):
    """The ECG autoencoder takes and gives float32 (its ends quantized / dequantized in the
    generated API): its golden onnxruntime floats saturate too. Explained as bits of the
    dequantized exact integers; one float that saturation does not give still fails."""
    from codegen.driver.verify import verify_model
    model, golden = _shared("anomaly_detection_ecg_autoencoder/autoencoder_example")
    r = verify_model(model, golden, numerics="ort", key="outputs_onnxruntime")
    s = r["reference_saturates"]
    assert r["mismatches"] == 0 and r["vectors_passed"] == 8 and s is not None
    assert s["op"] == "fully_connected" and s["golden_mismatches"] == r["golden_mismatches"] > 0
    g = dict(np.load(golden))
    v = s["vectors"][0]
    y = g["outputs_onnxruntime"].copy()
    y[v, 0] = np.nextafter(y[v, 0], np.float32(np.inf))  # one ulp: not a dequantized value
    g["outputs_onnxruntime"] = y
    bad = tmp_path / "bad_golden.npz"
    np.savez(bad, **g)
    r = verify_model(model, bad, numerics="ort", key="outputs_onnxruntime")
    assert r["mismatches"] > 0 and r["vectors_passed"] == 7
    assert v not in r["reference_saturates"]["vectors"]


def test_verify_tells_reference_saturation_with_two_outputs(tmp_path):
    """Yolo-Fastest has two outputs; its golden onnxruntime outputs (made on x86 without
    VNNI) saturate in every vector. Both outputs are compared with the exact integer
    computation; a changed value in the second output alone still fails that vector."""
    from codegen.driver.verify import verify_model
    model, golden = _shared("person_detection_yolo_fastest/yolo-fastest-1.1-person-int8")
    r = verify_model(model, golden, numerics="ort", key="outputs_onnxruntime")
    s = r["reference_saturates"]
    assert r["mismatches"] == 0 and r["vectors_passed"] == 8 and s is not None
    assert s["vectors"] == list(range(8)) and s["op"] == "conv2d"
    assert [o["key"] for o in r["outputs_compared"]] == ["outputs_onnxruntime",
                                                        "outputs_onnxruntime1"]
    assert s["golden_mismatches"] == r["golden_mismatches"] == 35741
    from tests.helpers.golden_files import one_value_changed
    bad = one_value_changed(golden, "outputs_onnxruntime1", 3, tmp_path / "bad_golden.npz")
    r = verify_model(model, bad, numerics="ort", key="outputs_onnxruntime")
    assert r["vectors_passed"] == 7 and 3 not in r["reference_saturates"]["vectors"]
    assert r["outputs_compared"][1]["mismatches"] > 0


# ---- validate with onnxruntime tensors that saturate ----------------------------------------

def test_validate_compares_saturating_layers_with_the_exact_sums(tmp_path, monkeypatch):
    from codegen.driver import validate as val
    path = save(conv_model(8, 16, 1), tmp_path)
    x = saturating_inputs((1, 8, 8, 8))
    real = val.onnxruntime_tensors

    def x86_taps(model, per, g, tick=lambda n=1: None, tamper=False):
        """onnxruntime's tensors as an x86 CPU without VNNI gives them."""
        run = real(model, per, g, tick)
        c = compile_model(model, numerics="ort")
        for v, xv in enumerate(per):
            env, _ = run_graph_x86(c.graph, {c.graph.inputs[0]: np.asarray(xv).reshape(
                c.graph.tensors[c.graph.inputs[0]].shape)}, c.params)
            for name in run.values[v]:
                run.values[v][name] = env[name].astype(np.int64)
            if tamper and v == 0:  # one more change on a tensor that does saturate
                exact = run_graph(c.graph, "ort", {c.graph.inputs[0]: np.asarray(xv).reshape(
                    c.graph.tensors[c.graph.inputs[0]].shape)}, c.params)
                name = next(n for n in run.values[v] if not np.array_equal(env[n], exact[n]))
                run.values[v][name] = run.values[v][name].copy()
                run.values[v][name].reshape(-1)[5] += 1
        return run

    monkeypatch.setattr(val, "onnxruntime_tensors", x86_taps)
    r = val.validate_model(path, x, numerics="ort")
    s = r["onnxruntime_saturates"]
    assert s is not None and s["op"] == "conv2d" and s["inputs"] >= 1
    assert r["first_divergent_layer"] is None
    rows = [row for row in r["layers"] if row["index"] in s["layers"]]
    assert rows and all(row["reference"] == "oracle" and "saturates" in row["reference_note"]
                        for row in rows)
    text = val.format_validate(r)
    assert text.count("saturates int16 pair sums") == 1
    # a tensor that saturation does not explain is still divergent
    monkeypatch.setattr(val, "onnxruntime_tensors",
                        lambda m, p, g, tick=lambda n=1: None: x86_taps(m, p, g, tick, tamper=True))
    r = val.validate_model(path, x, numerics="ort")
    assert r["first_divergent_layer"] is not None
