"""numerics/tflm_float.py and its C twin: std::exp as TFLite Micro's host build calls it.

* the numpy glibc_expf equals the host's own libm expf (ctypes) on 600 000 floats over
  expf's whole range plus its edge cases: that is what TFLite Micro's float kernels call
  on an x86-64 glibc machine with FMA (the FMA build rounds x * 32/ln2 - k once);
* the C tinyaot_glibc_expf (through tinyaot_unary_f32) equals the numpy twin on the same
  floats, and the numpy glibc_logf equals the host's logf;
* glibc_tanhf / glibc_expm1f (the fdlibm float port glibc ships up to 2.40; TFLite Micro's
  float TANH calls std::tanh) equal the host's libm on 400 000 floats when the host's
  glibc is that one (all 2^32 floats were compared once with a C loop against glibc 2.36,
  no difference), and the C twins (tinyaot_unary_f32 codes 12, 13: float LOGISTIC, tanhf)
  equal the numpy twins; TFLite Micro's own float LOGISTIC / TANH are compared with the
  twins in tests/frontend/test_tflite_float_region.py;
* TFLite Micro's Softmax / LogSoftmax rows in numpy are checked against TFLite Micro's own
  interpreter in tests/ops/test_softmax_f32.py.
"""
import ctypes
import ctypes.util

import numpy as np
import pytest

from codegen.numerics.mlas_float import glibc_logf
from codegen.numerics.tflm_float import glibc_expf, glibc_expm1f, glibc_tanhf, tflm_logistic

from tests.helpers.kernels_cffi import TINYAOT_OK, ffi, kernels
from tests.helpers.tflm_oracle import fdlibm_glibc

F32 = np.float32
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.0, -88.0, 88.72283, 88.72284,
                  -103.28, -103.97, -103.98, -104.0, 1e-30, -1e-30, 1e-45, 0.5, -0.5, 1.0,
                  -63.09946], F32)


def _floats(n=300_000, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.uniform(-105, 90, n), rng.uniform(-20, 0, n)]).astype(F32)


def _host_libm(fn):
    if not ctypes.util.find_library("m") or "glibc" not in " ".join(
            __import__("platform").libc_ver()):
        pytest.skip("the host libm is not glibc")
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    f = getattr(libm, fn)
    f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
    return np.frompyfunc(lambda v: f(v), 1, 1)


def _has_fma():
    try:
        return " fma " in open("/proc/cpuinfo").read().replace("\n", " ")
    except OSError:
        return False


def _same(a, b):
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    return (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))


def test_glibc_expf_equals_the_host_libm():
    if not _has_fma():
        pytest.skip("glibc runs its non-FMA expf here; tflm_float reproduces the FMA build")
    expf = _host_libm("expf")
    x = np.concatenate([_floats(), EDGES])
    with np.errstate(over="ignore"):
        want = expf(x.astype(np.float64)).astype(F32)
    ok = _same(glibc_expf(x), want)
    assert ok.all(), f"{(~ok).sum()} differ, e.g. x = {x[~ok][:4]}"


def test_glibc_logf_equals_the_host_libm():
    logf = _host_libm("logf")
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(0, 1000, 150_000).astype(F32),
                        (rng.integers(1, 0x7f800000, 150_000).astype(np.uint32)).view(F32),
                        np.array([0.0, -0.0, 1.0, np.inf, -1.0, np.nan, 1e-45], F32)])
    with np.errstate(divide="ignore", invalid="ignore"):
        want = logf(x.astype(np.float64)).astype(F32)
    ok = _same(glibc_logf(x), want)
    assert ok.all(), f"{(~ok).sum()} differ, e.g. x = {x[~ok][:4]}"


def test_c_glibc_expf_equals_its_numpy_twin():
    x = np.concatenate([_floats(200_000, seed=2), EDGES])
    out = np.empty_like(x)
    rc = kernels().call("tinyaot_unary_f32", 11, len(x), ffi.from_buffer("float[]", x),
                        ffi.from_buffer("float[]", out))
    assert rc == TINYAOT_OK
    ok = _same(out, glibc_expf(x))
    assert ok.all(), f"{(~ok).sum()} differ, e.g. x = {x[~ok][:4]}"


def _float_cases(seed):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(F32)
    return np.concatenate([bits, rng.uniform(-25, 25, 100_000).astype(F32),
                           rng.uniform(-1.5, 1.5, 100_000).astype(F32),
                           np.array([22.0, -22.0, 2.0**-55, -(2.0**-56), 2.0**-25, 0.3465736,
                                     0.3465737, 1.0397208, 27 * 0.6931472, 16.619047, 16.61905,
                                     -9.0, -9.000001], F32), EDGES])


@pytest.mark.parametrize("fn", ["tanhf", "expm1f"])
def test_glibc_tanhf_expm1f_equal_the_host_libm(fn):
    if not fdlibm_glibc():
        pytest.skip("the host's libm is not glibc <= 2.40 (fdlibm tanhf / expm1f)")
    f = _host_libm(fn)
    x = _float_cases(3)
    want = np.asarray(f(x), dtype=F32)
    ok = _same((glibc_tanhf if fn == "tanhf" else glibc_expm1f)(x), want)
    assert ok.all(), f"{(~ok).sum()} differ, e.g. x = {x[~ok][:4]}"


@pytest.mark.parametrize("code,twin", [(12, tflm_logistic), (13, glibc_tanhf)],
                         ids=["logistic", "tanhf"])
def test_c_logistic_and_tanhf_equal_their_numpy_twins(code, twin):
    x = _float_cases(4)
    out = np.empty_like(x)
    rc = kernels().call("tinyaot_unary_f32", code, len(x), ffi.from_buffer("float[]", x),
                        ffi.from_buffer("float[]", out))
    assert rc == TINYAOT_OK
    ok = _same(out, twin(x))
    assert ok.all(), f"{(~ok).sum()} differ, e.g. x = {x[~ok][:4]}"
