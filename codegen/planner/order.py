"""Execution-order search: the topological order with the lowest activation peak.

Graphs with branches (residual blocks, parallel convolutions) can run their
nodes in many orders; each gives other tensor lifetimes and so another peak.
The search is bounded: the given order, a greedy order (at each step the
ready node that adds the fewest bytes net of what it frees) and a fixed
number of randomized greedy restarts; every candidate is scored
with the planner's own blocks (aliases, in-place merges, scratch), and the
lowest peak wins (ties keep the earlier candidate, the given order first).
Deterministic: the restarts use a fixed seed and a fixed count (no wall-clock
cut-off, so a loaded machine emits the same C); about 0.2 s for 200 nodes.
`budget_s` is an optional extra cap for interactive use.
"""
from __future__ import annotations

import random
import time

from .. import ops
from .arena import build_blocks
from .concat_slices import merge_concat_slices
from .inplace import merge_inplace

DEFAULT_RESTARTS = 12
DEFAULT_BUDGET_S = None


def _peak(blocks, steps):
    diff = [0] * (steps + 3)
    for b in blocks:
        if b.external is None and b.parent is None and b.size:
            diff[b.first + 1] += b.size
            diff[b.last + 2] -= b.size
    best = cur = 0
    for d in diff:
        cur += d
        best = max(best, cur)
    return best


class _Cached:
    """A tensor with its sizes computed once (the search scores many orders)."""

    def __init__(self, t):
        self._t = t
        self.name, self.shape, self.dtype = t.name, t.shape, t.dtype
        self.is_const, self.size, self.nbytes = t.is_const, t.size, t.nbytes
        self.physical_perm = t.physical_perm

    def __getattr__(self, k):
        return getattr(self._t, k)


def _search_graph(g):
    from ..ir import Graph
    return Graph(g.name, {k: _Cached(v) for k, v in g.tensors.items()}, list(g.nodes),
                 list(g.inputs), list(g.outputs), g.source)


def peak_of(g, order, io_buffers="user", inplace=True):
    """The activation lower bound of running g's nodes in `order`."""
    saved = g.nodes
    try:
        g.nodes = list(order)
        blocks = build_blocks(g)
        if io_buffers == "arena":
            for b in blocks:
                b.external = None
        if inplace:
            blocks = merge_inplace(g, blocks)
        peak = _peak(blocks, len(g.nodes))
        if any(n.op == "concat" for n in g.nodes):  # the planner keeps the better of the two
            for b in blocks:  # alignment is left to the real plan; the peak does not need it
                b.align = 1
            peak = min(peak, _peak(merge_concat_slices(g, blocks), len(g.nodes)))
        return peak
    finally:
        g.nodes = saved


class _Dag:
    def __init__(self, g, io_buffers):
        self.g = g
        nodes = g.nodes
        root = {}
        for n in nodes:
            if ops.traits(n.op).alias:
                root[n.outputs[0]] = root.get(n.inputs[0], n.inputs[0])
        self.root = lambda t: root.get(t, t)
        producer = {o: i for i, n in enumerate(nodes) for o in n.outputs}
        self.preds = [set() for _ in nodes]
        self.succs = [set() for _ in nodes]
        for i, n in enumerate(nodes):
            for t in n.inputs:
                j = producer.get(t)
                if t and j is not None and j != i:
                    self.preds[i].add(j)
                    self.succs[j].add(i)
        ext = set() if io_buffers == "arena" else {self.root(t) for t in g.inputs + g.outputs}
        self.reads = []  # per node: the roots it reads (non-const)
        self.uses = {}
        for i, n in enumerate(nodes):
            rs = {self.root(t) for t in n.inputs if t and not g.tensors[t].is_const}
            self.reads.append(rs)
            for r in rs:
                self.uses[r] = self.uses.get(r, 0) + 1
        self.alloc = []
        for n in nodes:
            a = 0
            if not ops.traits(n.op).alias:
                a = sum(g.tensors[o].nbytes for o in n.outputs if self.root(o) not in ext)
            a += int(n.attrs.get("scratch_bytes", 0) or 0)
            self.alloc.append(a)
        self.size = {r: (0 if r in ext else g.tensors[r].nbytes) for r in self.uses}

    def greedy(self, rng=None, noise=0.0):
        n = len(self.g.nodes)
        indeg = [len(p) for p in self.preds]
        left = dict(self.uses)
        ready = [i for i in range(n) if indeg[i] == 0]
        order, widest = [], 1
        while ready:
            widest = max(widest, len(ready))
            best, best_key = None, None
            for i in ready:
                freed = sum(self.size.get(r, 0) for r in self.reads[i] if left.get(r) == 1)
                score = self.alloc[i] - freed
                if rng is not None and noise:
                    score += rng.random() * noise
                key = (score, i)
                if best_key is None or key < best_key:
                    best, best_key = i, key
            ready.remove(best)
            order.append(best)
            for r in self.reads[best]:
                left[r] -= 1
            for j in self.succs[best]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    ready.append(j)
        return order, widest


def choose_order(g, io_buffers="user", restarts=DEFAULT_RESTARTS, budget_s=DEFAULT_BUDGET_S,
                 seed=0):
    """Returns (nodes in the best order found, info dict). Does not modify g."""
    t0 = time.perf_counter()
    nodes = list(g.nodes)
    g = _search_graph(g)
    base = peak_of(g, nodes, io_buffers)
    info = {"searched": 0, "peak_given_order": base, "peak": base, "changed": False}
    if len(nodes) < 3:
        return nodes, info
    dag = _Dag(g, io_buffers)
    order, widest = dag.greedy()
    if widest == 1:  # a chain: only one topological order
        return nodes, info
    best, best_peak = nodes, base
    seen = {tuple(range(len(nodes)))}
    rng = random.Random(seed)
    scale = max(dag.alloc) or 1
    tries = 0
    while True:
        tries += 1
        if tuple(order) not in seen:
            seen.add(tuple(order))
            cand = [nodes[i] for i in order]
            p = peak_of(g, cand, io_buffers)
            if p < best_peak:
                best, best_peak = cand, p
        if tries > restarts or (budget_s is not None and time.perf_counter() - t0 > budget_s):
            break
        order, _ = dag.greedy(rng, noise=scale * rng.choice([0.05, 0.25, 1.0]))
    info.update(searched=len(seen), peak=best_peak, changed=best is not nodes)
    return best, info
