"""Several inputs and outputs: each gets its own API entry (backend/io_api.py), the report
lists them, and verify / run / validate read and write the golden keys of every end
(driver/golden_keys.py: inputs, inputs1, ...; outputs_onnxruntime, outputs_onnxruntime1, ...;
output_names). Oracles: onnxruntime on the model (ort) and the numpy oracle (both numerics).
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from codegen.compiler import compile_model
from codegen.driver.verify import run_ends
from codegen.numerics.quant import quantize_end
from tests.helpers import ends_builders as E
from tests.helpers import ends_oracle as H

F32 = np.float32


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    p = tmp_path_factory.mktemp("several") / "several_ends.onnx"
    onnx.save(E.several_ends(), str(p))
    return p

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
    for k, name in enumerate(H.OUT_NAMES):
        assert f"output {k} '{name}'" in h
    io = c.report["io"]
    assert [e["onnx_name"] for e in io["outputs"]] == H.OUT_NAMES
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
    xs, zs = H.several_inputs()
    c = compile_model(model, numerics=numerics, io_buffers=io_buffers)
    outs, info = run_ends(model, [xs, zs], numerics=numerics, compiled=c,
                          build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(xs)
    assert [o.dtype for o in outs] == [F32, F32, np.int8, np.int8]
    for got, want in zip(outs, H.oracle(c, [xs, zs])):
        assert H.same_bits(got.reshape(want.shape), want)
    if numerics == "ort":
        for got, want in zip(outs, H.onnxruntime_outputs(model, xs, zs)):
            assert H.same_bits(got, want)

def test_the_quantized_form_of_several_ends(model, tmp_path):
    xs, zs = H.several_inputs()
    c = compile_model(model)
    qx = quantize_end("ort", xs, *E.X_Q)
    outs, _ = run_ends(model, [qx, zs], compiled=c, entry="quantized", build_dir=tmp_path / "g")
    want = H.oracle(c, [qx, zs], quantized=True)
    assert [o.dtype for o in outs] == [np.int8] * 4
    for got, w in zip(outs, want):
        assert H.same_bits(got.reshape(w.shape), w)
