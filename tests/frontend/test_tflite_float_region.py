"""A .tflite's float region (the hybrid float fallback, frontend/tflite/lower.py): a
DEQUANTIZE inside the model, float32 LOGISTIC / TANH / EXP / ADD / SUB / MUL / DIV /
SOFTMAX / LOG_SOFTMAX, then a QUANTIZE or a float output, against TFLite Micro's own
interpreter (the tflite-micro package):

* TFLite Micro's float LOGISTIC and TANH equal tinyaot's numpy twins
  (numerics/tflm_float.py: reference_ops::Logistic on glibc's expf; std::tanh as glibc's
  tanhf) on 400 000 floats fed to a float-only .tflite (the C twins equal the numpy ones in
  tests/numerics/test_tflm_float.py);
* models written the way the converter writes a float island (int8 -> DEQUANTIZE -> float op
  -> QUANTIZE -> int8, or -> float output), every int8 input at three input scales: each
  layer of the numpy reference and the host C equal TFLite Micro bit for bit (float outputs
  compared as float32 bits), also after a CONV_2D (an NHWC-stored tensor) and before a
  FULLY_CONNECTED; a float chain with broadcast float constants ending in SOFTMAX /
  LOG_SOFTMAX; float-output models on qemu-m4 (FPU) and qemu-m3 (soft float);
* the layers are listed as float fallback (report, one warning line); with
  --no-float-fallback, and for a float builtin that has no float form, each operator is
  listed at once by builtin and index (not one whose input comes from a listed one), exit 2.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.driver.verify import run_model
from codegen.errors import UnsupportedError
from codegen.frontend import load_model
from codegen.numerics.tflm_float import glibc_tanhf, tflm_logistic

from tests.helpers.env import REPO, _missing, require_arm_toolchain
from tests.helpers.tflite_builders import TflBuilder, sum_max_island_model
from tests.helpers.tflm_oracle import fdlibm_glibc, layers_equal_tflm, tflm_run

F32 = np.float32
TWINS = {"LOGISTIC": tflm_logistic, "TANH": glibc_tanhf}
ALL_INT8 = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)


@pytest.fixture(autouse=True)
def _tflite_micro():
    try:
        import tflite_micro  # noqa: F401
    except ImportError:
        _missing("the tflite-micro package (pip install tflite-micro)")


def _need_fdlibm(builtin):
    if builtin == "TANH" and not fdlibm_glibc():
        pytest.skip("TFLite Micro's TANH calls the host's tanhf, which is not glibc's fdlibm "
                    "port here (glibc <= 2.40): tinyaot reproduces that one")


def _same_bits(a, b):
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


@pytest.mark.parametrize("builtin", ["LOGISTIC", "TANH"])
def test_tflite_micro_float_kernels_equal_the_numpy_twins(builtin, tmp_path):
    _need_fdlibm(builtin)
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(F32)
    x = np.concatenate([bits, rng.uniform(-30, 30, 100_000).astype(F32),
                        rng.uniform(-1.2, 1.2, 100_000).astype(F32),
                        np.array([0, -0.0, np.inf, -np.inf, np.nan, 22, -22, 16.619047,
                                  16.61905, -9, -9.000001, 1e-40, -1e-40], F32)])
    b = TflBuilder()
    xi = b.input("x", [len(x)], dtype="float32")
    y = b.tensor("y", [len(x)], dtype="float32")
    b.op(builtin, [xi], [y])
    p = b.save(tmp_path / "float_only.tflite", [y])
    outs, _ = tflm_run(p, x)
    ok = _same_bits(TWINS[builtin](x), outs[0])
    assert ok.all(), f"{(~ok).sum()} differ, e.g. x = {x[~ok][:4]}"


def _island(tmp_path, builtin, scale, float_out, conv=False, fc=False):
    """x int8 [1, 256] (or [1, 4, 8, 8] through a CONV_2D) -> DEQUANTIZE -> builtin
    (float32) -> QUANTIZE (int8) [-> FULLY_CONNECTED] or the float output."""
    rng = np.random.default_rng(int(scale * 1000))
    b = TflBuilder()
    shape = [1, 4, 8, 8] if conv else [1, 256]
    x = b.input("x", shape, scale, 3)
    src = x
    if conv:
        w = b.const("w", rng.integers(-128, 128, (8, 1, 1, 8)).astype(np.int8), 0.01, 0)
        bias = b.const("bias", rng.integers(-500, 500, 8).astype(np.int32),
                       np.float32(scale) * np.float32(0.01), 0)
        src = b.tensor("conv", shape, scale * 2, -1)
        b.op("CONV_2D", [x, w, bias], [src], "Conv2DOptions", padding=1, strideW=1,
             strideH=1)
    xf = b.tensor("xf", shape, dtype="float32")
    b.op("DEQUANTIZE", [src], [xf])
    yf = b.tensor("yf", shape, dtype="float32")
    b.op(builtin, [xf], [yf])
    if float_out:
        return b.save(tmp_path / "island.tflite", [yf])
    qo = (1 / 256, -128) if builtin == "LOGISTIC" else (1 / 128, 0)
    y = b.tensor("y", shape, *qo)
    b.op("QUANTIZE", [yf], [y])
    if not fc:
        return b.save(tmp_path / "island.tflite", [y])
    w2 = b.const("w2", rng.integers(-128, 128, (10, 256)).astype(np.int8), 0.01, 0)
    z = b.tensor("z", [1, 10], 0.2, 5)
    b.op("FULLY_CONNECTED", [y, w2, -1], [z], "FullyConnectedOptions")
    return b.save(tmp_path / "island.tflite", [z])


def _check(path, x, tmp_path, board="host"):
    g, env, outs, tensors = layers_equal_tflm(path, x)
    for name, (idx, _) in g.tflite_tensors.items():  # the float layers, bit for bit
        if g.tensors[name].dtype == "float32" and idx in tensors:
            assert _same_bits(np.asarray(env[name]).reshape(tensors[idx].shape),
                              tensors[idx]).all(), name
    want = outs[0]
    assert _same_bits(np.asarray(env[g.outputs[0]]).reshape(want.shape).astype(want.dtype)
                      .astype(F32), want.astype(F32)).all()
    got, _ = run_model(path, np.asarray(x)[None], board=board, numerics="tflite",
                       build_dir=tmp_path / board)
    got = np.asarray(got)
    assert got.dtype == want.dtype
    assert _same_bits(got.reshape(want.shape).astype(F32), want.astype(F32)).all()
    return g


@pytest.mark.parametrize("builtin", ["LOGISTIC", "TANH"])
@pytest.mark.parametrize("scale", [0.003, 0.09, 0.25])
@pytest.mark.parametrize("float_out", [False, True], ids=["quantize", "float_out"])
def test_float_island_equals_tflite_micro(builtin, scale, float_out, tmp_path):
    _need_fdlibm(builtin)
    p = _island(tmp_path, builtin, scale, float_out)
    g = _check(p, ALL_INT8, tmp_path)
    want = ["dequantize", "unary_f32"] + ([] if float_out else ["quantize"])
    assert [n.op for n in g.nodes] == want
    assert g.float_fallback == [(builtin, f"{builtin}#1", "unary_f32")]
    if float_out:
        assert [(d.name, d.dtype) for d in g.declared_outputs] == [("yf", "float32")]


@pytest.mark.parametrize("builtin", ["LOGISTIC", "TANH"])
def test_float_island_between_conv_and_fully_connected(builtin, tmp_path):
    _need_fdlibm(builtin)
    p = _island(tmp_path, builtin, 0.05, False, conv=True)
    x = np.random.default_rng(2).integers(-128, 128, (1, 4, 8, 8)).astype(np.int8)
    _check(p, x, tmp_path)
    p = _island(tmp_path, builtin, 0.05, False, fc=True)
    _check(p, ALL_INT8, tmp_path)


def test_island_between_integer_builtins_equals_tflite_micro(tmp_path):
    """CONV_2D, MAXIMUM, SUM, then the float TANH, then MINIMUM (the sanitizer model)."""
    _need_fdlibm("TANH")
    p = sum_max_island_model(tmp_path / "island.tflite")
    rng = np.random.default_rng(4)
    for k in range(3):
        _check(p, rng.integers(-128, 128, (1, 6, 5, 8)).astype(np.int8), tmp_path / str(k))


def _chain(tmp_path, softmax, float_out):
    """DEQUANTIZE -> MUL (float constant [10], broadcast) -> EXP -> DIV -> SUB (of the
    dequantized input) -> ADD -> SOFTMAX / LOG_SOFTMAX -> float output or QUANTIZE; the one
    float constant is read by three layers."""
    rng = np.random.default_rng(8)
    b = TflBuilder()
    x = b.input("x", [4, 10], 0.1, 3)
    xf = b.tensor("xf", [4, 10], dtype="float32")
    b.op("DEQUANTIZE", [x], [xf])
    c = b.const("c", rng.uniform(0.5, 2, 10).astype(F32))
    prev = xf
    for k, (builtin, opts, other) in enumerate([("MUL", "MulOptions", c), ("EXP", None, None),
                                                ("DIV", "DivOptions", c),
                                                ("SUB", "SubOptions", xf),
                                                ("ADD", "AddOptions", c)]):
        t = b.tensor(f"t{k}", [4, 10], dtype="float32")
        ins = [prev] if other is None else [prev, other]
        if opts:
            b.op(builtin, ins, [t], opts, fusedActivationFunction=0)
        else:
            b.op(builtin, ins, [t])
        prev = t
    y = b.tensor("y", [4, 10], dtype="float32")
    if softmax == "SOFTMAX":
        b.op("SOFTMAX", [prev], [y], "SoftmaxOptions", beta=1.0)
    else:
        b.op("LOG_SOFTMAX", [prev], [y])
    if float_out:
        return b.save(tmp_path / "chain.tflite", [y])
    q = b.tensor("q", [4, 10], *((1 / 256, -128) if softmax == "SOFTMAX" else (0.1, 100)))
    b.op("QUANTIZE", [y], [q])
    return b.save(tmp_path / "chain.tflite", [q])


@pytest.mark.parametrize("softmax", ["SOFTMAX", "LOG_SOFTMAX"])
@pytest.mark.parametrize("float_out", [False, True], ids=["quantize", "float_out"])
def test_float_chain_with_softmax_equals_tflite_micro(softmax, float_out, tmp_path):
    p = _chain(tmp_path, softmax, float_out)
    rng = np.random.default_rng(9)
    for k in range(2):
        g = _check(p, rng.integers(-128, 128, (4, 10)).astype(np.int8), tmp_path / str(k))
    assert [op for op, _, _ in g.float_fallback] == ["MUL", "EXP", "DIV", "SUB", "ADD", softmax]


@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m3"])
def test_float_island_on_qemu(board, tmp_path):
    """FPU (qemu-m4) and soft float (qemu-m3) give TFLite Micro's host bits."""
    require_arm_toolchain()
    _need_fdlibm("TANH")
    for builtin, scale in (("TANH", 0.09), ("LOGISTIC", 0.25)):
        d = tmp_path / builtin
        d.mkdir()
        _check(_island(d, builtin, scale, True), ALL_INT8, d, board=board)


