"""Models with float ends and several inputs / outputs, built the way tf2onnx writes them.

tf2onnx converts a TFLite model with float I/O into a float graph input followed by a
QuantizeLinear and a final DequantizeLinear before a float graph output, with every layer a
DequantizeLinear -> float op -> QuantizeLinear group (MatMul + Add for a dense layer, a Relu
before the QuantizeLinear); several TFLite outputs become several graph outputs, named
"StatefulPartitionedCall:k", in an order of their own.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = np.float32


class Graph:
    def __init__(self, name):
        self.name = name
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.n = 0

    def _uid(self, stem):
        self.n += 1
        return f"{stem}__{self.n}"

    def init(self, arr, dtype):
        name = self._uid("c")
        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype=dtype), name))
        return name

    def input(self, name, shape, elem=TensorProto.FLOAT):
        self.inputs.append(helper.make_tensor_value_info(name, elem, list(shape)))
        return name

    def output(self, name, shape, elem=TensorProto.FLOAT):
        self.outputs.append(helper.make_tensor_value_info(name, elem, list(shape)))
        return name

    def node(self, op, inputs, out=None, **attrs):
        out = out or self._uid(op.lower())
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=self._uid(op), **attrs))
        return out

    def q(self, x, s, zp, out=None, dtype=np.int8):
        return self.node("QuantizeLinear", [x, self.init(s, F32), self.init(zp, dtype)], out)

    def dq(self, x, s, zp, out=None, dtype=np.int8, axis=None):
        kw = {} if axis is None else {"axis": axis}
        return self.node("DequantizeLinear", [x, self.init(s, F32), self.init(zp, dtype)], out,
                         **kw)

    def dense(self, x_dq, w, b, x_scale, relu, rng=None):
        """tf2onnx's dense layer: MatMul(x, DQ(W)) + DQ(bias) [-> Relu] (float, before Q);
        per-channel int8 weights (axis 1 of [K, N]), int32 bias at x_scale * w_scale."""
        ws = (np.abs(w).max(axis=0) / 127).astype(F32)
        wq = np.clip(np.rint(w / ws), -127, 127).astype(np.int8)
        bs = (F32(x_scale) * ws).astype(F32)
        bq = np.rint(b / bs).astype(np.int32)
        wd = self.dq(self.init(wq, np.int8), ws, np.zeros(ws.shape, np.int8), axis=1)
        bd = self.dq(self.init(bq, np.int32), bs, np.zeros(bs.shape, np.int32), dtype=np.int32,
                     axis=0)
        y = self.node("Add", [self.node("MatMul", [x_dq, wd]), bd])
        return self.node("Relu", [y]) if relu else y

    def model(self, opset=13):
        g = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        return m


# quantization parameters of the models below (float32 scale, zero point)
X_Q = (F32(0.05), -3)
H_Q = (F32(0.04), -128)
Y_Q = (F32(0.03), 5)


def dense_float_ends(seed=0, k=24, hidden=16, n=8):
    """x float [1, k] -> Q -> dense + Relu -> Q -> dense -> Q -> DQ -> y float [1, n]."""
    rng = np.random.default_rng(seed)
    g = Graph("dense_float_ends")
    x = g.input("serving_default_x:0", [1, k])
    qx = g.q(x, *X_Q, out="tfl.quantize")
    h = g.dense(g.dq(qx, *X_Q), rng.normal(0, 0.3, (k, hidden)), rng.normal(0, 0.2, hidden),
                X_Q[0], relu=True)
    qh = g.q(h, *H_Q)
    y = g.dense(g.dq(qh, *H_Q), rng.normal(0, 0.3, (hidden, n)), rng.normal(0, 0.1, n),
                H_Q[0], relu=False)
    qy = g.q(y, *Y_Q, out="StatefulPartitionedCall:01")
    g.dq(qy, *Y_Q, out="StatefulPartitionedCall:0")
    g.output("StatefulPartitionedCall:0", [1, n])
    return g.model()


A_Q = (F32(0.06), 7)
O2_Q = (F32(0.02), -10)
Z_Q = (F32(0.035), 2)


def several_ends(seed=1, k=16, n=8, m=4):
    """Two inputs, four outputs, in an order of their own:
      x float [1, k] -> Q -> dense + Relu -> qh (int8 output "StatefulPartitionedCall:1")
      z int8 [1, n];  qa = Q(DQ(qh) + DQ(z))   (int8 output "StatefulPartitionedCall:3",
                                                and float DQ(qa) "StatefulPartitionedCall:0")
      y2 = DQ(Q(dense(DQ(qa))))                 (float output "StatefulPartitionedCall:2")
    Graph outputs: :2, :0, :1, :3 (the same integer tensor qa behind :0 and :3)."""
    rng = np.random.default_rng(seed)
    g = Graph("several_ends")
    x = g.input("serving_default_x:0", [1, k])
    z = g.input("serving_default_z:0", [1, n], TensorProto.INT8)
    qx = g.q(x, *X_Q)
    h = g.dense(g.dq(qx, *X_Q), rng.normal(0, 0.3, (k, n)), rng.normal(0, 0.2, n), X_Q[0],
                relu=True)
    qh = g.q(h, *H_Q, out="StatefulPartitionedCall:1")
    a = g.node("Add", [g.dq(qh, *H_Q), g.dq(z, *Z_Q)])
    qa = g.q(a, *A_Q, out="StatefulPartitionedCall:3")
    g.dq(qa, *A_Q, out="StatefulPartitionedCall:0")
    y2 = g.dense(g.dq(qa, *A_Q), rng.normal(0, 0.3, (n, m)), rng.normal(0, 0.1, m), A_Q[0],
                 relu=False)
    g.dq(g.q(y2, *O2_Q), *O2_Q, out="StatefulPartitionedCall:2")
    g.output("StatefulPartitionedCall:2", [1, m])
    g.output("StatefulPartitionedCall:0", [1, n])
    g.output("StatefulPartitionedCall:1", [1, n], TensorProto.INT8)
    g.output("StatefulPartitionedCall:3", [1, n], TensorProto.INT8)
    return g.model()


def quantize_dequantize(n, s, zp):
    """x float [1, n] -> QuantizeLinear -> q (int8 output) -> DequantizeLinear -> y (float
    output): the float ends alone."""
    g = Graph("quantize_dequantize")
    x = g.input("x", [1, n])
    q = g.q(x, s, zp, out="q")
    g.dq(q, s, zp, out="y")
    g.output("q", [1, n], TensorProto.INT8)
    g.output("y", [1, n])
    return g.model()


def exact_ties(s, ks):
    """Floats x with x / s == k + 0.5 exactly in float32 (a tie of the quantizer's rounding:
    half to even and half away from zero differ on it), one per k where one exists
    within a few ulps of (k + 0.5) * s."""
    s = F32(s)
    out = []
    for k in ks:
        x = F32((k + 0.5) * float(s))
        for _ in range(8):
            v = F32(x / s)
            if v == F32(k + 0.5):
                out.append(x)
                break
            x = np.nextafter(x, F32(np.inf) if v < F32(k + 0.5) else F32(-np.inf), dtype=F32)
    return np.asarray(out, dtype=F32)


def float_inputs(s, zp, n, seed=3):
    """Vectors (4, 1, n) of floats that test a quantizer: exact ties (the two rounding
    rules differ there, and half to even is not half up), values a ulp beside them,
    saturating ones, -0.0, +-inf, and plain ones."""
    rng = np.random.default_rng(seed)
    ties = exact_ties(s, rng.integers(-140, 140, size=4 * n))
    assert ties.size >= n // 2, "too few exact ties for this scale"
    ties = np.resize(ties, n).astype(F32)
    near = np.nextafter(ties, F32(np.inf), dtype=F32)
    wild = rng.normal(0, 4 * float(s) * 128, n).astype(F32)
    wild[:6] = [0.0, -0.0, 1e30, -1e30, np.inf, -np.inf]
    small = (rng.normal(0, 40, n) * float(s)).astype(F32)
    return np.stack([ties, near, wild, small]).reshape(4, 1, n)
