"""TFLite-Micro fixed-point numerics: numpy model vs. hand-derived values,
vs. an independent pure-Python formulation, vs. TFLM's own kernel test
vectors, and vs. the C header (runtime_c/src/internal/tinyaot_fixedpoint.h)
compiled with UBSan and loaded through cffi.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from codegen.numerics import tflite_fixedpoint as tf

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "runtime_c" / "src" / "internal"  # tinyaot_fixedpoint.h: the kernels' helper
HEADER = INCLUDE / "tinyaot_fixedpoint.h"
SHIM = ROOT / "tests" / "helpers" / "c" / "tflite_fixedpoint_shim.c"

I32_MIN, I32_MAX = tf.INT32_MIN, tf.INT32_MAX
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-Wconversion", "-Wshadow", "-pedantic"]

EDGE = np.array(
    [
        I32_MIN, I32_MIN + 1, -(1 << 30) - 1, -(1 << 30), -(1 << 30) + 1, -(1 << 29),
        -65536, -255, -3, -2, -1, 0, 1, 2, 3, 255, 65535, (1 << 29),
        (1 << 30) - 1, (1 << 30), (1 << 30) + 1, I32_MAX - 1, I32_MAX,
    ],
    dtype=np.int64,
)
MULTS = np.array(
    [0, 1, 2, 3, (1 << 30) - 1, 1 << 30, (1 << 30) + 1, 1717986944, 2027755215,
     I32_MAX - 1, I32_MAX],
    dtype=np.int64,
)

fast = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
i32 = st.integers(I32_MIN, I32_MAX)


# ---------------------------------------------------------------------------
# independent pure-python formulations (exact integers)
# ---------------------------------------------------------------------------


def py_wrap(v: int) -> int:
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def py_srdhm(a: int, b: int) -> int:
    # VQRDMULH: sat((2ab + 2^31) >> 32) == floor(ab / 2^31 + 1/2)
    if a == b == I32_MIN:
        return I32_MAX
    return (a * b + (1 << 30)) >> 31


def py_rdbpot(x: int, e: int) -> int:
    # x / 2^e rounded to nearest, ties away from zero
    q, r = divmod(abs(x), 1 << e)
    q += 1 if 2 * r >= (1 << e) and e > 0 else 0
    return -q if x < 0 else q


def py_mbqm(x: int, m: int, s: int) -> int:
    return py_rdbpot(py_srdhm(py_wrap(x << max(s, 0)), m), max(-s, 0))


# ---------------------------------------------------------------------------
# C library (built once per session)
# ---------------------------------------------------------------------------

CDEF = """
void shim_srdhm(const int32_t *a, const int32_t *b, int32_t *o, int32_t n);
void shim_rdbpot(const int32_t *x, const int32_t *e, int32_t *o, int32_t n);
void shim_mbqm(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *o, int32_t n);
void shim_mbqm_stoe(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *o, int32_t n);
void shim_mbqm_gto(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *o, int32_t n);
void shim_requant(const int32_t *acc, const int32_t *m, const int32_t *s, int32_t zp,
                  int32_t lo, int32_t hi, int8_t *o, int32_t n);
void shim_avgpool_round(const int32_t *sum, const int32_t *count, int32_t *o, int32_t n);
void shim_exp_on_negative_values(const int32_t *a, int32_t integer_bits, int32_t *o, int32_t n);
void shim_one_over_one_plus_x(const int32_t *a, int32_t *o, int32_t n);
void shim_add(const int8_t *a, const int8_t *b, int8_t *o, int32_t n, const int32_t *p,
              int32_t lo, int32_t hi);
void shim_mul(const int8_t *a, const int8_t *b, int8_t *o, int32_t n, const int32_t *p,
              int32_t lo, int32_t hi);
void shim_softmax_rows(const int8_t *in, int8_t *out, int32_t rows, int32_t depth,
                       int32_t input_multiplier, int32_t input_left_shift, int32_t diff_min);
