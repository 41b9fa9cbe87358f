"""Did onnxruntime fuse the QDQ group that produces an integer tensor into a
QLinear* kernel (QLinearMul, QLinearMatMul, ...)? Asked of ORT's optimized
graph, once per model file.

The fused node's output is the QuantizeLinear's output, unless ORT's x86
int8 -> uint8 rewrite (QDQS8ToU8) renamed it; then the DequantizeLinear
reading it still has its original output name, which is matched instead.
"""
from __future__ import annotations

import functools
import os


def ort_fused(model_path, q_output, op_type) -> bool:
    """True if ORT's optimized graph computes `q_output` (an ONNX QuantizeLinear
    output of model_path) with an `op_type` node."""
    return ort_fused_on(model_path, q_output, op_type)[0]


def ort_fused_on(model_path, q_output, op_type):
    """(fused, runs_on_uint8): like ort_fused, and whether ORT's node has uint8
    operands (a uint8 model, or ORT's x86 int8 -> uint8 rewrite)."""
    try:
        st = os.stat(str(model_path))
    except OSError:
        return False, False
    nodes, dq_of = _graphs(str(model_path), st.st_mtime_ns, st.st_size)
    want_dq = set(dq_of.get(q_output, ()))
    for op, outs, dq_users, u8 in nodes:
        if op != op_type:
            continue
        if q_output in outs or want_dq & set(dq_users):
            return True, u8
    return False, False


@functools.lru_cache(maxsize=32)
def _graphs(path, mtime, size):
    import onnx

    orig = onnx.load(path)
    dq_of = {}
    for n in orig.graph.node:
        if n.op_type == "DequantizeLinear":
            dq_of.setdefault(n.input[0], []).append(n.output[0])
    from .ort_qlinear import optimized_graph  # one optimizer run per model, shared

    m = optimized_graph(path)
    consumers = {}
    for n in m.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    types = {vi.name: vi.type.tensor_type.elem_type
             for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)}
    types.update({i.name: i.data_type for i in m.graph.initializer})
    nodes = []
    for n in m.graph.node:
        dq_users = tuple(c.output[0] for o in n.output for c in consumers.get(o, ())
                         if c.op_type == "DequantizeLinear")
        u8 = any(types.get(i) == onnx.TensorProto.UINT8 for i in n.input)
        nodes.append((n.op_type, tuple(n.output), dq_users, u8))
    return tuple(nodes), {k: tuple(v) for k, v in dq_of.items()}
