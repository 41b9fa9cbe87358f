"""onnxruntime on x86-64 without VNNI: its int16 pair saturation, modelled exactly.

MLAS's AVX2 / AVX-512BW kernels add each pair of uint8 x int8 products into an int16
with saturation (codegen/numerics/u8s8_pairs.py); tinyaot computes the exact sums (what
onnxruntime gives on VNNI CPUs and on Arm). Checked here:

- the pair model against a plain loop over the pairs, written from VPMADDUBSW's
  definition (Intel SDM: each int16 lane = saturate16(a[2i] * b[2i] + a[2i+1] * b[2i+1]));
- the emulation of onnxruntime without VNNI (reference/x86_saturation.py) against
  onnxruntime itself on an AVX2 CPU without VNNI (qemu-x86_64 -cpu Haswell running this
  onnxruntime; skipped where qemu-x86_64 is not installed), on models built the way
  tf2onnx writes them: a 1x1 conv (MLAS's symmetric conv kernel), a 3x3 conv on 3 channels
  with padding (im2col + QGEMM, pairs across kernel taps, the padded taps read as the zero
  point), a grouped conv with depthwise multiplier 2, a depthwise conv (exact everywhere)
  and a MatMul + bias (QGemm); a conv and a MatMul with asymmetric int8 weights (MLAS
  pairs the raw weights, tinyaot stores w - zp, int16 there). Where the local CPU has VNNI, onnxruntime here must give
  the exact sums; without, the saturated ones.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers.env import REPO
from tests.helpers.qdq_builder import run_ort, save
from tests.helpers.saturating_models import conv_model, gemm_model, saturating_inputs

from codegen.compiler import compile_model
from codegen.numerics.u8s8_pairs import can_saturate, pair_delta
from codegen.reference.run import run_graph
from codegen.reference.x86_saturation import run_graph_x86, saturation_events


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


def _haswell_ort(path, x, tmp_path):
    """onnxruntime's outputs on an AVX2 CPU without VNNI (qemu-x86_64 -cpu Haswell)."""
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.skip("qemu-x86_64 (Debian package qemu-user) is not installed")
    np.save(tmp_path / "x.npy", x)
    code = ("import numpy as np; from tests.helpers.qdq_builder import run_ort; "
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
    # asymmetric int8 weights: MLAS pairs the raw weights, w - zp is int16 in tinyaot
    "3x3_asymmetric_weights": lambda: conv_model(3, 8, 3, pad=1, seed=5, weight_zp=-40),
    "matmul_asymmetric_weights": lambda: gemm_model(37, 16, seed=6, weight_zp=30),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_emulation_is_onnxruntime_without_vnni(case, tmp_path):
    path = save(CASES[case](), tmp_path)
    c = compile_model(path, numerics="ort")
    g = c.graph
    x = saturating_inputs(g.tensors[g.inputs[0]].shape)
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
