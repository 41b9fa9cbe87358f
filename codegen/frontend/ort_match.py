"""The model's tensors found in onnxruntime's optimized graph by what computes them.

onnxruntime's optimizer renames tensors (its x86 int8 -> uint8 rewrite, the NHWC layout
transformer, fusions), reorders nothing it needs to, but adds and removes Transposes,
QuantizeLinear / DequantizeLinear pairs, Pads it folds and activations it fuses. So a
tensor of the original model is matched with the optimized graph's tensors by its
structure, never by its name: every tensor gets a signature, a hash of

  the graph input it is (by position), or the constant it is (its dequantized values,
      sorted, zeros left out: the same weights transposed, packed or padded), or
  the computation producing it: the operator kind (QLinearConv, ConvInteger, FusedConv
      and Conv are all "Conv"; QGemm, Gemm, FusedGemm, MatMul are "MatMul", ...) and the
      signatures of its data inputs (sorted for Add / Mul),

looking through the operators that only move, requantize or clip values
(QuantizeLinear, DequantizeLinear, Transpose, Reshape, Relu, Clip, Pad, ...) and
through a bias Add after a Conv / MatMul (fused into Gemm / QGemm by onnxruntime). Two
tensors with the same signature hold the same computation; the optimized graph's nodes of
a kind at a signature say how onnxruntime computes it.
"""
from __future__ import annotations

import hashlib

import numpy as np
import onnx
from onnx import numpy_helper

# operators that only move, requantize, clip or pad values: looked through
TRANSPARENT = {"QuantizeLinear", "DequantizeLinear", "Transpose", "Reshape", "Squeeze",
               "Unsqueeze", "Flatten", "Identity", "Relu", "Clip", "Pad", "ReorderInput",
               "ReorderOutput"}
# op type -> the kind it computes
KIND = {"QLinearConv": "Conv", "ConvInteger": "Conv", "FusedConv": "Conv", "NhwcConv": "Conv",
        "QGemm": "MatMul", "Gemm": "MatMul", "FusedGemm": "MatMul", "QLinearMatMul": "MatMul",
        "MatMulInteger": "MatMul", "FusedMatMul": "MatMul",
        "QLinearAdd": "Add", "QLinearMul": "Mul", "QLinearAveragePool": "AveragePool",
        "QLinearGlobalAveragePool": "GlobalAveragePool", "QLinearSoftmax": "Softmax",
        "QLinearSigmoid": "Sigmoid", "QLinearLeakyRelu": "LeakyRelu",
        "QLinearConcat": "Concat", "QLinearReduceMean": "ReduceMean", "NhwcMaxPool": "MaxPool",
        "QLinearAveragePoolNhwc": "AveragePool"}
# op type -> positions of its data inputs (default: all inputs)
DATA_INPUTS = {"QLinearConv": (0, 3), "QGemm": (0, 3), "QLinearMatMul": (0, 3),
               "QLinearAdd": (0, 3), "QLinearMul": (0, 3), "ConvInteger": (0, 1),
               "MatMulInteger": (0, 1), "Conv": (0, 1), "FusedConv": (0, 1),
               "Gemm": (0, 1), "FusedGemm": (0, 1), "ConvTranspose": (0, 1),
               "QLinearAveragePool": (0,), "QLinearGlobalAveragePool": (0,),
               "QLinearSoftmax": (0,), "QLinearSigmoid": (0,), "QLinearLeakyRelu": (0,),
               "QLinearReduceMean": (0,), "Resize": (0,), "Upsample": (0,),
               "Slice": (0,), "Split": (0,), "ReduceMean": (0,)}
COMMUTATIVE = {"Add", "Mul", "Sum", "Max", "Min"}
# QLinear ops whose data operands each come with their scale and zero point after them
QLINEAR_OPERANDS = {"QLinearAdd", "QLinearMul", "QLinearMatMul", "QLinearConcat"}
WEIGHTED = {"Conv", "MatMul", "ConvTranspose"}  # kinds a following constant Add is the bias of
# QLinear ops: (weight, its scale, its zero point) input positions, to dequantize weights
QLINEAR_WEIGHTS = {"QLinearConv": (3, 4, 5), "QGemm": (3, 4, 5), "QLinearMatMul": (3, 4, 5)}


def kind(node):
    return KIND.get(node.op_type, node.op_type)


