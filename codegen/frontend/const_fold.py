"""Constant folding on the ONNX graph, after static shape inference.

Exporters leave shape arithmetic in the graph (Shape -> Gather -> Unsqueeze
-> Concat -> Reshape, Cast, arithmetic on initializers). Every node whose
inputs are all constants (initializers, Constant nodes, already folded
values, or `Shape` of a tensor whose shape is static) is evaluated here with
onnx's reference evaluator and replaced by an initializer. Quantization ops
are never folded: DequantizeLinear of a constant is how the lowering knows a
tensor's integers and scale.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import TinyAotError

FOLDABLE = {"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Add", "Sub", "Mul",
            "Div", "Slice", "Reshape", "Flatten", "Transpose", "ConstantOfShape", "Range",
            "Identity", "ReduceProd", "Neg", "Floor", "Ceil", "Equal", "Where", "Expand",
            "Size", "Min", "Max", "Abs", "Sqrt", "Pow"}
MAX_FOLD_ELEMENTS = 1 << 20  # never materialise huge constants


def _static_shape(vi):
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(int(d.dim_value))
    return dims


def fold_constants(proto, path="model"):
    """Return (proto with constant subgraphs folded, number of folded nodes)."""
    g = proto.graph
    opset = next((i.version for i in proto.opset_import if i.domain in ("", "ai.onnx")), 13)
    consts = {}
    for init in g.initializer:
        try:
            consts[init.name] = numpy_helper.to_array(init)
        except Exception:
            raise TinyAotError("initializer cannot be read (external data or corrupt)",
                               model=str(path), tensor=init.name) from None
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        s = _static_shape(vi)
        if s is not None:
            shapes[vi.name] = s
    outputs = {o.name for o in g.output}
    kept, folded = [], []
    for node in g.node:
        if node.domain not in ("", "ai.onnx") or any(o in outputs for o in node.output):
            kept.append(node)
            continue
        if node.op_type == "Constant":
            kept.append(node)  # read by the lowering as a constant already
            continue
        ins = [i for i in node.input if i]
        value = None
        if node.op_type == "Shape" and ins and ins[0] in shapes and ins[0] not in consts:
            start = end = None
            for a in node.attribute:
                if a.name == "start":
                    start = a.i
                elif a.name == "end":
                    end = a.i
            value = [np.array(shapes[ins[0]][start:end], dtype=np.int64)]
        elif node.op_type in FOLDABLE and ins and all(i in consts for i in ins):
            value = _evaluate(node, consts, opset)
        if value is None:
            kept.append(node)
            continue
        for name, v in zip(node.output, value):
            consts[name] = v
            folded.append(numpy_helper.from_array(np.asarray(v), name))
    if not folded:
        return proto, 0
    new = onnx.ModelProto()
    new.CopyFrom(proto)
    del new.graph.node[:]
    new.graph.node.extend(kept)
    new.graph.initializer.extend(folded)
    names = {t.name for t in folded}
    keep_vi = [vi for vi in new.graph.value_info if vi.name not in names]
    del new.graph.value_info[:]
    new.graph.value_info.extend(keep_vi)
    return new, len(proto.graph.node) - len(kept)


def _evaluate(node, consts, opset):
    from onnx.reference import ReferenceEvaluator

    ins = [i for i in node.input if i]
    if sum(np.asarray(consts[i]).size for i in ins) > MAX_FOLD_ELEMENTS:
        return None
    try:
        inputs = [helper.make_tensor_value_info(i, helper.np_dtype_to_tensor_dtype(
            np.asarray(consts[i]).dtype), None) for i in ins]
        outs = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None)
                for o in node.output]
        g = helper.make_graph([node], "fold", inputs, outs)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        res = ReferenceEvaluator(m).run(None, {i: np.asarray(consts[i]) for i in ins})
    except Exception:
        return None  # leave it to the lowering, which reports it by name
    if any(np.asarray(r).size > MAX_FOLD_ELEMENTS for r in res):
        return None
    return [np.asarray(r) for r in res]
