"""Small float ONNX models quantized by onnxruntime's quantize_static, in
QDQ and QOperator form, int8 or uint8 activations (tests' helper)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INPUT_SHAPE = (1, 3, 8, 8)


def _model(nodes, inits, out_shape, name, in_shape=INPUT_SHAPE):
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _inits(seed, shapes):
    r = np.random.default_rng(seed)
    return [numpy_helper.from_array((r.standard_normal(s) * (0.1 if len(s) == 1 else 0.3))
                                    .astype(np.float32), n) for n, s in shapes.items()]


def cnn(avgpool=False, softmax=False, seed=0):
    """Conv+Relu, depthwise conv+Relu, 1x1 conv, residual Add, [AveragePool],
    GlobalAveragePool, Flatten, Gemm, [Softmax]."""
    inits = _inits(seed, {"w1": (8, 3, 3, 3), "b1": (8,), "w2": (8, 1, 3, 3), "b2": (8,),
                          "w3": (8, 8, 1, 1), "b3": (8,), "wf": (10, 8), "bf": (10,)})
    h = helper.make_node
    nodes = [h("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             h("Relu", ["c1"], ["r1"], name="relu1"),
             h("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8, name="dw"),
             h("Relu", ["c2"], ["r2"], name="relu2"),
             h("Conv", ["r2", "w3", "b3"], ["c3"], name="pw"),
             h("Add", ["c3", "r1"], ["a"], name="add")]
    last = "a"
    if avgpool:
        nodes.append(h("AveragePool", ["a"], ["ap"], kernel_shape=[2, 2], strides=[2, 2], name="ap"))
        last = "ap"
    nodes += [h("GlobalAveragePool", [last], ["gp"], name="gap"),
              h("Flatten", ["gp"], ["fl"], name="flat"),
              h("Gemm", ["fl", "wf", "bf"], ["y0" if softmax else "y"], transB=1, name="fc")]
    if softmax:
        nodes.append(h("Softmax", ["y0"], ["y"], axis=-1, name="sm"))
    return _model(nodes, inits, (1, 10), "small_cnn")


def elementwise(seed=0):
    """Conv, then Mul, Concat, Sigmoid, LeakyRelu (QLinearMul/Concat/Sigmoid/LeakyRelu)."""
    inits = _inits(seed, {"w1": (4, 3, 3, 3), "b1": (4,), "w2": (4, 3, 3, 3), "b2": (4,)})
    h = helper.make_node
    nodes = [h("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             h("Conv", ["x", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             h("Sigmoid", ["c1"], ["s"], name="sig"),
             h("LeakyRelu", ["c2"], ["l"], alpha=0.1, name="lrelu"),
             h("Mul", ["s", "l"], ["m"], name="mul"),
             h("Concat", ["m", "c1"], ["y"], axis=1, name="cat")]
    return _model(nodes, inits, (1, 8, 8, 8), "small_elementwise")


def matmul(seed=0):
    """x [1, 48] -> MatMul (QLinearMatMul) -> Relu -> MatMul -> y [1, 10] (no bias Add)."""
    inits = _inits(seed, {"w1": (48, 16), "w2": (16, 10)})
    h = helper.make_node
    nodes = [h("MatMul", ["x", "w1"], ["m1"], name="mm1"), h("Relu", ["m1"], ["r1"], name="relu"),
             h("MatMul", ["r1", "w2"], ["y"], name="mm2")]
    return _model(nodes, inits, (1, 10), "small_matmul", in_shape=(1, 48))


def _in_shape(model):
    return tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)


def calibration(n=16, seed=1, shape=INPUT_SHAPE):
    r = np.random.default_rng(seed)
    return [r.standard_normal(shape).astype(np.float32) for _ in range(n)]


class _Reader:
    def __init__(self, xs):
        self._it = iter([{"x": x} for x in xs])

    def get_next(self):
        return next(self._it, None)


def quantize(model, path, fmt="QDQ", activations="QInt8", weights="QInt8", per_channel=True,
             weight_symmetric=None):
    """quantize_static: fmt QDQ|QOperator, activations and weights QInt8|QUInt8, weights per
    channel or per tensor; weight_symmetric None: quantize_static's default (symmetric int8,
    asymmetric uint8)."""
    import logging

    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    fpath = str(path) + ".float.onnx"
    onnx.save(model, fpath)
    logging.getLogger().setLevel(logging.ERROR)  # "consider pre-processing" warnings
    quantize_static(fpath, str(path), _Reader(calibration(shape=_in_shape(model))),
                    quant_format=getattr(QuantFormat, fmt), per_channel=per_channel,
                    weight_type=getattr(QuantType, weights),
                    activation_type=getattr(QuantType, activations),
                    calibrate_method=CalibrationMethod.MinMax,
                    extra_options={} if weight_symmetric is None
                    else {"WeightSymmetric": weight_symmetric})
    return path


def sample_inputs(n=12, seed=5, shape=INPUT_SHAPE):
    r = np.random.default_rng(seed)
    return [(r.standard_normal(shape) * 1.5).astype(np.float32) for _ in range(n)]
