"""Several inputs and outputs: each gets its own API entry (backend/io_api.py), the report
lists them, and verify / run / validate read and write the golden keys of every end
(driver/golden_keys.py: inputs, inputs1, ...; outputs_onnxruntime, outputs_onnxruntime1, ...;
output_names). Oracles: onnxruntime on the model (ort) and the numpy oracle (both numerics).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

import ends_builders as E
from codegen.compiler import compile_model
from codegen.driver.verify import run_ends, verify_model
from codegen.errors import TinyAotError
from codegen.numerics.quant import quantize_end
from conftest import REPO, require_arm_toolchain
from test_float_ends import oracle, ort_runs, same_bits

F32 = np.float32
X_NAME, Z_NAME = "serving_default_x:0", "serving_default_z:0"
# the model's outputs, in its order (several_ends): float, float, int8, int8
OUT_NAMES = ["StatefulPartitionedCall:2", "StatefulPartitionedCall:0",
             "StatefulPartitionedCall:1", "StatefulPartitionedCall:3"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    p = tmp_path_factory.mktemp("several") / "several_ends.onnx"
    onnx.save(E.several_ends(), str(p))
    return p


def inputs(n=4):
    xs = E.float_inputs(*E.X_Q, 16)[:n]
    zs = np.random.default_rng(7).integers(-128, 128, (n, 1, 8)).astype(np.int8)
    zs[0, 0, :] = [-128, 127, 0, 2, -1, 1, 64, -64]
    return xs, zs


def onnxruntime_outputs(path, xs, zs):
    runs = ort_runs(path, [{X_NAME: x, Z_NAME: z} for x, z in zip(xs, zs)])
    return [np.stack([r[k] for r in runs]) for k in range(len(OUT_NAMES))]


def test_each_end_has_its_own_entry(model):
    c = compile_model(model)
    h, n, up = c.module.header, c.module.name, c.module.name.upper()
    assert (f"int {n}_run(const float *input0, const int8_t *input1, float *output0, "
            f"float *output1, int8_t *output2, int8_t *output3);") in h
    assert (f"int {n}_run_quantized(const int8_t *input0, const int8_t *input1, int8_t *output0, "
            f"int8_t *output1, int8_t *output2, int8_t *output3);") in h
    for k in range(2):
        assert f"int8_t *{n}_input{k}(void);" in h and f"#define {up}_INPUT{k}_SIZE" in h
    for k in range(4):
        assert f"const int8_t *{n}_output{k}(void);" in h
        assert f"#define {up}_OUTPUT{k}_ZERO_POINT" in h
    assert f"#define {up}_NUM_OUTPUTS 4u" in h
    for k, name in enumerate(OUT_NAMES):
        assert f"output {k} '{name}'" in h
    io = c.report["io"]
    assert [e["onnx_name"] for e in io["outputs"]] == OUT_NAMES
    assert [e["api_type"] for e in io["outputs"]] == ["float32", "float32", "int8", "int8"]
    assert [e["c_name"] for e in io["inputs"]] == ["input0", "input1"]
    assert len(c.report["inputs"]) == 2 and len(c.report["outputs"]) == 4
    # output 1 and output 3 are one integer tensor: the same arena bytes
    assert io["outputs"][1]["name"] == io["outputs"][3]["name"]
    user = compile_model(model, io_buffers="user")
    assert f"__builtin_memcpy(output3, output1, {up}_OUTPUT3_SIZE);" in user.module.source


@pytest.mark.parametrize("io_buffers", ["arena", "user"])
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_several_ends_equal_onnxruntime_and_the_oracle(model, numerics, io_buffers, tmp_path):
    xs, zs = inputs()
    c = compile_model(model, numerics=numerics, io_buffers=io_buffers)
    outs, info = run_ends(model, [xs, zs], numerics=numerics, compiled=c,
                          build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(xs)
    assert [o.dtype for o in outs] == [F32, F32, np.int8, np.int8]
    for got, want in zip(outs, oracle(c, [xs, zs])):
        assert same_bits(got.reshape(want.shape), want)
    if numerics == "ort":
        for got, want in zip(outs, onnxruntime_outputs(model, xs, zs)):
            assert same_bits(got, want)


def test_the_quantized_form_of_several_ends(model, tmp_path):
    xs, zs = inputs()
    c = compile_model(model)
    qx = quantize_end("ort", xs, *E.X_Q)
    outs, _ = run_ends(model, [qx, zs], compiled=c, entry="quantized", build_dir=tmp_path / "g")
    want = oracle(c, [qx, zs], quantized=True)
    assert [o.dtype for o in outs] == [np.int8] * 4
    for got, w in zip(outs, want):
        assert same_bits(got.reshape(w.shape), w)


def _golden(path, xs, zs, outs, order, key="outputs_onnxruntime"):
    """A golden file in the format of ../shared/models (MORE_MODELS.md): output j of the
    file is the model's output named output_names[j]."""
    arrays = {"inputs": xs.reshape(len(xs), -1), "inputs1": zs.reshape(len(zs), -1),
              "output_names": np.array([OUT_NAMES[k] for k in order])}
    for j, k in enumerate(order):
        arrays[key if j == 0 else f"{key}{j}"] = outs[k].reshape(len(xs), -1)
    np.savez(path, **arrays)
    return path


