"""planner/winograd.py: a 3x3 stride-1 conv runs tinyaot_convolve_winograd_s8 only where its
scratch costs no arena. On ic01 (../shared) some candidates take it, and forcing any other
candidate onto it would grow the arena; the arena is the one without Winograd."""
from __future__ import annotations

import pytest

from codegen import ops
from codegen.compiler import compile_model
from codegen.planner import plan_arena

from tests.helpers.env import shared_model

pytestmark = pytest.mark.shared


def _set(g, n, on):
    if on:
        n.attrs["winograd"] = True
    else:
        n.attrs.pop("winograd", None)
    ops.get(n.op).select(g, n, "speed")


def test_winograd_only_where_it_costs_no_arena():
    model, _ = shared_model("ic01")
    c = compile_model(model.with_suffix(".tflite"), numerics="tflite")
    g = c.graph
    cands = [n for n in g.nodes if n.attrs.get("winograd_candidate")]
    took = [n for n in cands if n.attrs.get("fast_kernel") == "winograd"]
    assert took and len(took) < len(cands), [n.name for n in cands]
    chosen = c.plan.size
    for n in took:
        _set(g, n, False)
    assert plan_arena(g, io_buffers="arena").size == chosen  # the arena without Winograd
    for n in cands:
        if n not in took:  # refused: it would have grown the arena
            _set(g, n, True)
            assert plan_arena(g, io_buffers="arena").size > chosen, n.name
            _set(g, n, False)
