"""Golden files for one's own model (`tinyaot golden`, issue 22 item 1) and
golden files checked against the model before any build (item 8).

The expected outputs come from independent runtimes: the repository's
golden file of the default model holds onnxruntime's outputs (made by
models/make_digits_cnn.py), the shared MLPerf Tiny golden files hold TFLite
Micro's (its own Python interpreter) and onnxruntime's.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers.env import (DEFAULT_GOLDEN, DEFAULT_MODEL, REPO, _missing, require_arm_toolchain,
                      shared_model)

MBV2 = REPO / "models" / "mbv2_block_int8.onnx"          # NCHW input [1, 3, 16, 16]
MBV2_GOLDEN = REPO / "models" / "mbv2_block_int8_golden.npz"


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, env=env)


def one_line_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("tinyaot: error:"), err
    for n in needles:
        assert n in err, (n, err)
    return err


def _dequantized(g):
    """The golden int8 inputs as the floats they stand for."""
    q = g["inputs"].astype(np.float32)
    return ((q - g["input_zero_point"]) * g["input_scale"]).astype(np.float32)


# ------------------------------------------------------------------ tinyaot golden

def test_golden_from_float_inputs_with_onnxruntime(tmp_path, default_golden):
    g = default_golden
    src = tmp_path / "samples.npz"
    np.savez(src, inputs=_dequantized(g))
    out = tmp_path / "my_golden.npz"
    p = cli("golden", DEFAULT_MODEL, "--inputs", src, "-o", out)
    assert p.returncode == 0, p.stderr
    made = np.load(out)
    # every array verify (outputs_onnxruntime for ort) and scons (outputs) read
    for k in ("inputs", "outputs", "outputs_onnxruntime", "input_scale", "input_zero_point",
              "output_scale", "output_zero_point"):
        assert k in made.files, (k, made.files)
    np.testing.assert_array_equal(made["inputs"], g["inputs"])  # quantized back exactly
    assert made["inputs"].dtype == np.int8 and made["outputs"].dtype == np.int8
    np.testing.assert_array_equal(made["outputs"], g["outputs_onnxruntime"])
    np.testing.assert_array_equal(made["outputs_onnxruntime"], g["outputs_onnxruntime"])
    for k in ("input_scale", "input_zero_point", "output_scale", "output_zero_point"):
        assert made[k] == g[k], k
    assert str(made["reference"]) == "ort" and str(made["numerics"]) == "ort"
    # ... and the file is what verify and scons take
    v = cli("verify", DEFAULT_MODEL, "--golden", out, "--board", "host")
    assert v.returncode == 0 and "64/64 vectors bit-exact (outputs_onnxruntime)" in v.stdout, \
        v.stdout + v.stderr
    s = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=host",
                        f"model={DEFAULT_MODEL}", f"golden={out}"],
                       capture_output=True, text=True, cwd=REPO)
    assert s.returncode == 0 and "64/64 vectors bit-exact (outputs)" in s.stdout, \
        s.stdout + s.stderr


def test_golden_takes_integer_inputs_as_they_are(tmp_path, default_golden):
    src = tmp_path / "q.npy"
    np.save(src, default_golden["inputs"][:5])
    out = tmp_path / "g.npz"
    p = cli("golden", DEFAULT_MODEL, "--inputs", src, "-o", out, "--reference", "oracle", "--json")
    assert p.returncode == 0, p.stderr
    import json
    r = json.loads(p.stdout)
    assert r["reference"] == "oracle" and r["numerics"] == "ort" and not r["inputs_quantized"]
    made = np.load(out)
    np.testing.assert_array_equal(made["inputs"], default_golden["inputs"][:5])
    # the numpy oracle of the ort numerics gives onnxruntime's bits
    np.testing.assert_array_equal(made["outputs"], default_golden["outputs_onnxruntime"][:5])
    assert "outputs_onnxruntime" not in made.files  # named after onnxruntime only when it ran


def test_quantize_rounds_as_each_runtime_does():
    from codegen.driver.golden import quantize
    io = {"scale": 0.5, "zero_point": 0, "dtype": "int8"}
    x = np.array([0.25, 0.75, -0.25, -0.75, 1.25, 200.0, -200.0], np.float32)  # k + 0.5 steps
    # onnxruntime's QuantizeLinear: half to even (Python's round() is too)
    assert quantize(x, io, "ort").tolist() == [round(v / 0.5) if abs(v) < 100 else
                                               (127 if v > 0 else -128) for v in x.tolist()]
    # TFLite's Quantize: TfLiteRound, half away from zero
    assert quantize(x, io, "tflite").tolist() == [1, 2, -1, -2, 3, 127, -128]


@pytest.mark.shared
def test_golden_oracle_in_tflite_numerics_gives_tflite_micro_bits(tmp_path):
    onnx_path, golden = shared_model("kws01")
    out = tmp_path / "kws_golden.npz"
    p = cli("golden", onnx_path, "--inputs", golden, "-o", out, "--reference", "oracle",
            "--numerics", "tflite")
    assert p.returncode == 0, p.stderr
    made, ref = np.load(out), np.load(golden)
    np.testing.assert_array_equal(made["inputs"], ref["inputs"])
    np.testing.assert_array_equal(made["outputs"], ref["outputs_tflm"])


@pytest.mark.shared
def test_golden_with_tflite_micro_on_the_tflite_file(tmp_path):
    try:
        import tflite_micro  # noqa: F401
    except ImportError:
        _missing("the tflite-micro package (pip install tflite-micro)")
    onnx_path, golden = shared_model("kws01")
    tfl = onnx_path.with_suffix(".tflite")
    if not tfl.exists():
        _missing(str(tfl))
    ref = np.load(golden)
    src = tmp_path / "floats.npz"
    np.savez(src, inputs=_dequantized(ref))
    out = tmp_path / "kws_tflm_golden.npz"
    p = cli("golden", tfl, "--inputs", src, "-o", out)  # a .tflite: tflite numerics, TFLite Micro
    assert p.returncode == 0, p.stderr
    made = np.load(out)
    assert str(made["reference"]) == "tflite-micro" and str(made["numerics"]) == "tflite"
    np.testing.assert_array_equal(made["inputs"], ref["inputs"])
    np.testing.assert_array_equal(made["outputs_tflm"], ref["outputs_tflm"])
    np.testing.assert_array_equal(made["outputs"], ref["outputs_tflm"])
    # the ONNX conversion of the same model verifies against it (key outputs_tflm)
    v = cli("verify", onnx_path, "--golden", out, "--board", "host", "--numerics", "tflite")
    assert v.returncode == 0 and "8/8 vectors bit-exact (outputs_tflm)" in v.stdout, \
        v.stdout + v.stderr


def test_scons_takes_a_tflite_with_its_own_numerics_and_key():
    """`scons model=X.tflite golden=G` with no numerics= or key=: TFLite Micro's arithmetic,
    compared with the file's outputs_tflm (as `tinyaot verify` does), not a refusal for
    onnxruntime nor LiteRT's `outputs`."""
    onnx_path, golden = shared_model("kws01")
    tfl = onnx_path.with_suffix(".tflite")
    if not tfl.exists():
        _missing(str(tfl))
    s = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=host", f"model={tfl}",
                        f"golden={golden}"], capture_output=True, text=True, cwd=REPO)
    assert s.returncode == 0 and "8/8 vectors bit-exact (outputs_tflm)" in s.stdout, \
        s.stdout + s.stderr


