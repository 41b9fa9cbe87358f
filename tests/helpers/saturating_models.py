"""QDQ models whose uint8 x int8 pair sums leave int16 (onnxruntime on x86 without VNNI
saturates them: codegen/numerics/u8s8_pairs.py), built the way tf2onnx writes them, and
inputs that make them saturate."""
from __future__ import annotations

import numpy as np

from tests.helpers.qdq_builder import QdqBuilder


def _big_weights(shape, seed):
    """Weights whose adjacent pairs share a sign (so uint8 inputs near 255 saturate)."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.5, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape[:1] + (1,) * (len(shape) - 1))
    return w.astype(np.float32)


def _identity_conv(b, x, c, scale):
    """DQ(x) -> 1x1 Conv with identity weights -> Q -> DQ. onnxruntime keeps a layer that
    reads the int8 graph input or writes the int8 graph output in float (it can rewrite
    neither to uint8), so the layer under test sits between two of these, reading and
    writing QuantizeLinear outputs as in tf2onnx models."""
    w, ws = b.weight(np.eye(c, dtype=np.float32).reshape(c, c, 1, 1))
    y = b.op("Conv", [x, w, b.bias(np.zeros(c), ws * np.float32(scale))])
    return b.dq(b.q(y, scale, -100), scale, -100)


def _identity_matmul(b, x, k, scale):
    w, ws = b.weight(np.eye(k, dtype=np.float32), axis=1)
    return b.dq(b.q(b.op("MatMul", [x, w]), scale, -100), scale, -100)


def _asymmetric_weight(b, wf, zp):
    """int8 weights with zero point `zp` (one, per tensor): q = clip(round(w / s) + zp),
    s = max |w| / (127 + |zp|), so q - zp leaves int8 (int16 in tinyaot); DequantizeLinear'd.
    -> (tensor, scale)."""
    s = np.float32(np.abs(wf).max() / (127 + abs(zp)))
    wq = np.clip(np.rint(wf / s) + zp, -128, 127).astype(np.int8)
    return b.dq(b.const_int(wq, np.int8), s, zp), s


def conv_model(cin, cout, k, group=1, pad=0, seed=0, weight_zp=0):
    b = QdqBuilder("conv")
    x = _identity_conv(b, b.dq("x", 0.02, -100), cin, 0.02)
    if weight_zp:
        w, ws = _asymmetric_weight(b, _big_weights((cout, cin // group, k, k), seed), weight_zp)
    else:
        w, ws = b.weight(_big_weights((cout, cin // group, k, k), seed))
    bias = b.bias(np.zeros(cout), ws * np.float32(0.02))
    c = b.op("Conv", [x, w, bias], group=group, pads=[pad] * 4)
    c = _identity_conv(b, b.dq(b.q(c, 4.0, 0), 4.0, 0), cout, 4.0)
    b.q(c, 4.0, -100, out="y")
    h = 8 - k + 1 + 2 * pad
    return b.model("x", [1, cin, 8, 8], "y", [1, cout, h, h])


def gemm_model(k, n, seed=0, weight_zp=0):
    b = QdqBuilder("fc")
    x = _identity_matmul(b, b.dq("x", 0.02, -100), k, 0.02)
    if weight_zp:
        w, ws = _asymmetric_weight(b, _big_weights((n, k), seed).T, weight_zp)
    else:
        w, ws = b.weight(_big_weights((n, k), seed).T, axis=1)  # [K, N], a sign per output
    mm = b.op("MatMul", [x, w])
    a = b.op("Add", [mm, b.bias(np.zeros(n), ws * np.float32(0.02))])
    a = _identity_matmul(b, b.dq(b.q(a, 4.0, 0), 4.0, 0), n, 4.0)
    b.q(a, 4.0, -100, out="y")
    return b.model("x", [1, k], "y", [1, n])


def saturating_inputs(shape, count=6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(count,) + tuple(shape)).astype(np.int8)
    x[0] = 127  # uint8 255 everywhere: the pairs saturate
    x[1, ..., ::2] = 127
    return x
