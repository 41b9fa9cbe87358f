"""Float ends: a float graph input with a QuantizeLinear behind it and a float output after a
final DequantizeLinear, taken and returned as floats by <name>_run (backend/io_api.py).

Oracles: onnxruntime on the model itself (ort), TFLite Micro's interpreter on a .tflite with
QUANTIZE and DEQUANTIZE (tflite), and the numpy oracle (numerics/quant.py quantize_end /
dequantize_end around the integer graph's run_graph) in both numerics. The inputs hold exact
ties, where the two numerics round differently, so a quantizer with the wrong rounding fails.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.driver.verify import run_ends, run_model
from codegen.numerics.quant import quantize_end
from codegen.reference import run_graph
from tests.helpers import ends_builders as E
from tests.helpers import ends_oracle as H
from tests.helpers.env import REPO

F32 = np.float32


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    p = tmp_path_factory.mktemp("dense") / "dense_float_ends.onnx"
    import onnx
    onnx.save(E.dense_float_ends(), str(p))
    return p

def test_the_api_takes_what_the_model_declares(dense):
    c = compile_model(dense)
    h, name = c.module.header, c.module.name
    assert f"int {name}_run(const float *input, float *output);" in h
    assert f"int {name}_run_quantized(const int8_t *input, int8_t *output);" in h
    assert f"int8_t *{name}_input(void);" in h and f"int {name}_invoke(void);" in h
    assert {"tinyaot_quantize_s8", "tinyaot_dequantize_s8"} <= set(c.report["kernels"])
    io = c.report["io"]
    assert io["inputs"][0]["api_type"] == "float32" and io["inputs"][0]["dtype"] == "int8"
    assert io["outputs"][0]["onnx_name"] == "StatefulPartitionedCall:0"
    user = compile_model(dense, io_buffers="user")
    assert f"int {name}_run(const float *input, float *output);" in user.module.header
    assert f"static int8_t {name}_q_input[24];" in user.module.source
    # --io int8: every end quantized, the C of a model with integer ends
    q = compile_model(dense, io="int8")
    assert f"int {name}_run(const int8_t *input, int8_t *output);" in q.module.header
    assert "_run_quantized" not in q.module.header and "quantize_s8" not in q.module.source
    assert "input boundary: the model's float input 'serving_default_x:0' is quantized by the " \
           "caller" in q.module.header

@pytest.mark.parametrize("io_buffers", ["arena", "user"])
def test_float_ends_equal_onnxruntime(dense, io_buffers, tmp_path):
    xs = E.float_inputs(*E.X_Q, 24)
    c = compile_model(dense, io_buffers=io_buffers)
    (got,), info = run_ends(dense, [xs], compiled=c, build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(xs) and got.dtype == F32
    want = np.stack([o[0] for o in H.ort_runs(dense, [{"serving_default_x:0": x} for x in xs])])
    assert H.same_bits(got, want)
    assert H.same_bits(got.reshape(len(xs), -1), H.oracle(c, [xs])[0])

def test_float_ends_tflite_numerics_equal_the_oracle(dense, tmp_path):
    xs = E.float_inputs(*E.X_Q, 24)
    c = compile_model(dense, numerics="tflite")
    (got,), _ = run_ends(dense, [xs], numerics="tflite", compiled=c, build_dir=tmp_path / "gen")
    assert H.same_bits(got.reshape(len(xs), -1), H.oracle(c, [xs])[0])
    ort_c = compile_model(dense)  # the rounding is the numerics': ties end elsewhere
    assert not np.array_equal(H.oracle(ort_c, [xs])[0], H.oracle(c, [xs])[0])

def test_the_quantized_form_is_the_same_inference(dense, tmp_path):
    """<name>_run_quantized / _invoke on the quantized tensors: the H.oracle's integers."""
    xs = E.float_inputs(*E.X_Q, 24)
    c = compile_model(dense)
    qx = quantize_end("ort", xs, *E.X_Q)
    got, _ = run_model(dense, qx, compiled=c, build_dir=tmp_path / "gen")
    g = c.graph
    want = np.stack([run_graph(g, "ort", {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in qx])
    assert H.same_bits(got, want.reshape(got.shape))

def test_io_float_on_a_float_model_is_run(dense):
    c = compile_model(dense, io="float")
    name = c.module.name
    assert f"int {name}_run_f32(const float *input, float *output);" in c.module.header
    assert f"return {name}_run(input, output);" in c.module.source

def quantize_tflite_file(n, s, zp):
    """x float [1, n] -> QUANTIZE -> q int8 -> DEQUANTIZE -> y float; outputs q and y
    (TFLite's schema classes, shipped by the tflite-micro package)."""
    import flatbuffers
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as S

    def tensor(name, typ, buf, q=None):
        t = S.TensorT()
        t.name, t.shape, t.type, t.buffer = name, [1, n], typ, buf
        if q is not None:
            t.quantization = S.QuantizationParametersT()
            t.quantization.scale, t.quantization.zeroPoint = [float(q[0])], [int(q[1])]
        return t

    m = S.ModelT()
    m.version = 3
    m.buffers = [S.BufferT() for _ in range(4)]
    codes = []
    for op in (S.BuiltinOperator.QUANTIZE, S.BuiltinOperator.DEQUANTIZE):
        code = S.OperatorCodeT()
        code.builtinCode = code.deprecatedBuiltinCode = op
        code.version = 1
        codes.append(code)
    m.operatorCodes = codes
    g = S.SubGraphT()
    g.tensors = [tensor("x", S.TensorType.FLOAT32, 1), tensor("q", S.TensorType.INT8, 2, (s, zp)),
                 tensor("y", S.TensorType.FLOAT32, 3)]
    ops = []
    for k, (i, o) in enumerate(((0, 1), (1, 2))):
        op = S.OperatorT()
        op.opcodeIndex, op.inputs, op.outputs = k, [i], [o]
        ops.append(op)
    g.operators, g.inputs, g.outputs = ops, [0], [1, 2]
    m.subgraphs = [g]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())

@pytest.mark.parametrize("scale,zp", [(F32(0.05), -3), (F32(0.003455499652773142), -111)])
def test_quantize_dequantize_equal_tflite_micro_and_onnxruntime(scale, zp, tmp_path):
    rt = pytest.importorskip("tflite_micro", reason="pip install tflite-micro").runtime
    import onnx
    n = 48
    xs = E.float_inputs(scale, zp, n, seed=4)
    path = tmp_path / "qdq.onnx"
    onnx.save(E.quantize_dequantize(n, scale, zp), str(path))
    interp = rt.Interpreter.from_bytes(quantize_tflite_file(n, scale, zp))
    tflm_q, tflm_y = [], []
    for x in xs:
        if not np.all(np.isfinite(x)) or np.abs(x).max() > 1e6:
            x = np.where(np.isfinite(x) & (np.abs(x) < 1e6), x, F32(0))  # TFLite's cast is UB there
        interp.reset()
        interp.set_input(np.ascontiguousarray(x, dtype=F32), 0)
        interp.invoke()
        tflm_q.append(np.asarray(interp.get_output(0)).copy())
        tflm_y.append(np.asarray(interp.get_output(1)).copy())
    finite = np.stack([np.where(np.isfinite(x) & (np.abs(x) < 1e6), x, F32(0)) for x in xs])
    (q, y), _ = run_ends(path, [finite], numerics="tflite", build_dir=tmp_path / "tfl")
    assert H.same_bits(q.reshape(len(xs), -1), np.stack(tflm_q).reshape(len(xs), -1))
    assert H.same_bits(y.reshape(len(xs), -1), np.stack(tflm_y).reshape(len(xs), -1))
    (q, y), _ = run_ends(path, [xs], numerics="ort", build_dir=tmp_path / "ort")
    want = H.ort_runs(path, [{"x": x} for x in xs])
    assert H.same_bits(q, np.stack([w[0] for w in want]))
    assert H.same_bits(y, np.stack([w[1] for w in want]))

def test_uint8_float_ends_equal_onnxruntime(tmp_path):
    """quantize_static with QUInt8 activations: float x -> QuantizeLinear (uint8) ... -> float y."""
    from tests.helpers import quantize_static_models as qmodels
    path = qmodels.quantize(qmodels.cnn(softmax=True), tmp_path / "u8.onnx", "QDQ", "QUInt8")
    c = compile_model(path)
    assert "const float *input, float *output" in c.module.header
    assert c.report["io"]["inputs"][0]["dtype"] == "uint8"
    xs = qmodels.sample_inputs(4)
    xs[0] = xs[0] * 1000  # saturating inputs
    (got,), _ = run_ends(path, [xs], compiled=c, build_dir=tmp_path / "gen")
    want = np.stack([o[0] for o in H.ort_runs(path, [{"x": x} for x in xs])])
    assert H.same_bits(got, want)

def _cli_compile(path, tmp_path):
    return subprocess.run([sys.executable, "-m", "codegen.cli", "compile", str(path), "-o",
                           str(tmp_path / "out")], cwd=REPO, capture_output=True, text=True)

def _bad_float_model(kind):
    g = E.Graph("bad")
    x = g.input("x", [1, 8])
    if kind == "twice":
        a = g.dq(g.q(x, F32(0.05), 0), F32(0.05), 0)
        b = g.dq(g.q(x, F32(0.07), 0), F32(0.07), 0)
        g.q(g.node("Add", [a, b]), F32(0.1), 0, out="y")
        g.output("y", [1, 8], 3)
    elif kind == "no_q":
        g.node("Relu", [x], out="y")
        g.output("y", [1, 8])
    elif kind == "axis_out":
        q = g.q(x, F32(0.05), 0)
        g.dq(q, np.full(8, 0.05, F32), np.zeros(8, np.int8), out="y", axis=1)
        g.output("y", [1, 8])
    return g.model()

@pytest.mark.parametrize("kind,words", [
    ("twice", "quantized twice with different parameters"),
    ("no_q", "a float model (no QuantizeLinear / DequantizeLinear)"),  # quantize it first
    ("axis_out", "dequantized per axis"),
])
def test_float_ends_it_cannot_take_are_one_line(kind, words, tmp_path):
    import onnx
    p = tmp_path / f"{kind}.onnx"
    onnx.save(_bad_float_model(kind), str(p))
    r = _cli_compile(p, tmp_path)
    err = r.stderr.strip()
    assert r.returncode == 2 and "\n" not in err and words in err, err
    assert not (tmp_path / "out").exists()

def test_float_input_quantized_twice_alike_is_one_input(tmp_path):
    import onnx
    g = E.Graph("twice_alike")
    x = g.input("x", [1, 8])
    a = g.dq(g.q(x, F32(0.05), 1), F32(0.05), 1)
    b = g.dq(g.q(x, F32(0.05), 1), F32(0.05), 1)
    g.dq(g.q(g.node("Add", [a, b]), F32(0.1), 0), F32(0.1), 0, out="y")
    g.output("y", [1, 8])
    p = tmp_path / "alike.onnx"
    onnx.save(g.model(), str(p))
    xs = E.float_inputs(F32(0.05), 1, 8)
    c = compile_model(p)
    assert len(c.graph.inputs) == 1
    (got,), _ = run_ends(p, [xs], compiled=c, build_dir=tmp_path / "gen")
    assert H.same_bits(got, np.stack([o[0] for o in H.ort_runs(p, [{"x": x} for x in xs])]))

@pytest.mark.shared
@pytest.mark.parametrize("key", sorted(H.FLOAT_MODELS))
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_shared_float_models_verify_on_host(key, numerics):
    model, golden = H.shared_float_model(key)
    gkey = H.ORT_KEY[key] if numerics == "ort" else "outputs_tflm"
    r = H.verify_cli(model, golden, "host", numerics, gkey)
    assert r["outputs_compared"][0]["compared_as"] == "float32"
    assert r["mismatches"] == 0 and r["vectors_passed"] == r["vectors"] == 8, r
    # the int8 tensor before the final DequantizeLinear, compared as integers
    rq = H.verify_cli(model, golden, "host", numerics, "outputs_q")
    if numerics == "tflite":  # TFLite Micro's own tensor
        assert rq["outputs_compared"][0]["compared_as"] == "int8 (requantized)"
        assert rq["mismatches"] == 0


@pytest.mark.shared
@pytest.mark.parametrize("key", sorted(H.FLOAT_MODELS))
def test_shared_float_models_tflite_form_verify_on_host(key):
    """The .tflite original declares the same float ends (QUANTIZE after the input,
    DEQUANTIZE before the output): its API takes the golden's float inputs and returns
    floats equal to TFLite Micro's, bit for bit."""
    model, golden = H.shared_float_model(key, ".tflite")
    r = H.verify_cli(model, golden, "host", "tflite", "outputs_tflm")
    assert r["outputs_compared"][0]["compared_as"] == "float32"
    assert r["mismatches"] == 0 and r["vectors_passed"] == r["vectors"] == 8, r
