"""The exact fixed-point (SMMLAR) form of onnxruntime's requantization
(codegen/kernels/ort_requant_fixed.py) against brute force, and the integer
fast FC that uses it against onnxruntime.

Brute force: every acc of the range, onnxruntime's float32 requantization
(numerics/ort_float.py:requantize_acc: float(acc) * scale in float32, round
half to even, + zp, clamp) against the fixed formula written here again in
numpy int64: clamp(((acc - bias + B) * M + 2^31) >> 32 + R, 0, 255) - 128.
"""
import numpy as np
import pytest

from codegen.kernels import ort_requant_fixed as orf
from codegen.numerics.ort_float import requantize_acc

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save


def smmlar_out(acc, bias, params):
    b, m, r = params
    v = ((np.asarray(acc, np.int64) - bias + b) * m + (1 << 31)) >> 32
    return np.clip(v + r, 0, 255) - 128


def mismatches(params, scale, bias, zp, lo, hi, amin, amax):
    acc = np.arange(amin, amax + 1, dtype=np.int64)
    ref = requantize_acc(acc.astype(np.int32), np.float32(scale), zp, lo, hi).astype(np.int64)
    return int(np.count_nonzero(smmlar_out(acc, bias, params) != ref))


def random_cases(n, seed):
    rng = np.random.default_rng(seed)
    for i in range(n):
        kind = i % 6
        if kind == 0:    # power of two: exact .5 ties
            s = 2.0 ** -int(rng.integers(1, 14))
        elif kind == 1:  # just below 0.5 (M near 2^31)
            s = float(np.nextafter(np.float32(0.5), np.float32(0))) - float(rng.integers(0, 5000)) * 2.0 ** -25
        elif kind == 2:  # tiny
            s = 10 ** rng.uniform(-8, -5)
        elif kind == 3:  # few mantissa bits (products of power-of-two scales): ties likely
            s = int(rng.integers(1, 1 << 10)) * 2.0 ** -int(rng.integers(12, 22))
        else:
            s = 10 ** rng.uniform(-4.5, -0.31)
        zp = int(rng.integers(-128, 128))
        bias = int(rng.integers(-20000, 20000))
        span = int(10 ** rng.uniform(2, 6.3))  # up to ~2e6 accumulators
        amin = bias - int(rng.integers(0, span))
        amax = bias + int(rng.integers(0, span))
        lo, hi = (-128, 127) if i % 4 else (max(zp, -128), int(rng.integers(max(zp, -128), 128)))
        yield np.float32(s), bias, zp, lo, hi, amin, amax


def test_search_is_exact_on_every_accumulator():
    """Every (B, M, R) the search returns equals onnxruntime on the whole range;
    most cases have one, and perturbing M or B away from it is needed and caught."""
    found = perturbed = 0
    for s, bias, zp, lo, hi, amin, amax in random_cases(240, seed=11):
        p = orf.channel_params(s, bias, zp, lo, hi, amin, amax)
        if p is None:
            continue
        found += 1
        assert mismatches(p, s, bias, zp, lo, hi, amin, amax) == 0, (s, bias, zp, lo, hi, amin, amax, p)
        naive = (bias, int(np.rint(float(s) * 2.0 ** 32)), 128 + zp)
        if tuple(p) != naive:
            perturbed += 1
            # the test can fail: the unperturbed parameters are wrong somewhere here
            if mismatches(naive, s, bias, zp, lo, hi, amin, amax) == 0:
                perturbed -= 1
    assert found > 120
    assert perturbed >= 3


def test_saturating_ranges_and_narrow_clamps():
    """Ranges that saturate both ends (outputs -128 and 127 both reached) are
    exact. The kernel saturates to int8 only: act bounds narrower than int8
    that the range reaches (Relu with zp > -128) have no form; when the
    range stays inside them, the form is exact."""
    checked = narrow = 0
    rng = np.random.default_rng(5)
    for _ in range(60):
        s = np.float32(10 ** rng.uniform(-3, -1.5))
        zp = int(rng.integers(-127, 100))
        bias = int(rng.integers(-5000, 5000))
        amin, amax = bias - int(400 / s), bias + int(400 / s)
        acc = np.arange(amin, amax + 1)
        ref = requantize_acc(acc.astype(np.int32), s, zp, -128, 127)
        assert ref.min() == -128 and ref.max() == 127
        p = orf.channel_params(s, bias, zp, -128, 127, amin, amax)
        if p is not None:
            assert mismatches(p, s, bias, zp, -128, 127, amin, amax) == 0
            checked += 1
        assert orf.channel_params(s, bias, zp, zp, 127, amin, amax) is None
        assert orf.channel_params(s, bias, zp, -128, zp + 20, amin, amax) is None
        # a range above the Relu bound's threshold and below hi's: the bounds never act
        lo_, hi_ = zp, min(zp + 60, 127)
        a0, a1 = int(2 / s) + 1, int(50 / s)  # acc * scale in [2, 50]
        p = orf.channel_params(s, bias, zp, lo_, hi_, a0, a1)
        if p is not None:
            assert mismatches(p, s, bias, zp, lo_, hi_, a0, a1) == 0
            narrow += 1
    assert checked > 40 and narrow > 40


