"""The TFLite front end against TFLite Micro's own interpreter (tflite-micro).

- every .tflite in ../shared/models: each IR tensor that is a TFLite tensor,
  computed by tinyaot's numpy reference (--numerics tflite), equals TFLM's
  (kPreserveAllTensors), on golden inputs;
- end to end: the host build of each .tflite and of its ONNX form gives TFLM's
  int8 outputs (outputs_tflm; for float-ended models the int8 tensor before
  TFLM's DEQUANTIZE), and a few small ones on qemu-m4;
- single builtins written with TFLite's schema (tests/tflite_builders.py),
  compared with TFLM the same way;
- what cannot be compiled is listed at once, by builtin and operator index.

Each builtin is lowered by its IR operator's module (codegen/ops/<op>.py, `Op.tflite`).
Under CI a missing ../shared model or a missing tflite-micro package fails, never skips.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from codegen.errors import TinyAotError, UnsupportedError
from codegen.frontend import load_model
from codegen.frontend.tflite.reader import read_tflite
from codegen.reference.run import run_graph

from tests.helpers.env import REPO, SHARED, _missing, require_arm_toolchain

from tests.helpers.tflite_builders import TflBuilder  # noqa: E402
from tests.helpers.tflm_oracle import (compare_layers, int8_input, layers_equal_tflm,  # noqa: E402
                                       tflm_interpreter, tflm_run)


@pytest.fixture(autouse=True)
def _tflite_micro():
    """TFLite Micro's interpreter is the oracle of every test here."""
    try:
        import tflite_micro  # noqa: F401
    except ImportError:
        _missing("the tflite-micro package (pip install tflite-micro)")

TFLITE_MODELS = {
    "ad01": "anomaly_detection_ad01/ad01_int8",
    "kws01": "keyword_spotting_kws01/kws_ref_model",
    "ic01": "image_classification_ic01/pretrainedResnet_quant",
    "vww01": "visual_wake_words_vww01/vww_96_int8",
    "sww01": "streaming_wakeword_sww01/str_ww_ref_model",
    "mbnet128": "image_classification_mbnet128/mbnet128_0.25_q",
    "mnist_dw": "digit_classification_mnist_dw/mnist_dw_q",
    "rps": "gesture_classification_rock_paper_scissors/rock_paper_scissors",
    "fingerprint": "fingerprint_embedding_signature_generator/fingerprint_signature_generator",
    "ecg": "anomaly_detection_ecg_autoencoder/autoencoder_example",
    "kws_mbv2": "keyword_spotting_mobilenetv2/keyword_spotting_mobilenetv2",
    "on_off": "keyword_spotting_on_off_v3/keyword_spotting_on_off_v3",
    "yolo": "person_detection_yolo_fastest/yolo-fastest-1.1-person-int8",
}
SINGLE_OUTPUT = [k for k in TFLITE_MODELS if k != "yolo"]


def _shared(key):
    stem = SHARED / TFLITE_MODELS[key]
    paths = [stem.with_name(stem.name + ext) for ext in (".tflite", ".onnx", "_golden.npz")]
    for p in paths:
        if not p.exists():
            _missing(f"shared model {p}")
    return paths


def _tflm_int8_outputs(tfl, golden):
    """TFLM's int8 result per golden input: outputs_tflm, or for a model with a
    final DEQUANTIZE the int8 tensor it dequantizes (checked against outputs_tflm)."""
    g = np.load(golden)
    exp = g["outputs_tflm"]
    if exp.dtype == np.int8:
        return exp
    m = read_tflite(tfl)
    deq = next(o for o in m.operators if o.builtin == "DEQUANTIZE")
    t = m.tensors[deq.inputs[0]]
    it = tflm_interpreter(tfl)
    q = np.stack([tflm_run(tfl, x, it)[1][deq.inputs[0]] for x in g["inputs"]])
    real = (q.astype(np.float32) - np.float32(t.zero_point[0])) * np.float32(t.scale[0])
    np.testing.assert_array_equal(real.reshape(exp.shape), exp)
    return q.reshape(len(q), -1)


