"""--optimize speed|size: what the compiler trades for flash.

speed (the default) keeps kernel selection as it is: the fast integer kernels
(int16-packed weights, unrolled asm variants) and, under `--numerics ort`,
float weights dequantized at compile time (4 bytes each) for the layers ORT
runs in float.

size keeps every weight as its int8 byte in flash: each conv / FC layer's
operator chooses its size kernel (Op.select with "size"; the kernels:
codegen/ops/size_kernels.py), and Add runs tinyaot_add_s8 without the fast
kernel's 256-entry tables (ops/add.py). Both cost instructions; the
report and `tinyaot profile` give how many.
"""
from __future__ import annotations

from .. import ops
from ..errors import TinyAotError
from .kernel_select import MOVED

OPTIMIZE = ("speed", "size")


def check_optimize(value):
    if value not in OPTIMIZE:
        raise TinyAotError(f"unknown --optimize '{value}' (choose from {', '.join(OPTIMIZE)})")
    return value


def optimize_for_size(g):
    """Re-select kernels for the smallest flash (after passes/kernel_select.py)."""
    for n in g.nodes:
        if n.op in MOVED:
            ops.get(n.op).select(g, n, "size")
    return g
