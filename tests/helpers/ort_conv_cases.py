"""onnxruntime's float32 Conv on random QDQ layers (DQ(x), DQ(w), DQ(b) -> Conv [-> Relu], a bias
scale that keeps the Conv in float), the oracle of the float-order tests, and their shapes."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


class _Q:
    def __init__(self, scale):
        self.scale = scale


class _T:
    """The fields of an IR tensor the reference reads."""

    def __init__(self, data, scale):
        self.data, self.shape, self.q = data, data.shape, _Q(scale)


def ort_case(rng, cin, cout, group, hw, k, s, pads, d, threads, relu):
    """(onnxruntime's float y NCHW, x, weight / bias tensors, input scale and zero point)."""
    sx, zx = np.float32(rng.uniform(0.01, 0.1)), int(rng.integers(-20, 20))
    wq = rng.integers(-127, 128, size=(cout, cin // group) + k).astype(np.int8)
    ws = rng.uniform(0.001, 0.02, size=cout).astype(np.float32)
    bs = (sx * ws * np.float32(1.5)).astype(np.float32)  # not s_x*s_w: ORT keeps the Conv in float
    bq = rng.integers(-3000, 3000, size=cout).astype(np.int32)
    inits = [numpy_helper.from_array(v, n) for n, v in [
        ("sx", sx), ("zx", np.int8(zx)), ("wq", wq), ("ws", ws), ("wz", np.zeros(cout, np.int8)),
        ("bq", bq), ("bs", bs), ("bz", np.zeros(cout, np.int32))]]
    nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bf"], axis=0),
             helper.make_node("Conv", ["xf", "wf", "bf"], ["c" if relu else "y"],
                              kernel_shape=list(k), strides=list(s), dilations=list(d),
                              group=group, pads=list(pads))]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    g = helper.make_graph(nodes, "cv", [helper.make_tensor_value_info("x", TensorProto.INT8,
                                                                      [1, cin, *hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    x = rng.integers(-128, 128, size=(1, cin) + hw).astype(np.int8)
    y = ort.InferenceSession(m.SerializeToString(), so,
                             providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    return y, x, _T(wq, ws), _T(bq, bs), sx, zx


# (cin, cout, group, hw, kernel, strides, pads (t, l, b, r), dilations, relu)
SHAPES = [
    (16, 16, 1, (32, 32), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),   # ic01 layer 2: K 144
    (16, 32, 1, (32, 32), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),    # stride 2, Relu
    (3, 16, 1, (32, 32), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True),     # ic01 layer 1: K 27
    (32, 32, 1, (16, 16), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),   # K 288
    (64, 64, 1, (8, 8), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),     # K 576, 64 pixels
    (64, 8, 1, (6, 6), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),      # K 576, 36 pixels
    (16, 32, 1, (32, 32), (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), False),   # 1x1 stride 2
    (32, 24, 1, (7, 9), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), False),     # pointwise: GEMM direct
    (300, 8, 1, (4, 4), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),     # K 2700
    (133, 6, 1, (5, 7), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),     # K 1197
    (64, 96, 1, (3, 3), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),     # Cout > pixels
    (10, 7, 1, (9, 9), (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), False),      # dilation 2
    (5, 9, 1, (11, 6), (2, 3), (2, 1), (1, 0, 0, 2), (1, 1), True),       # asymmetric pads
    (1, 1, 1, (3, 3), (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), False),       # K 9, one pixel, M 1
    (64, 20, 1, (3, 3), (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), False),     # one output pixel
    (16, 5, 1, (1, 1), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), True),       # 1x1 input, padded
    (8, 8, 8, (12, 12), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),     # depthwise (M = 1)
    (16, 16, 16, (1, 49), (1, 5), (1, 1), (0, 2, 0, 2), (1, 1), True),    # depthwise 1-D (sww01)
    (12, 24, 12, (1, 30), (1, 9), (1, 2), (0, 4, 0, 4), (1, 1), False),   # depthwise, multiplier 2
    (64, 64, 64, (1, 40), (1, 3), (1, 1), (0, 0, 0, 0), (1, 1), False),   # depthwise, no pad
    (12, 6, 2, (9, 9), (3, 3), (2, 2), (1, 0, 1, 0), (1, 1), False),      # grouped
    (256, 8, 2, (5, 5), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),     # grouped, K 1152
    (8, 12, 4, (6, 6), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), False),      # grouped pointwise
    (1, 6, 1, (8, 5), (3, 5), (1, 1), (0, 0, 0, 0), (1, 1), False),       # kernel = input width
    (1, 8, 1, (49, 10), (10, 4), (2, 2), (4, 1, 5, 1), (1, 1), True),     # kws01 first conv
    (3, 8, 1, (96, 96), (3, 3), (2, 2), (0, 0, 1, 1), (1, 1), True),      # vww01 first conv
    (40, 40, 40, (30, 1), (3, 1), (1, 1), (0, 0, 0, 0), (1, 1), False),   # sww01 layer 1: K 3
    (128, 128, 128, (15, 1), (15, 1), (1, 1), (0, 0, 0, 0), (1, 1), True),  # sww01 layer 7
    (128, 32, 1, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), False),    # sww01 layer 9
    (256, 2, 2, (5, 5), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), False),     # M 1, K 1152: 3 slices
    (24, 24, 24, (33, 1), (3, 1), (1, 1), (0, 0, 0, 0), (1, 1), False),   # 31 pixels: runs 4, 2, 1
    (16, 16, 16, (15, 1), (5, 1), (1, 1), (0, 0, 0, 0), (1, 1), False),   # K 5: 11 pixels
    (64, 30, 1, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), False),     # one pixel, 30 channels
]
