"""Poison instrumentation: prove that no kernel reads a dead buffer.

The generated C calls `TINYAOT_POISON(ptr, bytes)` on the whole arena before
the first layer (except an arena-resident model input, which the caller has
just written) and, after each step, on every arena block whose last reader
was that step. The macro is empty unless the build defines it, either
directly (`-D'TINYAOT_POISON(p,n)=...'`) or with `-DTINYAOT_POISON_BYTE=0xA5`,
which makes it a memset with that byte. A host build with poison that still
gives bit-exact outputs shows that every read hits a live buffer
(tests/planner/test_poison.py).
"""
from __future__ import annotations

POISON_DEFAULTS = """/* Poison hook: after each step, TINYAOT_POISON(ptr, bytes) on every arena block
 * that died at it (empty unless the build defines TINYAOT_POISON or
 * TINYAOT_POISON_BYTE; see codegen/planner/poison.py). */
#ifndef TINYAOT_POISON
#ifdef TINYAOT_POISON_BYTE
#define TINYAOT_POISON(ptr, bytes) __builtin_memset((ptr), (TINYAOT_POISON_BYTE), (bytes))
#else
#define TINYAOT_POISON(ptr, bytes) ((void)0)
#endif
#endif
"""


def _arena_blocks(plan):
    """Placed blocks; a concat slice's bytes belong to (and die with) its parent block."""
    return [b for b in plan.blocks if b.external is None and b.offset >= 0 and b.size > 0
            and getattr(b, "parent", None) is None]


def poison_prologue(plan, keep=()):
    """Lines that poison the arena before the first layer, except the blocks in keep."""
    if plan.size <= 0 or not _arena_blocks(plan):
        return []
    spans = sorted((b.offset, b.offset + b.size) for b in keep)
    lines, pos = [], 0
    for lo, hi in spans + [(plan.size, plan.size)]:
        if lo > pos:
            lines.append(f"    TINYAOT_POISON(ARENA + {pos}, {lo - pos}u);")
        pos = max(pos, hi)
    return lines


def dead_after(plan, step):
    """Arena blocks whose last reader is `step`."""
    return [b for b in _arena_blocks(plan) if b.last == step]


def poison_after(plan, step):
    return [f"    TINYAOT_POISON(ARENA + {b.offset}, {b.size}u);" for b in dead_after(plan, step)]
