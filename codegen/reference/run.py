"""Execute the integer IR graph in numpy."""
from __future__ import annotations

import numpy as np

from .. import ops as ops_registry
from ..ir import Graph
from ..prepare import prepare_node
from . import ops


def run_graph(g: Graph, numerics: str, inputs: dict, params=None) -> dict:
    """inputs: graph input name -> integer array (logical shape).

    Returns every activation tensor by name (logical shape, stored dtype).
    """
    env = {}
    for name in g.inputs:
        t = g.tensors[name]
        env[name] = np.asarray(inputs[name]).reshape(t.shape)
    for n in g.nodes:
        p = params[n.name] if params is not None else prepare_node(g, n, numerics)
        ins = [env[i] if i in env else (g.tensors[i].data if i else None) for i in n.inputs]
        y = _run_node(g, n, ins, p, numerics)
        out_t = g.tensors[n.outputs[0]]
        env[n.outputs[0]] = np.asarray(y).astype(out_t.dtype).reshape(out_t.shape)
    return env


def _run_node(g, n, ins, p, numerics):
    op = n.op
    mod = ops_registry.find(op)  # an operator module (codegen/ops/) holds its own oracle
    if mod is not None:
        return mod.reference(g, n, ins, p, numerics)
    bias_t = g.tensors[n.inputs[2]] if len(n.inputs) > 2 and n.inputs[2] else None
    ort_float = numerics == "ort" and n.attrs.get("ort_float")
    if op == "conv2d":
        if ort_float:
            return ops.conv2d_ort_float(ins[0], g.tensors[n.inputs[1]], bias_t, n.attrs, p)
        return ops.conv2d(ins[0], ins[1], n.attrs, p, numerics)
    if op == "conv_transpose":
        from . import conv_transpose as ct
        out_hw = g.tensors[n.outputs[0]].shape[2:]
        if numerics == "ort":
            return ct.conv_transpose_ort_float(ins[0], g.tensors[n.inputs[1]], bias_t, n.attrs, p,
                                               out_hw)
        return ct.conv_transpose_tflite(ins[0], ins[1], n.attrs, p, out_hw)
    if op == "fully_connected":
        if ort_float:
            return ops.fully_connected_ort_float(ins[0], g.tensors[n.inputs[1]], bias_t, p)
        return ops.fully_connected(ins[0], ins[1], p, numerics)
    if op == "matmul":
        from . import ops_more
        return ops_more.matmul(ins[0], ins[1], p, numerics)
    raise NotImplementedError(f"reference has no kernel for {op}")