class SignedGraph:
    """One ONNX graph with a signature for every tensor (see module doc)."""

    def __init__(self, m: onnx.ModelProto):
        self.m = m
        g = m.graph
        self.consts = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        for n in g.node:
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
                self.consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
        self.producer = {o: n for n in g.node for o in n.output if o}
        inputs = [i.name for i in g.input if i.name not in self.consts]
        self.input_pos = {name: k for k, name in enumerate(inputs)}
        self.elem_type = {i.name: i.data_type for i in g.initializer}
        for vi in list(g.value_info) + list(g.input) + list(g.output):
            self.elem_type.setdefault(vi.name, vi.type.tensor_type.elem_type)
        self._sig = {}

    # ---- constants ------------------------------------------------------------------
    def const_value(self, name):
        """The float value a constant stands for (through DequantizeLinear), or None."""
        if name in self.consts:
            return np.asarray(self.consts[name])
        n = self.producer.get(name)
        if n is not None and n.op_type == "DequantizeLinear" and n.input[0] in self.consts:
            return _dequantize(self, n.input[0], n.input[1],
                               n.input[2] if len(n.input) > 2 else "", _axis(n))
        return None

    # ---- signatures -----------------------------------------------------------------
    def sig(self, name):
        """The signature of tensor `name` (a hex string)."""
        if name in self._sig:
            return self._sig[name]
        stack = [name]
        while stack:  # iterative post-order: deep graphs do not recurse
            t = stack[-1]
            if t in self._sig:
                stack.pop()
                continue
            deps = self._deps(t)
            todo = [d for d in deps if d not in self._sig]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            self._sig[t] = self._make(t, deps)
        return self._sig[name]

    def _deps(self, t):
        if t in self.input_pos or self.const_value(t) is not None:
            return []
        n = self.producer.get(t)
        if n is None:
            return []
        if self._weight(n) is not None:  # a weighted layer is known by its weights
            return []
        if n.op_type in TRANSPARENT:
            return [n.input[0]]
        if self._is_bias_add(n):
            return [self._bias_add_data(n)]
        x = self._hardswish_input(n)
        if x is not None:
            return [x]
        return [n.input[i] for i in self._data_positions(n) if n.input[i]]

    def _make(self, t, deps):
        if t in self.input_pos:
            return _h(("input", self.input_pos[t]))
        v = self.const_value(t)
        if v is not None:
            return _h(("const", _fingerprint(v)))
        n = self.producer.get(t)
        if n is None:
            return _h(("unknown", t))
        w = self._weight(n)
        if w is not None:
            return _h((kind(n), "weights", _fingerprint(w), list(n.output).index(t)))
        if n.op_type in TRANSPARENT or self._is_bias_add(n):
            return self._sig[deps[0]]
        parts = [self._sig[d] for d in deps]
        if n.op_type in QLINEAR_OPERANDS:  # a constant operand stands for its float value
            parts = [self._qlinear_const_sig(n, i) or self._sig[n.input[i]]
                     for i in self._data_positions(n) if n.input[i]]
        k = "HardSwish" if self._hardswish_input(n) is not None else kind(n)
        if k in COMMUTATIVE:
            parts.sort()
        return _h((k, tuple(parts), list(n.output).index(t)))

    def _weight(self, n):
        """The float weights of a Conv / MatMul-kind node with a constant second operand
        (QLinear ones dequantized with their own scales), else None."""
        if kind(n) not in WEIGHTED or len(n.input) < 2:
            return None
        if n.op_type in QLINEAR_WEIGHTS:
            w, s, z = QLINEAR_WEIGHTS[n.op_type]
            if n.input[w] not in self.consts:
                return None
            axis = 0  # QLinearConv: per output channel
            if n.op_type == "QGemm":  # B [K, N] (or [N, K] with transB): per output column
                axis = 0 if any(a.name == "transB" and a.i for a in n.attribute) else 1
            elif n.op_type == "QLinearMatMul":
                axis = -1
            return _dequantize(self, n.input[w], n.input[s],
                               n.input[z] if len(n.input) > z else "", axis)
        pos = 1
        if n.op_type in ("ConvInteger", "MatMulInteger") and n.input[1] in self.consts:
            return np.asarray(self.consts[n.input[1]], dtype=np.float32)
        return self.const_value(n.input[pos])

    def _qlinear_const_sig(self, n, i):
        """The signature of QLinear node n's constant operand i, dequantized with the
        scale and zero point after it (as the original DequantizeLinear of it), else None."""
        x = n.input[i]
        if x not in self.consts or len(n.input) <= i + 1 or n.input[i + 1] not in self.consts:
            return None
        z = n.input[i + 2] if len(n.input) > i + 2 else ""
        return _h(("const", _fingerprint(_dequantize(self, x, n.input[i + 1], z, -1))))

    def _hardswish_input(self, n):
        """x if n is Mul(x, HardSigmoid(x)) (onnxruntime inlines HardSwish so), else None."""
        if n.op_type == "HardSwish":
            return n.input[0]
        if n.op_type != "Mul" or len(n.input) != 2:
            return None
        for a, b in ((0, 1), (1, 0)):
            h = self.producer.get(n.input[b])
            if h is not None and h.op_type == "HardSigmoid" and (
                    h.input[0] == n.input[a] or self._same_source(h.input[0], n.input[a])):
                return n.input[a]  # onnxruntime gives each reader its own DequantizeLinear
        return None

    def _data_positions(self, n):
        if n.op_type == "QLinearConcat":  # y_scale, y_zp, then (x, scale, zp) triples
            return tuple(range(2, len(n.input), 3))
        return DATA_INPUTS.get(n.op_type, tuple(range(len(n.input))))

    def _is_bias_add(self, n):
        """An Add of a constant onto a Conv / MatMul result (onnxruntime fuses it)."""
        if n.op_type != "Add" or len(n.input) != 2:
            return False
        data = self._bias_add_data(n)
        if data is None:
            return False
        p = self._through(data)
        return p is not None and kind(p) in WEIGHTED

    def _bias_add_data(self, n):
        c = [self.const_value(i) is not None for i in n.input]
        if c == [False, True]:
            return n.input[0]
        if c == [True, False]:
            return n.input[1]
        return None

    def _same_source(self, a, b):
        """Two DequantizeLinear copies of one tensor (onnxruntime duplicates a DQ read by
        several nodes): the same quantized tensor and parameters behind them."""
        pa, pb = self.producer.get(a), self.producer.get(b)
        return (pa is not None and pb is not None and pa.op_type == pb.op_type
                == "DequantizeLinear" and list(pa.input) == list(pb.input))

    def _through(self, t):
        """The first producer of t that is not transparent."""
        n = self.producer.get(t)
        while n is not None and n.op_type in TRANSPARENT:
            n = self.producer.get(n.input[0])
        return n