def test_golden_user_errors(tmp_path, default_golden):
    src = tmp_path / "in.npz"
    np.savez(src, inputs=_dequantized(default_golden)[:2])
    out = tmp_path / "g.npz"
    one_line_error(cli("golden", DEFAULT_MODEL, "--inputs", src, "-o", out, "--reference", "ort",
                       "--numerics", "tflite"), "--reference ort", "oracle")
    one_line_error(cli("golden", DEFAULT_MODEL, "--inputs", src, "-o", out, "--reference",
                       "tflite-micro"), ".tflite")
    one_line_error(cli("golden", DEFAULT_MODEL, "--inputs", tmp_path / "nope.npz", "-o", out),
                   "nope.npz")
    mb = np.load(MBV2_GOLDEN)
    nhwc = tmp_path / "nhwc.npz"
    np.savez(nhwc, inputs=_dequantized(mb).transpose(0, 1, 3, 4, 2)[:, 0])  # (N, 16, 16, 3)
    one_line_error(cli("golden", MBV2, "--inputs", nhwc, "-o", out), "[1, 3, 16, 16]",
                   "transpose(0, 3, 1, 2)")
    assert not out.exists() and not any(p.name.endswith(".tmp.npz") for p in tmp_path.iterdir())


# ------------------------------------------------------------------ golden checks (item 8)

