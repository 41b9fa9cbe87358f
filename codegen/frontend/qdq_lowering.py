"""QDQ ONNX graph -> integer IR.

A float tensor that is `DequantizeLinear(x)` is represented by the integer
tensor x and its quantization parameters (`self.qrepr`). A float op whose
inputs are all represented that way waits in `self.pending` until the
QuantizeLinear that consumes its result names the integer output; then it
becomes one integer IR node (with Relu/Clip folded into its output clamp and
a constant bias Add folded into MatMul). Data-movement ops pass straight
through on the integer tensors.
"""
from __future__ import annotations

import numpy as np
import onnx

from ..errors import TinyAotError
from ..ir import Graph, Node, QParams, Tensor
from ..ops import ONNX_LOWERINGS
from ..ops.base import Pending
from ..ops.base import Unsupported as _Unsupported
from .onnx_loader_util import attr_dict, conv_pads, np_dtype_name

INT_TYPES = {"int8", "uint8", "int32"}
# float ops lowered here until their operator module (codegen/ops/) takes them over
FLOAT_OPS = {"Conv", "MatMul", "Gemm", "ConvTranspose"}


class Lowering:
    def __init__(self, proto: onnx.ModelProto, path, reported=None):
        from .onnx_loader import initializer_arrays, tensor_shapes

        self.proto = proto
        self.path = str(path)
        self.consts = initializer_arrays(proto, path)
        self.shapes = tensor_shapes(proto)
        name = proto.graph.name or "model"
        self.graph = Graph(name=name, source=self.path)
        self.qrepr = {}  # float tensor name -> integer IR tensor name
        self.pending = {}  # float tensor name -> Pending
        self.float_inputs = {}  # float graph input name -> None (boundary)
        self.defined = set(self.consts)
        self.unsupported = []  # (op_type, node name, why)
        # slice output -> (its input, starts, steps): a slice of a slice reads the first
        # one's input directly (codegen/ops/slice.py), also through Q(DQ(x)) (lower_q)
        self.windows = {}
        # nodes an earlier pass (frontend/qoperator.py) could not rewrite:
        # name -> (op_type, why); they and what depends on them are skipped
        self.reported = dict(reported or {})
        self.skipped = set()  # tensors computed by a skipped node
        self.io_float = {"inputs": [], "outputs": []}

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
        if scale.dtype != np.float32:
            raise self.err(f"scale must be float32, got {scale.dtype}", node=node, tensor=scale_name)
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
            if dname in ("int8", "uint8"):
                self.add_int_tensor(inp.name, shape, dname)
                self.graph.inputs.append(inp.name)
            elif dname == "float32":
                self.float_inputs[inp.name] = shape
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
            try:
                self.lower_node(node, name)
            except _Unsupported as u:
                self.unsupported.append((node.op_type, name, str(u)))
            for o in node.output:
                if o:
                    if o in self.defined and o not in self.consts:
                        raise self.err("tensor is produced twice (duplicate name)", node=name, tensor=o)
                    self.defined.add(o)
        self.finish_outputs()
        if self.unsupported:  # all of them in one message (frontend/unsupported.py)
            from .unsupported import unsupported_error
            raise unsupported_error(self.unsupported, self.path)
        return self.graph

    def finish_outputs(self):
        for out in self.proto.graph.output:
            n = out.name
            if n in self.skipped:
                continue
            if n in self.graph.tensors and not self.graph.tensors[n].is_const:
                self.graph.outputs.append(n)
            elif n in self.qrepr:
                self.graph.outputs.append(self.qrepr[n])
                self.io_float["outputs"].append(n)
            elif n in self.pending:
                p = self.pending[n]
                self.unsupported.append((p.op, p.node, "float result reaches the graph output "
                                         "without QuantizeLinear: quantize this node or enable "
                                         "float fallback"))
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
        from .integer_ops import INTEGER_OPS, is_epilogue_node, lower_integer_op
        if op in INTEGER_OPS or is_epilogue_node(self, node):  # ConvInteger / MatMulInteger
            return lower_integer_op(self, node, name, attrs, _Unsupported)
        lower = ONNX_LOWERINGS.get(op)  # the operator modules (codegen/ops/)
        if lower is not None:
            out = node.output[0]
            return lower(self, node, name, attrs, list(node.input), out, self.shape_of(out, name))
        if op in FLOAT_OPS:
            return self.lower_float(node, name, attrs)
        raise _Unsupported("operator is not supported")

    # ---- Q / DQ --------------------------------------------------------
    def lower_dq(self, node, name, attrs):
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
        if f in self.pending:
            p = self.pending.pop(f)
            if q.per_channel:
                raise _Unsupported("per-channel activation quantization is not supported")
            t = self.add_int_tensor(out, shape, odt, q)
            attrs = dict(p.attrs)
            attrs["act_lo"] = p.act_lo
            attrs["act_hi"] = p.act_hi
            attrs["onnx_tensors"] = tuple(p.tensors + [f])
            if attrs.pop("conv1d_out", False):  # 1-D conv: [N,C,1,L] conv2d, then a reshape
                t4 = self.add_int_tensor(f"{out}@2d", p.shape, odt, q)
                self.emit(p.op, p.node, p.inputs, [t4.name], attrs)
                self.emit("reshape", f"{p.node}@1d", [t4.name], [t.name])
                return
            self.emit(p.op, p.node, p.inputs, [t.name], attrs)
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
            # Model boundary: the user passes already-quantized integers.
            self.add_int_tensor(out, shape, odt, q)
            self.graph.inputs.append(out)
            self.io_float["inputs"].append(f)
            return
        if f in self.consts:
            arr = np.asarray(self.consts[f], dtype=np.float32)
            qa = quantize_like_onnx(arr, q, odt)
            self.consts[out] = qa
            self.add_int_tensor(out, qa.shape, odt, q, qa)
            return
        raise _Unsupported(f"QuantizeLinear input '{f}' comes from an unsupported float op")

    # ---- float ops that become integer kernels -------------------------
    def act_input(self, x, name):
        if x in self.qrepr:
            t = self.graph.tensors[self.qrepr[x]]
            if t.is_const:
                raise _Unsupported(f"input '{x}' is constant where an activation is expected")
            if t.q is None or t.q.per_channel:
                raise _Unsupported(f"activation '{x}' must be quantized per tensor")
            return t.name
        if x in self.pending:
            raise _Unsupported(f"input '{x}' is a float result without QuantizeLinear: "
                               "quantize this node or enable float fallback")
        raise _Unsupported(f"input '{x}' is not quantized (float op inside a quantized "
                           "region): quantize this node or enable float fallback")

    def lower_conv1d(self, ins, out, name, attrs, shape):
        """Conv on [N, C, L]: a conv2d on [N, C, 1, L] between two zero-copy reshapes."""
        x = self.act_input(ins[0], name)
        w = self.weight_input(ins[1], name)
        b = self.weight_input(ins[2], name, "int32") if len(ins) > 2 and ins[2] else None
        xt, wt = self.graph.tensors[x], self.graph.tensors[w]
        if len(wt.shape) != 3:
            raise _Unsupported("1-D Conv weights must be [O, I, K]")
        self.check_weight_q(wt, 0, name)
        fresh = f"{x}@2d" not in self.graph.tensors
        x4 = self.add_int_tensor(f"{x}@2d", xt.shape[:2] + (1, xt.shape[2]), xt.dtype, xt.q)
        if fresh:
            self.emit("reshape", f"{name}@2d", [x], [x4.name])
        w4 = self.add_int_tensor(f"{w}@2d", wt.shape[:2] + (1, wt.shape[2]), wt.dtype, wt.q,
                                 np.ascontiguousarray(wt.data.reshape(wt.shape[:2] + (1, wt.shape[2]))))
        k = int(tuple(attrs.get("kernel_shape", wt.shape[2:]))[0])
        s = int(tuple(attrs.get("strides", (1,)))[0])
        d = int(tuple(attrs.get("dilations", (1,)))[0])
        a2 = {"auto_pad": attrs.get("auto_pad", "NOTSET")}
        if "pads" in attrs:
            p = list(attrs["pads"])
            a2["pads"] = (0, p[0], 0, p[1])
        pads = conv_pads(a2, (1, xt.shape[2]), (1, k), (1, s), (1, d), (1, shape[2]))
        a = {"kernel": (1, k), "strides": (1, s), "dilations": (1, d), "pads": pads,
             "group": int(attrs.get("group", 1)), "conv1d_out": True}
        self.pending[out] = Pending("conv2d", name, [x4.name, w4.name, b], a,
                                    shape=(shape[0], shape[1], 1, shape[2]))

    def lower_conv_transpose(self, ins, out, name, attrs, shape):
        """ConvTranspose on [N, C, H, W] (or [N, C, L] as [N, C, 1, L] between two
        zero-copy reshapes) -> one conv_transpose IR node, weights [C_in, C_out/group, kH, kW]."""
        from .conv_transpose_attrs import AttrError, conv_transpose_geometry

        x = self.act_input(ins[0], name)
        w = self.weight_input(ins[1], name)
        b = self.weight_input(ins[2], name, "int32") if len(ins) > 2 and ins[2] else None
        xt, wt = self.graph.tensors[x], self.graph.tensors[w]
        rank = len(xt.shape)
        if rank not in (3, 4) or len(wt.shape) != rank:
            raise _Unsupported("only 1-D and 2-D ConvTranspose (3-D or 4-D tensors) is supported")
        group = int(attrs.get("group", 1))
        cin = xt.shape[1]
        if group < 1 or cin % group or wt.shape[0] != cin:
            raise self.err(f"weights {list(wt.shape)} do not fit {cin} input channels in "
                           f"{group} group(s)", node=name, tensor=w)
        try:
            geo = conv_transpose_geometry(attrs, xt.shape[2:], wt.shape[2:])
        except AttrError as e:
            raise self.err(str(e), node=name) from None
        want = (xt.shape[0], wt.shape[1] * group) + geo["out_hw"]
        if tuple(shape) != want:
            raise self.err(f"output shape {list(shape)} from ONNX shape inference differs from "
                           f"{list(want)} (onnxruntime's ConvTranspose arithmetic)",
                           node=name, tensor=out)
        self.check_weight_q(wt, 1, name)
        if rank == 3:  # 1-D: everything gets a unit H
            fresh = f"{x}@2d" not in self.graph.tensors
            x4 = self.add_int_tensor(f"{x}@2d", xt.shape[:2] + (1, xt.shape[2]), xt.dtype, xt.q)
            if fresh:
                self.emit("reshape", f"{name}@2d", [x], [x4.name])
            x = x4.name
            w4 = wt.shape[:2] + (1, wt.shape[2])
            w = self.add_int_tensor(f"{w}@2d", w4, wt.dtype, wt.q,
                                    np.ascontiguousarray(wt.data.reshape(w4))).name
            p = geo["pads"]
            geo.update(kernel=(1,) + geo["kernel"], strides=(1,) + geo["strides"],
                       dilations=(1,) + geo["dilations"], pads=(0, p[0], 0, p[1]),
                       output_padding=(0,) + geo["output_padding"])
            shape = (shape[0], shape[1], 1, shape[2])
        a = {k: geo[k] for k in ("kernel", "strides", "dilations", "pads", "output_padding")}
        a["group"] = group
        if rank == 3:
            a["conv1d_out"] = True
        self.pending[out] = Pending("conv_transpose", name, [x, w, b], a, shape=tuple(shape))

    def weight_input(self, x, name, dtype="int8"):
        if x in self.qrepr and self.graph.tensors[self.qrepr[x]].is_const:
            t = self.graph.tensors[self.qrepr[x]]
            if t.dtype != dtype:
                raise _Unsupported(f"constant '{x}' must be {dtype}, is {t.dtype}")
            return t.name
        raise _Unsupported(f"'{x}' must be a constant quantized {dtype} tensor "
                           "(DequantizeLinear of an initializer)")

    def lower_float(self, node, name, attrs):
        op = node.op_type
        ins = list(node.input)
        out = node.output[0]
        shape = self.shape_of(out, name)
        if op == "Conv" and len(self.graph.tensors[self.act_input(ins[0], name)].shape) == 3:
            return self.lower_conv1d(ins, out, name, attrs, shape)
        if op == "ConvTranspose":
            return self.lower_conv_transpose(ins, out, name, attrs, shape)
        if op == "Conv":
            x = self.act_input(ins[0], name)
            w = self.weight_input(ins[1], name)
            b = self.weight_input(ins[2], name, "int32") if len(ins) > 2 and ins[2] else None
            wt = self.graph.tensors[w]
            xs = self.graph.tensors[x].shape
            if len(xs) != 4:
                raise _Unsupported("only 2-D convolution (4-D tensors) is supported")
            kshape = tuple(attrs.get("kernel_shape", wt.shape[2:]))
            strides = tuple(attrs.get("strides", (1, 1)))
            dil = tuple(attrs.get("dilations", (1, 1)))
            pads = conv_pads(attrs, xs[2:], kshape, strides, dil, shape[2:])
            self.check_weight_q(wt, 0, name)
            a = {"kernel": kshape, "strides": strides, "dilations": dil, "pads": pads,
                 "group": int(attrs.get("group", 1))}
            self.pending[out] = Pending("conv2d", name, [x, w, b], a, shape=shape)
            return
        if (op == "MatMul" and ins[1] in self.qrepr
                and not self.graph.tensors[self.qrepr[ins[1]]].is_const):
            # activation x activation: [..., M, K] x [..., K, N], same batch dims
            a = self.act_input(ins[0], name)
            b = self.act_input(ins[1], name)
            sa, sb = self.graph.tensors[a].shape, self.graph.tensors[b].shape
            if len(sa) < 2 or len(sa) != len(sb) or sa[:-2] != sb[:-2] or sa[-1] != sb[-2]:
                raise _Unsupported("MatMul of two activations needs [..., M, K] x [..., K, N] "
                                   "with equal batch dimensions")
            self.pending[out] = Pending("matmul", name, [a, b], {}, shape=shape)
            return
        if op in ("MatMul", "Gemm"):
            x = self.act_input(ins[0], name)
            w = self.weight_input(ins[1], name)
            wt = self.graph.tensors[w]
            trans_b = int(attrs.get("transB", 0)) if op == "Gemm" else 0
            if op == "Gemm" and (int(attrs.get("transA", 0)) or attrs.get("alpha", 1.0) != 1.0
                                 or attrs.get("beta", 1.0) != 1.0):
                raise _Unsupported("Gemm with transA or alpha/beta != 1")
            if len(self.graph.tensors[x].shape) != 2 or len(wt.shape) != 2:
                raise _Unsupported("MatMul supports a 2-D activation times a 2-D constant")
            w = self.fc_weights(wt, trans_b, name)
            b = None
            if op == "Gemm" and len(ins) > 2 and ins[2]:
                b = self.weight_input(ins[2], name, "int32")
            self.pending[out] = Pending("fully_connected", name, [x, w, b], {}, shape=shape)
            return
        raise _Unsupported("operator is not supported")

    def check_weight_q(self, wt, channel_axis, name):
        if wt.q.per_channel and wt.q.axis != channel_axis:
            raise _Unsupported(f"weights quantized along axis {wt.q.axis}, expected {channel_axis}")
        if np.any(wt.q.zero_point != 0):
            raise _Unsupported("weights with a non-zero zero point (asymmetric weights)")

    def fc_weights(self, wt, trans_b, name):
        """Constant [K, N] (or [N, K] with transB) -> new constant [N, K], axis 0."""
        data = wt.data if trans_b else wt.data.T
        axis = None
        if wt.q.per_channel:
            want = 0 if trans_b else 1
            if wt.q.axis != want:
                raise _Unsupported("weights quantized along the reduction axis")
            axis = 0
        q = QParams(wt.q.scale, wt.q.zero_point, axis)
        if np.any(q.zero_point != 0):
            raise _Unsupported("weights with a non-zero zero point (asymmetric weights)")
        t = self.add_int_tensor(f"{wt.name}@NK", data.shape, wt.dtype, q,
                                np.ascontiguousarray(data))
        return t.name


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


def lower_to_ir(proto, path, reported=None) -> Graph:
    low = Lowering(proto, path, reported)
    g = low.run()
    g.io_float = low.io_float
    return g
