"""Small .tflite models written from Python for the tests (TFLite's own schema
classes, as shipped by the `tflite-micro` package), so one builtin at a time can
be compared with TFLite Micro's interpreter.

    b = TflBuilder()
    x = b.input("x", [1, 8, 8, 4], 0.05, -3)
    y = b.tensor("y", [1, 8, 8, 4], 0.07, 2)
    b.op("RELU6", [x], [y])
    path = b.save(tmp_path / "m.tflite", outputs=[y])
"""
from __future__ import annotations

import numpy as np

_TYPES = {"float32": 0, "int32": 2, "uint8": 3, "int64": 4, "int16": 7, "int8": 9}


def _schema():
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as s
    return s


class TflBuilder:
    def __init__(self):
        s = _schema()
        self.s = s
        self.tensors = []
        self.buffers = [s.BufferT()]  # buffer 0: the empty sentinel
        self.ops = []
        self.codes = []
        self.inputs = []

    def tensor(self, name, shape, scale=None, zero_point=0, dtype="int8", data=None, axis=0):
        s = self.s
        t = s.TensorT()
        t.name = name
        t.shape = list(shape)
        t.type = _TYPES[dtype]
        t.buffer = 0
        if scale is not None:
            q = s.QuantizationParametersT()
            q.scale = [float(v) for v in np.atleast_1d(scale)]
            q.zeroPoint = [int(v) for v in np.broadcast_to(np.atleast_1d(zero_point),
                                                            (len(q.scale),))]
            q.quantizedDimension = axis
            t.quantization = q
        if data is not None:
            b = s.BufferT()
            b.data = list(np.ascontiguousarray(np.asarray(data, dtype=dtype)).view(np.uint8)
                          .reshape(-1))
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(self, name, data, scale=None, zero_point=0, dtype=None, axis=0):
        data = np.asarray(data)
        return self.tensor(name, data.shape, scale, zero_point, dtype or data.dtype.name, data,
                           axis)

    def input(self, name, shape, scale=None, zero_point=0, dtype="int8"):
        i = self.tensor(name, shape, scale, zero_point, dtype)
        self.inputs.append(i)
        return i

    def op(self, builtin, inputs, outputs, options=None, **fields):
        """builtin: BuiltinOperator name; options: the BuiltinOptions member name
        (e.g. 'Conv2DOptions'), fields: its camelCase fields."""
        s = self.s
        code = getattr(s.BuiltinOperator, builtin)
        key = (code,)
        if key not in self.codes:
            self.codes.append(key)
        o = s.OperatorT()
        o.opcodeIndex = self.codes.index(key)
        o.inputs = list(inputs)
        o.outputs = list(outputs)
        if options:
            opt = getattr(s, options + "T")()
            for k, v in fields.items():
                setattr(opt, k, v)
            o.builtinOptionsType = getattr(s.BuiltinOptions, options)
            o.builtinOptions = opt
        self.ops.append(o)

    def save(self, path, outputs):
        import flatbuffers
        s = self.s
        sg = s.SubGraphT()
        sg.tensors = self.tensors
        sg.inputs = list(self.inputs)
        sg.outputs = list(outputs)
        sg.operators = self.ops
        sg.name = "main"
        m = s.ModelT()
        m.version = 3
        m.subgraphs = [sg]
        m.buffers = self.buffers
        codes = []
        for (c,) in self.codes:
            oc = s.OperatorCodeT()
            oc.builtinCode = c
            oc.deprecatedBuiltinCode = min(c, 127)
            oc.version = 1
            codes.append(oc)
        m.operatorCodes = codes
        m.description = "tinyaot test"
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        with open(path, "wb") as f:
            f.write(b.Output())
        return path


def sum_max_island_model(path, seed=0):
    """One .tflite with the builtins of ops/minmax.py, ops/reduce_sum.py and the float region:
    x int8 [1, 6, 5, 8] -> CONV_2D 1x1 -> MAXIMUM (per-channel constant) -> SUM over H, W
    -> DEQUANTIZE -> TANH (float32) -> QUANTIZE -> MINIMUM (scalar constant)."""
    rng = np.random.default_rng(seed)
    b = TflBuilder()
    shape = [1, 6, 5, 8]
    x = b.input("x", shape, 0.05, -3)
    w = b.const("w", rng.integers(-128, 128, (8, 1, 1, 8)).astype(np.int8), 0.01, 0)
    bias = b.const("bias", rng.integers(-500, 500, 8).astype(np.int32),
                   np.float32(0.05) * np.float32(0.01), 0)
    conv = b.tensor("conv", shape, 0.05, -3)
    b.op("CONV_2D", [x, w, bias], [conv], "Conv2DOptions", padding=1, strideW=1, strideH=1)
    c = b.const("c", rng.integers(-128, 128, 8).astype(np.int8), 0.05, -3)
    mx = b.tensor("mx", shape, 0.05, -3)
    b.op("MAXIMUM", [conv, c], [mx])
    ax = b.const("axes", np.array([1, 2], np.int32))
    s = b.tensor("s", [1, 8], 0.4, 2)
    b.op("SUM", [mx, ax], [s], "ReducerOptions", keepDims=False)
    sf = b.tensor("sf", [1, 8], dtype="float32")
    b.op("DEQUANTIZE", [s], [sf])
    tf = b.tensor("tf", [1, 8], dtype="float32")
    b.op("TANH", [sf], [tf])
    t = b.tensor("t", [1, 8], 1 / 128, 0)
    b.op("QUANTIZE", [tf], [t])
    k = b.const("k", np.array(90, np.int8), 1 / 128, 0)
    y = b.tensor("y", [1, 8], 1 / 128, 0)
    b.op("MINIMUM", [t, k], [y])
    return b.save(path, [y])
