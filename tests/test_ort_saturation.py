"""onnxruntime on x86-64 without VNNI: int16 pair saturation, told from wrong layers.

MLAS's AVX2 / AVX-512BW kernels add each pair of uint8 x int8 products into an int16
with saturation (codegen/numerics/u8s8_pairs.py); tinyaot computes the exact sums (what
onnxruntime gives on VNNI CPUs and on Arm). Checked here:

- the pair model against a plain loop over the pairs, written from VPMADDUBSW's
  definition (Intel SDM: each int16 lane = saturate16(a[2i] * b[2i] + a[2i+1] * b[2i+1]));
- the emulation of onnxruntime without VNNI against onnxruntime itself on an AVX2 CPU
  without VNNI (qemu-x86_64 -cpu Haswell running this onnxruntime; skipped where
  qemu-x86_64 is not installed), on models built the way tf2onnx writes them: a 1x1 conv
  (MLAS's symmetric conv kernel), a 3x3 conv on 3 channels with padding (im2col + QGEMM,
  pairs across kernel taps, the padded taps read as the zero point), a grouped conv with
  depthwise multiplier 2, a depthwise conv (exact everywhere) and a MatMul + bias (QGemm);
- `verify` on the two shared models whose golden onnxruntime outputs saturate: it passes
  with one note, and fails again as soon as one golden value is not what onnxruntime's
  saturation gives;
- `validate` with onnxruntime tensors that saturate: those layers are compared with the
  exact computation and named; a tensor that saturation does not explain stays divergent.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import SHARED, _missing
from qdq_builders import QdqBuilder, run_ort, save

from codegen.compiler import compile_model
from codegen.numerics.u8s8_pairs import can_saturate, pair_delta
from codegen.reference.run import run_graph
from codegen.reference.x86_saturation import run_graph_x86, saturation_events

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- the pair model -----------------------------------------------------------------------

def _loop_pairs(a, w):
    """sum over j of saturate16(a[2j] w[2j] + a[2j+1] w[2j+1]), K padded with a zero."""
    m, k = a.shape
    n = w.shape[0]
    out = np.zeros((m, n), dtype=np.int64)
    for r in range(m):
        for c in range(n):
            s = 0
            for j in range(0, k, 2):
                p = int(a[r, j]) * int(w[c, j])
                if j + 1 < k:
                    p += int(a[r, j + 1]) * int(w[c, j + 1])
                s += min(max(p, -32768), 32767)
            out[r, c] = s
    return out


@pytest.mark.parametrize("k", [1, 2, 7, 8, 33])
def test_pair_delta_is_vpmaddubsw(k):
    rng = np.random.default_rng(k)
    a = rng.integers(0, 256, size=(20, k))
    a[:5] = 255  # extremes: every pair of large weights saturates
    w = rng.integers(-128, 128, size=(6, k))
    w[0] = 127
    w[1] = -128
    delta, count = pair_delta(a, w)
    exact = a @ w.T
    np.testing.assert_array_equal(exact + delta, _loop_pairs(a, w))
    if k == 1:  # one product (the other is MLAS's zero padding) always fits in int16
        assert count == 0 and not np.any(delta)
    else:
        assert count > 0 and np.any(delta != 0)


def test_can_saturate_bounds():
    assert not can_saturate(np.array([[64, 64]]))  # 255 * 128 = 32640
    assert can_saturate(np.array([[127, 2]]))  # 255 * 129 = 32895
    assert can_saturate(np.array([[-128, -1]]))  # -255 * 129 < -32768
    assert not can_saturate(np.array([[127, -128, 0]]))  # signs cancel within the pair
    assert can_saturate(np.array([[0, 1, 127, 127]]))  # the second pair
    assert not can_saturate(np.array([[1, 127, 127, 1]]))  # pairs are (0,1), (2,3)


# ---- models built the way tf2onnx writes them ---------------------------------------------

def _big_weights(shape, seed):
    """Weights whose adjacent pairs share a sign (so uint8 inputs near 255 saturate)."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.5, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape[:1] + (1,) * (len(shape) - 1))
    return w.astype(np.float32)


def _identity_conv(b, x, c, scale):
    """DQ(x) -> 1x1 Conv with identity weights -> Q -> DQ. onnxruntime keeps a layer that
    reads the int8 graph input or writes the int8 graph output in float (it can rewrite
    neither to uint8), so the layer under test sits between two of these, reading and
    writing QuantizeLinear outputs as in tf2onnx models."""
    w, ws = b.weight(np.eye(c, dtype=np.float32).reshape(c, c, 1, 1))
    y = b.op("Conv", [x, w, b.bias(np.zeros(c), ws * np.float32(scale))])
    return b.dq(b.q(y, scale, -100), scale, -100)


def _identity_matmul(b, x, k, scale):
    w, ws = b.weight(np.eye(k, dtype=np.float32), axis=1)
    return b.dq(b.q(b.op("MatMul", [x, w]), scale, -100), scale, -100)


