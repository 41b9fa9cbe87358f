"""Independent check of an arena plan (shares no code with the planner).

Recomputes every tensor's lifetime from the graph, then verifies that two
tensors live at the same step never share arena bytes, that every block
fits in the arena and that offsets are aligned.
"""
from __future__ import annotations


class PlanError(Exception):
    pass


def check_plan(g, plan, align=4):
    alias_src = {}
    for n in g.nodes:
        if n.op in ("reshape", "transpose", "reinterpret"):
            alias_src[n.outputs[0]] = n.inputs[0]

    def root(t):
        while t in alias_src:
            t = alias_src[t]
        return t

    live = {}
    for name in g.inputs:
        live.setdefault(root(name), [-1, -1])
    for step, n in enumerate(g.nodes):
        for t in [i for i in n.inputs if i and not g.tensors[i].is_const] + list(n.outputs):
            r = root(t)
            span = live.setdefault(r, [step, step])
            span[0] = min(span[0], step)
            span[1] = max(span[1], step)
    for name in g.outputs:
        live[root(name)][1] = len(g.nodes)
    external = {root(t) for t in list(g.inputs) + list(g.outputs)}
    spans = []
    for r, (a, b) in live.items():
        if r in external:
            continue
        blk = plan.where.get(r)
        if blk is None:
            raise PlanError(f"tensor {r} has no place in the plan")
        off, size = blk.offset, g.tensors[r].nbytes
        if off < 0 or off + size > plan.size:
            raise PlanError(f"tensor {r} [{off}, {off + size}) outside arena of {plan.size} B")
        if off % align:
            raise PlanError(f"tensor {r} at offset {off} not {align}-aligned")
        spans.append((r, a, b, off, off + size))
    for i in range(len(spans)):
        for j in range(i + 1, len(spans)):
            r1, a1, b1, lo1, hi1 = spans[i]
            r2, a2, b2, lo2, hi2 = spans[j]
            if a1 <= b2 and a2 <= b1 and lo1 < hi2 and lo2 < hi1:
                raise PlanError(f"tensors {r1} (steps {a1}-{b1}) and {r2} (steps {a2}-{b2}) "
                                f"overlap in the arena")
    return True
