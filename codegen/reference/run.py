"""Execute the integer IR graph in numpy."""
from __future__ import annotations

import numpy as np

from .. import ops as ops_registry
from ..ir import Graph
from ..prepare import prepare_node


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
    raise NotImplementedError(f"reference has no kernel for {op}")
