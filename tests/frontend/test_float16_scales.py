"""float16 quantization scales (opset 19+): DequantizeLinear / QuantizeLinear with a
float16 scale, as onnxruntime.quantization writes them for a float16 model, or a QDQ
model whose scales were converted to float16.

Every float16 value is a float32 one, so the front end takes the scales as float32,
exactly. Under `tflite` that is the model's meaning: the layer is TFLite's integer
arithmetic with those scales (oracle: tests/helpers/tflite_int_reference.py, a numpy
reference written from TFLite's kernels). Under `ort` it is not: a float16 scale makes
DequantizeLinear's output float16, and onnxruntime's default session rounds the values
between DequantizeLinear and QuantizeLinear to float16 (it casts around its float32
kernels), so its outputs differ from the same model computed in float32 (checked below,
against onnxruntime itself): `--numerics ort` refuses in one line saying what to do.
"""
import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from tests.helpers import quantize_static_models as qmodels
from tests.helpers import tflite_int_reference as tfl_ref
from tests.helpers.cli import assert_clean_error, run_cli
from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save
from tests.helpers.saturating_models import _identity_conv as identity_conv

# scales exact in float16, and so is every bias scale s_x * s_w[c] (TFLite's rule)
X_Q = (3 / 64, 3)
Y_Q = (7 / 64, -2)
IN_SHAPE, OUT_SHAPE = (1, 4, 6, 6), (1, 6, 6, 6)


def _conv_model(between=False, seed=0):
    """x -> DQ -> Conv(DQ(w) per channel, DQ(bias)) -> Relu -> Q -> y, float32 scales
    (between: the conv between two int8 identity convs, no Relu, where onnxruntime runs
    integers or float as it chooses). -> (model, w int8, bias int32, s_w)."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("f16_scales")
    x = b.dq("x", *X_Q)
    if between:
        x = identity_conv(b, x, IN_SHAPE[1], X_Q[0])
    sw = (rng.integers(1, 16, size=6) / 512).astype(np.float32)
    w = rng.integers(-127, 128, size=(6, 4, 3, 3)).astype(np.int8)
    wd = b.dq(b.const_int(w, np.int8), sw, np.zeros(6, np.int8), axis=0)
    bscale = (np.float32(X_Q[0]) * sw).astype(np.float32)
    bq = rng.integers(-400, 400, size=6).astype(np.int32)
    bias = b.dq(b.const_int(bq, np.int32), bscale, np.zeros(6, np.int32), axis=0, dtype=np.int32)
    f = b.op("Conv", [x, wd, bias], pads=[1, 1, 1, 1])
    if between:
        f = identity_conv(b, b.dq(b.q(f, *Y_Q), *Y_Q), 6, Y_Q[0])
    else:
        f = b.op("Relu", [f])
    b.q(f, *Y_Q, out="y")
    return b.model("x", IN_SHAPE, "y", OUT_SHAPE, opset=21), w, bq, sw


def _float16_scales(model, store=np.float16):
    """Every float32 initializer (the scales: the model has no float weights) rounded to
    float16, stored as `store` (float32: the same values, for onnxruntime's float32 run)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for init in m.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype == np.float32:
            init.CopyFrom(numpy_helper.from_array(a.astype(np.float16).astype(store), init.name))
    onnx.checker.check_model(m, full_check=True)
    return m


def test_float16_scales_tflite_exact(tmp_path):
    model, w, bq, sw = _conv_model()
    path = save(_float16_scales(model), tmp_path, "f16.onnx")
    for init in model.graph.initializer:  # the scales are exact in float16
        a = numpy_helper.to_array(init)
        assert a.dtype != np.float32 or np.array_equal(a.astype(np.float16).astype(a.dtype), a)
    x = all_int8_inputs(IN_SHAPE, 6)
    got, c = host_run_checked(path, x, "tflite", tmp_path, None)
    acc = tfl_ref.conv_acc(x.reshape((-1,) + IN_SHAPE[1:]), w.astype(np.int64), (1, 1, 1, 1),
                           (1, 1), 1, X_Q[1])
    want = tfl_ref.requantize(acc, bq, X_Q[0], sw, Y_Q[0], Y_Q[1], Y_Q[1], 127)  # Relu
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    assert {(n, s) for n, s in c.graph.float16_scales}  # they were float16 in the file


def test_float16_scales_ort_refused(tmp_path):
    """onnxruntime computes the float16 model differently from the same values in float32
    (so there is no float32 arithmetic to reproduce), and ort refuses in one line."""
    model, *_ = _conv_model(between=True)
    p32 = save(_float16_scales(model, np.float32), tmp_path, "f32.onnx")
    p16 = save(_float16_scales(model), tmp_path, "f16.onnx")
    x = all_int8_inputs(IN_SHAPE, 20)
    assert np.count_nonzero(run_ort(p16, x) != run_ort(p32, x)) > 0
    proc = run_cli("compile", p16, "--numerics", "ort", "-o", tmp_path / "out")
    assert_clean_error(proc, "f16.onnx", "float16 quantization scale", "use --numerics tflite",
                       "store the scales as float32")
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_quantize_static_float16_model_refused(tmp_path):
    """onnxruntime.quantization on a float16 model: float16 scales and float16 ends."""
    m = qmodels.cnn()
    for init in m.graph.initializer:
        init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16),
                                              init.name))
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.elem_type = TensorProto.FLOAT16
    m.opset_import[0].version = 19
    fpath = tmp_path / "cnn16.onnx"
    onnx.save(m, str(fpath))
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    class Reader:
        def __init__(self):
            self.it = iter([{"x": x.astype(np.float16)} for x in qmodels.calibration()])

        def get_next(self):
            return next(self.it, None)

    qpath = tmp_path / "cnn16_q.onnx"
    quantize_static(str(fpath), str(qpath), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax)
    scales = [numpy_helper.to_array(i) for i in onnx.load(str(qpath)).graph.initializer
              if "scale" in i.name]
    assert scales and all(s.dtype == np.float16 for s in scales)
    for numerics in ("ort", "tflite"):
        proc = run_cli("compile", qpath, "--numerics", numerics, "-o", tmp_path / "out")
        assert_clean_error(proc, "tensor 'x'", "float16", "quantize the float32 model instead")