"""


class CLib:
    """numpy-friendly wrappers around the shim."""

    def __init__(self, path: Path, ubsan_log: Path):
        import cffi

        self.ffi = cffi.FFI()
        self.ffi.cdef(CDEF)
        self._lib = self.ffi.dlopen(str(path))
        # UBSan (recover mode) reports 'runtime error: ...' on fd 2; every call
        # runs with fd 2 pointed at this file, which must stay empty.
        self._log = open(ubsan_log, "w+b")

    def _call(self, name: str, *args):
        fn = getattr(self._lib, name)
        saved = os.dup(2)
        os.dup2(self._log.fileno(), 2)
        try:
            fn(*args)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if os.fstat(self._log.fileno()).st_size:
            self._log.seek(0)
            raise AssertionError("UBSan: " + self._log.read().decode(errors="replace"))

    def _p(self, arr: np.ndarray, ctype: str):
        return self.ffi.cast(ctype + " *", self.ffi.from_buffer(arr))

    def _i32(self, *arrays):
        bs = np.broadcast_arrays(*[np.asarray(a, dtype=np.int64) for a in arrays])
        return [np.ascontiguousarray(b, dtype=np.int32).ravel() for b in bs], bs[0].shape

    def vec(self, name: str, *args):
        ins, shape = self._i32(*args)
        out = np.empty(ins[0].size, dtype=np.int32)
        ptrs = [self._p(a, "int32_t") for a in ins]
        self._call(name, *ptrs, self._p(out, "int32_t"), out.size)
        return out.reshape(shape)

    def requant(self, acc, m, s, zp, lo, hi):
        (acc, m, s), shape = self._i32(acc, m, s)
        out = np.empty(acc.size, dtype=np.int8)
        self._call("shim_requant", self._p(acc, "int32_t"), self._p(m, "int32_t"),
                   self._p(s, "int32_t"), zp, lo, hi, self._p(out, "int8_t"), acc.size)
        return out.reshape(shape)

    def exp_neg(self, a, integer_bits):
        a = np.ascontiguousarray(a, dtype=np.int32).ravel()
        out = np.empty_like(a)
        self._call("shim_exp_on_negative_values", self._p(a, "int32_t"), integer_bits,
                   self._p(out, "int32_t"), a.size)
        return out

    def _binary8(self, name, a, b, p, lo, hi):
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int8), np.asarray(b, dtype=np.int8))
        shape = a.shape
        a = np.ascontiguousarray(a).ravel()
        b = np.ascontiguousarray(b).ravel()
        p = np.ascontiguousarray(p, dtype=np.int32)
        out = np.empty(a.size, dtype=np.int8)
        self._call(name, self._p(a, "int8_t"), self._p(b, "int8_t"), self._p(out, "int8_t"),
                   a.size, self._p(p, "int32_t"), lo, hi)
        return out.reshape(shape)

    def add(self, a, b, prm: dict, lo=-128, hi=127):
        keys = ("a_zp", "b_zp", "out_zp", "left_shift", "a_mult", "a_shift", "b_mult",
                "b_shift", "out_mult", "out_shift")
        p = [prm[k] for k in keys]
        return self._binary8("shim_add", a, b, p, lo, hi)

    def mul(self, a, b, prm: dict, lo=-128, hi=127):
        p = [prm[k] for k in ("a_zp", "b_zp", "out_zp", "out_mult", "out_shift")]
        return self._binary8("shim_mul", a, b, p, lo, hi)

    def softmax(self, x, p: dict):
        mult, shift, diff_min = p["input_multiplier"], p["input_left_shift"], p["diff_min"]
        x = np.ascontiguousarray(x, dtype=np.int8)
        rows = int(np.prod(x.shape[:-1], dtype=np.int64))
        out = np.empty_like(x)
        self._call("shim_softmax_rows", self._p(x, "int8_t"), self._p(out, "int8_t"), rows,
                   x.shape[-1], mult, shift, diff_min)
        return out


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tflite_fixedpoint")


@pytest.fixture(scope="session", params=["builtins", "portable"])
def clib(build_dir, request):
    """The shim as compiled normally, and with TINYAOT_PORTABLE_INTRINSICS (the
    plain-C branch-free forms of clz and clamp that non-GNU compilers get)."""
    gcc = shutil.which("gcc")
    if not gcc:
        pytest.skip("gcc not available")
    so = build_dir / f"libtflite_fixedpoint_shim_{request.param}.so"
    defs = ["-DTINYAOT_PORTABLE_INTRINSICS"] if request.param == "portable" else []
    cmd = [gcc, *STRICT, "-O1", "-g", "-fPIC", "-shared", "-fsanitize=undefined", *defs,
           "-fno-omit-frame-pointer", f"-I{INCLUDE}", str(SHIM), "-o", str(so)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return CLib(so, build_dir / f"ubsan_{request.param}.log")


# ---------------------------------------------------------------------------
# (a) known values
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "real, expected",
    [
        (0.0, (0, 0)),
        (0.5, (1 << 30, 0)),
        (1.0, (1 << 30, 1)),
        (0.25, (1 << 30, -1)),
        (0.75, (3 << 29, 0)),
        (2.0 ** -31, (1 << 30, -30)),
        (2.0 ** -32, (1 << 30, -31)),  # smallest kept
        (2.0 ** -33, (0, 0)),  # shift < -31 flushed
        (1.0 - 2.0 ** -40, (1 << 30, 1)),  # q_fixed == 2^31 correction
        (2.0 ** 40, (1 << 30, 41)),  # no shift clamp in double rounding
        (-0.5, (-(1 << 30), 0)),
        (0.1, (1717986918, -3)),  # round(0.8 * 2^31) = 1717986918.4 -> ...918
    ],
)
def test_quantize_multiplier_known(real, expected):
    assert tf.quantize_multiplier(real) == expected


def test_quantize_multiplier_single_rounding_clamp():
    assert tf.quantize_multiplier(2.0 ** 40, single_rounding=True) == ((1 << 31) - 1, 30)
    assert tf.quantize_multiplier(2.0 ** 29, single_rounding=True) == (1 << 30, 30)


def test_quantize_multiplier_variants_check_ranges():
    assert tf.quantize_multiplier_smaller_than_one_exp(0.5) == (1 << 30, 0)
    assert tf.quantize_multiplier_greater_than_one(3.0) == (3 << 29, 2)
    for bad in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError):
            tf.quantize_multiplier_smaller_than_one_exp(bad)
    with pytest.raises(ValueError):
        tf.quantize_multiplier_greater_than_one(1.0)


@given(st.floats(2.0 ** -31, 2.0 ** 30, allow_nan=False, allow_infinity=False))
@fast
def test_quantize_multiplier_is_nearest(real):
    from fractions import Fraction

    m, s = tf.quantize_multiplier(real)
    assert (1 << 30) <= m <= I32_MAX
    err = abs(Fraction(real) - Fraction(m) * Fraction(2) ** (s - 31))
    assert err <= Fraction(2) ** (s - 32)


def test_srdhm_known():
    f = tf.saturating_rounding_doubling_high_mul
    assert f(I32_MIN, I32_MIN) == I32_MAX  # the only saturating case
    assert f(I32_MAX, I32_MAX) == I32_MAX - 1
    assert f(I32_MIN, I32_MAX) == -I32_MAX
    assert f(1 << 30, 1 << 30) == 1 << 29
    assert f(1, 1 << 30) == 1  # +0.5 rounds up
    assert f(-1, 1 << 30) == 0  # -0.5 rounds up (toward +inf)
    assert f(-3, 1 << 30) == -1  # -1.5 -> -1
    assert f(0, I32_MIN) == 0


def test_rdbpot_known():
    f = tf.rounding_divide_by_pot
    assert f(-3, 1) == -2  # ties away from zero
    assert f(3, 1) == 2
    assert f(5, 1) == 3
    assert f(-5, 2) == -1
    assert f(-6, 2) == -2
    assert f(6, 2) == 2
    assert f(12345, 0) == 12345
    assert f(I32_MIN, 31) == -1
    assert f(I32_MAX, 31) == 1
    assert f(-(1 << 30), 31) == -1
    assert f((1 << 30) - 1, 31) == 0
    assert f(I32_MIN, 1) == -(1 << 30)


def test_mbqm_known():
    f = tf.multiply_by_quantized_multiplier
    assert f(100, 1 << 30, 0) == 50
    assert f(100, 1 << 30, 1) == 100
    assert f(3, 1 << 30, -1) == 1  # 0.75
    # double rounding: 5 * 0.25 = 1.25 -> SRDHM gives 3 (2.5 up), RDBPOT(3, 1) = 2;
    # single rounding would give 1.
    assert f(5, 1 << 30, -1) == 2
    assert f(-5, 1 << 30, -1) == -1  # SRDHM(-5, 2^30) = -2 (-2.5 up), RDBPOT(-2, 1) = -1
    assert tf.multiply_by_quantized_multiplier_smaller_than_one_exp(5, 1 << 30, -1) == 2
    # softmax input rescale: diff -248 at scale 0.1f is -24.8 in Q5.26
    r = int(tf.multiply_by_quantized_multiplier_greater_than_one(-248, 1717986944, 23))
    assert r == py_srdhm(-248 << 23, 1717986944)
    assert abs(r - (-248 * float(np.float32(0.1)) * 2**26)) < 1
    # left shift wraps like int32 on Cortex-M: 2^30 << 2 == 0
    assert f(1 << 30, I32_MAX, 2) == 0


def test_avgpool_round_known():
    s = [5, -5, 4, -4, 0, 7, 6, -6, -7, 10]
    c = [2, 2, 3, 3, 4, 4, 4, 4, 4, 4]
    assert tf.avgpool_round(s, c).tolist() == [3, -3, 1, -1, 0, 2, 2, -2, -2, 3]


def test_softmax_prepare_known():
    # float(0.1f) * 2^26 = 6710886.5 exactly -> frexp: q = 6710886.5 / 2^23, shift 23,
    # q * 2^31 = 6710886.5 * 2^8 = 1717986944; radius floor(31 * 2^26 / 2^23) = 248.
    want = {"input_multiplier": 1717986944, "input_left_shift": 23, "diff_min": -248}
    assert tf.softmax_params(0.1) == want
    assert tf.calculate_input_radius(5, 23) == 248
    with pytest.raises(ValueError):
        tf.softmax_params(0.1, output_zero_point=0)
    with pytest.raises(ValueError):
        tf.softmax_params(0.1, output_scale=1 / 255)


def test_logistic_tanh_prepare_known():
    # float(0.1f) = 13421773 * 2^-27 -> * 2^27 = 13421773 = 0.8000000119 * 2^24
    assert tf.logistic_params(0.1) == (13421773 << 7, 24, 120)
    assert tf.tanh_params(1.0) == (1 << 30, 28, 7)


def test_activation_range_known():
    assert tf.activation_range_int8("NONE", 0.1, 3) == (-128, 127)
    assert tf.activation_range_int8("RELU", 0.1, 3) == (3, 127)
    assert tf.activation_range_int8("RELU6", 0.05, -128) == (-128, -8)
    assert tf.activation_range_int8("RELU_N1_TO_1", 1.0, 13) == (12, 14)


def test_conv_and_fc_multipliers():
    m, s = tf.conv_output_multipliers(0.5, [0.25, 0.5, 1e-12], 0.125)
    assert m.tolist() == [1 << 30, 1 << 30, 0] and s.tolist() == [1, 2, 0]
    # Per-tensor FullyConnected multiplies the scales in float32 first
    # (GetQuantizedConvolutionMultipler), Conv in double: they differ here.
    a, b, o = 0.06405920535326004, 0.013854442164301872, 0.030077027156949043
    mc, sc = tf.conv_output_multipliers(a, [b], o)
    mf, sf = tf.fc_output_multipliers(a, [b], o)
    assert (int(mc[0]), int(sc[0])) == (2027755215, -5)
    assert (int(mf[0]), int(sf[0])) == (2027755193, -5)
    # per-channel FC follows the conv formula
    m2, s2 = tf.fc_output_multipliers(a, [b, b], o)
    assert m2.tolist() == [2027755215] * 2 and s2.tolist() == [-5, -5]


def test_requantize_known():
    acc = np.array([[1000, -1000, 7], [5, -5, 0]], dtype=np.int32)
    out = tf.requantize(acc, [1 << 30, 1 << 30, 1 << 30], [-3, -3, 0], 5, -128, 127)
    # 1000 * 0.5 / 8 = 62.5 -> 63 (+5); -62.5 -> -63; 3.5 -> 4
    assert out.dtype == np.int8
    assert out.tolist() == [[68, -58, 9], [5, 5, 5]]
    assert tf.requantize(10**6, 1 << 30, 0, 0, -128, 127) == 127


# ---------------------------------------------------------------------------
# numpy model vs. the independent python formulation
# ---------------------------------------------------------------------------


@given(i32, i32)
@fast
def test_srdhm_matches_python(a, b):
    assert int(tf.saturating_rounding_doubling_high_mul(a, b)) == py_srdhm(a, b)


@given(i32, st.integers(0, 31))
@fast
def test_rdbpot_matches_python(x, e):
    assert int(tf.rounding_divide_by_pot(x, e)) == py_rdbpot(x, e)


@given(i32, st.integers(0, I32_MAX), st.integers(-31, 30))
@fast
def test_mbqm_matches_python(x, m, s):
    assert int(tf.multiply_by_quantized_multiplier(x, m, s)) == py_mbqm(x, m, s)


def test_edge_grids_match_python():
    a, b = np.meshgrid(EDGE, EDGE)
    got = tf.saturating_rounding_doubling_high_mul(a, b)
    assert got.tolist() == [[py_srdhm(int(p), int(q)) for p, q in zip(r1, r2)] for r1, r2 in zip(a, b)]
    x, e = np.meshgrid(EDGE, np.arange(32))
    got = tf.rounding_divide_by_pot(x, e)
    assert got.tolist() == [[py_rdbpot(int(p), int(q)) for p, q in zip(r1, r2)] for r1, r2 in zip(x, e)]


def test_exp_and_reciprocal_accuracy():
    # gemmlowp exp / 1/(1+x): accurate to a few ulps of Q0.31 (sanity, not bit-exactness)
    a = np.linspace(-(31 << 26), 0, 2001).astype(np.int64)
    got = tf.exp_on_negative_values(a, 5).astype(np.float64) / 2**31
    assert np.max(np.abs(got - np.exp(a / 2**26))) < 5e-7  # 4th-order Taylor: (1/8)^5/120
    x = np.linspace(0, I32_MAX, 1001).astype(np.int64)
    got = tf.one_over_one_plus_x_for_x_in_0_1(x).astype(np.float64) / 2**31
    assert np.max(np.abs(got - 1.0 / (1.0 + x / 2**31))) < 1e-8


# ---------------------------------------------------------------------------
# TFLM's own kernel test vectors (independent oracle)
# ---------------------------------------------------------------------------


def tflm_quantize(values, scale, zp):
    """tflite::FloatToQuantizedType<int8_t> (micro_utils.h): round(float(v) / float(s)) + zp."""
    v = np.asarray(values, dtype=np.float32) / np.float32(scale)
    r = np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))  # round half away, float32 exact
    return np.clip(r.astype(np.int64) + zp, -128, 127)


# tensorflow/lite/micro/kernels/add_test.cc: QuantizedAddNoActivationInt8 and
# QuantizedAddActivationRelu1Int8 (scales 0.25/0.5/1.0, zero points -10/4/13),
# tolerance 1e-5 on int8, i.e. exact.
def test_tflm_add_no_activation_int8():
    p = tf.add_params(0.25, -10, 0.5, 4, 1.0, 13)
    a = tflm_quantize([-2.01, -1.01, -0.01, 0.98], 0.25, -10)
    b = tflm_quantize([1.01, 1.99, 2.99, 4.02], 0.5, 4)
    assert a.tolist() == [-18, -14, -10, -6] and b.tolist() == [6, 8, 10, 12]
    assert tf.add_int8(a, b, p).tolist() == [12, 14, 16, 18]  # golden {-1, 1, 3, 5}
    lo, hi = tf.activation_range_int8("RELU_N1_TO_1", 1.0, 13)
    assert tf.add_int8(a, b, p, lo, hi).tolist() == [12, 14, 14, 14]  # golden {-1, 1, 1, 1}


# add_test.cc: QuantizedAddVariousInputShapesInt8 (scales 0.1/0.05/0.1, zps -9/5/14)
# and QuantizedAddWithScalarBroadcastInt8 (0.1/0.05/0.05, zps -8/4/12).
def test_tflm_add_various_and_scalar_broadcast_int8():
    x1 = [-2.0, 0.2, 0.7, 0.8, 1.1, 2.0]
    p = tf.add_params(0.1, -9, 0.05, 5, 0.1, 14)
    got = tf.add_int8(tflm_quantize(x1, 0.1, -9), tflm_quantize([0.1, 0.2, 0.3, 0.5, 1.1, 0.1], 0.05, 5), p)
    assert got.tolist() == tflm_quantize([-1.9, 0.4, 1.0, 1.3, 2.2, 2.1], 0.1, 14).tolist()
    assert got.tolist() == [-5, 18, 24, 27, 36, 35]
    p = tf.add_params(0.1, -8, 0.05, 4, 0.05, 12)
    got = tf.add_int8(tflm_quantize(x1, 0.1, -8).reshape(2, 1, 3), tflm_quantize([0.1], 0.05, 4), p)
    assert got.ravel().tolist() == tflm_quantize([-1.9, 0.3, 0.8, 0.9, 1.2, 2.1], 0.05, 12).tolist()


# add_test.cc: QuantizedAddWithMixedBroadcastInt8 (0.1/0.05/0.1, zps -10/-5/7),
# input1 shape {2,3,1,2} against four input2 shapes; exact.
def test_tflm_add_mixed_broadcast_int8():
    in1 = [-0.3, 2.3, 0.9, 0.5, 0.8, -1.1, 1.2, 2.8, -1.6, 0.0, 0.7, -2.2]
    in2 = [0.2, 0.3, -0.4, 0.5, 1.0, 0.9]
    goldens = [
        [-0.1, 2.6, -0.7, 2.8, 0.7, 3.2, 1.1, 0.8, 0.5, 1.0, 1.9, 1.4,
         1.0, -0.8, 0.4, -0.6, 1.8, -0.2, 1.4, 3.1, 0.8, 3.3, 2.2, 3.7,
         -1.4, 0.3, -2.0, 0.5, -0.6, 0.9, 0.9, -1.9, 0.3, -1.7, 1.7, -1.3],
        [-0.1, 2.6, 0.5, 1.0, 1.8, -0.2, 1.4, 3.1, -2.0, 0.5, 1.7, -1.3],
        [-0.1, 2.5, 0.0, 2.6, -0.7, 1.9, 1.1, 0.7, 1.2, 0.8, 0.5, 0.1,
         1.0, -0.9, 1.1, -0.8, 0.4, -1.5, 1.7, 3.3, 2.2, 3.8, 2.1, 3.7,
         -1.1, 0.5, -0.6, 1.0, -0.7, 0.9, 1.2, -1.7, 1.7, -1.2, 1.6, -1.3],
        [-0.1, 2.5, 1.2, 0.8, 0.4, -1.5, 1.7, 3.3, -0.6, 1.0, 1.6, -1.3],
    ]
    shapes2 = [(1, 1, 3, 2), (1, 3, 1, 2), (2, 1, 3, 1), (2, 3, 1, 1)]
    p = tf.add_params(0.1, -10, 0.05, -5, 0.1, 7)
    a = tflm_quantize(in1, 0.1, -10).reshape(2, 3, 1, 2)
    for shape2, golden in zip(shapes2, goldens):
        b = tflm_quantize(in2, 0.05, -5).reshape(shape2)
        assert tf.add_int8(a, b, p).ravel().tolist() == tflm_quantize(golden, 0.1, 7).tolist()


# tensorflow/lite/micro/kernels/softmax_test.cc: Softmax{1D,2D,3D}QuantizedInt8ShouldMatchGolden,
# input scale 0.1 zp 0, output 1/256 zp -128, tolerance 1 (quantized units).
SOFTMAX_3D_IN = [
    3, 6, -5, 4, -9, -10, -10, -8, 2, 2, 8, -5, -8, 5, -6, -8, 6, 1, -10, -8,
    7, 6, -10, -4, -5, 2, 7, 9, -9, 7, -4, -2, 8, 2, 2, 3, 6, 6, 2, 4,
    9, 7, -7, 0, 4, -3, 8, 8, -3, -4, -9, -9, 4, -8, -1, -10, -2, 6, -7, 0,
]
SOFTMAX_3D_GOLDEN = [
    0.042009463, 0.843782625, 0.000014093, 0.114193561, 0.000000258,
    0.000003072, 0.000003072, 0.000022699, 0.499985578, 0.499985578,
    0.952571219, 0.000002153, 0.000000107, 0.047425728, 0.000000792,
    0.000000826, 0.993305397, 0.006692839, 0.000000112, 0.000000826,
    0.731046347, 0.268936922, 0.000000030, 0.000012210, 0.000004492,
    0.000717124, 0.106430599, 0.786421666, 0.000000012, 0.106430599,
    0.000006114, 0.000045174, 0.995015917, 0.002466398, 0.002466398,
    0.022595176, 0.453836234, 0.453836234, 0.008312301, 0.061420055,
    0.875505904, 0.118486839, 0.000000099, 0.000108046, 0.005899112,
    0.000008351, 0.499990113, 0.499990113, 0.000008351, 0.000003072,
    0.000002245, 0.000002245, 0.993296627, 0.000006103, 0.006692780,
    0.000000112, 0.000334520, 0.997191323, 0.000002254, 0.002471790,
]


def test_tflm_softmax_int8_goldens():
    sp = tf.softmax_params(0.1)
    g1 = [0.011656231, 0.031684921, 0.086128544, 0.234121657, 0.636408647]
    x = tflm_quantize([[1, 2, 3, 4, 5], [-1, -2, -3, -4, -5]], 0.1, 0)
    got = tf.softmax_int8(x, sp)
    want = tflm_quantize([g1, g1[::-1]], 1 / 256, -128)
    assert np.max(np.abs(got.astype(int) - want)) <= 1
    assert got.tolist() == [[-125, -120, -106, -68, 35], [35, -68, -106, -120, -125]]
    x3 = tflm_quantize(SOFTMAX_3D_IN, 0.1, 0).reshape(3, 4, 5)
    got3 = tf.softmax_int8(x3, sp).ravel().astype(int)
    assert np.max(np.abs(got3 - tflm_quantize(SOFTMAX_3D_GOLDEN, 1 / 256, -128))) <= 1


# tensorflow/lite/micro/kernels/logistic_test.cc: LogisticQuantizedInt8{Basic,WideRange}
# (input scale 0.1 resp. 1.0, zp 0; output 1/255, zp -128; tolerance 1).
def test_tflm_logistic_int8_goldens():
    basic_in = [1, 2, 3, 4, 5, -1, -2, -3, -4, -5]
    basic_golden = [0.73105858, 0.88079708, 0.95257413, 0.98201379, 0.99330715,
                    0.26894142, 0.11920292, 0.04742587, 0.01798621, 0.00669285]
    table = tf.logistic_int8_table(0.1, 0, 1 / 255, -128)
    got = table[tflm_quantize(basic_in, 0.1, 0) + 128].astype(int)
    assert np.max(np.abs(got - tflm_quantize(basic_golden, 1 / 255, -128))) <= 1
    wide_in = [1.0, 2.0, 3.0, 4.0, 93.0, -1.0, -2.0, -3.0, -4.0, -93.0]
    wide_golden = [0.73105858, 0.88079708, 0.95257413, 0.98201379, 1.0,
                   0.26894142, 0.11920292, 0.04742587, 0.01798621, 0.0]
    table = tf.logistic_int8_table(1.0, 0, 1 / 255, -128)
    got = table[tflm_quantize(wide_in, 1.0, 0) + 128].astype(int)
    assert np.max(np.abs(got - tflm_quantize(wide_golden, 1 / 255, -128))) <= 1
    with pytest.raises(ValueError):
        tf.logistic_int8_table(0.1, 0, 1 / 256, 0)


# tensorflow/lite/micro/kernels/tanh_test.cc: SimpleTestTanhInt8 (input scale 16/256,
# output 1.99999955/256, zps 0, 89 points from -8 to 8, tolerance 2).
def test_tflm_tanh_int8_golden():
    xs = np.float32(-8.0) + np.arange(89, dtype=np.float32) * np.float32(16.0 / 88.0)
    table = tf.tanh_int8_table(16 / 256, 0, 1.99999955 / 256, 0)
    got = table[tflm_quantize(xs, 16 / 256, 0) + 128].astype(int)
    assert np.max(np.abs(got - tflm_quantize(np.tanh(xs.astype(np.float64)), 1.99999955 / 256, 0))) <= 2


def test_activation_tables_are_monotone_and_symmetric():
    for scale, zp in [(0.1, 0), (0.05, -20), (0.3, 17), (1 / 16, 0)]:
        lt = tf.logistic_int8_table(scale, zp, 1 / 256, -128).astype(int)
        tt = tf.tanh_int8_table(scale, zp, 1 / 128, 0).astype(int)
        assert np.all(np.diff(lt) >= 0) and np.all(np.diff(tt) >= 0)
        ref = np.clip(np.round(1 / (1 + np.exp(-scale * (np.arange(-128, 128) - zp))) * 256) - 128, -128, 127)
        assert np.max(np.abs(lt - ref)) <= 1
    tt = tf.tanh_int8_table(0.05, 0, 1 / 128, 0).astype(int)
    # odd symmetry, except that +saturation is 127 and -saturation is -128
    assert tt[128] == 0 and np.all(tt[129:] == np.minimum(-tt[127:0:-1], 127))


# ---------------------------------------------------------------------------
# (b) C header vs numpy model
# ---------------------------------------------------------------------------


def test_c_edge_grids(clib):
    a, b = np.meshgrid(EDGE, EDGE)
    assert np.array_equal(clib.vec("shim_srdhm", a, b), tf.saturating_rounding_doubling_high_mul(a, b))
    x, e = np.meshgrid(EDGE, np.arange(32))
    assert np.array_equal(clib.vec("shim_rdbpot", x, e), tf.rounding_divide_by_pot(x, e))
    x, m, s = np.meshgrid(EDGE, MULTS, np.arange(-31, 31), indexing="ij")
    assert np.array_equal(clib.vec("shim_mbqm", x, m, s), tf.multiply_by_quantized_multiplier(x, m, s))
    x, m, s = np.meshgrid(EDGE, MULTS, np.arange(-31, 1), indexing="ij")
    assert np.array_equal(clib.vec("shim_mbqm_stoe", x, m, s),
                          tf.multiply_by_quantized_multiplier_smaller_than_one_exp(x, m, s))
    x, m, s = np.meshgrid(EDGE, MULTS, np.arange(0, 32), indexing="ij")
    assert np.array_equal(clib.vec("shim_mbqm_gto", x, m, s),
                          tf.multiply_by_quantized_multiplier_greater_than_one(x, m, s))
    x, m, s = np.meshgrid(EDGE, MULTS, np.arange(-31, 31), indexing="ij")
    for zp, lo, hi in [(0, -128, 127), (-128, -128, 127), (127, -100, 20), (I32_MAX, -128, 127)]:
        assert np.array_equal(clib.requant(x, m, s, zp, lo, hi), tf.requantize(x, m, s, zp, lo, hi))
    sm, c = np.meshgrid(EDGE, np.array([1, 2, 3, 4, 5, 9, 16, 25, 49, 1 << 20, I32_MAX]))
    assert np.array_equal(clib.vec("shim_avgpool_round", sm, c), tf.avgpool_round(sm, c))


@given(
    hnp.arrays(np.int32, 64, elements=i32),
    hnp.arrays(np.int32, 64, elements=st.integers(0, I32_MAX)),
    hnp.arrays(np.int32, 64, elements=st.integers(-31, 30)),
)
@fast
def test_c_matches_numpy_hypothesis(clib, x, m, s):
    assert np.array_equal(clib.vec("shim_srdhm", x, m), tf.saturating_rounding_doubling_high_mul(x, m))
    e = np.abs(s)
    assert np.array_equal(clib.vec("shim_rdbpot", x, e), tf.rounding_divide_by_pot(x, e))
    assert np.array_equal(clib.vec("shim_mbqm", x, m, s), tf.multiply_by_quantized_multiplier(x, m, s))
    assert np.array_equal(clib.vec("shim_mbqm_stoe", x, m, -e),
                          tf.multiply_by_quantized_multiplier_smaller_than_one_exp(x, m, -e))
    assert np.array_equal(clib.vec("shim_mbqm_gto", x, m, e),
                          tf.multiply_by_quantized_multiplier_greater_than_one(x, m, e))
    assert np.array_equal(clib.requant(x, m, s, -3, -128, 127), tf.requantize(x, m, s, -3, -128, 127))
    c = np.maximum(m, 1)
    assert np.array_equal(clib.vec("shim_avgpool_round", x, c), tf.avgpool_round(x, c))


def test_c_matches_numpy_bulk_random(clib):
    rng = np.random.default_rng(1234)
    n = 200_000
    x = rng.integers(I32_MIN, I32_MAX, n, endpoint=True)
    m = rng.integers(0, I32_MAX, n, endpoint=True)
    s = rng.integers(-31, 30, n, endpoint=True)
    small = rng.integers(-(1 << 16), 1 << 16, n)  # realistic accumulators
    for xx in (x, small):
        assert np.array_equal(clib.vec("shim_mbqm", xx, m, s), tf.multiply_by_quantized_multiplier(xx, m, s))
        assert np.array_equal(clib.vec("shim_srdhm", xx, m), tf.saturating_rounding_doubling_high_mul(xx, m))
    neg = -rng.integers(0, 1 << 31, n)
    for ib in (1, 4, 5, 6, 12):
        assert np.array_equal(clib.exp_neg(neg, ib), tf.exp_on_negative_values(neg, ib)), ib
    pos = rng.integers(0, I32_MAX, n, endpoint=True)
    assert np.array_equal(clib.vec("shim_one_over_one_plus_x", pos), tf.one_over_one_plus_x_for_x_in_0_1(pos))


@given(
    st.floats(0.0009765625, 2.0, width=32), st.integers(-128, 127),
    st.floats(0.0009765625, 2.0, width=32), st.integers(-128, 127),
    st.floats(0.0009765625, 2.0, width=32), st.integers(-128, 127),
)
@fast
def test_c_add_mul_match_numpy(clib, s1, z1, s2, z2, so, zo):
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128, 5))
    try:
        p = tf.add_params(s1, z1, s2, z2, so, zo)
    except ValueError:  # TFLM would TFLITE_CHECK-fail (real multiplier >= 1)
        p = None
    if p is not None:
        assert np.array_equal(clib.add(a, b, p, -100, 120), tf.add_int8(a, b, p, -100, 120))
    q = tf.mul_params(s1, z1, s2, z2, so, zo)
    assert np.array_equal(clib.mul(a, b, q), tf.mul_int8(a, b, q))


# ---------------------------------------------------------------------------
# (c) softmax
# ---------------------------------------------------------------------------

SOFTMAX_SCALES = [0.1, 0.05, 0.25, 1 / 16, 0.0390625, 0.003, 0.7, 2.5, 16.0, 40.0]


@given(
    hnp.arrays(np.int8, st.tuples(st.integers(1, 4), st.integers(1, 64)),
               elements=st.integers(-128, 127)),
    st.one_of(st.sampled_from(SOFTMAX_SCALES), st.floats(0.0009765625, 4.0, width=32)),
)
@fast
def test_softmax_c_matches_numpy_hypothesis(clib, x, scale):
    sp = tf.softmax_params(scale)
    assert np.array_equal(clib.softmax(x, sp), tf.softmax_int8(x, sp))


def test_softmax_c_matches_numpy_bulk_and_sanity(clib):
    rng = np.random.default_rng(7)
    for scale in SOFTMAX_SCALES:
        sp = tf.softmax_params(scale)
        for depth in (1, 2, 3, 10, 37, 100, 255, 511):
            x = rng.integers(-128, 128, (20, depth)).astype(np.int8)
            x[0] = x[0, 0]  # a uniform row
            x[1] = -128
            x[1, -1] = 127  # a one-hot row
            got = tf.softmax_int8(x, sp)
            assert np.array_equal(clib.softmax(x, sp), got)
            # argmax preserved: the output at an input maximum is the output maximum
            am = x.argmax(axis=-1)
            assert np.array_equal(got[np.arange(len(x)), am], got.max(axis=-1))
            # monotone: sorting the inputs sorts the outputs
            order = np.argsort(x, axis=-1, kind="stable")
            ranked = got[np.arange(len(x))[:, None], order].astype(int)
            assert np.all(np.diff(ranked, axis=-1) >= 0)
            total = (got.astype(int) + 128).sum(axis=-1)
            if scale <= 1.0 and depth <= 100:
                # each output rounds by <= 1/2 LSB (uniform rows hit that), + 1 for 127 saturation
                assert np.all(np.abs(total - 256) <= depth // 2 + 2), (scale, depth, total)


def test_softmax_depth_limit(clib):
    sp = tf.softmax_params(0.1)
    x = np.zeros((2, 600), dtype=np.int8)  # sum of exps = 600 >= 512
    with pytest.raises(ValueError):
        tf.softmax_int8(x, sp)
    ok = np.zeros((1, tf.SOFTMAX_MAX_SAFE_DEPTH), dtype=np.int8)
    tf.softmax_int8(ok, sp)  # largest depth that can never hit the TFLITE_CHECK
    assert np.array_equal(clib.softmax(x, sp), tf.softmax_int8(x, sp, clamp_exponent=True))


def test_softmax_numpy_axis_and_float_ballpark():
    rng = np.random.default_rng(3)
    sp = tf.softmax_params(0.1)
    x = rng.integers(-128, 128, (3, 8, 5)).astype(np.int8)
    a = tf.softmax_int8(x, sp, axis=1)
    b = np.moveaxis(tf.softmax_int8(np.moveaxis(x, 1, -1), sp), -1, 1)
    assert np.array_equal(a, b)
    xi = x.astype(np.int64)
    ref = np.exp(0.1 * (xi - xi.max(-1, keepdims=True)))
    ref = np.clip(np.round(ref / ref.sum(-1, keepdims=True) * 256) - 128, -128, 127)
    assert np.max(np.abs(tf.softmax_int8(x, sp).astype(int) - ref)) <= 1


# ---------------------------------------------------------------------------
# C compile hygiene: strict warnings, Cortex-M, no float/libm, ASan+UBSan
# ---------------------------------------------------------------------------

USE_ALL = """
#include "tinyaot_fixedpoint.h"
int32_t u1(int32_t a, int32_t b, int32_t c) {
  return tinyaot_mbqm(a, b, c) + tinyaot_srdhm(a, b) + tinyaot_rdbpot(a, c & 31) +
         tinyaot_mbqm_smaller_than_one_exp(a, b, -(c & 31)) +
         tinyaot_mbqm_greater_than_one(a, b, c & 31) + tinyaot_avgpool_round_tflite(a, b | 1);
}
int8_t u2(int32_t a, int32_t b, int32_t c) { return tinyaot_requant_tflite(a, b, c, 3, -128, 127); }
void u3(const int8_t *i, int8_t *o, int32_t n, int32_t m, int32_t s, int32_t d) {
  tinyaot_softmax_tflite_row_s8(i, o, n, m, s, d);
}
int8_t u4(int8_t x, int8_t y, int32_t k) {
  return (int8_t)(tinyaot_add_tflite_s8(x, y, k, k, k, 20, k, -1, k, -2, k, -3, -128, 127) +
                  tinyaot_mul_tflite_s8(x, y, k, k, k, k, -5, -128, 127));
}
"""


@pytest.mark.parametrize(
    "cc, flags",
    [
        ("gcc", ["-O2"]),
        ("gcc", ["-O0"]),
        ("arm-none-eabi-gcc", ["-O2", "-mcpu=cortex-m4", "-mthumb"]),
        ("arm-none-eabi-gcc", ["-Os", "-mcpu=cortex-m0", "-mthumb", "-mfloat-abi=soft"]),
    ],
)
def test_header_compiles_strict(build_dir, cc, flags):
    exe = shutil.which(cc)
    if not exe:
        pytest.skip(f"{cc} not available")
    src = build_dir / "use_all.c"
    src.write_text(USE_ALL)
    obj = build_dir / f"use_all_{cc}_{'_'.join(f.strip('-') for f in flags)}.o"
    r = subprocess.run([exe, *STRICT, "-Wsign-conversion", "-Wdouble-promotion", *flags,
                        f"-I{INCLUDE}", "-c", str(src), "-o", str(obj)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r.stderr
    if cc.startswith("arm"):
        nm = shutil.which("arm-none-eabi-nm")
        if nm:
            undef = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True,
                                   check=True).stdout.split()
            floaty = [u for u in undef if u.startswith(("__aeabi_f", "__aeabi_d", "__aeabi_i2d",
                                                        "__aeabi_ui2d", "__aeabi_l2d"))
                      or u in {"exp", "expf", "floor", "round", "ldexp", "frexp"}]
            assert not floaty, undef
    code = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    assert not re.search(r"\b(float|double|math\.h)\b", code)


def test_softmax_row_under_asan_ubsan(build_dir):
    gcc = shutil.which("gcc")
    if not gcc:
        pytest.skip("gcc not available")
    exe = build_dir / "softmax_asan"
    r = subprocess.run([gcc, *STRICT, "-O1", "-g", "-DSHIM_MAIN", "-fsanitize=address,undefined",
                        "-fno-sanitize-recover=all", f"-I{INCLUDE}", str(SHIM), "-o", str(exe)],
                       capture_output=True, text=True)
    if r.returncode != 0 and "asan" in r.stderr.lower():
        pytest.skip("AddressSanitizer runtime unavailable")
    assert r.returncode == 0, r.stderr
    rng = np.random.default_rng(11)
    for scale, depth in [(0.1, 1), (0.1, 7), (0.05, 64), (2.5, 300), (0.003, 511), (0.1, 600)]:
        sp = tf.softmax_params(scale)
        x = rng.integers(-128, 128, (5, depth)).astype(np.int8)
        x[0] = 0
        hdr = (len(x), depth, sp["input_multiplier"], sp["input_left_shift"], sp["diff_min"])
        payload = struct.pack("<5i", *hdr) + x.tobytes()
        run = subprocess.run([str(exe)], input=payload, capture_output=True)
        assert run.returncode == 0, run.stderr.decode()
        got = np.frombuffer(run.stdout, dtype=np.int8).reshape(x.shape)
        assert np.array_equal(got, tf.softmax_int8(x, sp, clamp_exponent=True))
