"""QDQ models with a float operator between DequantizeLinear and QuantizeLinear, built as
exporters and quantizers write them, for the float fallback's tests (ops/, firmware/,
driver/): a LogSoftmax or a float Softmax between DQ and Q, a Softmax after the last DQ whose
float result is the graph output, and a chain of float elementwise ops.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.helpers.qdq_builder import OPSET, QdqBuilder

X_Q = (0.05, 3)  # the int8 input's scale and zero point


def model_of(b, x_shape, y, y_shape, y_type, opset=OPSET):
    """The graph of builder b: int8 input "x", output y of y_type (checked by onnx)."""
    g = helper.make_graph(
        b.nodes, b.name, [helper.make_tensor_value_info("x", TensorProto.INT8, list(x_shape))],
        [helper.make_tensor_value_info(y, y_type, list(y_shape))], b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def softmax_float_out(op="Softmax", shape=(2, 10), x_q=X_Q):
    """int8 x -> DQ -> Softmax / LogSoftmax -> float32 y (the result leaves in float)."""
    b = QdqBuilder(op.lower())
    s = b.op(op, [b.dq("x", *x_q)], axis=-1)
    return model_of(b, shape, s, shape, TensorProto.FLOAT)


def softmax_qdq(op="LogSoftmax", shape=(2, 10), axis=-1, x_q=X_Q, y_q=(0.1, 127), opset=OPSET):
    """int8 x -> DQ -> Softmax / LogSoftmax -> Q -> int8 y (tf2onnx / quantize_static form)."""
    b = QdqBuilder(op.lower())
    d = b.dq("x", *x_q)
    s = b.op(op, [d], axis=axis)
    y = b.q(s, *y_q, out="y")
    return model_of(b, shape, y, shape, TensorProto.INT8, opset)


def gemm_softmax_float_out(shape=(1, 16), classes=10, seed=0, op="Softmax"):
    """int8 x -> DQ -> MatMul + bias (int8 weights) -> Q -> DQ -> Softmax -> float32 y: the
    classifier head a quantizer leaves with the Softmax after the last DQ."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("head")
    d = b.dq("x", *X_Q)
    w, ws = b.weight(rng.normal(0, 0.2, (shape[1], classes)).astype(np.float32), axis=1)
    mm = b.op("MatMul", [d, w])
    bias = b.bias(rng.normal(0, 0.5, (classes,)).astype(np.float32), X_Q[0] * ws)
    a = b.op("Add", [mm, bias])
    q = b.q(a, 0.08, -5)
    d2 = b.dq(q, 0.08, -5)
    y = b.op(op, [d2], axis=-1)
    return model_of(b, shape, y, (shape[0], classes), TensorProto.FLOAT)


def float_chain(shape=(1, 3, 4, 5), out_float=False):
    """int8 x -> DQ -> Exp -> Mul(float const) -> Add(DQ of int8 const) -> Div(x) -> Q: a
    chain of float elementwise ops no integer operator takes."""
    from onnx import numpy_helper
    rng = np.random.default_rng(7)
    b = QdqBuilder("chain")
    d = b.dq("x", 0.02, -10)
    e = b.op("Exp", [d])
    k = "k_mul"
    b.inits.append(numpy_helper.from_array(rng.normal(1, 0.3, shape[1:]).astype(np.float32), k))
    m = b.op("Mul", [e, k])
    c = b.dq(b.const_int(rng.integers(-100, 100, (shape[-1],)), np.int8), 0.01, 0)
    a = b.op("Add", [m, c])
    v = b.op("Div", [a, d])
    if out_float:
        return model_of(b, shape, v, shape, TensorProto.FLOAT)
    y = b.q(v, 0.25, 0, out="y")
    return model_of(b, shape, y, shape, TensorProto.INT8)


def softmax_tflite_file(op="SOFTMAX", shape=(2, 10), x_q=X_Q, y_q=None):
    """The same layer as TFLite writes it: int8 x -> DEQUANTIZE -> float SOFTMAX (beta 1) or
    LOG_SOFTMAX -> QUANTIZE -> int8 y (y_q None: the float result is the output); built with
    TFLite's own schema classes (shipped by the tflite-micro package)."""
    import flatbuffers
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as S

    def tensor(name, ttype, q, buf):
        t = S.TensorT()
        t.name, t.shape, t.type, t.buffer = name, list(shape), ttype, buf
        if q is not None:
            t.quantization = S.QuantizationParametersT()
            t.quantization.scale, t.quantization.zeroPoint = [float(q[0])], [int(q[1])]
        return t

    def opcode(builtin):
        c = S.OperatorCodeT()
        c.builtinCode = c.deprecatedBuiltinCode = builtin
        c.version = 1
        return c

    B = S.BuiltinOperator
    m = S.ModelT()
    m.version = 3
    m.buffers = [S.BufferT() for _ in range(5)]
    m.operatorCodes = [opcode(B.DEQUANTIZE), opcode(getattr(B, op)), opcode(B.QUANTIZE)]
    g = S.SubGraphT()
    f32 = S.TensorType.FLOAT32
    g.tensors = [tensor("x", S.TensorType.INT8, x_q, 1), tensor("xf", f32, None, 2),
                 tensor("yf", f32, None, 3)]
    ops = [S.OperatorT() for _ in range(2 if y_q is None else 3)]
    ops[0].opcodeIndex, ops[0].inputs, ops[0].outputs = 0, [0], [1]
    ops[1].opcodeIndex, ops[1].inputs, ops[1].outputs = 1, [1], [2]
    if op == "SOFTMAX":
        ops[1].builtinOptionsType = S.BuiltinOptions.SoftmaxOptions
        ops[1].builtinOptions = S.SoftmaxOptionsT()
        ops[1].builtinOptions.beta = 1.0
    out = 2
    if y_q is not None:
        g.tensors.append(tensor("y", S.TensorType.INT8, y_q, 4))
        ops[2].opcodeIndex, ops[2].inputs, ops[2].outputs = 2, [2], [3]
        out = 3
    g.operators, g.inputs, g.outputs = ops, [0], [out]
    m.subgraphs = [g]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def run_tflite_micro(data, x):
    """TFLite Micro's own interpreter on each input of x (the tflite-micro package)."""
    from tflite_micro import runtime as rt
    interp = rt.Interpreter.from_bytes(data)
    out = []
    for v in x:
        interp.reset()
        interp.set_input(np.ascontiguousarray(v), 0)
        interp.invoke()
        out.append(np.array(interp.get_output(0)))
    return np.stack(out)


def scaled_unary(op, shape=(2, 64), opset=OPSET, y_q=(0.05, 0), **attrs):
    """int8 x -> DQ -> Mul(float32 constant) -> `op` -> Q: a float operator behind another
    float one, so no integer form (a table) can take it."""
    from onnx import numpy_helper
    rng = np.random.default_rng(len(op))
    b = QdqBuilder(op.lower())
    d = b.dq("x", 0.04, -3)
    b.inits.append(numpy_helper.from_array(rng.uniform(-1.5, 1.5, shape[-1:]).astype(np.float32),
                                           "k"))
    m = b.op("Mul", [d, "k"])
    u = b.op(op, [m], **attrs)
    y = b.q(u, *y_q, out="y")
    return model_of(b, shape, y, shape, TensorProto.INT8, opset)
