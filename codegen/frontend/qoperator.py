"""QOperator ONNX -> the equivalent QDQ ONNX, before shape inference.

onnxruntime's `quantize_static(quant_format=QOperator)` writes integer
operators (QLinearConv, QGemm, QLinearAdd, ...) instead of
DequantizeLinear -> float op -> QuantizeLinear groups. Each one is rewritten
here into exactly that group, so `qdq_lowering` serves both forms:

    QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)
      -> Q(Conv(DQ(x, xs, xz), DQ(w, ws, wz), DQ(B, xs*ws, 0)), ys, yz)

The rewritten nodes keep the QOperator node's name (messages name the node
the user knows). Nodes of other forms pass through unchanged (ConvInteger /
MatMulInteger of a static graph: codegen/ops/integer_forms.py). Dynamic
quantization (DynamicQuantizeLinear and the integer ops reading it: scales
computed at run time) and nodes that cannot be rewritten stay in the graph
and are returned by name, so the lowering reports them together with its own
unsupported nodes (frontend/unsupported.py).

Numerics note (`--numerics ort`): onnxruntime runs QLinearConv / QGemm /
QLinearMatMul as integer kernels (int32 accumulation, float requantize), so
none of these layers is an "ort float" layer; `frontend.ort_facts` asks ORT's
optimizer about the original QOperator file, which has no float Conv/Gemm,
and marks none of them.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import TinyAotError
from .onnx_loader_util import attr_dict

MS = "com.microsoft"

# op_type -> (domains it is recognised in)
QOPERATOR_OPS = {
    "QLinearConv": ("", "ai.onnx"),
    "QLinearMatMul": ("", "ai.onnx"),
    "QGemm": (MS,),
    "QLinearAdd": (MS,),
    "QLinearMul": (MS,),
    "QLinearConcat": (MS,),
    "QLinearAveragePool": (MS,),
    "QLinearGlobalAveragePool": (MS,),
    "QLinearSigmoid": (MS,),
    "QLinearLeakyRelu": (MS,),
    "QLinearSoftmax": (MS,),
}
DYNAMIC_OPS = {"ConvInteger", "MatMulInteger", "DynamicQuantizeLinear"}
DYNAMIC_MSG = "dynamic quantization is not supported: quantize statically (tinyaot quantize)"


def is_qoperator_model(proto) -> bool:
    return any(_is_qop(n) or n.op_type in DYNAMIC_OPS for n in proto.graph.node)


def _is_qop(node) -> bool:
    doms = QOPERATOR_OPS.get(node.op_type)
    return doms is not None and node.domain in doms


class _Rewriter:
    def __init__(self, proto, path):
        self.proto = proto
        self.path = str(path)
        g = proto.graph
        self.inits = {i.name: i for i in g.initializer}
        self.consts = {}
        for node in g.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                for a in node.attribute:
                    if a.name == "value":
                        self.consts[node.output[0]] = numpy_helper.to_array(a.t)
        self.names = {i.name for i in g.initializer} | {i.name for i in g.input}
        for n in g.node:
            self.names.update(n.output)
        self.new_inits = []
        self.unsupported = []

    # ---- helpers -------------------------------------------------------
    def array(self, name, node):
        if name in self.inits:
            try:
                return numpy_helper.to_array(self.inits[name])
            except Exception:
                raise TinyAotError("initializer cannot be read (external data or corrupt)",
                                   model=self.path, tensor=name) from None
        if name in self.consts:
            return self.consts[name]
        raise _Unsupported(f"'{name}' must be a constant (initializer)")

    def fresh(self, base):
        name = base
        k = 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def add_init(self, base, arr):
        name = self.fresh(base)
        self.new_inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def dq(self, out_nodes, x, s, zp, name, axis=None):
        out = self.fresh(f"{x}_dq")
        ins = [x, s] + ([zp] if zp else [])
        kw = {} if axis is None else {"axis": int(axis)}
        # unique node name: the same tensor may be read twice (QLinearConcat(x, x))
        # with other parameters, and the lowering names the reinterpreted view after it
        out_nodes.append(helper.make_node("DequantizeLinear", ins, [out],
                                          name=self.fresh(f"{name}/dq_{x}"), **kw))
        return out

    def q(self, out_nodes, f, s, zp, y, name):
        ins = [f, s] + ([zp] if zp else [])
        out_nodes.append(helper.make_node("QuantizeLinear", ins, [y], name=f"{name}/q"))

    def weight_axis(self, s_name, node, axis):
        """axis for a per-channel weight DequantizeLinear, None per tensor."""
        s = np.asarray(self.array(s_name, node))
        return axis if s.size > 1 else None

    # ---- per operator --------------------------------------------------
    def rewrite(self, node, name):
        op = node.op_type
        ins = list(node.input) + [""] * 10
        attrs = attr_dict(node)
        out = []
        fo = self.fresh(f"{node.output[0]}_f")  # the float result
        if op == "QLinearConv":
            x = self.dq(out, ins[0], ins[1], ins[2], name)
            w = self.dq(out, ins[3], ins[4], ins[5], name, self.weight_axis(ins[4], name, 0))
            conv_in = [x, w]
            if ins[8]:
                conv_in.append(self.bias_dq(out, ins[8], ins[1], ins[4], name, 0))
            out.append(helper.make_node("Conv", conv_in, [fo], name=name, **attrs))
            self.q(out, fo, ins[6], ins[7], node.output[0], name)
        elif op == "QLinearMatMul":
            a = self.dq(out, ins[0], ins[1], ins[2], name)
            b = self.dq(out, ins[3], ins[4], ins[5], name, self.weight_axis(ins[4], name, -1)
                        if ins[3] in self.inits or ins[3] in self.consts else None)
            out.append(helper.make_node("MatMul", [a, b], [fo], name=name))
            self.q(out, fo, ins[6], ins[7], node.output[0], name)
        elif op == "QGemm":
            trans_b = int(attrs.get("transB", 0))
            a = self.dq(out, ins[0], ins[1], ins[2], name)
            b = self.dq(out, ins[3], ins[4], ins[5], name,
                        self.weight_axis(ins[4], name, 0 if trans_b else 1))
            gin = [a, b]
            alpha = float(attrs.get("alpha", 1.0))
            if ins[6]:
                gin.append(self.bias_dq(out, ins[6], ins[1], ins[4], name, 0, alpha))
            if ins[7]:
                out.append(helper.make_node("Gemm", gin, [fo], name=name, **attrs))
                self.q(out, fo, ins[7], ins[8], node.output[0], name)
            else:  # float output: the lowering reports it if nothing quantizes it
                out.append(helper.make_node("Gemm", gin, [node.output[0]], name=name, **attrs))
        elif op in ("QLinearAdd", "QLinearMul"):
            a = self.dq(out, ins[0], ins[1], ins[2], name)
            b = self.dq(out, ins[3], ins[4], ins[5], name)
            out.append(helper.make_node(op[len("QLinear"):], [a, b], [fo], name=name))
            self.q(out, fo, ins[6], ins[7], node.output[0], name)
        elif op == "QLinearConcat":
            rest = list(node.input)[2:]
            if len(rest) % 3:
                raise _Unsupported("inputs must be Y_scale, Y_zero_point, then (X, scale, zp) triples")
            xs = [self.dq(out, rest[i], rest[i + 1], rest[i + 2], name)
                  for i in range(0, len(rest), 3)]
            out.append(helper.make_node("Concat", xs, [fo], name=name, axis=int(attrs["axis"])))
            self.q(out, fo, ins[0], ins[1], node.output[0], name)
        elif op in ("QLinearAveragePool", "QLinearGlobalAveragePool"):
            if int(attrs.pop("channels_last", 0)):
                raise _Unsupported("channels_last=1 is not supported")
            x = self.dq(out, ins[0], ins[1], ins[2], name)
            fop = op[len("QLinear"):]
            out.append(helper.make_node(fop, [x], [fo], name=name, **attrs))
            self.q(out, fo, ins[3], ins[4], node.output[0], name)
        elif op in ("QLinearSigmoid", "QLinearLeakyRelu"):
            x = self.dq(out, ins[0], ins[1], ins[2], name)
            out.append(helper.make_node(op[len("QLinear"):], [x], [fo], name=name, **attrs))
            self.q(out, fo, ins[3], ins[4], node.output[0], name)
        elif op == "QLinearSoftmax":
            opset = int(attrs.get("opset", 13))
            axis = int(attrs.get("axis", -1 if opset >= 13 else 1))
            x = self.dq(out, ins[0], ins[1], ins[2], name)
            out.append(helper.make_node("Softmax", [x], [fo], name=name, axis=axis))
            self.q(out, fo, ins[3], ins[4], node.output[0], name)
        else:  # pragma: no cover - QOPERATOR_OPS and this chain agree
            raise _Unsupported("operator is not supported")
        return out

    def bias_dq(self, out, b, xs_name, ws_name, name, axis, alpha=1.0):
        """int32 bias -> DequantizeLinear with scale x_scale * w_scale (float32)."""
        bias = np.asarray(self.array(b, name))
        if bias.dtype != np.int32:
            raise _Unsupported(f"bias '{b}' must be int32, is {bias.dtype}")
        xs = np.asarray(self.array(xs_name, name), dtype=np.float32).reshape(-1)
        ws = np.asarray(self.array(ws_name, name), dtype=np.float32).reshape(-1)
        if xs.size != 1:
            raise _Unsupported("per-channel input scale")
        scale = (xs[0] * ws).astype(np.float32)
        if alpha != 1.0:
            scale = (scale * np.float32(alpha)).astype(np.float32)
        if scale.size == 1:
            s = self.add_init(f"{b}_scale", scale.reshape(()))
            z = self.add_init(f"{b}_zero_point", np.zeros((), dtype=np.int32))
            return self.dq(out, b, s, z, name)
        if scale.size != bias.size:
            raise _Unsupported(f"{scale.size} weight scales for a bias of {bias.size}")
        s = self.add_init(f"{b}_scale", scale)
        z = self.add_init(f"{b}_zero_point", np.zeros(scale.shape, dtype=np.int32))
        return self.dq(out, b, s, z, name, axis)

    def run(self):
        """-> (rewritten proto, {node name: (op_type, why)} for the nodes left as they were)."""
        g = self.proto.graph
        dynamic = {o for n in g.node if n.op_type == "DynamicQuantizeLinear" for o in n.output}
        nodes = []
        for i, node in enumerate(g.node):
            name = node.name or f"{node.op_type}_{i}"
            if node.op_type == "DynamicQuantizeLinear" or (
                    node.op_type in DYNAMIC_OPS and dynamic.intersection(node.input)):
                self.unsupported.append((node.op_type, name, DYNAMIC_MSG))
                nodes.append(node)  # kept for shape inference; the lowering skips it
                continue
            if not _is_qop(node):
                nodes.append(node)
                continue
            try:
                nodes.extend(self.rewrite(node, name))
            except _Unsupported as u:
                self.unsupported.append((node.op_type, name, str(u)))
                nodes.append(node)
            except (KeyError, ValueError, IndexError) as e:
                self.unsupported.append((node.op_type, name, f"malformed node ({e})"))
                nodes.append(node)
        new = onnx.ModelProto()
        new.CopyFrom(self.proto)
        del new.graph.node[:]
        new.graph.node.extend(nodes)
        new.graph.initializer.extend(self.new_inits)
        return new, {n: (op, why) for op, n, why in self.unsupported}


class _Unsupported(Exception):
    pass


def qoperator_to_qdq(proto, path="model"):
    """Return `proto` with every QOperator node replaced by its QDQ group.

    A model without QOperator nodes is returned unchanged (same object).
    Nodes that cannot be rewritten raise one UnsupportedError (all listed)."""
    new, reported = qoperator_to_qdq_report(proto, path)
    if reported:
        from .unsupported import unsupported_error
        raise unsupported_error([(op, n, why) for n, (op, why) in reported.items()], path)
    return new


def qoperator_to_qdq_report(proto, path="model"):
    """Like qoperator_to_qdq, but nodes that cannot be rewritten stay in the
    graph and are returned as {name: (op_type, why)}, so the lowering can list
    them together with its own unsupported nodes in one message."""
    if not is_qoperator_model(proto):
        return proto, {}
    return _Rewriter(proto, path).run()
