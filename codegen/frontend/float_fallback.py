"""The float region: ONNX nodes no integer lowering takes, run in float32 (the hybrid fallback).

Inside an otherwise quantized model, an operator the integer path does not cover (LogSoftmax,
a Softmax whose result leaves the model in float, a chain of float Mul / Add / Exp between a
DequantizeLinear and a QuantizeLinear, ...) becomes float IR operators (ops/*_f32.py) on
float32 tensors in the arena: a `dequantize` node where an integer tensor enters the region,
the float operators in ONNX order, a `quantize` node where a QuantizeLinear leaves it (or a
float32 graph output). The integer forms always win: a node is lowered here only when its
integer lowering raised Unsupported, and an integer layer pending its QuantizeLinear is
recomputed in float only for a consumer that needs its float result (then both exist).

Each float operator module registers its ONNX op types in `Op.onnx_float` (the registry's
ONNX_FLOAT_LOWERINGS); a lowering asks `lw.float_input(x, node)` for each input and calls
`lw.float_emit(...)` for its result. `--no-float-fallback` (enabled=False) keeps the error
the integer path gives.
"""
from __future__ import annotations

import numpy as np

from ..ir import Tensor
from ..ops import ONNX_FLOAT_LOWERINGS
from ..ops.base import Unsupported
from .onnx_loader_util import attr_dict


class UpstreamFailed(Unsupported):
    """An input comes from a node already reported: only that is said."""


class FloatRegion:
    def __init__(self, lw, enabled=True):
        self.lw = lw
        self.enabled = enabled
        self.value = {}  # ONNX float tensor -> float32 IR tensor
        self.producer = {}  # ONNX tensor -> (ONNX node, node name)
        self.failed = set()  # outputs of nodes that could not be lowered at all
        self.lowered = []  # (ONNX op type, node name, IR op) run in float, in order
        self._busy = set()

    def record(self, node, name):
        for o in node.output:
            if o:
                self.producer[o] = (node, name)

    def takes(self, op_type) -> bool:
        return self.enabled and op_type in ONNX_FLOAT_LOWERINGS

    # ---- lowering ------------------------------------------------------
    def lower(self, node, name):
        """Lower ONNX `node` as float IR operators (raises Unsupported)."""
        fn = ONNX_FLOAT_LOWERINGS.get(node.op_type)
        if fn is None:
            raise Unsupported("no integer or float form")
        if name in self._busy:
            raise Unsupported("cyclic float dependency")
        self._busy.add(name)
        try:
            out = node.output[0]
            before = len(self.lw.graph.nodes)
            fn(self.lw, node, name, attr_dict(node), list(node.input), out,
               self.lw.shape_of(out, name))
            ir_ops = [n.op for n in self.lw.graph.nodes[before:] if n.op != "dequantize"]
            self.lowered.append((node.op_type, name, ir_ops[-1] if ir_ops else "reshape"))
        finally:
            self._busy.discard(name)

    def input(self, x, name):
        """The float32 IR tensor holding ONNX float tensor x (read by node `name`)."""
        lw = self.lw
        if x in self.value:
            return self.value[x]
        if x in lw.pending:  # an op commuting with quantization: settled, x is DQ of it
            lw.settle(x)
        if x in lw.qrepr:
            t = lw.graph.tensors[lw.qrepr[x]]
            if t.is_const:  # DequantizeLinear of an initializer: folded, MLAS's formula
                return self._const(x, _dequantized(t))
            if t.q is None or t.q.per_channel:
                raise Unsupported(f"'{x}' is dequantized per channel; the float fallback takes "
                                  "per-tensor DequantizeLinear only")
            y = self._tensor(x, t.shape)
            dq = self.producer.get(x, (None, f"{x}@dequantize"))[1]
            lw.emit("dequantize", dq, [t.name], [y], {"onnx_tensors": (x,)})
            self.value[x] = y
            return y
        if x in lw.consts:
            arr = np.asarray(lw.consts[x])
            if arr.dtype != np.float32:
                raise Unsupported(f"constant '{x}' is {arr.dtype}; the float fallback takes "
                                  "float32 constants")
            return self._const(x, arr)
        if x in lw.float_inputs or x in lw.input_views:
            raise Unsupported(f"float graph input '{x}' is used without QuantizeLinear")
        if x in self.failed or x in lw.skipped:
            raise UpstreamFailed(f"input '{x}' comes from a node that could not be compiled")
        if x in self.producer:
            node, pname = self.producer[x]
            if node.op_type in ("DequantizeLinear", "QuantizeLinear"):
                raise Unsupported(f"input '{x}' is not a float tensor the fallback can read")
            self.lower(node, pname)  # e.g. an integer layer still waiting for its Q
            if x in self.value:
                return self.value[x]
        raise Unsupported(f"input '{x}' is not available as a float tensor")

    def emit(self, op, name, inputs, out, shape, attrs=None, onnx_op=None):
        """Emit float IR node `op` computing ONNX tensor `out` (float32, `shape`)."""
        y = self._tensor(out, shape)
        a = dict(attrs or {})
        a["onnx_tensors"] = (out,)
        a["onnx_op"] = onnx_op
        self.lw.emit(op, name, inputs, [y], a)
        self.value[out] = y
        return y

    def alias(self, x, out, shape, name):
        """ONNX `out` is float tensor x reshaped (zero-copy)."""
        return self.emit("reshape", name, [x], out, shape)

    def quantize(self, f, out, shape, odt, q, name):
        """QuantizeLinear of float ONNX tensor f into the integer tensor `out`."""
        x = self.input(f, name)
        if q.per_channel:
            raise Unsupported("per-channel QuantizeLinear of a float result")
        t = self.lw.add_int_tensor(out, shape, odt, q)
        self.lw.emit("quantize", name, [x], [t.name], {"onnx_tensors": (f,)})

    def output(self, x):
        """A float graph output: its float32 IR tensor."""
        return self.input(x, x)

    # ---- tensors -------------------------------------------------------
    def _tensor(self, onnx_name, shape):
        g = self.lw.graph
        name = onnx_name if onnx_name not in g.tensors else f"{onnx_name}@f32"
        k = 1
        while name in g.tensors:
            k += 1
            name = f"{onnx_name}@f32_{k}"
        g.add_tensor(Tensor(name, tuple(int(d) for d in shape), "float32"))
        return name

    def _const(self, x, arr):
        arr = np.asarray(arr, np.float32)
        if not np.all(np.isfinite(arr)):
            raise Unsupported(f"constant '{x}' holds inf or NaN")
        g = self.lw.graph
        name = f"{x}@f32" if x in g.tensors else x
        if name not in g.tensors:
            g.add_tensor(Tensor(name, tuple(arr.shape), "float32", None, arr))
        self.value[x] = name
        return name


def _dequantized(t):
    """onnxruntime's DequantizeLinear of an integer constant: float(q - zp) * scale."""
    q = t.q
    scale, zp = q.scale.astype(np.float32), q.zero_point.astype(np.int64)
    if q.axis is not None:
        shape = [1] * t.data.ndim
        shape[q.axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return ((t.data.astype(np.int64) - zp).astype(np.float32) * scale).astype(np.float32)