class OrtMatch:
    """The original model matched with onnxruntime's optimized graph of it."""

    def __init__(self, model: onnx.ModelProto, optimized: onnx.ModelProto):
        self.orig = SignedGraph(model)
        self.opt = SignedGraph(optimized)
        self.by_sig = {}
        for n in optimized.graph.node:
            for o in n.output:
                if o:
                    self.by_sig.setdefault(self.opt.sig(o), []).append(n)

    def nodes(self, tensors, kinds):
        """onnxruntime's nodes of one of `kinds` computing any of the original model's
        `tensors` (names in the model file), in graph order, without duplicates."""
        out, seen = [], set()
        for t in tensors:
            if t not in self.orig.producer and t not in self.orig.input_pos:
                continue
            for n in self.by_sig.get(self.orig.sig(t), ()):
                if kind(n) in kinds and id(n) not in seen:
                    seen.add(id(n))
                    out.append(n)
        return out

    def is_uint8(self, n, pos):
        """Is input `pos` of onnxruntime's node n (a zero point or weight) uint8?"""
        return (pos < len(n.input) and n.input[pos]
                and self.opt.elem_type.get(n.input[pos]) == onnx.TensorProto.UINT8)

    def is_int8(self, n, pos):
        return (pos < len(n.input) and n.input[pos]
                and self.opt.elem_type.get(n.input[pos]) == onnx.TensorProto.INT8)


def _axis(n):
    for a in n.attribute:
        if a.name == "axis":
            return a.i
    return 1


def _dequantize(sg, x, s, z, axis):
    q = np.asarray(sg.consts[x])
    scale = np.asarray(sg.consts.get(s, np.float32(1)), dtype=np.float32)
    zp = np.asarray(sg.consts[z]) if z in sg.consts else np.zeros(1, q.dtype)
    if scale.size > 1 and q.ndim:
        shape = [1] * q.ndim
        shape[axis % q.ndim] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return (q.astype(np.int32) - zp.astype(np.int32)).astype(np.float32) * scale


def _fingerprint(v):
    """The sorted non-zero values (float32 bits) of a constant, hashed: the same under
    transposition, packing and zero padding."""
    a = np.asarray(v)
    if a.dtype.kind in "iub":
        a = a.astype(np.float32)
    elif a.dtype.kind == "f":
        a = a.astype(np.float32)
    else:
        return _h(("const-other", a.dtype.str, a.tobytes()))
    nz = np.sort(a[a != 0].reshape(-1))
    return hashlib.sha1(nz.tobytes() + str(int(a.size > 0)).encode()).hexdigest()


def _h(obj):
    return hashlib.sha1(repr(obj).encode()).hexdigest()
