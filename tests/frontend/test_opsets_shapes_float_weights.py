"""Frontend bullets of issue #3 checked end to end: opsets 10 to 25, symbolic
input dimensions and --input-shape, float weights behind a QuantizeLinear
(quantized at compile time exactly as onnxruntime does), and the hint for a
float op left inside a quantized region."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from codegen.cli import main
from codegen.compiler import compile_model
from codegen.errors import TinyAotError, UnsupportedError
from codegen.driver.verify import run_model

from tests.helpers.qdq_builder import all_int8_inputs, run_ort, save


def small_qdq(opset, sym_dim=False, no_shape=False, float_weights=False):
    """x int8 [1,3,6,6] -> DQ -> Conv(+bias) -> Relu -> Q -> DQ -> MaxPool -> Q -> y,
    per-tensor weights (per-channel DequantizeLinear needs opset 13)."""
    r = np.random.default_rng(opset)
    sx, sw, sy = np.float32(0.05), np.float32(0.01), np.float32(0.08)
    wf = (r.standard_normal((4, 3, 3, 3)) * 0.4).astype(np.float32)
    wq = np.clip(np.rint(wf / sw), -127, 127).astype(np.int8)
    bias = r.integers(-500, 500, 4).astype(np.int32)
    c = numpy_helper.from_array
    inits = [c(sx, "sx"), c(np.int8(2), "zx"), c(sw, "sw"), c(np.int8(0), "zw"),
             c(np.float32(sx * sw), "sb"), c(np.int32(0), "zb"), c(bias, "b"),
             c(sy, "sy"), c(np.int8(-5), "zy")]
    h = helper.make_node
    if float_weights:  # Q(float weights) -> DQ: quantized at compile time
        inits.append(c(wf, "wf"))
        nodes = [h("QuantizeLinear", ["wf", "sw", "zw"], ["w"], name="qw")]
    else:
        inits.append(c(wq, "w"))
        nodes = []
    nodes += [h("DequantizeLinear", ["x", "sx", "zx"], ["xf"], name="dqx"),
              h("DequantizeLinear", ["w", "sw", "zw"], ["wdq"], name="dqw"),
              h("DequantizeLinear", ["b", "sb", "zb"], ["bf"], name="dqb"),
              h("Conv", ["xf", "wdq", "bf"], ["cf"], pads=[1, 1, 1, 1], name="conv"),
              h("Relu", ["cf"], ["rf"], name="relu"),
              h("QuantizeLinear", ["rf", "sy", "zy"], ["r"], name="qr"),
              h("DequantizeLinear", ["r", "sy", "zy"], ["rdq"], name="dqr"),
              h("MaxPool", ["rdq"], ["pf"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
              h("QuantizeLinear", ["pf", "sy", "zy"], ["y"], name="qy")]
    if no_shape:
        xin = helper.make_tensor_value_info("x", TensorProto.INT8, None)
    else:
        xin = helper.make_tensor_value_info("x", TensorProto.INT8, ["N" if sym_dim else 1, 3, 6, 6])
    g = helper.make_graph(nodes, "small_qdq", [xin],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 4, 3, 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7 if opset <= 15 else 8
    if not no_shape:
        onnx.checker.check_model(m)
    return m


def host_equals_ort(path, tmp_path, **kw):
    c = compile_model(path, **kw)
    x = all_int8_inputs((1, 3, 6, 6), 8)
    outs, info = run_model(path, x, board="host", compiled=c, build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(x)
    want = run_ort(path, x)
    np.testing.assert_array_equal(outs.reshape(want.shape), want)
    return c


def _opset_model(opset):
    """small_qdq at `opset`; from 22 on the same graph (no operator it uses changed but by
    types it does not use) with the IR version onnx requires."""
    if opset <= 21:
        return small_qdq(opset)
    m = small_qdq(21)
    m.opset_import[0].version = opset
    m.ir_version = 10 if opset <= 23 else 11
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("opset", list(range(10, 26)))
def test_every_supported_opset_compiles_and_is_exact(opset, tmp_path):
    path = save(_opset_model(opset), tmp_path)
    c = host_equals_ort(path, tmp_path)
    assert [n.op for n in c.graph.nodes if n.op in ("conv2d", "maxpool")] == ["conv2d", "maxpool"]


def _per_channel(m, opset):
    """The same model with per-output-channel weight (and bias) scales, axis 0 (opset 13+)."""
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    sx = numpy_helper.to_array(next(i for i in m2.graph.initializer if i.name == "sx"))
    sw = np.array([0.01, 0.007, 0.013, 0.004], np.float32)
    new = {"sw": sw, "zw": np.zeros(4, np.int8), "sb": (sx * sw).astype(np.float32),
           "zb": np.zeros(4, np.int32)}
    for i in m2.graph.initializer:
        if i.name in new:
            i.CopyFrom(numpy_helper.from_array(new[i.name], i.name))
    for n in m2.graph.node:
        if n.name in ("dqw", "dqb"):
            n.attribute.append(helper.make_attribute("axis", 0))
    onnx.checker.check_model(m2)
    return m2


def _tflite_reference(m, x):
    """small_qdq under TFLite's integer arithmetic (tests/helpers/tflite_int_reference.py):
    conv + bias, per-channel multipliers, + zp_y clamped at zp_y (Relu), 2x2 max pool."""
    from tests.helpers import tflite_int_reference as ref
    c = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    sw = np.broadcast_to(c["sw"], (4,))
    acc = ref.conv_acc(x.reshape(-1, 3, 6, 6), c["w"].astype(np.int64), (1, 1, 1, 1), (1, 1), 1,
                       int(c["zx"]))
    zy = int(c["zy"])
    y = ref.requantize(acc, c["b"], c["sx"], sw, c["sy"], zy, zy, 127)
    return y.reshape(-1, 4, 3, 2, 3, 2).max(axis=(3, 5))


@pytest.mark.parametrize("opset", list(range(10, 26)))
def test_every_supported_opset_tflite_exact(opset, tmp_path):
    """`tflite` at every opset, per-tensor weights (and per channel from opset 13, where
    DequantizeLinear takes an axis): host C == the numpy TFLite reference; per channel
    under `ort` too (host C == onnxruntime)."""
    forms = [_opset_model(opset)]
    if opset >= 13:
        forms.append(_per_channel(forms[0], opset))
    x = all_int8_inputs((1, 3, 6, 6), 6)
    for k, m in enumerate(forms):
        path = save(m, tmp_path, f"m{k}.onnx")
        c = compile_model(path, numerics="tflite")
        outs, info = run_model(path, x, board="host", numerics="tflite", compiled=c,
                               build_dir=tmp_path / f"gen{k}")
        assert info["status"] == [0] * len(x)
        want = _tflite_reference(m, x)
        np.testing.assert_array_equal(outs.reshape(want.shape), want)
        if k:
            host_equals_ort(path, tmp_path / "ort")


def test_blocked_quantization_is_refused(tmp_path):
    """Opset 21's blocked DequantizeLinear (block_size): one line naming the node."""
    m = small_qdq(21)
    for i in m.graph.initializer:
        if i.name in ("sw", "zw"):
            a = numpy_helper.to_array(i)
            i.CopyFrom(numpy_helper.from_array(np.full((4, 1, 3, 3), a, a.dtype), i.name))
    n = next(n for n in m.graph.node if n.name == "dqw")
    n.attribute.extend([helper.make_attribute("axis", 1), helper.make_attribute("block_size", 3)])
    onnx.checker.check_model(m, full_check=True)
    with pytest.raises(TinyAotError, match="DequantizeLinear 'dqw': blocked quantization "
                                           r"\(block_size\) is not supported: quantize per "
                                           "tensor or per channel"):
        compile_model(save(m, tmp_path))


