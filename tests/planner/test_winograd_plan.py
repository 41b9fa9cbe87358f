"""planner/winograd.py: a 3x3 stride-1 conv runs tinyaot_convolve_winograd_s8 only where its
scratch costs no arena, and tinyaot_convolve_winograd_consume_s8 (no scratch: it overwrites
its input) only where the input dies at the layer. On ic01 (../shared) two candidates take
the kernel with scratch, and forcing the third onto it would grow the arena; that one, whose
input dies there, consumes its input, and the arena is the activations' live-set bound,
smaller than without Winograd."""
from __future__ import annotations

import pytest

from codegen import ops
from codegen.compiler import compile_model
from codegen.planner import plan_arena
from codegen.planner.winograd import _consumable

from tests.helpers.env import shared_model

pytestmark = pytest.mark.shared


def _set(g, n, value):
    if value:
        n.attrs["winograd"] = value
    else:
        n.attrs.pop("winograd", None)
    ops.get(n.op).select(g, n, "speed")


def test_winograd_only_where_it_costs_no_arena():
    model, _ = shared_model("ic01")
    c = compile_model(model.with_suffix(".tflite"), numerics="tflite")
    g = c.graph
    cands = [n for n in g.nodes if n.attrs.get("winograd_candidate")]
    plain = [n for n in cands if n.attrs.get("winograd") is True]
    consume = [n for n in cands if n.attrs.get("winograd") == "consume"]
    assert len(plain) == 2 and len(consume) == 1 and len(cands) == 3, [n.name for n in cands]
    chosen = c.plan.size
    acts = [b for b in c.plan.blocks if not getattr(b, "scratch", False)]
    from codegen.planner.arena import lower_bound
    assert chosen == lower_bound(acts, len(g.nodes))  # no scratch at the peak any more
    for n in consume:  # the kernel with scratch would have grown the arena
        _set(g, n, True)
        assert plan_arena(g, io_buffers="arena").size > chosen, n.name
        _set(g, n, "consume")
    for n in cands:
        _set(g, n, None)
    assert plan_arena(g, io_buffers="arena").size > chosen  # the fast conv's columns at the peak


def test_consume_only_where_the_input_dies():
    """ic01's first Winograd layer reads the block's input, which the residual add reads
    again later: it may not overwrite it; the second's input dies there."""
    model, _ = shared_model("ic01")
    c = compile_model(model.with_suffix(".tflite"), numerics="tflite")
    g = c.graph
    steps = {n.name: s for s, n in enumerate(g.nodes)}
    cands = [n for n in g.nodes if n.attrs.get("winograd_candidate")]
    first, second = cands[0], cands[1]
    assert second.inputs[0] == first.outputs[0]
    assert not _consumable(g, first, steps[first.name], c.plan)
    assert _consumable(g, second, steps[second.name], c.plan)
    assert second.attrs["winograd"] == "consume" and "scratch_bytes" in second.attrs
    assert second.attrs["scratch_bytes"] == 0