@pytest.mark.shared
@pytest.mark.parametrize("key", list(TFLITE_MODELS))
def test_every_layer_equals_tflite_micro(key):
    tfl, _, golden = _shared(key)
    m = read_tflite(tfl)
    g = load_model(tfl)
    gold = np.load(golden)
    it = tflm_interpreter(tfl)
    nvec = 1 if key in ("yolo", "mbnet128") else 2
    # every operator output that is an activation should be compared
    wanted = {o for op in m.operators for o in op.outputs if m.tensors[o].dtype == "int8"}
    wanted -= {g.tflite_tensors[i][0] for i in g.inputs}  # a QUANTIZE at a float input
    for v in range(nvec):
        outs, tensors = tflm_run(tfl, gold["inputs"][v], it)
        env = run_graph(g, "tflite", {g.inputs[0]: int8_input(tfl, gold["inputs"][v])})
        rows = compare_layers(g, env, tensors, m)
        compared = {g.tflite_tensors[r[1]][0] for r in rows}
        assert wanted <= compared | {i for i in wanted if i not in tensors}, \
            sorted(wanted - compared)
        bad = [r for r in rows if r[2]]
        assert not bad, f"vector {v}: layers differing from TFLM: {bad[:5]}"
        for k, out in enumerate(g.outputs):  # TFLite's output order
            if outs[k].dtype != np.float32:  # (float ends: the int8 tensor is compared above)
                np.testing.assert_array_equal(env[out].reshape(outs[k].shape), outs[k])
    if key == "yolo":  # the goldens were made with TFLM too: outputs_tflm, outputs_tflm1
        env = run_graph(g, "tflite", {g.inputs[0]: gold["inputs"][0]})
        assert len(g.outputs) == 2
        for k, out in enumerate(g.outputs):
            want = gold["outputs_tflm" + (str(k) if k else "")][0]
            np.testing.assert_array_equal(env[out].reshape(want.shape), want)


@pytest.mark.shared
@pytest.mark.parametrize("key", SINGLE_OUTPUT)
def test_host_build_of_tflite_and_onnx_equals_tflite_micro(key, tmp_path):
    """Both forms of each model, compiled and run on the host, give TFLM's outputs."""
    from codegen.driver.verify import run_model
    tfl, onnx_path, golden = _shared(key)
    gold = np.load(golden)
    exp = _tflm_int8_outputs(tfl, golden).reshape(len(gold["inputs"]), -1)
    xs = np.stack([int8_input(tfl, x) for x in gold["inputs"]])
    got = {}
    for form, path in (("tflite", tfl), ("onnx", onnx_path)):
        outs, _ = run_model(path, xs, board="host", numerics="tflite",
                            build_dir=tmp_path / form)
        got[form] = outs.reshape(len(xs), -1)
        diff = int((got[form].astype(np.int32) != exp.astype(np.int32)).sum())
        assert diff == 0, f"{form}: {diff} of {exp.size} output values differ from TFLM"
    np.testing.assert_array_equal(got["tflite"], got["onnx"])