@pytest.mark.parametrize("opset", [9, 26])
def test_opsets_outside_the_range_are_refused(opset, tmp_path):
    m = small_qdq(13)
    m.opset_import[0].version = opset
    path = save(m, tmp_path)
    with pytest.raises(TinyAotError, match=f"opset {opset} is not supported \\(supported: 10-25\\)"):
        compile_model(path)


@pytest.mark.parametrize("node,attr,value", [
    ("qr", "precision", onnx.TensorProto.FLOAT16),
    ("dqr", "output_dtype", onnx.TensorProto.FLOAT16),
])
def test_opset_23_attributes_other_than_float32_are_refused(node, attr, value, tmp_path):
    """Opset 23's QuantizeLinear `precision` / DequantizeLinear `output_dtype`: float32 (or
    unset) compiles, any other type is refused naming the node."""
    m = _opset_model(23)
    n = next(n for n in m.graph.node if n.name == node)
    n.attribute.append(helper.make_attribute(attr, onnx.TensorProto.FLOAT))
    host_equals_ort(save(m, tmp_path, "float32.onnx"), tmp_path)
    n.attribute[-1].i = value
    with pytest.raises(UnsupportedError, match=f"{node}'.*other than float32 \\({attr}"):
        compile_model(save(m, tmp_path, "other.onnx"))