def test_verify_reads_every_key_in_the_golden_order(model, tmp_path):
    xs, zs = inputs()
    want = onnxruntime_outputs(model, xs, zs)
    order = [2, 0, 3, 1]  # the golden's output order is not the model's
    g = _golden(tmp_path / "g.npz", xs, zs, want, order)
    r = verify_model(model, g, key="outputs_onnxruntime", build_dir=tmp_path / "a")
    assert r["mismatches"] == 0 and r["vectors_passed"] == 4
    assert [o["name"] for o in r["outputs_compared"]] == OUT_NAMES
    assert [o["key"] for o in r["outputs_compared"]] == [
        "outputs_onnxruntime1", "outputs_onnxruntime3", "outputs_onnxruntime",
        "outputs_onnxruntime2"]
    assert [o["compared_as"] for o in r["outputs_compared"]] == ["float32", "float32", "int8",
                                                                 "int8"]
    bad = [w.copy() for w in want]
    bad[0][2, 0, 1] = np.nextafter(bad[0][2, 0, 1], F32(np.inf), dtype=F32)  # one ulp
    bad[3][0, 0, 5] += 1
    g = _golden(tmp_path / "bad.npz", xs, zs, bad, order)
    r = verify_model(model, g, key="outputs_onnxruntime", build_dir=tmp_path / "b")
    assert r["mismatches"] == 2 and r["vectors_passed"] == 2
    assert [o["mismatches"] for o in r["outputs_compared"]] == [1, 0, 0, 1]
    assert {(m["output"], m["vector"], m["index"]) for m in r["first_mismatches"]} == \
        {(0, 2, 1), (3, 0, 5)}


def test_golden_mistakes_are_one_line(model, tmp_path):
    xs, zs = inputs()
    want = onnxruntime_outputs(model, xs, zs)
    g = tmp_path / "g.npz"
    np.savez(g, inputs=xs.reshape(4, -1), outputs=want[0].reshape(4, -1))  # no inputs1
    with pytest.raises(TinyAotError, match="no 'inputs1' array"):
        verify_model(model, g, key="outputs", build_dir=tmp_path / "a")
    np.savez(g, inputs=xs.reshape(4, -1), inputs1=zs.reshape(4, -1), outputs=want[0],
             outputs1=want[1], outputs2=want[2].astype(F32), outputs3=want[3])
    with pytest.raises(TinyAotError, match="'outputs2' is float32, the model's output"):
        verify_model(model, g, key="outputs", build_dir=tmp_path / "b")
    np.savez(g, inputs=xs.reshape(4, -1), inputs1=zs.reshape(4, -1), outputs=want[0],
             outputs1=want[1], outputs2=want[2], outputs3=want[3],
             output_names=np.array(["a", "b", "c", "d"]))
    with pytest.raises(TinyAotError, match="output_names"):
        verify_model(model, g, key="outputs", build_dir=tmp_path / "c")


