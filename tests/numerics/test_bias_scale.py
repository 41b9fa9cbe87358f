"""The int32 bias's scale must be input scale x weight scale (codegen/ops/bias_scale.py).

tflite: TFLite adds the int32 bias unscaled, so a model whose bias scale is
not s_x * s_w[c] (beyond the float32 rounding of that product) is rejected,
naming the node and the bias tensor. ort: onnxruntime decides per layer, and
tinyaot follows it: its QDQ selector keeps a Conv with a mismatched bias
scale in float (the bias then counts with its own scale), while QGemm
takes the raw int32 bias; either way the outputs are bit-exact with
onnxruntime's.
"""
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from codegen.compiler import compile_model
from codegen.errors import TinyAotError
from codegen.driver.verify import run_model

from tests.helpers import quantize_static_models as qmodels
from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, save
from tests.helpers.cli import assert_clean_error, run_cli


def layer_model(op, factor, seed=0):
    """DQ(x) -> Conv / Gemm / ConvTranspose (+ int32 bias of scale factor * s_x * s_w) -> Q."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("bias_scale")
    x = b.dq("x", 0.05, 3)
    if op == "Conv":
        w, s = b.weight((rng.normal(size=(4, 3, 3, 3)) * 0.4).astype(np.float32))
        shape, oshape, kw = (1, 3, 5, 5), (1, 4, 5, 5), {"pads": [1, 1, 1, 1]}
    elif op == "Gemm":
        w, s = b.weight((rng.normal(size=(6, 4)) * 0.4).astype(np.float32), axis=1)
        shape, oshape, kw = (2, 6), (2, 4), {}
    else:
        w, s = b.weight((rng.normal(size=(3, 4, 3, 3)) * 0.4).astype(np.float32), axis=1)
        shape, oshape, kw = (1, 3, 4, 4), (1, 4, 9, 9), {"strides": [2, 2]}
    bias_scale = (np.float32(0.05) * s).astype(np.float32) * np.float32(factor)
    bias = b.bias(rng.normal(size=4) * 0.5, bias_scale.astype(np.float32))
    y = b.op(op, [x, w, bias], **kw)
    b.q(y, 0.08, -2, out="y")
    return b.model("x", shape, "y", oshape)


@pytest.mark.parametrize("op", ["Conv", "Gemm", "ConvTranspose"])
def test_tflite_rejects_mismatched_bias_scale(op, tmp_path):
    path = save(layer_model(op, 2.0), tmp_path)
    with pytest.raises(TinyAotError) as e:
        compile_model(path, numerics="tflite")
    msg = str(e.value)
    assert f"node '{op.lower()}_" in msg and "tensor 'c_" in msg and "bias scale" in msg
    proc = run_cli("compile", path, "--numerics", "tflite", "-o", tmp_path / "out")
    assert_clean_error(proc, "bias scale", f"node '{op.lower()}_")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("op", ["Conv", "Gemm", "ConvTranspose"])
def test_tflite_accepts_the_float32_product_and_rejects_small_deviations(op, tmp_path):
    compile_model(save(layer_model(op, 1.0), tmp_path, "exact.onnx"), numerics="tflite")
    with pytest.raises(TinyAotError, match="bias scale"):
        compile_model(save(layer_model(op, 1.00001), tmp_path, "off.onnx"), numerics="tflite")


def test_tflite_rejects_bias_zero_point(tmp_path):
    m = layer_model("Conv", 1.0)
    for init in m.graph.initializer:  # the bias DequantizeLinear's int32 zero point
        a = numpy_helper.to_array(init)
        if a.dtype == np.int32 and a.ndim == 1 and not a.any() and a.size == 4:
            init.CopyFrom(numpy_helper.from_array(np.full(4, 7, np.int32), init.name))
    with pytest.raises(TinyAotError, match="zero point 0"):
        compile_model(save(m, tmp_path), numerics="tflite")


def scaled_bias_model(tmp_path, factor):
    """onnxruntime's quantize_static CNN with every int32 bias scale multiplied by factor."""
    path = qmodels.quantize(qmodels.cnn(), tmp_path / "q.onnx")
    m = onnx.load(str(path))
    inits = {i.name: i for i in m.graph.initializer}
    for n in m.graph.node:
        if (n.op_type == "DequantizeLinear" and n.input[0] in inits
                and numpy_helper.to_array(inits[n.input[0]]).dtype == np.int32):
            s = numpy_helper.to_array(inits[n.input[1]]) * np.float32(factor)
            inits[n.input[1]].CopyFrom(numpy_helper.from_array(s.astype(np.float32), n.input[1]))
    out = tmp_path / f"bias_x{factor}.onnx"
    onnx.save(m, str(out))
    return out


@pytest.mark.parametrize("factor", [1.0, 2.0, 0.37])
def test_ort_follows_onnxruntime_with_mismatched_bias_scale(factor, tmp_path):
    import onnxruntime as ort
    path = scaled_bias_model(tmp_path, factor)
    c = compile_model(path, numerics="ort")
    floats = {n.name: n.attrs["ort_float"] for n in c.graph.nodes
              if n.op in ("conv2d", "fully_connected")}
    # what onnxruntime did with the 1x1 conv 'pw' and the Gemm 'fc' (integer when exact)
    assert floats["pw"] == (factor != 1.0) and floats["fc"] is False
    xin = c.graph.tensors[c.graph.inputs[0]]
    x = all_int8_inputs(xin.shape, 6)
    outs, _ = run_model(path, x, board="host", numerics="ort", build_dir=tmp_path / "g",
                        compiled=c)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1  # tinyaot's --ort-threads default
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    s_in, z_in = xin.q.scalar()
    s_out, z_out = c.graph.tensors[c.graph.outputs[0]].q.scalar()
    for i, v in enumerate(x):  # float I/O model: feed the dequantized integers
        yf = sess.run(None, {"x": (v.astype(np.float32) - z_in) * s_in})[0]
        np.testing.assert_array_equal(outs[i].reshape(-1),
                                      np.clip(np.rint(yf / s_out) + z_out, -128, 127).reshape(-1))
    if factor != 1.0:
        with pytest.raises(TinyAotError, match="bias scale"):
            compile_model(path, numerics="tflite")
