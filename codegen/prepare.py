"""Compile-time preparation of every kernel's parameters, per numerics.

Like TFLite Micro's Prepare: all multipliers, shifts, float scales and clamp
bounds are computed here, once, and both the numpy reference and the C
emitter consume the result. Nothing is computed at run time.

numerics:
  "ort"    - what onnxruntime computes: float32 requantization,
             round half to even (MLAS), scale products in float32.
  "tflite" - TFLite Micro integer reference: 31-bit multipliers and shifts,
             double rounding, ties away from zero.
"""
from __future__ import annotations

from . import ops
from .ir import Graph, Node

NUMERICS = ("ort", "tflite")


def prepare_node(g: Graph, n: Node, numerics: str):
    op = ops.find(n.op)  # an operator module (codegen/ops/) prepares its own layer
    if op is not None:
        return op.prepare(g, n, numerics)
    return {}
