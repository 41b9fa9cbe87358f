"""Weights staged in RAM: a fast kernel that reads its weights and records again for every
output pixel (or pair) reads them from a copy in arena bytes that are free at its step.

On a part whose flash has wait states, those reads are what a layer waits on: a 5-wait-state
STM32L4R5 with a 256-byte data cache misses on every line of a layer's weights once they
pass 256 bytes, each time they are read again (docs/cycle-model.md). Copying them to SRAM
once per inference costs about one cycle per byte (the copy; the flash is read once, in
order), and every later read is zero-wait. On a zero-wait part the copy is a small loss, so
only layers that read each weight many times are candidates (ops/conv2d.py: at least
STAGE_MIN_PIXELS output pixels).

For each candidate (Node.attrs["stage_candidate"]: the sizes its block may take, largest
first: all it reads again, then a part worth copying alone), plan again with a block of
that size live at its step ("<node>::staged", planner/arena.py) and keep
it when the arena stays as small: cycles are bought with free arena bytes, never with
RAM. Runs last: it takes the room the passes that change kernels leave. The decision is
the node's attr "staged_bytes", which the arena plan reads; the emitter copies the
weights and records there before the call (backend/c_emitter.py: _Emitter.staging).
"""
from __future__ import annotations

from .arena_free import first_arena_free


def plan_staged_weights(g, plan, replan):
    """`plan` of `g`, with every candidate layer's weights staged where that keeps the
    arena as small."""
    for n in g.nodes:
        n.attrs.pop("staged_bytes", None)
        if n.attrs.get("stage_candidate"):
            plan = first_arena_free(g, n, plan, replan, lambda _n: None, "staged_bytes",
                                    n.attrs["stage_candidate"])
    return plan
