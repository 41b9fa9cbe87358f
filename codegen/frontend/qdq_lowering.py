"""QDQ ONNX graph -> integer IR.

A float tensor that is `DequantizeLinear(x)` is represented by the integer
tensor x and its quantization parameters (`self.qrepr`). A float op whose
inputs are all represented that way waits in `self.pending` until the
QuantizeLinear that consumes its result names the integer output; then it
becomes one integer IR node (with Relu/Clip folded into its output clamp and
a constant bias Add folded into MatMul). Data-movement ops pass straight
through on the integer tensors.

Ops that commute with quantization (data movement, MaxPool, Relu / Clip: Q(op(f)) ==
op(Q(f)) element for element) also take a float result still pending as input (`Deferred`):
`DQ -> Conv -> Relu -> Concat -> Q` quantizes the Conv with the Concat's parameters, exactly.
When a float op reads the result of such an op on integer inputs, the op is settled on its
inputs' quantization (`settle`): its float result is then exactly DequantizeLinear of the
integer one. Float graph inputs may pass through Reshape / Transpose / ... before their
first QuantizeLinear (`input_views`): quantization commutes with those too.

Only a node none of this covers runs in float32 (frontend/float_fallback.py), unless the
fallback is disabled: the integer forms, exact, always win.
"""
from __future__ import annotations

import numpy as np
import onnx

from ..errors import TinyAotError
from ..ir import Declared, Graph, Node, QParams, Tensor
from ..ops import ONNX_FLOAT_LOWERINGS, ONNX_LOWERINGS
from ..ops.pending_folds import fold_into_pending
from ..ops.base import SAME, Deferred
from ..ops.base import Unsupported as _Unsupported
from .float_fallback import FloatRegion, UpstreamFailed
from .onnx_loader_util import attr_dict, initializer_arrays, np_dtype_name, tensor_shapes

INT_TYPES = {"int8", "uint8", "int32"}


