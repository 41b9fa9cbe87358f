"""TflModel (reader.py) -> the integer IR the ONNX front end makes.

TFLite activations are NHWC; the IR's spatial nodes work on logical NCHW shapes (the
layout pass then stores them NHWC, so no data moves). Each TFLite activation therefore has
a primary IR tensor in one of two layouts: "plain" (TFLite's own shape) or, for a 4-D
tensor made by a spatial or elementwise node, "nchw" ([N, C, H, W], IR name + "@nchw"). A
consumer asks for the layout it needs (`act`); the other one is made once by a `transpose`
node, which the layout pass turns into a zero-copy view.

Each builtin is lowered by its IR operator's module (codegen/ops/<op>.py, `Op.tflite`:
builtin name -> f(tl, op), collected in ops.TFLITE_LOWERINGS), handed this lowering
context `tl`. A builtin that cannot be lowered raises Unsupported; the walk goes on (its
outputs get placeholder tensors) so that every unsupported operator is listed in one
message, by TFLite name and operator index. The model boundary (a QUANTIZE of a float
input, a DEQUANTIZE into a float output) is the front end's own: the IR's I/O is the
integer tensor, and `graph.io_float` names the float ones as the ONNX front end does.

A float region inside the model (the hybrid float fallback, as frontend/float_fallback.py
makes for ONNX): a DEQUANTIZE whose float result feeds operators becomes a `dequantize`
node into a float32 IR tensor, a float builtin that has a float lowering (`Op.tflite_float`,
ops.TFLITE_FLOAT_LOWERINGS: LOGISTIC, TANH) runs on it with TFLite Micro's float
arithmetic, and a QUANTIZE of it (`quantize`) or a float graph output ends it. The layers
are listed in graph.float_fallback (report, one warning line); float_fallback=False
(--no-float-fallback) refuses them.
"""
from __future__ import annotations

import numpy as np

from ...errors import TinyAotError, UnsupportedError
from ...ir import Graph, Node, QParams, Tensor
from ...ir.graph import Declared
from ...ops import TFLITE_FLOAT_LOWERINGS, TFLITE_LOWERINGS
from ...ops.base import Unsupported

