"""Static arena planning: every activation gets an offset fixed at compile time.

Tensors that alias (reshape / transpose outputs) form one block. Graph
inputs and outputs are blocks too (`io_buffers="arena"`, the compiler's
default) or live in the caller's buffers ("user"). A concat input may be a
sub-block of the concat output (concat_slices.py). A block
is live from the step that writes it to the last step that reads it; two
blocks whose lifetimes meet may not overlap. Several greedy placements are
tried and the smallest arena is kept.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import ops

DEFAULT_ALIGN = 8


@dataclass
class Block:
    name: str  # the root tensor
    size: int
    first: int  # step that writes it
    last: int  # last step that reads it
    tensors: list = field(default_factory=list)
    offset: int = -1
    align: int = DEFAULT_ALIGN
    external: str | None = None  # "input" / "output": lives in the user's buffer
    inplace: list = field(default_factory=list)  # in-place merges (planner/inplace.py)
    parent: "Block | None" = None  # zero-copy concat: a slice of this block (concat_slices.py)
    parent_offset: int = 0  # byte offset of the slice inside parent
    slices: list = field(default_factory=list)  # the concat inputs that are slices of this block

    def overlaps_in_time(self, other) -> bool:
        return not (self.last < other.first or other.last < self.first)


@dataclass
class ArenaPlan:
    size: int
    blocks: list
    where: dict  # tensor name -> Block
    strategy: str
    lower_bound: int
    io_buffers: str = "user"  # "arena": the graph input/output are planned blocks too

    def offset_of(self, tensor):
        return self.where[tensor].offset

    def to_json(self):
        return {
            "arena_bytes": self.size,
            "lower_bound_bytes": self.lower_bound,
            "strategy": self.strategy,
            "blocks": [
                {"tensor": b.name, "size": b.size, "offset": b.offset, "first": b.first,
                 "last": b.last, "external": b.external, "aliases": b.tensors[1:],
                 "align": b.align, "inplace": b.inplace,
                 "within": None if b.parent is None else b.parent.name}
                for b in self.blocks
            ],
            "io_buffers": self.io_buffers,
            "inplace": [m for b in self.blocks for m in b.inplace],
            "concat_slices": [m for b in self.blocks for m in b.slices],
        }


def _align(x, a):
    return (x + a - 1) // a * a


def build_blocks(g):
    root = {}
    for n in g.nodes:
        if ops.traits(n.op).alias:
            root[n.outputs[0]] = root.get(n.inputs[0], n.inputs[0])
    blocks = {}

    def block_of(t):
        r = root.get(t, t)
        if r not in blocks:
            blocks[r] = Block(r, g.tensors[r].nbytes, 10**9, -1, [])
        b = blocks[r]
        if t not in b.tensors:
            b.tensors.append(t)
        return b

    for name in g.inputs:
        b = block_of(name)
        b.first = -1
        b.last = max(b.last, -1)
        b.external = "input"
    for step, n in enumerate(g.nodes):
        for i in n.inputs:
            if i and not g.tensors[i].is_const:
                b = block_of(i)
                b.last = max(b.last, step)
        for o in n.outputs:
            b = block_of(o)
            b.first = min(b.first, step)
            b.last = max(b.last, step)
    end = len(g.nodes)
    for name in g.outputs:
        b = block_of(name)
        b.last = end
        b.external = "input+output" if b.external == "input" else "output"
    # Scratch of a kernel (Node.attrs["scratch_bytes"], e.g. im2col columns of
    # the fast conv) and its staged weights (Node.attrs["staged_bytes"],
    # planner/staged_weights.py): blocks live only at that node's step.
    for step, n in enumerate(g.nodes):
        for sname, nbytes in node_blocks(n):
            b = Block(sname, nbytes, step, step, [sname])
            b.scratch = True
            b.node = n
            blocks[sname] = b
    return list(blocks.values())


def scratch_name(node):
    """Plan key (ArenaPlan.where) of a node's scratch block."""
    return f"{node.name}::scratch"


def staged_name(node):
    """Plan key (ArenaPlan.where) of a node's staged-weights block."""
    return f"{node.name}::staged"


