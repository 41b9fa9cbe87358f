"""Execute the integer IR graph in numpy: the oracle the generated C must match bit for bit.

Each layer runs its operator's numpy reference (codegen/ops/<op>.py: Op.reference) on the
parameters its Op.prepare computed; the arithmetic comes from codegen/numerics/, written from
the operator specifications (ONNX / onnxruntime for `ort`, TFLite's reference kernels for
`tflite`).
"""
from __future__ import annotations

import numpy as np

from .. import ops as ops_registry
from ..ir import Graph


def run_graph(g: Graph, numerics: str, inputs: dict, params=None) -> dict:
    """inputs: graph input name -> integer array (logical shape).

    Returns every activation tensor by name (logical shape, stored dtype).
    """
    env = {}
    for name in g.inputs:
        t = g.tensors[name]
        env[name] = np.asarray(inputs[name]).reshape(t.shape)
    for n in g.nodes:
        p = params[n.name] if params is not None else ops_registry.prepare(g, n, numerics)
        ins = [env[i] if i in env else (g.tensors[i].data if i else None) for i in n.inputs]
        y = ops_registry.get(n.op).reference(g, n, ins, p, numerics)
        out_t = g.tensors[n.outputs[0]]
        env[n.outputs[0]] = np.asarray(y).astype(out_t.dtype).reshape(out_t.shape)
    return env