def _cli(*args, tmp_path):
    env = {**os.environ, "TINYAOT_BUILD_DIR": str(tmp_path / "build")}
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, env=env)


def test_run_writes_every_output(model, tmp_path):
    xs, zs = inputs()
    np.savez(tmp_path / "in.npz", inputs=xs.reshape(4, -1), inputs1=zs.reshape(4, -1))
    r = _cli("run", model, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz",
             tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out.npz")
    want = onnxruntime_outputs(model, xs, zs)
    for k, w in enumerate(want):
        key = "outputs" if k == 0 else f"outputs{k}"
        assert same_bits(got[key], w.reshape(got[key].shape))
    assert [str(x) for x in got["output_names"]] == OUT_NAMES
    # the golden file run wrote verifies
    np.savez(tmp_path / "g.npz", inputs=xs.reshape(4, -1), inputs1=zs.reshape(4, -1),
             **{k: got[k] for k in got.files})
    r = _cli("verify", model, "--golden", tmp_path / "g.npz", "--key", "outputs",
             tmp_path=tmp_path)
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr
    assert "output 3 'StatefulPartitionedCall:3' (outputs3, as int8)" in r.stdout


def test_validate_several_ends_with_float_inputs(model, tmp_path):
    xs, zs = inputs()
    np.savez(tmp_path / "in.npz", inputs=xs.reshape(4, -1), inputs1=zs.reshape(4, -1))
    r = _cli("validate", model, "--inputs", tmp_path / "in.npz", "--json", tmp_path=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    rep = json.loads(r.stdout)
    assert rep["first_divergent_layer"] is None and rep["final_output_vs_onnxruntime"] == 0
    assert rep["compared_layers"] == len(rep["layers"]) >= 3


@pytest.mark.qemu
def test_several_ends_on_qemu_m4(model, tmp_path):
    require_arm_toolchain()
    xs, zs = inputs()
    want = onnxruntime_outputs(model, xs, zs)
    g = _golden(tmp_path / "g.npz", xs, zs, want, [0, 1, 2, 3])
    for io_buffers in ("arena", "user"):
        r = verify_model(model, g, board="qemu-m4", key="outputs_onnxruntime",
                         io_buffers=io_buffers, build_dir=tmp_path / io_buffers)
        assert r["mismatches"] == 0 and r["vectors_passed"] == 4, r
        assert r["status"] == [0] * 4


@pytest.mark.qemu
def test_outputs_over_4k_verify_on_qemu_m4(tmp_path):
    """No output-size cap on the firmware harness: 1500 int8 + 1500 float32 outputs
    (7500 bytes per input, the old harness stopped at 4096)."""
    require_arm_toolchain()
    n, s, zp = 1500, F32(0.05), -3
    p = tmp_path / "qdq.onnx"
    onnx.save(E.quantize_dequantize(n, s, zp), str(p))
    xs = np.random.default_rng(2).normal(0, 3, (2, 1, n)).astype(F32)
    want = ort_runs(p, [{"x": x} for x in xs])
    g = tmp_path / "g.npz"
    np.savez(g, inputs=xs.reshape(2, -1), outputs=np.stack([w[0] for w in want]),
             outputs1=np.stack([w[1] for w in want]))
    r = verify_model(p, g, board="qemu-m4", key="outputs", build_dir=tmp_path / "fw")
    assert r["mismatches"] == 0 and r["elements"] == 2 * 2 * n, r