def test_float_fallback_is_reported_and_can_be_refused(tmp_path, capsys):
    p = _island(tmp_path, "LOGISTIC", 0.09, False)
    c = compile_model(p, numerics="tflite")
    assert [(x["onnx_op"], x["node"], x["kernel"]) for x in c.report["float_fallback"]] == \
        [("LOGISTIC", "LOGISTIC#1", "tinyaot_unary_f32")]
    with pytest.raises(UnsupportedError) as ei:
        load_model(p, float_fallback=False)
    assert "DEQUANTIZE (operator 0)" in str(ei.value) and "--no-float-fallback" in str(ei.value)
    proc = subprocess.run([sys.executable, "-m", "codegen.cli", "compile", str(p),
                           "--no-float-fallback", "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "DEQUANTIZE (operator 0)" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_float_builtins_without_a_float_form_are_listed_at_once(tmp_path):
    b = TflBuilder()
    x = b.input("x", [1, 16], 0.05, 0)
    xf = b.tensor("xf", [1, 16], dtype="float32")
    b.op("DEQUANTIZE", [x], [xf])
    a = b.tensor("a", [1, 16], dtype="float32")
    b.op("ABS", [xf], [a])
    t = b.tensor("t", [1, 16], dtype="float32")
    b.op("TANH", [a], [t])
    g = b.tensor("g", [1, 16], dtype="float32")
    b.op("GELU", [t], [g])
    p = b.save(tmp_path / "bad_float.tflite", [g])
    with pytest.raises(UnsupportedError) as ei:
        load_model(p)
    msg = str(ei.value)
    assert "2 TFLite operator(s)" in msg and "no float32 lowering" in msg
    assert "ABS (operator 1)" in msg and "GELU (operator 3)" in msg
    assert "TANH (operator" not in msg  # its input comes from ABS: only ABS is said