NHWC_TO_NCHW_AXIS = (0, 2, 3, 1)  # NHWC axis a is NCHW axis NHWC_TO_NCHW_AXIS[a]
# fused_activation_function -> (act_lo, act_hi) in real units
ACTIVATIONS = {0: (None, None), 1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
ACTIVATION_NAMES = {4: "TANH", 5: "SIGN_BIT"}


class UpstreamFailed(Unsupported):
    """An input comes from an operator already reported: only that one is listed."""


def nchw_shape(shape):
    n, h, w, c = shape
    return (n, c, h, w)


class TflLowering:
    """The lowering context `tl` the operators' TFLite lowerings are handed."""

    def __init__(self, model, float_fallback=True):
        self.model = model
        self.float_fallback = float_fallback
        self.fvals = {}  # TFLite index -> float32 IR tensor (the float region)
        self.fallback = []  # (builtin, IR node, IR op) run in float32, in order
        self.consumed = {i for op in model.operators for i in op.inputs if i >= 0}
        self.path = model.path
        self.graph = Graph(name=model.name, source=model.path)
        self.io_float = {"inputs": [], "outputs": []}
        self.float_input_of = []      # (IR input, the model's float input) per QUANTIZE end
        self.dequantized_out_ir = []  # IR outputs behind a DEQUANTIZE end, in io_float's order
        # TFLite tensor index <-> IR: the primary representation and its views
        self.rep = {}  # index -> (ir name, layout)
        self.views = {}  # (index, layout) -> ir name
        self.ir_index = {}  # ir name -> (tflite index, layout), for tests and tools
        self.consts = {t.index: t.data for t in model.tensors if t.is_const}  # + folded ones
        self.floats = set()  # float activations (model inputs, placeholders)
        self.dequantized = {}  # float graph output index -> its int8 source (DEQUANTIZE)
        self.unsupported = []  # (builtin, operator index, why)
        self.names = self._unique_names()

    # ---- tensors -------------------------------------------------------------------------
    def _unique_names(self):
        seen = {}
        for t in self.model.tensors:
            seen[t.name] = seen.get(t.name, 0) + 1
        return {t.index: (t.name if seen[t.name] == 1 else f"{t.name}#{t.index}")
                for t in self.model.tensors}

    def tensor(self, idx):
        """The TFLite tensor record (reader.TflTensor) at index idx."""
        return self.model.tensors[idx]

    @staticmethod
    def inp(op, k):
        """Operator op's k-th input tensor index (-1: absent)."""
        return op.inputs[k] if k < len(op.inputs) else -1

    def check_int8(self, op, *idxs):
        """Every tensor int8 (uint8 too for QUANTIZE and the reshapes)."""
        for i in idxs:
            t = self.tensor(i)
            if t.dtype == "int16":
                raise Unsupported(f"'{t.name}' is int16 (16x8 quantization is not supported)")
            if t.dtype != "int8" and not (t.dtype == "uint8" and op.builtin in _UINT8_OK):
                raise Unsupported(f"'{t.name}' is {t.dtype}; this builtin is lowered for int8")

    def qparams(self, t, what="tensor"):
        """The QParams of TFLite tensor t (None: not quantized)."""
        if t.scale is None:
            return None
        scale = t.scale.astype(np.float32)
        zp = t.zero_point
        if zp.size not in (1, scale.size):
            raise Unsupported(f"{what} '{t.name}' has {scale.size} scales and {zp.size} "
                              "zero points")
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise Unsupported(f"{what} '{t.name}' has a scale that is not finite and > 0")
        zp = np.broadcast_to(zp, scale.shape).astype(np.int32)
        if scale.size == 1:
            return QParams(scale.reshape(1).copy(), zp.reshape(1).copy(), None)
        return QParams(scale.copy(), zp.copy(), int(t.quantized_dimension))

    def same_q(self, a, b) -> bool:
        """TFLite tensors a and b (indices) quantized alike."""
        qa, qb = self.qparams(self.tensor(a)), self.qparams(self.tensor(b))
        return qa is not None and qb is not None and qa.same_as(qb)

    def new_act(self, idx, layout="plain"):
        """The IR tensor an operator's output `idx` is written to, in `layout`."""
        t = self.tensor(idx)
        if t.dtype not in ("int8", "uint8", "int16", "int32"):
            raise Unsupported(f"output '{t.name}' is {t.dtype}; only integer activations "
                              "are supported")
        q = self.qparams(t)
        if t.dtype in ("int8", "uint8") and q is None:
            raise Unsupported(f"output '{t.name}' is {t.dtype} without quantization parameters")
        if q is not None and q.per_channel:
            raise Unsupported(f"output '{t.name}' is quantized per channel")
        if layout == "nchw" and len(t.shape) != 4:
            layout = "plain"
        shape = nchw_shape(t.shape) if layout == "nchw" else tuple(t.shape)
        name = self.names[idx] + ("@nchw" if layout == "nchw" else "")
        self.graph.add_tensor(Tensor(name, shape, t.dtype, q))
        self.rep[idx] = (name, layout)
        self.views[(idx, layout)] = name
        self.ir_index[name] = (idx, layout)
        return name

    def layout_of(self, idx):
        """The layout of activation idx's primary IR tensor ("plain" or "nchw")."""
        return self.rep[idx][1] if idx in self.rep else "plain"

    def ir_axis(self, axis, layout, rank):
        """TFLite axis `axis` of a rank-`rank` tensor as an axis of its IR tensor in `layout`."""
        axis = axis % rank if rank else 0
        return NHWC_TO_NCHW_AXIS[axis] if layout == "nchw" and rank == 4 else axis

    def is_const(self, idx):
        return idx in self.consts

    def const(self, idx, what):
        """The numpy value of constant input idx (a file constant or a folded one)."""
        if idx < 0 or idx not in self.consts:
            raise Unsupported(f"{what} must be a constant tensor")
        return self.consts[idx]

    def act(self, idx, layout=None):
        """IR name of activation `idx` in `layout` (None: as it is)."""
        if idx < 0:
            raise Unsupported("a required input is missing")
        if idx in self.consts:
            raise Unsupported(f"input '{self.tensor(idx).name}' is a constant where tinyaot "
                              "needs an activation")
        if idx not in self.rep:
            t = self.tensor(idx)
            if idx in self.floats or t.dtype.startswith("float"):
                raise Unsupported(f"input '{t.name}' is a {t.dtype} tensor; only int8 tensors "
                                  "between QUANTIZE and DEQUANTIZE are supported")
            raise Unsupported(f"input '{t.name}' is not produced by any operator")
        name, have = self.rep[idx]
        if layout is None or layout == have or len(self.tensor(idx).shape) != 4:
            return name
        if (idx, layout) in self.views:
            return self.views[(idx, layout)]
        src = self.graph.tensors[name]
        perm = (0, 3, 1, 2) if layout == "nchw" else (0, 2, 3, 1)
        view = self.names[idx] + ("@nchw" if layout == "nchw" else "")
        self.graph.add_tensor(Tensor(view, tuple(src.shape[p] for p in perm), src.dtype, src.q))
        self.emit("transpose", f"to_{layout}:{view}", [name], [view], {"perm": perm})
        self.views[(idx, layout)] = view
        self.ir_index[view] = (idx, layout)
        return view

    def float_act(self, idx):
        """IR name of float32 activation `idx` (the float region)."""
        if idx in self.fvals:
            return self.fvals[idx]
        t = self.tensor(idx) if idx >= 0 else None
        if idx in self.floats and idx not in self.model.inputs:  # a placeholder's output
            raise UpstreamFailed(f"input '{t.name}' comes from an operator that cannot be "
                                 "compiled")
        if t is not None and idx in self.consts:  # a float32 constant operand: to flash
            data = np.asarray(self.consts[idx])
            if data.dtype != np.float32 or not np.all(np.isfinite(data)):
                raise Unsupported(f"constant '{t.name}' is not a finite float32 tensor")
            name = f"{self.names[idx]}@f32"
            if name not in self.graph.tensors:
                self.graph.add_tensor(Tensor(name, tuple(data.shape), "float32", None,
                                             np.ascontiguousarray(data)))
            return name
        raise Unsupported(f"input '{t.name if t else idx}' is a float32 tensor not computed "
                          "in the float region (a DEQUANTIZE and the float builtins after it)")

    def new_float(self, idx):
        """The float32 IR tensor a float-region operator's output `idx` is written to."""
        t = self.tensor(idx)
        if t.dtype != "float32":
            raise Unsupported(f"output '{t.name}' is {t.dtype}; the float region computes float32")
        name = self.names[idx]
        self.graph.add_tensor(Tensor(name, tuple(t.shape), "float32"))
        self.fvals[idx] = name
        self.ir_index[name] = (idx, "plain")
        return name

    def _reads_float(self, op):
        """Does op read a float32 activation (not a model input, which only a QUANTIZE
        takes)? A float32 constant alone does not make it a float-region operator."""
        return any(i in self.fvals or (i >= 0 and i not in self.consts and
                                       self.tensor(i).dtype == "float32"
                                       and i not in self.model.inputs)
                   for i in op.inputs)

    def act_pair(self, op):
        """Inputs 0 and 1, two activations of one shape -> their IR names in the first one's
        layout, and that layout."""
        a_idx, b_idx = self.inp(op, 0), self.inp(op, 1)
        if tuple(self.tensor(a_idx).shape) != tuple(self.tensor(b_idx).shape):
            raise Unsupported(f"{op.builtin} of two activations of different shapes "
                              "(broadcasting) is not supported")
        lay = self.layout_of(a_idx)
        return [self.act(a_idx, lay), self.act(b_idx, lay)], lay

    def add_const(self, name, data, dtype, q):
        """An IR constant (once per name)."""
        if name not in self.graph.tensors:
            self.graph.add_tensor(Tensor(name, tuple(data.shape), dtype, q,
                                         np.ascontiguousarray(data)))
        return name

    def int8_const(self, idx):
        """Constant input idx as an int8 IR constant quantized per tensor (an operand)."""
        t = self.tensor(idx)
        if t.dtype != "int8":
            raise Unsupported(f"constant '{t.name}' is {t.dtype}; only int8 constants are "
                              "supported")
        q = self.qparams(t, "constant")
        if q is None or q.per_channel:
            raise Unsupported(f"constant '{t.name}' must be quantized per tensor")
        return self.add_const(self.names[idx], self.consts[idx], "int8", q)

    def like(self, ref, shape, name):
        """A new IR tensor `name` of `shape`, typed and quantized as IR tensor `ref`."""
        t = self.graph.tensors[ref]
        self.graph.add_tensor(Tensor(name, tuple(shape), t.dtype, t.q))
        return name

    def reshape_to(self, x, shape, name):
        """IR tensor x reshaped to `shape` (a zero-copy reshape node)."""
        y = self.like(x, shape, name)
        self.emit("reshape", name, [x], [y])
        return y

    def emit(self, op, name, inputs, outputs, attrs=None):
        self.graph.nodes.append(Node(op, name, list(inputs), list(outputs), dict(attrs or {})))

    @staticmethod
    def node_name(op):
        """The IR node name of a TFLite operator: BUILTIN#index."""
        return f"{op.builtin}#{op.index}"

    def act_attrs(self, op):
        """The fused activation as the IR's output clamp in real units (act_lo, act_hi)."""
        f = int(op.options.get("fused_activation_function", 0))
        if f not in ACTIVATIONS:
            raise Unsupported(f"fused activation {ACTIVATION_NAMES.get(f, f)} is not supported")
        lo, hi = ACTIVATIONS[f]
        return {"act_lo": lo, "act_hi": hi}

    # ---- the walk ------------------------------------------------------------------------
    def run(self) -> Graph:
        self.add_inputs()
        for op in self.model.operators:
            try:
                if self.fold(op) or self.boundary(op):
                    continue
                if self._reads_float(op):
                    self.lower_float(op)
                    continue
                fn = TFLITE_LOWERINGS.get(op.builtin)  # the operator modules (codegen/ops/)
                if fn is None:
                    raise Unsupported("no int8 lowering for this builtin")
                fn(self, op)
            except UpstreamFailed:
                self.placeholders(op)
            except Unsupported as u:
                self.unsupported.append((op.builtin, op.index, str(u)))
                self.placeholders(op)
        self.add_outputs()
        if self.unsupported:
            raise unsupported_error(self.unsupported, self.path)
        self.graph.io_float = self.io_float
        self._declare_ends()
        return self.graph

    def lower_float(self, op):
        """An operator on float32 tensors: the float region, or why not."""
        fn = TFLITE_FLOAT_LOWERINGS.get(op.builtin)
        if fn is None:
            raise Unsupported("no float32 lowering for this builtin (the float region runs "
                              + ", ".join(sorted(TFLITE_FLOAT_LOWERINGS)) + ")")
        if not self.float_fallback:
            raise Unsupported("runs in float32: drop --no-float-fallback to run it in the "
                              "float fallback")
        fn(self, op)
        self.fallback.append((op.builtin, self.node_name(op), self.graph.nodes[-1].op))

    def _declare_ends(self):
        """Each graph end as the model declares it (ir/graph.py Declared), as the ONNX front
        end records them: a float input behind its QUANTIZE, a float output after its
        DEQUANTIZE; the generated API then quantizes / dequantizes them."""
        fin = dict(self.float_input_of)
        fout = dict(zip(self.dequantized_out_ir, self.io_float["outputs"]))
        fout.update({self.fvals[i]: self.tensor(i).name for i in self.model.outputs
                     if i in self.fvals})
        g = self.graph
        g.declared_inputs = [Declared(fin[n], "float32") if n in fin else
                             Declared(n, g.tensors[n].dtype) for n in g.inputs]
        g.declared_outputs = [Declared(fout[n], "float32") if n in fout else
                              Declared(n, g.tensors[n].dtype) for n in g.outputs]

    def fold(self, op) -> bool:
        """Evaluate the operator now if its inputs are constants (fold.py)."""
        from .fold import FOLDERS
        ins = [i for i in op.inputs if i >= 0]
        fn = FOLDERS.get(op.builtin)
        if fn is None or len(op.outputs) != 1 or not ins:
            return False
        if op.builtin != "SHAPE" and not all(i in self.consts for i in ins):
            return False
        y = self.tensor(op.outputs[0])
        v = np.asarray(fn(self, op))
        if int(v.size) != int(np.prod(y.shape, dtype=np.int64)):
            raise Unsupported(f"folded value has {v.size} elements, output '{y.name}' "
                              f"{list(y.shape)} wants {int(np.prod(y.shape))}")
        self.consts[op.outputs[0]] = v.reshape(y.shape)
        return True

    def boundary(self, op) -> bool:
        """A QUANTIZE of a float model input or a DEQUANTIZE into a model output: the
        caller passes / receives the integer tensor (graph.io_float names the float one)."""
        if op.builtin == "QUANTIZE" and op.inputs and op.inputs[0] in self.model.inputs \
                and self.tensor(op.inputs[0]).dtype == "float32":
            y_idx = op.outputs[0]
            if self.tensor(y_idx).dtype not in ("int8", "uint8"):
                raise Unsupported(f"QUANTIZE to {self.tensor(y_idx).dtype} is not supported")
            self.graph.inputs.append(self.new_act(y_idx))
            self.io_float["inputs"].append(self.tensor(op.inputs[0]).name)
            self.float_input_of.append((self.graph.inputs[-1], self.tensor(op.inputs[0]).name))
            return True
        if op.builtin == "QUANTIZE" and op.inputs and op.inputs[0] in self.fvals:
            y_idx = op.outputs[0]  # the float region ends
            if self.tensor(y_idx).dtype != "int8":
                raise Unsupported(f"QUANTIZE to {self.tensor(y_idx).dtype} is not supported")
            self.emit("quantize", self.node_name(op), [self.fvals[op.inputs[0]]],
                      [self.new_act(y_idx)])
            return True
        if op.builtin == "DEQUANTIZE":
            x_idx, y_idx = self.inp(op, 0), op.outputs[0]
            if self.is_const(x_idx):
                raise Unsupported("DEQUANTIZE of a constant (float weights) is not supported")
            self.check_int8(op, x_idx)
            x = self.act(x_idx, "plain")  # must exist
            if y_idx in self.model.outputs and y_idx not in self.consumed:
                self.dequantized[y_idx] = x_idx  # a float end: the API dequantizes
                return True
            if not self.float_fallback:
                raise Unsupported("DEQUANTIZE inside the graph starts a float region: drop "
                                  "--no-float-fallback to run it in float32")
            q = self.graph.tensors[x].q
            if q is None or q.per_channel:
                raise Unsupported("DEQUANTIZE of a tensor quantized per channel")
            self.emit("dequantize", self.node_name(op), [x], [self.new_float(y_idx)])
            return True
        return False

    def add_inputs(self):
        quantized_later = {op.inputs[0] for op in self.model.operators
                           if op.builtin == "QUANTIZE" and op.inputs}
        for idx in self.model.inputs:
            t = self.tensor(idx)
            if t.dtype in ("int8", "uint8"):
                q = self.qparams(t, "input") if t.scale is not None else None
                if q is None or q.per_channel:
                    raise TinyAotError("graph input must be quantized per tensor",
                                       model=self.path, tensor=t.name)
                self.graph.inputs.append(self.new_act(idx))
            elif t.dtype == "float32" and idx in quantized_later:
                self.floats.add(idx)  # its QUANTIZE makes the integer input (boundary)
            else:
                raise TinyAotError(f"graph input of type {t.dtype} is not supported (int8, "
                                   "uint8, or float32 followed by QUANTIZE)", model=self.path,
                                   tensor=t.name)

    def add_outputs(self):
        for idx in self.model.outputs:
            t = self.tensor(idx)
            if idx in self.rep:
                self.graph.outputs.append(self.act(idx, "plain"))
            elif idx in self.fvals:  # computed in float32 (the float region): as it is
                self.graph.outputs.append(self.fvals[idx])
            elif idx in self.dequantized:
                self.graph.outputs.append(self.act(self.dequantized[idx], "plain"))
                self.io_float["outputs"].append(t.name)
                self.dequantized_out_ir.append(self.graph.outputs[-1])
            elif not self.unsupported:
                raise TinyAotError("graph output is not computed by any operator",
                                   model=self.path, tensor=t.name)

    def placeholders(self, op):
        """Outputs of an operator that could not be lowered: stand-in tensors, so that the
        operators after it are still checked (and listed if unsupported)."""
        for idx in op.outputs:
            if idx < 0 or idx in self.rep:
                continue
            t = self.tensor(idx)
            if t.dtype.startswith("float"):
                self.floats.add(idx)
                continue
            name = self.names[idx]
            try:
                q = self.qparams(t)
            except Unsupported:
                q = None
            if name not in self.graph.tensors:
                self.graph.add_tensor(Tensor(name, tuple(t.shape), t.dtype, q))
            self.rep[idx] = (name, "plain")
            self.views[(idx, "plain")] = name


_UINT8_OK = {"QUANTIZE", "RESHAPE", "SQUEEZE", "EXPAND_DIMS"}


def unsupported_error(items, path) -> UnsupportedError:
    """One line naming every operator that cannot be lowered, grouped by builtin and reason."""
    groups = {}
    for builtin, index, why in items:
        groups.setdefault((builtin, why), []).append(index)
    parts = []
    for (builtin, why), idxs in groups.items():
        where = ("operator " if len(idxs) == 1 else "operators ") + ", ".join(map(str, idxs))
        parts.append(f"{builtin} ({where}): {why}")
    return UnsupportedError(f"{len(items)} TFLite operator(s) cannot be compiled: "
                            + "; ".join(parts), model=str(path))


def lower_tflite(model, float_fallback=True) -> Graph:
    tl = TflLowering(model, float_fallback)
    g = tl.run()
    g.tflite_tensors = dict(tl.ir_index)  # IR name -> (TFLite index, layout): tests, tools
    g.float_fallback = list(tl.fallback)  # (builtin, IR node, IR op) run in float32
    return g
