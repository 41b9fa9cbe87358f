"""Kernel selection: which runtime_c kernel each layer uses, and its scratch.

Each operator module chooses for its layers (codegen/ops/: Op.select): the
conv / depthwise / FC kernel variant (Node.attrs "fast_kernel", and under
--optimize size "int_w8" / "f32_w8"), and ``Node.attrs["scratch_bytes"]``
(the kernel's *_get_buffer_size) so the arena planner reserves a block live
only during that layer. Layers onnxruntime keeps in float (attr
``ort_float``) stay on the float kernels: their fma order is what makes them
bit-exact.
"""
from __future__ import annotations

from .. import ops

# the layers whose operator module chooses (codegen/ops/: Op.select)
MOVED = ("conv_transpose", "conv2d", "fully_connected")


def select_kernels(g):
    for n in g.nodes:
        if n.op in MOVED:
            ops.get(n.op).select(g, n, "speed")
    return g
