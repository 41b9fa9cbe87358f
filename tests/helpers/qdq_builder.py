"""Tiny QDQ ONNX models built with onnx.helper, for the operator tests.

Every model has one int8 graph input and one int8 graph output, so the
generated C, the numpy reference and onnxruntime all see the same integers.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class QdqBuilder:
    def __init__(self, name="op_test"):
        self.name = name
        self.nodes = []
        self.inits = []
        self.count = 0

    def _uid(self, stem):
        self.count += 1
        return f"{stem}_{self.count}"

    def qparams(self, scale, zp, dtype=np.int8):
        s = self._uid("s")
        z = self._uid("zp")
        self.inits.append(numpy_helper.from_array(np.asarray(scale, dtype=np.float32), s))
        self.inits.append(numpy_helper.from_array(np.asarray(zp, dtype=dtype), z))
        return s, z

    def dq(self, x, scale, zp, axis=None, dtype=np.int8):
        s, z = self.qparams(scale, zp, dtype)
        y = self._uid("dq")
        kw = {} if axis is None else {"axis": axis}
        self.nodes.append(helper.make_node("DequantizeLinear", [x, s, z], [y], name=y, **kw))
        return y

    def q(self, x, scale, zp, out=None):
        s, z = self.qparams(scale, zp)
        y = out or self._uid("q")
        self.nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [y], name=self._uid("Q")))
        return y

    def op(self, op_type, inputs, **attrs):
        y = self._uid(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [y], name=y, **attrs))
        return y

    def const_int(self, arr, dtype):
        n = self._uid("c")
        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype=dtype), n))
        return n

    def weight(self, w_float, axis=0):
        """Symmetric per-channel int8 weights along `axis`, DequantizeLinear'd."""
        w = np.asarray(w_float, dtype=np.float32)
        red = tuple(i for i in range(w.ndim) if i != axis)
        s = (np.abs(w).max(axis=red) / 127.0).astype(np.float32)
        s[s == 0] = 1.0
        shape = [1] * w.ndim
        shape[axis] = -1
        wq = np.clip(np.rint(w / s.reshape(shape)), -127, 127).astype(np.int8)
        wn = self.const_int(wq, np.int8)
        return self.dq(wn, s, np.zeros(s.shape, np.int8), axis=axis), s

    def bias(self, b_float, scale):
        s = np.asarray(scale, dtype=np.float32)
        bq = np.rint(np.asarray(b_float) / s).astype(np.int32)
        bn = self.const_int(bq, np.int32)
        return self.dq(bn, s, np.zeros(s.shape, np.int32), axis=0, dtype=np.int32)

    def model(self, x_name, in_shape, y_name, out_shape, opset=OPSET):
        g = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(x_name, TensorProto.INT8, list(in_shape))],
            [helper.make_tensor_value_info(y_name, TensorProto.INT8, list(out_shape))],
            self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def save(model, tmp_path, name="m.onnx"):
    p = tmp_path / name
    onnx.save(model, str(p))
    return p


def run_ort(path, x):
    """onnxruntime's default CPU session (one intra-op thread, as tinyaot's
    --ort-threads default) on each int8 input vector."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    iname = sess.get_inputs()[0].name
    return np.stack([sess.run(None, {iname: v})[0] for v in x])


def all_int8_inputs(shape, count, seed=0):
    """`count` int8 tensors of `shape`; the first holds every int8 value (tiled)."""
    size = int(np.prod(shape))
    rng = np.random.default_rng(seed)
    out = rng.integers(-128, 128, size=(count, size)).astype(np.int8)
    out[0] = np.resize(np.arange(-128, 128, dtype=np.int8), size)
    return out.reshape((count,) + tuple(shape))


def host_run_checked(path, x, numerics, build_dir, kernel):
    """Compile, run every input on the host, check that `kernel` is used (unless None) and
    that the C equals the numpy reference; returns (outputs, Compiled)."""
    from codegen.compiler import compile_model
    from codegen.reference import run_graph
    from codegen.driver.verify import run_model

    c = compile_model(path, numerics=numerics)
    outs, info = run_model(path, x, board="host", numerics=numerics, build_dir=build_dir / "gen",
                           compiled=c)
    assert info["status"] == [0] * len(x)
    assert kernel is None or kernel in c.report["kernels"]
    g = c.graph
    ref = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])
    np.testing.assert_array_equal(outs.reshape(ref.shape), ref)  # C == numpy reference
    return outs.reshape(ref.shape), c