def conv_model(cin, cout, k, group=1, pad=0, seed=0):
    b = QdqBuilder("conv")
    x = _identity_conv(b, b.dq("x", 0.02, -100), cin, 0.02)
    w, ws = b.weight(_big_weights((cout, cin // group, k, k), seed))
    bias = b.bias(np.zeros(cout), ws * np.float32(0.02))
    c = b.op("Conv", [x, w, bias], group=group, pads=[pad] * 4)
    c = _identity_conv(b, b.dq(b.q(c, 4.0, 0), 4.0, 0), cout, 4.0)
    y = b.q(c, 4.0, -100, out="y")
    h = 8 - k + 1 + 2 * pad
    return b.model("x", [1, cin, 8, 8], "y", [1, cout, h, h])


def gemm_model(k, n, seed=0):
    b = QdqBuilder("fc")
    x = _identity_matmul(b, b.dq("x", 0.02, -100), k, 0.02)
    w, ws = b.weight(_big_weights((n, k), seed).T, axis=1)  # [K, N], a sign per output
    mm = b.op("MatMul", [x, w])
    a = b.op("Add", [mm, b.bias(np.zeros(n), ws * np.float32(0.02))])
    a = _identity_matmul(b, b.dq(b.q(a, 4.0, 0), 4.0, 0), n, 4.0)
    y = b.q(a, 4.0, -100, out="y")
    return b.model("x", [1, k], "y", [1, n])


def _inputs(shape, count=6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(count,) + tuple(shape)).astype(np.int8)
    x[0] = 127  # uint8 255 everywhere: the pairs saturate
    x[1, ..., ::2] = 127
    return x


def _haswell_ort(path, x, tmp_path):
    """onnxruntime's outputs on an AVX2 CPU without VNNI (qemu-x86_64 -cpu Haswell)."""
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.skip("qemu-x86_64 (Debian package qemu-user) is not installed")
    np.save(tmp_path / "x.npy", x)
    code = ("import sys, numpy as np; sys.path.insert(0, 'tests'); from qdq_builders import run_ort; "
            f"np.save({str(tmp_path / 'y.npy')!r}, run_ort({str(path)!r}, np.load({str(tmp_path / 'x.npy')!r})))")
    r = subprocess.run([qemu, "-cpu", "Haswell-noTSX", os.path.realpath(sys.executable), "-c", code],
                       cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return np.load(tmp_path / "y.npy")


def _vnni():
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return None
    return "avx512_vnni" in flags or "avx_vnni" in flags


CASES = {
    "pointwise_convsym": lambda: conv_model(8, 16, 1),  # MLAS's symmetric conv kernel
    "3x3_cin3_pad_im2col": lambda: conv_model(3, 8, 3, pad=1, seed=1),  # QGEMM, odd K
    "grouped_multiplier2": lambda: conv_model(4, 8, 3, group=4, seed=2),  # QGEMM per group
    "depthwise": lambda: conv_model(16, 16, 3, group=16, seed=3),  # exact everywhere
    "matmul_bias_qgemm": lambda: gemm_model(37, 16, seed=4),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_emulation_is_onnxruntime_without_vnni(case, tmp_path):
    path = save(CASES[case](), tmp_path)
    c = compile_model(path, numerics="ort")
    g = c.graph
    x = _inputs(g.tensors[g.inputs[0]].shape)
    exact, x86, sat = [], [], 0
    for v in x:
        ins = {g.inputs[0]: v}
        e = run_graph(g, "ort", ins, c.params)
        exact.append(e[g.outputs[0]])
        env, events = run_graph_x86(g, ins, c.params)
        x86.append(env[g.outputs[0]])
        assert [ev.layer for ev in events] == [ev.layer for ev in saturation_events(g, c.params, e)]
        sat += len(events)
    exact, x86 = np.stack(exact), np.stack(x86)
    layers = [n for n in g.nodes if n.attrs.get("ort_u8s8")]
    assert layers, "onnxruntime runs the layer on uint8 x int8"
    if case == "depthwise":  # MLAS's depthwise kernels widen first: never saturate
        assert sat == 0 and np.array_equal(exact, x86)
    else:
        assert sat > 0 and not np.array_equal(exact, x86)  # the case does saturate
    local = run_ort(path, x).reshape(exact.shape)
    if _vnni():
        np.testing.assert_array_equal(local, exact)  # VNNI: exact sums
    elif _vnni() is False:
        np.testing.assert_array_equal(local, x86)
    hsw = _haswell_ort(path, x, tmp_path).reshape(exact.shape)
    np.testing.assert_array_equal(hsw, x86)


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


# ---- validate with onnxruntime tensors that saturate ----------------------------------------

def test_validate_compares_saturating_layers_with_the_exact_sums(tmp_path, monkeypatch):
    from codegen.driver import validate as val
    path = save(conv_model(8, 16, 1), tmp_path)
    x = _inputs((1, 8, 8, 8))
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
