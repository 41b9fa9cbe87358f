"""A kernel choice kept only where it costs no arena: the planner passes that buy cycles with
a larger scratch (planner/winograd.py, planner/w8_columns.py) try it layer by layer."""
from __future__ import annotations


def first_arena_free(g, n, plan, replan, reselect, attr, values, ok=None):
    """Set n.attrs[attr] to each of `values` in turn (reselect(n): the node's Op.select,
    which reads it) and return the plan of the first that leaves the arena as small as
    `plan`'s (and that ok(value, plan) accepts, when given); if none does, drop the attr
    (reselect again) and return `plan`."""
    for v in values:
        n.attrs[attr] = v
        reselect(n)
        trial = replan(g)
        if trial.size <= plan.size and (ok is None or ok(v, trial)):
            return trial
    n.attrs.pop(attr)
    reselect(n)
    return plan