class Lowering:
    def __init__(self, proto: onnx.ModelProto, path, reported=None, float_fallback=True):
        self.proto = proto
        self.path = str(path)
        self.consts = initializer_arrays(proto, path)
        self.shapes = tensor_shapes(proto)
        name = proto.graph.name or "model"
        self.graph = Graph(name=name, source=self.path)
        self.qrepr = {}  # float tensor name -> integer IR tensor name
        self.pending = {}  # float tensor name -> Pending
        self.float_inputs = {}  # float graph input name -> its shape (a float end)
        self.input_order = []  # the model's graph inputs (not initializers), in order
        self.input_ends = {}  # model input name -> (IR tensor, Declared)
        self.defined = set(self.consts)
        self.unsupported = []  # (op_type, node name, why)
        # slice output -> (its input, starts, steps): a slice of a slice reads the first
        # one's input directly (codegen/ops/slice.py), also through Q(DQ(x)) (lower_q)
        self.windows = {}
        # nodes an earlier pass (frontend/qoperator.py) could not rewrite:
        # name -> (op_type, why); they and what depends on them are skipped
        self.reported = dict(reported or {})
        self.skipped = set()  # tensors computed by a skipped node
        # float result of a pending op -> its integer tensor, once emitted for a Deferred reader
        self.materialized = {}
        # float tensor computed from a float graph input by data movement only ->
        # (graph input, [(IR op, node name, attrs, shape)]): quantized at its QuantizeLinear
        self.input_views = {}
        self.floats = FloatRegion(self, float_fallback)  # nodes run in float32

    # ---- helpers -------------------------------------------------------
    @property
    def opset(self) -> int:
        """The model's ai.onnx opset."""
        return _opset(self.proto)

    def err(self, msg, node=None, tensor=None):
        return TinyAotError(msg, model=self.path, node=node, tensor=tensor)

    def shape_of(self, name, node=None):
        if name in self.consts:
            return tuple(self.consts[name].shape)
        if name not in self.shapes:
            raise self.err("shape unknown after shape inference", node=node, tensor=name)
        return self.shapes[name][0]

    def const(self, name, node, what):
        if name not in self.consts:
            raise self.err(f"{what} must be a constant", node=node, tensor=name)
        return self.consts[name]

    def qparams(self, scale_name, zp_name, axis, node, x_dtype, x_shape):
        scale = np.asarray(self.const(scale_name, node, "scale"))
        if scale.dtype == np.float16:  # opset 19+: every float16 value is a float32 one
            if (node, scale_name) not in self.graph.float16_scales:
                self.graph.float16_scales.append((node, scale_name))
            scale = scale.astype(np.float32)
        if scale.dtype != np.float32:
            raise self.err(f"scale must be float32 or float16, got {scale.dtype}", node=node,
                           tensor=scale_name)
        if zp_name:
            zp = np.asarray(self.const(zp_name, node, "zero point"))
        else:
            zp = np.zeros(scale.shape, dtype=np.dtype(x_dtype) if x_dtype in INT_TYPES else np.int8)
        scale = scale.astype(np.float32).reshape(-1)
        zpv = zp.astype(np.int64).reshape(-1)
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise self.err("invalid quantization scale (must be finite and > 0)",
                           node=node, tensor=scale_name)
        if zp_name and x_dtype in INT_TYPES and zp.dtype != np.dtype(x_dtype):
            raise self.err(f"zero point dtype {zp.dtype} does not match {x_dtype}",
                           node=node, tensor=zp_name)
        lo, hi = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-2**31, 2**31 - 1)}.get(
            x_dtype, (-128, 127))
        if np.any(zpv < lo) or np.any(zpv > hi):
            raise self.err("zero point out of range", node=node, tensor=zp_name)
        if scale.size != zpv.size:
            raise self.err("scale and zero point sizes differ", node=node, tensor=scale_name)
        if scale.size == 1:
            return QParams(scale, zpv.astype(np.int32), None)
        rank = len(x_shape)
        ax = axis if axis is not None else 1
        if ax < -rank or ax >= rank:
            raise self.err(f"quantization axis {ax} out of range for rank {rank}",
                           node=node, tensor=scale_name)
        ax %= rank
        if x_shape[ax] != scale.size:
            raise self.err(f"{scale.size} scales for axis {ax} of size {x_shape[ax]}",
                           node=node, tensor=scale_name)
        return QParams(scale, zpv.astype(np.int32), ax)

    def add_int_tensor(self, name, shape, dtype, q=None, data=None):
        if name in self.graph.tensors:
            return self.graph.tensors[name]
        return self.graph.add_tensor(Tensor(name, tuple(shape), dtype, q, data))

    def emit(self, op, name, inputs, outputs, attrs=None):
        self.graph.nodes.append(Node(op, name, list(inputs), list(outputs), dict(attrs or {})))

    # ---- main walk -----------------------------------------------------
    def run(self) -> Graph:
        g = self.proto.graph
        inits = {i.name for i in g.initializer}
        for inp in g.input:
            if inp.name in inits:
                continue
            shape, dtype = self.shapes[inp.name]
            dname = np_dtype_name(dtype)
            self.defined.add(inp.name)
            self.input_order.append(inp.name)
            if dname in ("int8", "uint8"):
                self.add_int_tensor(inp.name, shape, dname)
                self.input_ends[inp.name] = (inp.name, Declared(inp.name, dname))
            elif dname == "float32":
                self.float_inputs[inp.name] = shape
            elif dname == "float16":  # quantize_static on a float16 model: float16 scales too
                raise self.err("graph input of type float16 is not supported (int8, uint8 or "
                               "float32): quantize the float32 model instead (its scales and "
                               "ends are float32; onnxruntime computes a float16 one in "
                               "float16)", tensor=inp.name)
            else:
                raise self.err(f"graph input of type {dname} is not supported", tensor=inp.name)
        for i, node in enumerate(g.node):
            name = node.name or f"{node.op_type}_{i}"
            if name in self.reported or self.skipped.intersection(node.input):
                if name in self.reported:
                    self.unsupported.append((node.op_type, name, self.reported[name][1]))
                self.skipped.update(o for o in node.output if o)
                self.defined.update(o for o in node.output if o)
                continue
            for x in node.input:
                if x and x not in self.defined:
                    raise self.err(
                        f"input '{x}' is not defined before this node (missing initializer, "
                        "or the graph is not topologically sorted / has a cycle)", node=name)
            self.floats.record(node, name)
            try:
                self.lower_node(node, name)
            except _Unsupported as u:
                self.lower_float_or_report(node, name, u)
            for o in node.output:
                if o:
                    if o in self.defined and o not in self.consts:
                        raise self.err("tensor is produced twice (duplicate name)", node=name, tensor=o)
                    self.defined.add(o)
        self.finish_inputs()
        self.finish_outputs()
        if self.unsupported:  # all of them in one message (frontend/unsupported.py)
            from .unsupported import unsupported_error
            raise unsupported_error(self.unsupported, self.path)
        return self.graph

    def finish_inputs(self):
        """The graph inputs in the model's order; a float input is the integer tensor
        its QuantizeLinear makes (lower_q)."""
        for n in self.input_order:
            if n in self.input_ends:
                t, declared = self.input_ends[n]
                self.graph.inputs.append(t)
                self.graph.declared_inputs.append(declared)
            elif not self.unsupported:  # else one of those nodes is why
                self.unsupported.append(("input", n, "float input without a QuantizeLinear "
                                         "after it: tinyaot takes a float input only where the "
                                         "model quantizes it at once"))
    def lower_float_or_report(self, node, name, why):
        """No integer form: run the node in float32 when the fallback can, else report it."""
        if self.floats.takes(node.op_type):
            try:
                return self.floats.lower(node, name)
            except UpstreamFailed as u:
                why = u
            except _Unsupported as u:
                why = f"{why}; float fallback: {u}"
        elif not self.floats.enabled and node.op_type in ONNX_FLOAT_LOWERINGS:
            why = f"{why} (the float fallback runs it in float32: drop --no-float-fallback)"
        self.floats.failed.update(o for o in node.output if o)
        self.unsupported.append((node.op_type, name, str(why)))

    # the float region's entry points for the operator modules (ops/*_f32.py)
    def float_input(self, x, name):
        return self.floats.input(x, name)

    def float_emit(self, op, name, inputs, out, shape, attrs=None, onnx_op=None):
        return self.floats.emit(op, name, inputs, out, shape, attrs, onnx_op)

    def finish_outputs(self):
        for out in self.proto.graph.output:
            n = out.name
            if n in self.skipped:
                continue
            if n in self.graph.tensors and not self.graph.tensors[n].is_const:
                self.graph.outputs.append(n)
                self.graph.declared_outputs.append(Declared(n, self.graph.tensors[n].dtype))
            elif n in self.qrepr:
                t = self.graph.tensors[self.qrepr[n]]
                if t.is_const:
                    self.unsupported.append(("output", n, "graph output is a constant"))
                elif t.q is None or t.q.per_channel:
                    self.unsupported.append((
                        "output", n, "float output dequantized per axis: the generated API "
                        "dequantizes each output with one scale and zero point"))
                else:  # a float end: the API dequantizes the integer tensor behind it
                    self.graph.outputs.append(t.name)
                    self.graph.declared_outputs.append(Declared(n, "float32"))
            elif self.floats.enabled and n in self.floats.producer and n not in self.floats.failed:
                try:  # a float end computed in float32 (float fallback): returned as it is
                    self.graph.outputs.append(self.floats.output(n))
                    self.graph.declared_outputs.append(Declared(n, "float32"))
                except _Unsupported as u:
                    node, name = self.floats.producer[n]
                    self.unsupported.append((node.op_type, name, f"float output: {u}"))
            elif n in self.pending:
                p = self.pending[n]
                self.unsupported.append((p.op, p.node, "float result reaches the graph output "
                                         f"without QuantizeLinear: quantize this node"
                                         f"{self._fallback_hint}"))
            else:
                self.unsupported.append(("output", n, "graph output is not an integer tensor"))

    def lower_node(self, node, name):
        op = node.op_type
        if node.domain not in ("", "ai.onnx"):
            raise _Unsupported(f"operator domain '{node.domain}' is not supported")
        attrs = attr_dict(node)
        if op == "Constant":
            return
        if op == "DequantizeLinear":
            return self.lower_dq(node, name, attrs)
        if op == "QuantizeLinear":
            return self.lower_q(node, name, attrs)
        if fold_into_pending(self, node, name, attrs):  # a bias Add, an integer epilogue
            return
        lower = ONNX_LOWERINGS.get(op)  # the operator modules (codegen/ops/)
        if lower is not None:
            out = node.output[0]
            return lower(self, node, name, attrs, list(node.input), out, self.shape_of(out, name))
        raise _Unsupported("operator is not supported")

    # ---- Q / DQ --------------------------------------------------------
    def lower_dq(self, node, name, attrs):
        if attrs.get("output_dtype", 0) not in (0, onnx.TensorProto.FLOAT):  # opset 23
            raise _Unsupported("DequantizeLinear to a type other than float32 (output_dtype)")
        _no_blocks(attrs)
        x = node.input[0]
        s = node.input[1]
        zp = node.input[2] if len(node.input) > 2 and node.input[2] else None
        out = node.output[0]
        if x in self.consts:
            arr = np.asarray(self.consts[x])
            dname = np_dtype_name(arr.dtype)
            if dname not in INT_TYPES:
                raise self.err(f"DequantizeLinear of a {dname} constant", node=name, tensor=x)
            q = self.qparams(s, zp, attrs.get("axis"), name, dname, arr.shape)
            cname = x if x not in self.graph.tensors else f"{x}@{name}"
            self.add_int_tensor(cname, arr.shape, dname, q, arr)
            self.qrepr[out] = cname
            return
        if x not in self.graph.tensors:
            raise _Unsupported(f"DequantizeLinear input '{x}' is not an integer tensor")
        t = self.graph.tensors[x]
        q = self.qparams(s, zp, attrs.get("axis"), name, t.dtype, t.shape)
        if t.q is None:
            t.q = q
        elif not t.q.same_as(q):
            # Same integer bytes read with other parameters: a new view of them.
            alias = self.add_int_tensor(f"{x}@{name}", t.shape, t.dtype, q)
            self.emit("reinterpret", name, [x], [alias.name])
            self.qrepr[out] = alias.name
            return
        self.qrepr[out] = x

    def lower_q(self, node, name, attrs):
        if attrs.get("precision", 0) not in (0, onnx.TensorProto.FLOAT):  # opset 23
            raise _Unsupported("QuantizeLinear computing in a precision other than float32 "
                               "(precision attribute)")
        _no_blocks(attrs)
        f = node.input[0]
        s = node.input[1]
        zp = node.input[2] if len(node.input) > 2 and node.input[2] else None
        out = node.output[0]
        shape = self.shape_of(out, name)
        odt = np_dtype_name(self.shapes[out][1]) if out in self.shapes else "int8"
        if zp and zp in self.consts:
            odt = np_dtype_name(np.asarray(self.consts[zp]).dtype)
        q = self.qparams(s, zp, attrs.get("axis"), name, odt, shape)
        if odt not in ("int8", "uint8"):
            raise _Unsupported(f"QuantizeLinear to {odt} is not supported")
        if f in self.pending or f in self.materialized:
            if q.per_channel:
                raise _Unsupported("per-channel activation quantization is not supported")
            self.materialize(f, q, odt, out)
            return
        if f in self.qrepr:
            src = self.graph.tensors[self.qrepr[f]]
            t = self.add_int_tensor(out, shape, odt, q)
            if src.q is not None and src.q.same_as(q) and src.dtype == odt:
                self.emit("reshape", name, [src.name], [t.name])  # Q(DQ(x)) == x
                if src.name in self.windows and src.shape == t.shape:
                    self.windows[t.name] = self.windows[src.name]
            else:
                self.emit("requantize", name, [src.name], [t.name], {"act_lo": None, "act_hi": None})
            return
        if f in self.float_inputs:
            # A float end: the integer tensor is the graph input, the generated API
            # quantizes the caller's floats into it (backend/io_api.py).
            if q.per_channel:
                raise _Unsupported(f"QuantizeLinear of the float input '{f}' is per axis: the "
                                   "generated API quantizes each input with one scale and "
                                   "zero point")
            t = self.add_int_tensor(out, shape, odt, q)
            if f not in self.input_ends:
                self.input_ends[f] = (out, Declared(f, "float32"))
                return
            first = self.graph.tensors[self.input_ends[f][0]]
            if not (first.q.same_as(q) and first.dtype == odt):
                raise _Unsupported(f"the float input '{f}' is quantized twice with different "
                                   "parameters: quantize it once")
            self.emit("reshape", name, [first.name], [t.name])  # the same integers again
            return
        if f in self.input_views:
            return self.quantize_input_view(f, q, odt, out, shape)
        if f in self.consts:
            arr = np.asarray(self.consts[f], dtype=np.float32)
            qa = quantize_like_onnx(arr, q, odt)
            self.consts[out] = qa
            self.add_int_tensor(out, qa.shape, odt, q, qa)
            return
        if self.floats.enabled and f in self.floats.producer and f not in self.floats.failed:
            return self.floats.quantize(f, out, shape, odt, q, name)  # leaves the float region
        raise _Unsupported(f"QuantizeLinear input '{f}' comes from an unsupported float op")

    # ---- pending float results ------------------------------------------
    def materialize(self, f, q, dtype, out=None):
        """Emit the pending op computing float tensor f with its result quantized by (q,
        dtype), into integer tensor `out` (default f"{f}@q"); -> the tensor's name."""
        done = self.materialized.get(f)
        if done is not None:  # already emitted for another reader
            t = self.graph.tensors[done]
            if not (t.q.same_as(q) and t.dtype == dtype):
                raise _Unsupported(f"float result '{f}' is quantized with two different "
                                   "parameters: not exact in integers; quantize it once"
                                   f"{self._fallback_hint}")
            if out is None or out == done:
                return done
            self.emit("reshape", f"{out}@view", [done], [self.add_int_tensor(
                out, self.shape_of(out), dtype, q).name])
            return out
        if f not in self.pending:
            raise _Unsupported(f"float result '{f}' is read by several ops before its "
                               f"QuantizeLinear: quantize it once{self._fallback_hint}")
        p = self.pending.pop(f)
        name = out or f"{f}@q"
        shape = self.shape_of(out if out else f)
        t = self.add_int_tensor(name, shape, dtype, q)
        self.materialized[f] = t.name
        self.emit_pending(p, t, f)
        return t.name

    def emit_pending(self, p, t, f):
        """Pending op p (computing float tensor f) as IR node(s) with integer output t."""
        if any(isinstance(i, Deferred) for i in p.inputs):  # quantized with t's parameters
            p.inputs = [self.materialize(i.name, t.q, t.dtype) if isinstance(i, Deferred) else i
                        for i in p.inputs]
        elif p.commutes == SAME:
            src = self.graph.tensors[p.inputs[0]]
            if not (src.q.same_as(t.q) and src.dtype == t.dtype):
                # the op keeps its input's quantization: run it there, then requantize (with
                # the clamp: Q is monotonic, so clamping after it is exact)
                mid = self.add_int_tensor(f"{t.name}@in_q", p.shape, src.dtype, src.q)
                lo, hi = p.act_lo, p.act_hi
                p.act_lo = p.act_hi = None
                self._emit_pending_node(p, mid, f)
                self.emit("requantize", f"{p.node}@requantize", [mid.name], [t.name],
                          {"act_lo": lo, "act_hi": hi})
                return
        self._emit_pending_node(p, t, f)

    def _emit_pending_node(self, p, t, f):
        attrs = dict(p.attrs)
        attrs["act_lo"] = p.act_lo
        attrs["act_hi"] = p.act_hi
        attrs["onnx_tensors"] = tuple(p.tensors + [f])
        if attrs.pop("conv1d_out", False):  # 1-D conv: [N,C,1,L] conv2d, then a reshape
            t4 = self.add_int_tensor(f"{t.name}@2d", p.shape, t.dtype, t.q)
            self.emit(p.op, p.node, p.inputs, [t4.name], attrs)
            self.emit("reshape", f"{p.node}@1d", [t4.name], [t.name])
            return
        if attrs.pop("rows_out", False):  # N-D MatMul: [rows, N] fully connected, reshaped
            t2 = self.add_int_tensor(f"{t.name}@rows", p.shape, t.dtype, t.q)
            self.emit(p.op, p.node, p.inputs, [t2.name], attrs)
            self.emit("reshape", f"{p.node}@nd", [t2.name], [t.name])
            return
        self.emit(p.op, p.node, p.inputs, [t.name], attrs)

    def settle(self, x):
        """Pending op on integer inputs that commutes with quantization, read by a float op:
        emit it with its inputs' quantization, where float x is then exactly the
        DequantizeLinear of its result; -> the integer tensor, or None when not exact."""
        p = self.pending.get(x)
        if p is None or p.commutes is None:
            return None
        ins = []
        for i in p.inputs:  # a Deferred input settles first (Reshape of a MaxPool, ...)
            if isinstance(i, Deferred):
                i = self.qrepr.get(i.name) or self.settle(i.name)
                if i is None:
                    return None
            ins.append(i)
        p.inputs = ins
        srcs = [self.graph.tensors[i] for i in p.inputs if i]
        if not srcs or any(s.is_const or s.q is None or s.q.per_channel for s in srcs):
            return None
        q, dtype = srcs[0].q, srcs[0].dtype
        if any(not s.q.same_as(q) or s.dtype != dtype for s in srcs):
            return None  # a Concat of differently quantized inputs has no such form
        if not (_representable(p.act_lo, q, dtype, True)
                and _representable(p.act_hi, q, dtype, False)):
            return None  # a Clip bound between two integers: the float value is not on the grid
        del self.pending[x]
        t = self.add_int_tensor(f"{x}@q", self.shape_of(x), dtype, q)
        self._emit_pending_node(p, t, x)
        self.qrepr[x] = t.name
        return t.name

    # ---- float graph inputs moved before their QuantizeLinear -------------
    def float_input_view(self, x, out, step) -> bool:
        """Data movement `step` = (IR op, node name, attrs, shape) on a float graph input (or a
        view of one): recorded, to be applied to the quantized input. False otherwise."""
        if x in self.float_inputs:
            self.input_views[out] = (x, [step])
            return True
        if x in self.input_views:
            base, steps = self.input_views[x]
            self.input_views[out] = (base, steps + [step])
            return True
        return False

    def quantize_input_view(self, f, q, dtype, out, shape):
        """QuantizeLinear of a view of a float graph input: the integer input has the float
        input's shape and q (Q commutes with moving elements), then the views."""
        if q.per_channel:
            raise _Unsupported("per-channel quantization of a graph input is not supported")
        base, steps = self.input_views[f]
        if base in self.input_ends:
            raise _Unsupported(f"float input '{base}' is quantized twice")
        cur = self.add_int_tensor(f"{base}@q", self.float_inputs[base], dtype, q)
        # a float end (finish_inputs): the API quantizes the caller's floats into cur
        self.input_ends[base] = (cur.name, Declared(base, "float32"))
        for k, (op, node, attrs, sh) in enumerate(steps):
            last = k == len(steps) - 1
            t = self.add_int_tensor(out if last else f"{out}@{k}", shape if last else sh, dtype, q)
            self.emit(op, node, [cur.name], [t.name], attrs)
            cur = t

    # ---- float ops that become integer kernels -------------------------
    def exact_input(self, x, name):
        """An input of an op that commutes with quantization: the integer tensor behind x,
        or Deferred(x) when x is a float result still pending (quantized later with the
        op's output parameters)."""
        if x in self.pending or (x in self.materialized and x not in self.qrepr):
            return Deferred(x)
        return self.act_input(x, name)

    def act_input(self, x, name):
        if x in self.qrepr:
            t = self.graph.tensors[self.qrepr[x]]
            if t.is_const:
                raise _Unsupported(f"input '{x}' is constant where an activation is expected")
            if t.q is None or t.q.per_channel:
                raise _Unsupported(f"activation '{x}' must be quantized per tensor")
            return t.name
        if x in self.pending:
            t = self.settle(x)
            if t is not None:
                return t
            raise _Unsupported(f"input '{x}' is a float result without QuantizeLinear: "
                               f"quantize this node{self._fallback_hint}")
        raise _Unsupported(f"input '{x}' is not quantized (float op inside a quantized "
                           f"region): quantize this node{self._fallback_hint}")

    @property
    def _fallback_hint(self):
        """Only with --no-float-fallback may dropping it help (the fallback then says for
        itself why it could not take the node)."""
        return "" if self.floats.enabled else " or drop --no-float-fallback"

    def bias_input(self, x, name, act=None, weights=None):
        """A conv / Gemm bias: an int32 constant behind DequantizeLinear (quantizers), or a
        float32 initializer (PyTorch's QDQ export keeps the bias float). A float bias is
        quantized as onnxruntime's BiasQuantization transformer does it when both operands
        are quantized (act, weights: their IR tensors): scale s_x * s_w in float32, int32 of
        round-half-even(b / scale); that bias then runs as any int32 one."""
        if x not in self.qrepr and x in self.consts:
            arr = np.asarray(self.consts[x])
            if arr.dtype == np.float32 and arr.ndim == 1:
                q = _bias_qparams(self.graph, act, weights, arr.size)
                if q is not None:
                    with np.errstate(all="ignore"):
                        r = np.rint(arr / np.broadcast_to(q.scale, arr.shape))
                    if np.all(np.isfinite(r)) and np.all(np.abs(r) < 2.0**31):
                        return self.add_int_tensor(f"{x}@int32", arr.shape, "int32", q,
                                                   r.astype(np.int32)).name
                raise _Unsupported(f"float bias '{x}': its weights' scales are not one per "
                                   "output channel; quantize the bias (int32, scale s_x * s_w)")
        return self.weight_input(x, name, "int32")

    def weight_input(self, x, name, dtype="int8"):
        """The integer constant behind float x; dtype: its type, or a tuple of allowed ones."""
        allowed = (dtype,) if isinstance(dtype, str) else tuple(dtype)
        if x in self.qrepr and self.graph.tensors[self.qrepr[x]].is_const:
            t = self.graph.tensors[self.qrepr[x]]
            if t.dtype not in allowed:
                raise _Unsupported(f"constant '{x}' must be {' or '.join(allowed)}, is {t.dtype}")
            return t.name
        raise _Unsupported(f"'{x}' must be a constant quantized {' or '.join(allowed)} tensor "
                           "(DequantizeLinear of an initializer)")


