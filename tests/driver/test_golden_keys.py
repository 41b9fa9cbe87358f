"""The golden-file keys of float and several ends (driver/golden_keys.py) through verify, run
and validate: inputs, inputs1, ...; outputs<k>, outputs_onnxruntime<k>, ...; output_names; a
float32 golden compared as float32 bits, never read as int8; mistakes in one line.
Oracle: onnxruntime on the model.
"""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from codegen.driver.verify import verify_model
from codegen.errors import TinyAotError
from codegen.numerics.quant import quantize_end
from tests.helpers import ends_builders as E
from tests.helpers import ends_oracle as H

F32 = np.float32


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    p = tmp_path_factory.mktemp("dense") / "dense_float_ends.onnx"
    import onnx
    onnx.save(E.dense_float_ends(), str(p))
    return p


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    p = tmp_path_factory.mktemp("several") / "several_ends.onnx"
    onnx.save(E.several_ends(), str(p))
    return p


def test_a_float_golden_is_never_read_as_int8(dense, tmp_path):
    """verify compares float32 goldens as float32 bits: one ulp off is one mismatch, and a
    float golden against an integer output is refused in one line."""
    from codegen.driver.verify import verify_model
    xs = E.float_inputs(*E.X_Q, 24)
    want = np.stack([o[0] for o in H.ort_runs(dense, [{"serving_default_x:0": x} for x in xs])])
    bad = want.copy()
    bad[1, 0, 3] = np.nextafter(bad[1, 0, 3], F32(np.inf), dtype=F32)
    g = tmp_path / "g.npz"
    np.savez(g, inputs=xs.reshape(4, 24), outputs_onnxruntime=want.reshape(4, 8),
             outputs=bad.reshape(4, 8))
    r = verify_model(dense, g, key="outputs_onnxruntime", build_dir=tmp_path / "a")
    assert r["mismatches"] == 0 and r["max_abs_diff"] == 0.0
    r = verify_model(dense, g, key="outputs", build_dir=tmp_path / "b")
    assert r["mismatches"] == 1 and r["vectors_passed"] == 3
    assert r["first_mismatches"][0]["index"] == 3 and r["first_mismatches"][0]["vector"] == 1
    # the quantized values behind the float output, as integers
    q = np.stack([quantize_end("ort", w, *E.Y_Q) for w in want]).reshape(4, 8)
    np.savez(g, inputs=xs.reshape(4, 24), outputs_q=q)
    r = verify_model(dense, g, key="outputs_q", build_dir=tmp_path / "c")
    assert r["mismatches"] == 0 and r["outputs_compared"][0]["compared_as"] == "int8 (requantized)"


def test_verify_reads_every_key_in_the_golden_order(model, tmp_path):
    xs, zs = H.several_inputs()
    want = H.onnxruntime_outputs(model, xs, zs)
    order = [2, 0, 3, 1]  # the golden's output order is not the model's
    g = H.write_golden(tmp_path / "g.npz", xs, zs, want, order)
    r = verify_model(model, g, key="outputs_onnxruntime", build_dir=tmp_path / "a")
    assert r["mismatches"] == 0 and r["vectors_passed"] == 4
    assert [o["name"] for o in r["outputs_compared"]] == H.OUT_NAMES
    assert [o["key"] for o in r["outputs_compared"]] == [
        "outputs_onnxruntime1", "outputs_onnxruntime3", "outputs_onnxruntime",
        "outputs_onnxruntime2"]
    assert [o["compared_as"] for o in r["outputs_compared"]] == ["float32", "float32", "int8",
                                                                 "int8"]
    bad = [w.copy() for w in want]
    bad[0][2, 0, 1] = np.nextafter(bad[0][2, 0, 1], F32(np.inf), dtype=F32)  # one ulp
    bad[3][0, 0, 5] += 1
    g = H.write_golden(tmp_path / "bad.npz", xs, zs, bad, order)
    r = verify_model(model, g, key="outputs_onnxruntime", build_dir=tmp_path / "b")
    assert r["mismatches"] == 2 and r["vectors_passed"] == 2
    assert [o["mismatches"] for o in r["outputs_compared"]] == [1, 0, 0, 1]
    assert {(m["output"], m["vector"], m["index"]) for m in r["first_mismatches"]} == \
        {(0, 2, 1), (3, 0, 5)}

def test_golden_mistakes_are_one_line(model, tmp_path):
    xs, zs = H.several_inputs()
    want = H.onnxruntime_outputs(model, xs, zs)
    g = tmp_path / "g.npz"
    np.savez(g, inputs=xs.reshape(4, -1), outputs=want[0].reshape(4, -1))  # no inputs1
    with pytest.raises(TinyAotError, match="no 'inputs1' array"):
        verify_model(model, g, key="outputs", build_dir=tmp_path / "a")
    np.savez(g, inputs=xs.reshape(4, -1), inputs1=zs.reshape(4, -1), outputs=want[0],
             outputs1=want[1], outputs2=want[2].astype(F32), outputs3=want[3])
    with pytest.raises(TinyAotError, match="'outputs2' is float32 but the model's output"):
        verify_model(model, g, key="outputs", build_dir=tmp_path / "b")
    np.savez(g, inputs=xs.reshape(4, -1), inputs1=zs.reshape(4, -1), outputs=want[0],
             outputs1=want[1], outputs2=want[2], outputs3=want[3],
             output_names=np.array(["a", "b", "c", "d"]))
    with pytest.raises(TinyAotError, match="output_names"):
        verify_model(model, g, key="outputs", build_dir=tmp_path / "c")

def test_run_writes_every_output(model, tmp_path):
    xs, zs = H.several_inputs()
    np.savez(tmp_path / "in.npz", inputs=xs.reshape(4, -1), inputs1=zs.reshape(4, -1))
    r = H.run_cli("run", model, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz",
             tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out.npz")
    want = H.onnxruntime_outputs(model, xs, zs)
    for k, w in enumerate(want):
        key = "outputs" if k == 0 else f"outputs{k}"
        assert H.same_bits(got[key], w.reshape(got[key].shape))
    assert [str(x) for x in got["output_names"]] == H.OUT_NAMES
    # the golden file run wrote verifies
    np.savez(tmp_path / "g.npz", inputs=xs.reshape(4, -1), inputs1=zs.reshape(4, -1),
             **{k: got[k] for k in got.files})
    r = H.run_cli("verify", model, "--golden", tmp_path / "g.npz", "--key", "outputs",
             tmp_path=tmp_path)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr
    assert "output 3 'StatefulPartitionedCall:3' (outputs3, as int8)" in r.stdout

def test_validate_several_ends_with_float_inputs(model, tmp_path):
    xs, zs = H.several_inputs()
    np.savez(tmp_path / "in.npz", inputs=xs.reshape(4, -1), inputs1=zs.reshape(4, -1))
    r = H.run_cli("validate", model, "--inputs", tmp_path / "in.npz", "--json", tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    rep = json.loads(r.stdout)
    assert rep["first_divergent_layer"] is None and rep["final_output_vs_onnxruntime"] == 0
    assert rep["compared_layers"] == len(rep["layers"]) >= 3