def test_no_form_when_ties_round_both_ways():
    """scale 2^-4: the .5 ties at acc = 16 v - 8 round to even, so the
    thresholds of consecutive levels are 15 and 17 apart alternately; the
    thresholds of floor((a M + 2^31) / 2^32) are ceil(c / M) for c in an
    arithmetic progression, whose gaps differ by at most 1: no (B, M, R)."""
    assert orf.channel_params(np.float32(1 / 16), 0, 0, -128, 127, -3000, 3000) is None
    # one tie in range (acc = 8 only, v = 0.5 -> 0): a form exists and is exact
    p = orf.channel_params(np.float32(1 / 16), 0, 0, -128, 127, -7, 23)
    assert p is not None and mismatches(p, 1 / 16, 0, 0, -128, 127, -7, 23) == 0
    # scale 0.5 would need M = 2^31, and scale >= 1 more: not representable
    assert orf.channel_params(np.float32(0.75), 0, -128, -128, 127, -10, 400) is None
    # an accumulator range beyond int32 (the kernel's sums would wrap)
    assert orf.channel_params(np.float32(1e-6), 0, -128, -128, 127, -10, 1 << 31) is None


def test_acc_range_is_the_reachable_extremes():
    w = np.array([3, -5, 0, 127, -127], np.int8)
    for in_zp in (-128, 0, 17):
        xs = np.array([-128, 127])
        grid = np.stack(np.meshgrid(*[xs] * w.size, indexing="ij"), -1).reshape(-1, w.size)
        acc = 9 + (grid - in_zp) @ w.astype(np.int64)
        assert orf.acc_range(w, 9, in_zp) == (int(acc.min()), int(acc.max()))


# ------------------------------------------------------------------ against onnxruntime

def gemm_model(k, n, in_zp, out_zp, relu, seed):
    """DQ(x) -> Gemm (per-tensor int8 weights, int32 bias) [-> Relu] -> Q."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("fc_fixed")
    sx = np.float32(0.02)
    x = b.dq("x", sx, in_zp)
    wf = (rng.normal(size=(k, n)) * 0.3).astype(np.float32)
    sw = np.float32(np.abs(wf).max() / 127)
    wq = np.clip(np.rint(wf / sw), -127, 127).astype(np.int8)
    w = b.dq(b.const_int(wq, np.int8), sw, np.int8(0))
    bias = b.bias(rng.normal(size=n) * 0.5, np.full(n, sx * sw, np.float32))
    y = b.op("Gemm", [x, w, bias])
    if relu:
        y = b.op("Relu", [y])
    sy = np.float32(0.25 * np.sqrt(k) * 0.3 * 0.02 * 74 / 20)
    b.q(y, sy, out_zp, out="y")
    return b.model("x", (1, k), "y", (1, n))


@pytest.mark.parametrize("k,n,in_zp,out_zp,relu", [
    (128, 128, -128, -128, True), (128, 20, 3, -128, True), (8, 128, -128, -128, True),
    (37, 10, 0, 5, False), (64, 6, -7, -30, False), (200, 13, 11, -128, False)])
def test_fast_fc_fixed_equals_onnxruntime(k, n, in_zp, out_zp, relu, tmp_path):
    """Generated C on the host (the portable twin) bit-exact with onnxruntime,
    with the fixed-point form in use."""
    for seed in range(8):  # a layer qualifies when every channel has a form
        path = save(gemm_model(k, n, in_zp, out_zp, relu, seed), tmp_path, f"m{seed}.onnx")
        x = all_int8_inputs((1, k), 24, seed=seed)
        outs, c = host_run_checked(path, x, "ort", tmp_path / f"b{seed}",
                                   "tinyaot_fully_connected_fast_s8")
        layers = [l for l in c.report["layers"] if l["kernel"] == "tinyaot_fully_connected_fast_s8"]
        if layers[0].get("requant", "").startswith("ort fixed-point"):
            break
    else:
        pytest.fail("no seed gave a layer with the fixed-point form")
    ref = run_ort(path, x)
    assert len(np.unique(ref)) > 5
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)