def _bias_qparams(g, act, weights, size):
    """QParams of a float bias quantized with s_x * s_w (float32 product), or None when an
    operand is not quantized, x not per tensor, or w's scales not one per bias value."""
    if act is None or weights is None:
        return None
    xq, wq = g.tensors[act].q, g.tensors[weights].q
    if xq is None or wq is None or xq.per_channel:
        return None
    ws = np.asarray(wq.scale, np.float32).reshape(-1)
    if ws.size not in (1, size):
        return None
    scale = (np.float32(xq.scale.reshape(-1)[0]) * ws).astype(np.float32)
    return QParams(scale, np.zeros(scale.size, np.int32), 0 if scale.size > 1 else None)


def _no_blocks(attrs):
    if attrs.get("block_size", 0):  # opset 21
        raise _Unsupported("blocked quantization (block_size) is not supported: quantize "
                           "per tensor or per channel")


def _representable(bound, q, dtype, lower):
    """A clamp bound (real units, or None) that clamping the integers of (q, dtype) applies
    exactly: a value of the grid, or one beyond it on the side where it changes nothing."""
    if bound is None:
        return True
    s, zp = q.scalar()
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    v = np.float64(bound) / np.float64(s) + zp
    if (lower and v <= lo) or (not lower and v >= hi):
        return True
    r = int(np.rint(v))
    return lo <= r <= hi and np.float32(np.float32(r - zp) * s) == np.float32(bound)


def _opset(proto):
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return 13


def quantize_like_onnx(x, q: QParams, dtype):
    """QuantizeLinear on a float constant: round half to even of x / scale."""
    scale = q.scale
    zp = q.zero_point
    if q.axis is not None:
        shape = [1] * x.ndim
        shape[q.axis] = -1
        scale = scale.reshape(shape)
        zp = zp.reshape(shape)
    v = np.rint(x.astype(np.float32) / scale.astype(np.float32)) + zp
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    return np.clip(v, lo, hi).astype(dtype)


def lower_to_ir(proto, path, reported=None, float_fallback=True) -> Graph:
    low = Lowering(proto, path, reported, float_fallback)
    g = low.run()
    g.float_fallback = list(low.floats.lowered)  # (ONNX op, node, IR op) run in float32
    return g