# ---- symbolic / missing input dimensions --------------------------------------

def test_symbolic_dim_names_the_input_and_suggests_input_shape(tmp_path, capsys):
    path = save(small_qdq(13, sym_dim=True), tmp_path)
    with pytest.raises(TinyAotError) as e:
        compile_model(path)
    msg = str(e.value)
    assert "tensor 'x'" in msg and "symbolic or missing dimension (N)" in msg
    assert "--input-shape x=1,3,6,6" in msg
    assert main(["compile", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tinyaot: error: ") and "\n" not in err and "--input-shape x=" in err
    assert not (tmp_path / "out").exists()


def test_input_shape_option_fixes_it(tmp_path, capsys):
    path = save(small_qdq(13, sym_dim=True), tmp_path)
    host_equals_ort(path, tmp_path, input_shapes={"x": [1, 3, 6, 6]})
    out = tmp_path / "out"
    assert main(["compile", str(path), "--input-shape", "x=1,3,6,6", "-o", str(out)]) == 0
    assert (out / "m.c").exists() and "M_INPUT_SIZE 108u" in (out / "m.h").read_text()


def test_missing_shape_suggests_input_shape(tmp_path):
    path = save(small_qdq(13, no_shape=True), tmp_path)
    with pytest.raises(TinyAotError, match="tensor 'x': input has no shape; give one with "
                                           "--input-shape x=1,3,32,32"):
        compile_model(path)


@pytest.mark.parametrize("arg,match", [("y=1,3,6,6", "names 'y', but the model's inputs are: x"),
                                       ("x=1,0,6,6", "every dimension must be > 0"),
                                       ("x1,3", "wants NAME=d0,d1"),
                                       ("x=1,a", "bad dimensions")])
def test_bad_input_shape_option_is_a_clean_error(arg, match, tmp_path, capsys):
    path = save(small_qdq(13, sym_dim=True), tmp_path)
    assert main(["compile", str(path), "--input-shape", arg, "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and match in err
    assert not (tmp_path / "o").exists()


# ---- float weights behind a QuantizeLinear -------------------------------------

def ort_quantize_linear(wf, s, zp, axis=None):
    """onnxruntime's own QuantizeLinear of a float array (the oracle)."""
    import onnxruntime as ort
    kw = {} if axis is None else {"axis": axis}
    g = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["w", "s", "z"], ["q"], **kw)], "q",
        [helper.make_tensor_value_info("w", TensorProto.FLOAT, list(wf.shape))],
        [helper.make_tensor_value_info("q", TensorProto.INT8, list(wf.shape))],
        [numpy_helper.from_array(np.asarray(s, np.float32), "s"),
         numpy_helper.from_array(np.asarray(zp, np.int8), "z")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"w": wf})[0]


def test_float_weights_behind_quantizelinear_are_quantized_like_onnxruntime(tmp_path):
    m = small_qdq(13, float_weights=True)
    wf_init = next(i for i in m.graph.initializer if i.name == "wf")
    wf = numpy_helper.to_array(wf_init).copy()
    # ties (k + 0.5 steps: half to even), saturation and negative zero
    wf.reshape(-1)[:6] = np.array([0.005, 0.015, -0.025, 5.0, -5.0, -0.0], np.float32)
    wf_init.CopyFrom(numpy_helper.from_array(wf, "wf"))
    path = save(m, tmp_path)
    c = host_equals_ort(path, tmp_path)
    wq = [t for t in c.graph.tensors.values() if t.is_const and t.dtype == "int8"
          and t.data.size == wf.size]
    assert wq, "the quantized weights are a compile-time constant"
    want = ort_quantize_linear(wf, 0.01, 0)
    assert want.reshape(-1)[:6].tolist() == [0, 2, -2, 127, -128, 0]
    np.testing.assert_array_equal(wq[0].data.reshape(want.shape), want)


def test_float_weights_per_channel_like_onnxruntime():
    from codegen.frontend.qdq_lowering import quantize_like_onnx
    from codegen.ir import QParams
    r = np.random.default_rng(2)
    wf = (r.standard_normal((4, 3, 3, 3)) * 0.5).astype(np.float32)
    s = np.array([0.01, 0.004, 0.02, 0.5], np.float32)
    wf[0, 0, 0, :3] = [0.005, 0.015, 2.0]  # ties and saturation in channel 0
    zp = np.array([0, 3, -4, 1], np.int8)
    got = quantize_like_onnx(wf, QParams(s, zp.astype(np.int32), 0), "int8")
    np.testing.assert_array_equal(got, ort_quantize_linear(wf, s, zp, axis=0))


# ---- a float op left inside the quantized region -------------------------------

def test_float_op_inside_quantized_region_names_node_and_hint(tmp_path):
    """DQ -> Sigmoid -> Tanh -> Q: Sigmoid's float result is never quantized; with
    --no-float-fallback that stays an error (the fallback runs Tanh in float32)."""
    c = numpy_helper.from_array
    h = helper.make_node
    g = helper.make_graph(
        [h("DequantizeLinear", ["x", "s", "z"], ["xf"], name="dq"),
         h("Sigmoid", ["xf"], ["sg"], name="sigmoid"),
         h("Tanh", ["sg"], ["t"], name="tanh"),
         h("QuantizeLinear", ["t", "s", "z"], ["y"], name="q")], "float_inside",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 8])],
        [c(np.float32(0.05), "s"), c(np.int8(0), "z")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedError) as e:
        compile_model(save(m, tmp_path), float_fallback=False)
    msg = str(e.value)
    assert "Tanh 'tanh': input 'sg' is a float result without QuantizeLinear: quantize this " \
           "node or drop --no-float-fallback" in msg


def test_float_result_at_the_output_names_node_and_hint(tmp_path):
    """With --no-float-fallback, a float graph output no DequantizeLinear makes stays an
    error (the fallback runs the Sigmoid in float32)."""
    c = numpy_helper.from_array
    h = helper.make_node
    g = helper.make_graph(
        [h("DequantizeLinear", ["x", "s", "z"], ["xf"], name="dq"),
         h("Sigmoid", ["xf"], ["y"], name="sigmoid")], "float_out",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [c(np.float32(0.05), "s"), c(np.int8(0), "z")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedError, match="lut 'sigmoid': float result reaches the graph "
                                               "output without QuantizeLinear: quantize this node "
                                               "or drop --no-float-fallback"):
        compile_model(save(m, tmp_path), float_fallback=False)