def node_blocks(n):
    """[(plan key, bytes)] of the blocks node n alone uses, live only at its step."""
    out = []
    for name, attr in ((scratch_name(n), "scratch_bytes"), (staged_name(n), "staged_bytes")):
        nbytes = int(n.attrs.get(attr, 0) or 0)
        if nbytes > 0:
            out.append((name, nbytes))
    return out


def lower_bound(blocks, steps):
    """Largest sum of arena block sizes live at one step (no overlap possible).
    A concat slice (sub-block) is counted in its parent block."""
    best = 0
    for s in range(-1, steps + 1):
        best = max(best, sum(b.size for b in blocks if b.external is None and b.parent is None
                             and b.first <= s <= b.last))
    return best


def _place(blocks, order):
    placed = []
    for b in order:
        cands = sorted((p for p in placed if p.overlaps_in_time(b)), key=lambda p: p.offset)
        off = 0
        for p in cands:
            if off + b.size <= p.offset:
                break
            off = max(off, _align(p.offset + p.size, b.align))
        b.offset = off
        placed.append(b)
    return max((b.offset + b.size for b in placed), default=0)


STRATEGIES = {
    "greedy-by-size": lambda bs: sorted(bs, key=lambda b: (-b.size, b.first, b.name)),
    "greedy-by-lifetime": lambda bs: sorted(bs, key=lambda b: (b.first, -b.size, b.name)),
    "greedy-by-conflicts": None,  # filled in below
}


def _by_conflicts(bs):
    deg = {b.name: sum(b.overlaps_in_time(o) for o in bs if o is not b) for b in bs}
    return sorted(bs, key=lambda b: (-deg[b.name] * 0 - b.size * (1 + deg[b.name]), b.name))


STRATEGIES["greedy-by-conflicts"] = _by_conflicts


def plan_arena(g, align=None, inplace=True, io_buffers="user", concat_slices=True) -> ArenaPlan:
    """align: None = per buffer (planner/align.py, at least 4), or one value for all.
    inplace: let elementwise ops overwrite a dying input (planner/inplace.py).
    io_buffers: "user" = graph input/output in the caller's buffers, "arena" = planned.
    concat_slices: producers write into their slice of a concat output (concat_slices.py);
    the slices make the output block live from its earliest slice on, which can
    raise the peak elsewhere, so the plan without them is tried too and the
    smaller arena kept (the zero-copy one on a tie: it also saves the copies)."""
    if io_buffers not in ("user", "arena"):
        raise ValueError(f"io_buffers must be 'user' or 'arena', not {io_buffers!r}")
    plan = _plan(g, align, inplace, io_buffers, concat_slices)
    if concat_slices and any(b.slices for b in plan.blocks):
        plain = _plan(g, align, inplace, io_buffers, False)
        if plain.size < plan.size:
            return plain
    return plan


def _plan(g, align, inplace, io_buffers, concat_slices):
    from .align import buffer_align
    from .concat_slices import merge_concat_slices, resolve_offsets
    from .inplace import merge_inplace

    blocks = build_blocks(g)
    if io_buffers == "arena":
        for b in blocks:
            if b.external is not None:
                b.external = None
    if inplace:
        blocks = merge_inplace(g, blocks)
    for b in blocks:
        b.align = align if align is not None else buffer_align(g, b)
    if concat_slices:
        blocks = merge_concat_slices(g, blocks)
    internal = [b for b in blocks if b.external is None and b.parent is None]
    best = None
    for name, order_fn in STRATEGIES.items():
        size = _place(internal, order_fn(internal))
        if best is None or size < best[0]:
            best = (size, name, {b.name: b.offset for b in internal})
    size, strategy, offsets = best
    for b in internal:
        b.offset = offsets[b.name]
    resolve_offsets(blocks)
    where = {t: b for b in blocks for t in b.tensors}
    return ArenaPlan(_align(size, max([DEFAULT_ALIGN] + [b.align for b in internal])), blocks,
                     where, strategy, lower_bound(blocks, len(g.nodes)), io_buffers)
