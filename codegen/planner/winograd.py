"""Integer 3x3 stride-1 convs on tinyaot_convolve_winograd_s8, where its scratch costs no arena.

The Winograd kernel's scratch (one pair of 2x2 tiles' transformed input: 64 bytes per input
channel) is larger than the fast conv's two im2col columns (36 bytes per input channel), so
for each candidate (ops/conv2d.py: "winograd_candidate") plan again with it and keep it when
the arena stays as small. Where it does not, the layer may still run Winograd with no scratch
of its own (attr "consume"): two calls over two bands of output rows, the first keeping its
transformed input in the output's last bytes (not yet written), the second in the input's
first bytes (read for the last time: kernels/winograd_pack.py, consume_bands). That
overwrites the input, so it is legal only where the input's block dies at this layer, is the
model's neither input nor output (nor a concat slice), and both blocks sit on word
boundaries in the arena (_consumable). Otherwise the layer keeps the fast conv.
Cycles are bought with flash, never with RAM. The decision is the node's attr "winograd",
which its Op.select reads.
"""
from __future__ import annotations

from ..kernels import winograd_pack as wino
from ..ops.conv_records import conv_dims
from .arena_free import first_arena_free


def plan_winograd(g, plan, replan, reselect):
    """`plan` of `g`, with the candidate layers on the Winograd kernel wherever it keeps the
    arena as small. reselect(n): the node's Op.select."""
    for step, n in enumerate(g.nodes):
        if n.attrs.get("winograd_candidate"):
            values = [True] + (["consume"] if _fits(g, n) else [])
            plan = first_arena_free(g, n, plan, replan, reselect, "winograd", values,
                                    ok=lambda v, trial, n=n, step=step:
                                    v is True or _consumable(g, n, step, trial))
    return plan


def _fits(g, n):
    """Is the layer large enough to run with no scratch (winograd_pack.consume_bands)?"""
    return wino.consume_bands(conv_dims(g, n)) is not None


def _consumable(g, n, step, plan):
    """May node n (at `step`) overwrite its input under `plan`?"""
    bx, by = plan.where[n.inputs[0]], plan.where[n.outputs[0]]
    model_io = set(g.inputs) | set(g.outputs)
    return (bx.last == step and bx is not by and not getattr(bx, "scratch", False)
            and all(b.external is None and b.parent is None and b.offset % 4 == 0
                    and not model_io.intersection(b.tensors) for b in (bx, by)))
