"""Kernel selection: which runtime_c kernel each layer uses, and its scratch.

Each operator module chooses for its own layers (codegen/ops/: Op.select), once, with the
--optimize mode: the conv / depthwise / FC kernel variant (Node.attrs "fast_kernel", or under
--optimize size "int_w8" / "f32_w8") and ``Node.attrs["scratch_bytes"]`` (the kernel's
*_get_buffer_size) so the arena planner reserves a block live only during that layer. Layers
onnxruntime keeps in float (attr ``ort_float``) stay on the float kernels: their fma order is
what makes them bit-exact.

--optimize speed|size: what the compiler trades for flash.

speed (the default) keeps kernel selection as it is: the fast integer kernels
(int16-packed weights, unrolled asm variants; int8 weights for convs with few
output pixels, ops/conv2d.py: W8_PIXELS, for the tflite pointwise convs that
ops/conv2d.py:_pairs allows and for the tflite FC layers that
ops/fully_connected.py:_pairs allows, in both builds) and, under `--numerics ort`,
for the layers ORT runs in float, float weights dequantized at compile time
(4 bytes each), or for convs int8 weights dequantized a block of channels at a
time into free arena (planner/float_conv_blocks.py).

size keeps every weight as its int8 byte in flash: each conv / FC layer's
operator chooses its size kernel (Op.select with "size"; the kernels:
codegen/ops/size_kernels.py), and Add runs tinyaot_add_s8 without the fast
kernel's 256-entry tables (ops/add.py). Both cost instructions; the
report and `tinyaot profile` give how many.

Per layer (`tinyaot tune`, --tuning FILE): `variants` maps a node's name to its variant,
which overrides --optimize for that layer alone:
  speed  the speed kernel (a float FC eligible for it: straight-line code on FPU targets)
  size   the size kernel (int8 weights in flash)
  loop   the speed kernel, a float FC kept in its loop (no straight-line code)
The variant is recorded as the node's attr "variant" (read by the operators' emit); a
build without variants sets no attr, so its C is what --optimize alone gives.
"""
from __future__ import annotations

from .. import ops
from ..errors import TinyAotError

OPTIMIZE = ("speed", "size")
VARIANTS = ("speed", "size", "loop")


def check_optimize(value):
    if value not in OPTIMIZE:
        raise TinyAotError(f"unknown --optimize '{value}' (choose from {', '.join(OPTIMIZE)})")
    return value


def select_kernels(g, optimize="speed", variants=None):
    """Each operator's Op.select; `variants` {node name: variant} overrides `optimize` per
    layer (names the graph does not have are the caller's to check)."""
    variants = variants or {}
    for n in g.nodes:
        v = variants.get(n.name)
        if v is None:
            n.attrs.pop("variant", None)
            ops.get(n.op).select(g, n, optimize)
            continue
        if v not in VARIANTS:
            raise TinyAotError(f"node '{n.name}': unknown kernel variant '{v}' "
                               f"(choose from {', '.join(VARIANTS)})")
        n.attrs["variant"] = v
        ops.get(n.op).select(g, n, "size" if v == "size" else "speed")
    return g

