"""The per-layer choice under a flash limit: an exact multiple-choice knapsack.

Each layer picks one candidate (cost: cycles or instructions; bytes: its flash of its
own, i.e. its constants and straight-line code). The kernels' code is shared: a kernel
linked once serves every layer that calls it, so it is not a layer's bytes. The solver
enumerates the sets of kernels the image may link (`kernels` of every candidate; only
the sets some assignment can use) and, for each, solves the layers exactly:

    image = base + code of the kernels allowed + sum of the chosen candidates' bytes

The layers are solved by dynamic programming over Pareto frontiers of (bytes, cost):
after each layer, the partial assignments no other one beats in both bytes and cost.
This is exact (no rounding of sizes). When a frontier grows past MAX_FRONTIER states
the sizes are coarsened to a granularity q (each layer's bytes rounded up to a multiple
of q, so every answer still fits): the answer is then optimal among the assignments
whose bytes fit under limit - n_layers * q, the stated bound. `Solution.granularity`
says which (1: exact).

Ties are broken deterministically: lower cost, then fewer bytes, then the candidates'
order (the first variant listed wins).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

MAX_FRONTIER = 50_000


@dataclass(frozen=True)
class Candidate:
    variant: str
    cost: int
    bytes: int
    kernels: frozenset = frozenset()


@dataclass
class Solution:
    choice: list  # variant per layer, in the layers' order
    cost: int
    bytes: int  # predicted image bytes (base + kernels + layers)
    kernels: tuple  # the kernel set the answer was solved under
    granularity: int


def _frontier_dp(layers, budget, q):
    """Min-cost assignment with sum(bytes rounded up to q) <= budget; None if none fits.
    layers: [[Candidate]]; returns (cost, bytes, [index per layer])."""
    states = [(0, 0, ())]  # (bytes, cost, picks), Pareto-minimal, sorted by bytes
    for cands in layers:
        nxt = {}
        for b0, c0, picks in states:
            for i, c in enumerate(cands):
                b = b0 + -(-c.bytes // q) * q
                if b > budget:
                    continue
                key = b
                cand = (c0 + c.cost, picks + (i,))
                if key not in nxt or cand < nxt[key]:
                    nxt[key] = cand
        if not nxt:
            return None
        states, best = [], None
        for b in sorted(nxt):
            cost, picks = nxt[b]
            if best is None or cost < best:
                states.append((b, cost, picks))
                best = cost
        if len(states) > MAX_FRONTIER:
            return "coarsen"
    b, cost, picks = min(states, key=lambda s: (s[1], s[0], s[2]))
    return cost, b, list(picks)


def _kernel_sets(layers):
    """The kernel sets worth trying: the mandatory kernels (in every candidate of some
    layer) plus any subset of the optional ones, smallest first."""
    allk = sorted(set().union(*(c.kernels for cands in layers for c in cands)))
    mandatory = set()
    for cands in layers:
        mandatory |= frozenset.intersection(*(c.kernels for c in cands))
    optional = [k for k in allk if k not in mandatory]
    if len(optional) > 14:  # 2^14 sets at most: past that, every kernel is allowed
        yield frozenset(allk)
        return
    for r in range(len(optional) + 1):
        for sub in combinations(optional, r):
            yield frozenset(mandatory) | frozenset(sub)


def solve(layers, kernel_code, base, limit=None):
    """layers: [[Candidate]] (one list per layer, at least one each); kernel_code:
    {kernel: bytes}; base: the image's other bytes; limit: flash bytes or None.
    The cheapest assignment whose predicted image fits, or None when none does."""
    best = None
    q = 1
    for allowed in _kernel_sets(layers):
        sub = [[c for c in cands if c.kernels <= allowed] for cands in layers]
        if any(not s for s in sub):
            continue  # some layer has no candidate with these kernels alone
        fixed = base + sum(kernel_code.get(k, 0) for k in allowed)
        budget = (limit - fixed) if limit is not None else sum(
            max(c.bytes for c in s) for s in sub) + len(sub) * q
        if budget < 0:
            continue
        while True:
            r = _frontier_dp(sub, budget, q)
            if r != "coarsen":
                break
            q *= 4
        if r is None:
            continue
        cost, nbytes, picks = r
        # bytes are reported as the sum of the true sizes
        true_bytes = fixed + sum(s[i].bytes for s, i in zip(sub, picks))
        cand = (cost, true_bytes, [s[i].variant for s, i in zip(sub, picks)], sorted(allowed))
        if best is None or cand[:2] < best[:2]:
            best = cand
    if best is None:
        return None
    cost, nbytes, choice, allowed = best
    return Solution(choice, cost, nbytes, tuple(allowed), q)