def _no_build(tmp_path):
    """A private build tree: after a refused golden file nothing was built there."""
    env = dict(os.environ, TINYAOT_BUILD_DIR=str(tmp_path / "build"))
    return env


@pytest.mark.parametrize("board", ["host", "qemu-m4"])
def test_golden_in_nhwc_for_an_nchw_model_is_refused_before_building(tmp_path, board):
    if board != "host":
        require_arm_toolchain()
    mb = np.load(MBV2_GOLDEN)
    bad = tmp_path / "nhwc_golden.npz"
    np.savez(bad, **{**{k: mb[k] for k in mb.files},
                     "inputs": mb["inputs"].transpose(0, 1, 3, 4, 2)[:, 0]})  # (N, 16, 16, 3)
    env = _no_build(tmp_path)
    one_line_error(cli("verify", MBV2, "--golden", bad, "--board", board, env=env),
                   "nhwc_golden.npz", "'inputs'", "[1, 3, 16, 16]", "x.transpose(0, 3, 1, 2)")
    assert not (tmp_path / "build").exists() or not any((tmp_path / "build").iterdir())
    one_line_error(cli("run", MBV2, "--inputs", bad, "-o", tmp_path / "o.npz", "--board", board,
                       env=env), "transpose(0, 3, 1, 2)")
    assert not (tmp_path / "o.npz").exists()
    one_line_error(cli("validate", MBV2, "--inputs", bad, "--board", board, env=env),
                   "transpose(0, 3, 1, 2)")


def test_float_outputs_for_an_int8_output_are_refused(tmp_path, default_golden):
    g = dict(default_golden)
    g["outputs"] = ((g["outputs"].astype(np.float32) - g["output_zero_point"])
                    * g["output_scale"]).astype(np.float32)
    bad = tmp_path / "float_outputs.npz"
    np.savez(bad, **g)
    env = _no_build(tmp_path)
    one_line_error(cli("verify", DEFAULT_MODEL, "--golden", bad, "--key", "outputs", env=env),
                   "'outputs' is float32", "int8", "tinyaot golden")
    # scons reads 'outputs' too: the same line, exit 2, nothing built
    s = subprocess.run([sys.executable, "-m", "SCons", "-Q", "board=host", f"model={DEFAULT_MODEL}",
                        f"golden={bad}"], capture_output=True, text=True, cwd=REPO, env=env)
    assert s.returncode == 2 and s.stderr.strip().count("\n") == 0, s.stdout + s.stderr
    assert "'outputs' is float32" in s.stderr and "PASS" not in s.stdout
    assert not (tmp_path / "build").exists() or not any(
        p.is_dir() for p in (tmp_path / "build").iterdir())


def test_golden_of_another_shape_is_refused(tmp_path, default_golden):
    g = dict(default_golden)
    g["outputs"] = g["outputs"][:10]  # 10 rows of outputs for 64 inputs
    bad = tmp_path / "short.npz"
    np.savez(bad, **g)
    one_line_error(cli("verify", DEFAULT_MODEL, "--golden", bad, "--key", "outputs"),
                   "[10, 10]", "64 row(s)", "[1, 10]")
    g = dict(default_golden)
    g["inputs"] = g["inputs"].astype(np.int16)
    bad2 = tmp_path / "int16.npz"
    np.savez(bad2, **g)
    one_line_error(cli("verify", DEFAULT_MODEL, "--golden", bad2), "int16", "int8")