@pytest.mark.shared
def test_verify_cli_defaults_to_tflite_numerics_for_a_tflite_file(tmp_path):
    tfl, _, golden = _shared("mnist_dw")
    proc = subprocess.run([sys.executable, "-m", "codegen.cli", "verify", str(tfl), "--golden",
                           str(golden), "--json"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    import json
    rep = json.loads(proc.stdout)
    assert rep["numerics"] == "tflite" and rep["key"] == "outputs_tflm"
    assert rep["mismatches"] == 0 and rep["vectors_passed"] == 8


@pytest.mark.shared
@pytest.mark.qemu
@pytest.mark.parametrize("key", ["mnist_dw", "fingerprint", "ecg", "kws01"])
def test_qemu_m4_build_of_tflite_and_onnx_equals_tflite_micro(key, tmp_path):
    require_arm_toolchain()
    from codegen.driver.verify import run_model
    tfl, onnx_path, golden = _shared(key)
    gold = np.load(golden)
    exp = _tflm_int8_outputs(tfl, golden).reshape(len(gold["inputs"]), -1)
    xs = np.stack([int8_input(tfl, x) for x in gold["inputs"]])[:4]
    for form, path in (("tflite", tfl), ("onnx", onnx_path)):
        outs, info = run_model(path, xs, board="qemu-m4", numerics="tflite",
                               build_dir=tmp_path / form)
        np.testing.assert_array_equal(outs.reshape(len(xs), -1), exp[:4], err_msg=form)
        assert info["status"] == [0] * len(xs)


# ---- single builtins against TFLM ------------------------------------------

def _check_against_tflm(path, x, host_build=False, tmp_path=None):
    """Every layer of the model's IR (numpy reference) equals TFLM on input x; with
    host_build, the compiled C gives TFLM's output too."""
    g, env, outs, _ = layers_equal_tflm(path, x)
    for k, out in enumerate(g.outputs):
        np.testing.assert_array_equal(env[out].reshape(outs[k].shape), outs[k])
    if host_build:
        from codegen.driver.verify import run_model
        got, _ = run_model(path, np.asarray(x)[None], board="host", numerics="tflite",
                           build_dir=tmp_path / "host")
        np.testing.assert_array_equal(got.reshape(outs[0].shape), outs[0])
    return g


def _rng(seed=0):
    return np.random.default_rng(seed)


def _i8(rng, shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


@pytest.mark.parametrize("padding,stride,dil,per_channel,act", [
    (0, 1, 1, True, 1), (1, 2, 1, True, 3), (0, 2, 1, False, 0), (0, 1, 2, True, 2)])
def test_conv_2d(tmp_path, padding, stride, dil, per_channel, act):
    rng = _rng(1)
    b = TflBuilder()
    x = b.input("x", [1, 9, 11, 5], 0.05, -7)
    ws = rng.uniform(0.002, 0.01, 6) if per_channel else 0.006
    w = b.const("w", _i8(rng, (6, 3, 3, 5)), ws, 0, axis=0)
    bias = b.const("b", rng.integers(-2000, 2000, 6).astype(np.int32),
                   np.float32(0.05) * np.asarray(ws, np.float32), 0)
    eff = (3 - 1) * dil + 1
    oh = -(-9 // stride) if padding == 0 else (9 - eff) // stride + 1
    ow = -(-11 // stride) if padding == 0 else (11 - eff) // stride + 1
    y = b.tensor("y", [1, oh, ow, 6], 0.09, 3)
    b.op("CONV_2D", [x, w, bias], [y], "Conv2DOptions", padding=padding, strideW=stride,
         strideH=stride, dilationWFactor=dil, dilationHFactor=dil, fusedActivationFunction=act)
    p = b.save(tmp_path / "conv.tflite", [y])
    _check_against_tflm(p, _i8(rng, (1, 9, 11, 5)), host_build=(stride == 2), tmp_path=tmp_path)


@pytest.mark.parametrize("cin,mult,padding,stride", [(4, 1, 0, 1), (3, 2, 1, 1), (1, 8, 1, 2),
                                                     (2, 8, 0, 2)])
def test_depthwise_conv_2d_any_multiplier(tmp_path, cin, mult, padding, stride):
    rng = _rng(2)
    cout = cin * mult
    b = TflBuilder()
    x = b.input("x", [1, 10, 10, cin], 1.0, 0)
    ws = rng.uniform(0.001, 0.004, cout)
    w = b.const("w", _i8(rng, (1, 3, 3, cout)), ws, 0, axis=3)
    bias = b.const("b", rng.integers(-500, 500, cout).astype(np.int32), ws.astype(np.float32), 0)
    o = -(-10 // stride) if padding == 0 else (10 - 3) // stride + 1
    y = b.tensor("y", [1, o, o, cout], 0.03, -128)
    b.op("DEPTHWISE_CONV_2D", [x, w, bias], [y], "DepthwiseConv2DOptions", padding=padding,
         strideW=stride, strideH=stride, depthMultiplier=mult, fusedActivationFunction=1)
    p = b.save(tmp_path / "dw.tflite", [y])
    _check_against_tflm(p, _i8(rng, (1, 10, 10, cin)), host_build=(mult == 8),
                        tmp_path=tmp_path)


@pytest.mark.parametrize("padding,stride,per_channel", [(0, 2, True), (1, 2, False), (0, 1, True)])
def test_transpose_conv(tmp_path, padding, stride, per_channel):
    rng = _rng(10)
    b = TflBuilder()
    x = b.input("x", [1, 5, 4, 3], 0.05, -7)
    oh, ow = (5 * stride, 4 * stride) if padding == 0 else ((5 - 1) * stride + 3,
                                                             (4 - 1) * stride + 3)
    ws = rng.uniform(0.002, 0.01, 6) if per_channel else 0.006
    w = b.const("w", _i8(rng, (6, 3, 3, 3)), ws, 0, axis=0)
    bias = b.const("b", rng.integers(-2000, 2000, 6).astype(np.int32),
                   np.float32(0.05) * np.asarray(ws, np.float32), 0)
    shape = b.const("shape", np.array([1, oh, ow, 6], np.int32))
    y = b.tensor("y", [1, oh, ow, 6], 0.09, 3)
    b.op("TRANSPOSE_CONV", [shape, w, x, bias], [y], "TransposeConvOptions", padding=padding,
         strideW=stride, strideH=stride)
    p = b.save(tmp_path / "tconv.tflite", [y])
    _check_against_tflm(p, _i8(rng, (1, 5, 4, 3)), host_build=per_channel and stride == 2,
                        tmp_path=tmp_path)


def test_fully_connected_flattens_4d_input_and_keeps_dims(tmp_path):
    rng = _rng(3)
    b = TflBuilder()
    x = b.input("x", [1, 2, 3, 4], 0.02, 5)
    w = b.const("w", _i8(rng, (7, 24)), rng.uniform(0.002, 0.01, 7), 0, axis=0)
    bias = b.const("b", rng.integers(-900, 900, 7).astype(np.int32))
    y = b.tensor("y", [1, 7], 0.1, -4)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], "FullyConnectedOptions",
         fusedActivationFunction=1)
    w2 = b.const("w2", _i8(rng, (3, 7)), 0.01, 0)
    z = b.tensor("z", [1, 3], 0.05, 0)
    b.op("FULLY_CONNECTED", [y, w2, -1], [z], "FullyConnectedOptions")
    p = b.save(tmp_path / "fc.tflite", [z])
    _check_against_tflm(p, _i8(rng, (1, 2, 3, 4)), host_build=True, tmp_path=tmp_path)


def _unary_model(tmp_path, builtin, shape, sin, zin, sout, zout, options=None, **fields):
    b = TflBuilder()
    x = b.input("x", shape, sin, zin)
    y = b.tensor("y", shape, sout, zout)
    b.op(builtin, [x], [y], options, **fields)
    return b.save(tmp_path / f"{builtin.lower()}.tflite", [y])


@pytest.mark.parametrize("builtin,sout,zout,options,fields", [
    ("LOGISTIC", 1 / 256, -128, None, {}),
    ("TANH", 1 / 128, 0, None, {}),
    ("HARD_SWISH", 0.03, -20, None, {}),
    ("LEAKY_RELU", 0.04, 10, "LeakyReluOptions", {"alpha": 0.1}),
    ("RELU", 0.03, -128, None, {}),
    ("RELU6", 0.0625, 0, None, {}),
    ("QUANTIZE", 0.11, 7, None, {}),
])
@pytest.mark.parametrize("sin,zin", [(0.0625, 0), (0.00520672, 54), (0.1, -5)])
def test_elementwise_every_int8_value(tmp_path, builtin, sout, zout, options, fields, sin, zin):
    if builtin == "RELU6":
        sout, zout = sin, zin  # TFLM clamps these in the input's quantization
    p = _unary_model(tmp_path, builtin, [1, 256], sin, zin, sout, zout, options, **fields)
    _check_against_tflm(p, np.arange(-128, 128, dtype=np.int8).reshape(1, 256))


@pytest.mark.parametrize("same_q,keep", [(True, True), (False, False), (True, False)])
def test_mean_over_height_and_width(tmp_path, same_q, keep):
    rng = _rng(4)
    b = TflBuilder()
    x = b.input("x", [1, 3, 5, 40], 0.05, -3)
    ax = b.const("axis", np.array([1, 2], np.int32))
    shape = [1, 1, 1, 40] if keep else [1, 40]
    y = b.tensor("y", shape, *((0.05, -3) if same_q else (0.013, 11)))
    b.op("MEAN", [x, ax], [y], "ReducerOptions", keepDims=keep)
    p = b.save(tmp_path / "mean.tflite", [y])
    _check_against_tflm(p, _i8(rng, (1, 3, 5, 40)), host_build=not keep, tmp_path=tmp_path)


@pytest.mark.parametrize("builtin", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("padding", [0, 1])
def test_pooling(tmp_path, builtin, padding):
    rng = _rng(5)
    b = TflBuilder()
    x = b.input("x", [1, 7, 9, 3], 0.05, -3)
    oh, ow = (-(-7 // 2), -(-9 // 2)) if padding == 0 else ((7 - 3) // 2 + 1, (9 - 3) // 2 + 1)
    y = b.tensor("y", [1, oh, ow, 3], 0.05, -3)
    b.op(builtin, [x], [y], "Pool2DOptions", padding=padding, strideW=2, strideH=2,
         filterWidth=3, filterHeight=3)
    p = b.save(tmp_path / "pool.tflite", [y])
    _check_against_tflm(p, _i8(rng, (1, 7, 9, 3)))


def test_softmax_with_beta(tmp_path):
    p = _unary_model(tmp_path, "SOFTMAX", [2, 10], 0.1, 3, 1 / 256, -128, "SoftmaxOptions",
                     beta=0.5)
    _check_against_tflm(p, _i8(_rng(6), (2, 10)))


@pytest.mark.parametrize("alpha_shape", [(1, 1, 5), (5,), (1,)])
def test_prelu(tmp_path, alpha_shape):
    """PRELU after a conv (an NCHW IR tensor: alpha moves with it) and on the model input."""
    rng = _rng(11)
    b = TflBuilder()
    x = b.input("x", [1, 4, 6, 5], 0.05, -3)
    w = b.const("w", _i8(rng, (5, 1, 1, 5)), 0.01, 0)
    c = b.tensor("c", [1, 4, 6, 5], 0.04, 2)
    b.op("CONV_2D", [x, w, -1], [c], "Conv2DOptions", padding=1, strideW=1, strideH=1)
    alpha = b.const("alpha", _i8(rng, alpha_shape), 0.011, 2)
    p1 = b.tensor("p1", [1, 4, 6, 5], 0.03, -7)
    b.op("PRELU", [c, alpha], [p1])
    p0 = b.tensor("p0", [1, 4, 6, 5], 0.06, 1)
    b.op("PRELU", [x, alpha], [p0])
    y = b.tensor("y", [1, 4, 6, 5], 0.07, -2)
    b.op("ADD", [p0, p1], [y], "AddOptions")
    p = b.save(tmp_path / "prelu.tflite", [y])
    g = _check_against_tflm(p, _i8(rng, (1, 4, 6, 5)), host_build=len(alpha_shape) == 3,
                            tmp_path=tmp_path)
    assert sum(n.op == "prelu" for n in g.nodes) == 2


def test_add_sub_mul_with_fused_relu(tmp_path):
    rng = _rng(7)
    b = TflBuilder()
    x = b.input("x", [1, 4, 5, 6], 0.05, -3)
    w = b.const("w", _i8(rng, (6, 1, 1, 6)), 0.01, 0)
    c = b.tensor("c", [1, 4, 5, 6], 0.04, 2)
    b.op("CONV_2D", [x, w, -1], [c], "Conv2DOptions", padding=1, strideW=1, strideH=1)
    s = b.tensor("s", [1, 4, 5, 6], 0.07, -10)
    b.op("ADD", [x, c], [s], "AddOptions", fusedActivationFunction=1)
    m = b.tensor("m", [1, 4, 5, 6], 0.09, 4)
    b.op("MUL", [s, c], [m], "MulOptions")
    d = b.tensor("d", [1, 4, 5, 6], 0.11, -6)
    b.op("SUB", [m, x], [d], "SubOptions", fusedActivationFunction=3)
    k = b.tensor("k", [1, 4, 5, 6], 0.1, 1)
    b.op("SUB", [d, b.const("one", np.array([[[[17]]]], np.int8), 0.02, 3)], [k], "SubOptions")
    p = b.save(tmp_path / "addmul.tflite", [k])
    _check_against_tflm(p, _i8(rng, (1, 4, 5, 6)), host_build=True, tmp_path=tmp_path)


def test_data_movement_chain(tmp_path):
    """PAD, PADV2, CONCATENATION (other quantization), RESIZE_NEAREST_NEIGHBOR,
    RESIZE_BILINEAR, TRANSPOSE, STRIDED_SLICE, SLICE, SPLIT, PACK, UNPACK, SQUEEZE,
    EXPAND_DIMS, RESHAPE in one graph, compiled for the host."""
    rng = _rng(8)
    b = TflBuilder()
    x = b.input("x", [1, 4, 6, 3], 0.05, -3)
    pads = b.const("pads", np.array([[0, 0], [1, 1], [0, 2], [0, 0]], np.int32))
    xp = b.tensor("xp", [1, 6, 8, 3], 0.05, -3)
    b.op("PAD", [x, pads], [xp], "PadOptions")
    pv = b.const("pv", np.array([9], np.int8), 0.05, -3)
    xp2 = b.tensor("xp2", [1, 6, 8, 3], 0.05, -3)
    pads2 = b.const("pads2", np.array([[0, 0], [0, 0], [0, 0], [0, 0]], np.int32))
    b.op("PADV2", [xp, pads2, pv], [xp2], "PadV2Options")
    r = b.tensor("r", [1, 12, 16, 3], 0.05, -3)
    sz = b.const("size", np.array([12, 16], np.int32))
    b.op("RESIZE_NEAREST_NEIGHBOR", [xp2, sz], [r], "ResizeNearestNeighborOptions",
         halfPixelCenters=True)
    rb = b.tensor("rb", [1, 12, 16, 3], 0.05, -3)
    b.op("RESIZE_BILINEAR", [xp, sz], [rb], "ResizeBilinearOptions", halfPixelCenters=True)
    cat = b.tensor("cat", [1, 12, 16, 6], 0.05, -3)
    b.op("CONCATENATION", [r, rb], [cat], "ConcatenationOptions", axis=3)
    perm = b.const("perm", np.array([0, 3, 1, 2], np.int32))
    tr = b.tensor("tr", [1, 6, 12, 16], 0.05, -3)
    b.op("TRANSPOSE", [cat, perm], [tr], "TransposeOptions")
    ss = b.tensor("ss", [6, 6, 8], 0.05, -3)
    b.op("STRIDED_SLICE", [tr, b.const("b0", np.array([0, 0, 0, 1], np.int32)),
                           b.const("e0", np.array([1, 6, 12, 16], np.int32)),
                           b.const("s0", np.array([1, 1, 2, 2], np.int32))], [ss],
         "StridedSliceOptions", shrinkAxisMask=1)
    sl = b.tensor("sl", [4, 6, 8], 0.05, -3)
    b.op("SLICE", [ss, b.const("b1", np.array([2, 0, 0], np.int32)),
                   b.const("n1", np.array([-1, 6, 8], np.int32))], [sl], "SliceOptions")
    p0 = b.tensor("p0", [2, 6, 8], 0.05, -3)
    p1 = b.tensor("p1", [2, 6, 8], 0.05, -3)
    b.op("SPLIT", [b.const("ax", np.array([0], np.int32)), sl], [p0, p1], "SplitOptions",
         numSplits=2)
    pk = b.tensor("pk", [2, 2, 6, 8], 0.05, -3)
    b.op("PACK", [p1, p0], [pk], "PackOptions", valuesCount=2, axis=1)
    u0 = b.tensor("u0", [2, 6, 8], 0.05, -3)
    u1 = b.tensor("u1", [2, 6, 8], 0.05, -3)
    b.op("UNPACK", [pk], [u0, u1], "UnpackOptions", num=2, axis=1)
    e = b.tensor("e", [2, 1, 6, 8], 0.05, -3)
    b.op("EXPAND_DIMS", [u1, b.const("ea", np.array([1], np.int32))], [e])
    sq = b.tensor("sq", [2, 6, 8], 0.05, -3)
    b.op("SQUEEZE", [e], [sq], "SqueezeOptions", squeezeDims=[1])
    out = b.tensor("out", [1, 96], 0.05, -3)
    b.op("RESHAPE", [sq, b.const("shape", np.array([1, 96], np.int32))], [out])
    p = b.save(tmp_path / "moves.tflite", [out])
    _check_against_tflm(p, _i8(rng, (1, 4, 6, 3)), host_build=True, tmp_path=tmp_path)


def test_float_ends_become_the_integer_boundary(tmp_path):
    rng = _rng(9)
    b = TflBuilder()
    xf = b.input("xf", [1, 16], dtype="float32")
    x = b.tensor("x", [1, 16], 0.05, -3)
    b.op("QUANTIZE", [xf], [x])
    w = b.const("w", _i8(rng, (4, 16)), 0.01, 0)
    y = b.tensor("y", [1, 4], 0.1, 2)
    b.op("FULLY_CONNECTED", [x, w, -1], [y], "FullyConnectedOptions")
    yf = b.tensor("yf", [1, 4], dtype="float32")
    b.op("DEQUANTIZE", [y], [yf])
    p = b.save(tmp_path / "float_ends.tflite", [yf])
    g = load_model(p)
    assert g.inputs == ["x"] and g.outputs == ["y"]
    assert g.io_float == {"inputs": ["xf"], "outputs": ["yf"]}
    xq = _i8(rng, (1, 16))
    outs, tensors = tflm_run(p, ((xq.astype(np.float32) + 3) * np.float32(0.05)))
    env = run_graph(g, "tflite", {"x": xq})
    np.testing.assert_array_equal(env["y"], tensors[y])


# ---- errors ----------------------------------------------------------------

def test_every_unsupported_builtin_is_listed_at_once(tmp_path):
    b = TflBuilder()
    x = b.input("x", [1, 8], 0.05, 0)
    a = b.tensor("a", [1, 8], 0.05, 0)
    b.op("ABS", [x], [a])
    c = b.tensor("c", [1, 8], 0.05, 0)
    b.op("RELU", [a], [c])
    d = b.tensor("d", [1, 8], 0.05, 0)
    b.op("NEG", [c], [d])
    e = b.tensor("e", [1, 8], 0.05, 0)
    b.op("ABS", [d], [e])
    p = b.save(tmp_path / "bad.tflite", [e])
    with pytest.raises(UnsupportedError) as ei:
        load_model(p)
    msg = str(ei.value)
    assert "3 TFLite operator(s) cannot be compiled" in msg
    assert "ABS (operators 0, 3)" in msg and "NEG (operator 2)" in msg
    assert "RELU" not in msg
    proc = subprocess.run([sys.executable, "-m", "codegen.cli", "compile", str(p), "-o",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "ABS (operators 0, 3)" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize("data,what", [(b"", "no 'TFL3'"), (b"\0\0\0\0TFL3" + b"\xff" * 40,
                                                             "no subgraph"),
                                       (b"\x10\0\0\0TFL3" + b"\xff" * 12, "corrupt"),
                                       (b"junk junk junk", "no 'TFL3'")])
def test_not_a_tflite_file_is_one_clear_error(tmp_path, data, what):
    p = tmp_path / "x.tflite"
    p.write_bytes(data)
    with pytest.raises(TinyAotError) as ei:
        load_model(p)
    assert what in str(ei.value) and str(p) in str(ei.value)


def test_ort_numerics_on_a_tflite_file_is_a_user_error(tmp_path):
    p = _unary_model(tmp_path, "RELU", [1, 8], 0.05, 0, 0.05, 0)
    proc = subprocess.run([sys.executable, "-m", "codegen.cli", "compile", str(p), "--numerics",
                           "ort", "-o", str(tmp_path / "out")], capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 2 and "--numerics ort needs an ONNX model" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "codegen.cli", "compile", str(p), "-o",
                           str(tmp_path / "out"), "--json"], capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert '"numerics": "tflite"' in proc.stdout
