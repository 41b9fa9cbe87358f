"""tinyaot_quantize_s8 / tinyaot_dequantize_s8, the kernels of a model's float ends: against
the numpy oracle of onnxruntime's QuantizeLinear (half to even) and TFLite's QUANTIZE (half
away from zero), DequantizeLinear and TFLite's DEQUANTIZE, on inputs with exact ties.
"""
from __future__ import annotations

import numpy as np
import pytest

from codegen.backend.io_api import QuantizeParams
from codegen.numerics.quant import quantize_end
from tests.helpers import ends_builders as E
from tests.helpers import ends_oracle as H
from tests.helpers import kernels_cffi as K

F32 = np.float32


def test_the_inputs_separate_the_two_roundings():
    """The test inputs are not vacuous: on them onnxruntime's and TFLite's quantization
    differ, and both differ from rounding half up."""
    x = E.float_inputs(*E.X_Q, 24)[0]
    a = quantize_end("ort", x, *E.X_Q)
    b = quantize_end("tflite", x, *E.X_Q)
    v = x.astype(F32) / E.X_Q[0]
    assert np.all(v - np.floor(v) == 0.5)  # exact ties
    assert (a != b).sum() >= 4
    assert np.array_equal(a, np.clip(np.rint(v.astype(np.float64)) + E.X_Q[1], -128, 127))

@pytest.mark.parametrize("rounding,numerics", [(0, "ort"), (1, "tflite")])
@pytest.mark.parametrize("qtype", ["int8", "uint8"])
def test_quantize_kernel_equals_the_oracle(rounding, numerics, qtype):
    s, zp = (F32(0.05), -3) if qtype == "int8" else (F32(0.031), 131)
    lo, hi = (-128, 127) if qtype == "int8" else (0, 255)
    x = np.concatenate([E.float_inputs(s, zp, 64, seed=9).reshape(-1), [np.nan]]).astype(F32)
    got = K.quantize_s8(dict(scale=s, zero_point=zp, qmin=lo, qmax=hi, rounding=rounding), x)
    got = got.view(np.uint8) if qtype == "uint8" else got
    want = quantize_end(numerics, x[:-1], s, zp, qtype)
    assert np.array_equal(got[:-1], want)
    assert int(got[-1]) == lo  # NaN: to qmin, as MLAS (x86) takes it

@pytest.mark.parametrize("qtype", ["int8", "uint8"])
def test_dequantize_kernel_equals_onnxruntime_and_tflite_formula(qtype):
    s, zp = (F32(0.0123), -7) if qtype == "int8" else (F32(0.0123), 121)
    q = np.arange(-128, 128, dtype=np.int8) if qtype == "int8" else np.arange(256, dtype=np.uint8)
    lo, hi = (-128, 127) if qtype == "int8" else (0, 255)
    got = K.dequantize_s8(dict(scale=s, zero_point=zp, qmin=lo, qmax=hi, rounding=0),
                          q.view(np.int8))
    want = (q.astype(np.int32) - zp).astype(F32) * s  # DequantizeLinear
    tfl = (np.float64(s) * (q.astype(np.int32) - zp)).astype(F32)  # TFLite's double product
    assert H.same_bits(got, want) and H.same_bits(got, tfl)

def test_quantize_params_record_is_the_c_struct():
    import dataclasses
    assert [f.name for f in dataclasses.fields(QuantizeParams)] == \
        K.struct_fields(QuantizeParams.CTYPE)