def test_every_repository_golden_file_passes_the_checks():
    """The checks refuse what does not fit, not the goldens the project ships."""
    from codegen.compiler import compile_model
    from codegen.driver.golden_check import check_golden
    from codegen.driver.verify import load_golden
    for g in sorted((REPO / "models").glob("*_golden.npz")):
        m = g.with_name(g.name.replace("_golden.npz", ".onnx"))
        c = compile_model(m)
        x, y = load_golden(g, "outputs")
        check_golden(c, x, y, g, "outputs")
    assert DEFAULT_GOLDEN.exists()


def test_golden_of_a_model_with_several_ends(tmp_path):
    """Two inputs (a float one, quantized by golden) and four outputs: one array per end
    (inputs, inputs1; outputs .. outputs3 and outputs_onnxruntime ..), output_names in the
    model's order; onnxruntime's outputs equal the numpy oracle's, and verify takes the file."""
    from tests.helpers.golden_files import several_ends_golden
    model, made = several_ends_golden(tmp_path)
    src = tmp_path / "several_ends_inputs.npz"
    p = cli("golden", model, "--inputs", src, "-o", tmp_path / "g.npz")
    assert p.returncode == 0, p.stderr
    p = cli("golden", model, "--inputs", src, "-o", tmp_path / "o.npz", "--reference", "oracle")
    assert p.returncode == 0, p.stderr
    g, o = np.load(tmp_path / "g.npz"), np.load(tmp_path / "o.npz")
    assert list(g["output_names"]) == ["StatefulPartitionedCall:2", "StatefulPartitionedCall:0",
                                       "StatefulPartitionedCall:1", "StatefulPartitionedCall:3"]
    for k in ("", "1", "2", "3"):
        np.testing.assert_array_equal(g["outputs_onnxruntime" + k], o["outputs" + k])
        assert g["outputs" + k].shape[0] == 3
    assert g["inputs"].dtype == np.int8 and g["inputs1"].dtype == np.int8
    v = cli("verify", model, "--golden", tmp_path / "g.npz", "--board", "host")
    assert v.returncode == 0 and "3/3 vectors bit-exact" in v.stdout, v.stdout + v.stderr
    np.testing.assert_array_equal(g["outputs"], np.load(made)["outputs"])  # deterministic
    # one input missing: one clear line
    np.savez(src, inputs=np.load(src)["inputs"])
    p = cli("golden", model, "--inputs", src, "-o", tmp_path / "x.npz")
    assert p.returncode == 2 and "no 'inputs1' array" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "x.npz").exists()


def test_tflite_micro_golden_of_two_outputs_equals_the_shared_golden(tmp_path):
    """Yolo-Fastest's .tflite (two outputs) through TFLite Micro's interpreter: both outputs
    written, equal to the shared golden's outputs_tflm / outputs_tflm1."""
    try:
        import tflite_micro  # noqa: F401
    except ImportError:
        _missing("the tflite-micro package (pip install tflite-micro)")
    from tests.helpers.env import SHARED
    stem = SHARED / "person_detection_yolo_fastest" / "yolo-fastest-1.1-person-int8"
    tfl, golden = f"{stem}.tflite", f"{stem}_golden.npz"
    if not os.path.exists(tfl):
        _missing(tfl)
    ref = np.load(golden)
    src = tmp_path / "in.npz"
    np.savez(src, inputs=ref["inputs"][:2])
    p = cli("golden", tfl, "--inputs", src, "-o", tmp_path / "g.npz")
    assert p.returncode == 0, p.stderr
    made = np.load(tmp_path / "g.npz")
    np.testing.assert_array_equal(made["outputs_tflm"], ref["outputs_tflm"][:2])
    np.testing.assert_array_equal(made["outputs_tflm1"], ref["outputs_tflm1"][:2])
