"""Kernel selection: which runtime_c kernel each conv / FC layer uses.

Sets ``Node.attrs["fast_kernel"]`` ("conv", "depthwise" or "fc") on the
integer layers the fast kernels (runtime_c/include/tinyaot_fast_kernels.h)
handle, and ``Node.attrs["scratch_bytes"]`` (the kernel's
*_get_buffer_size) so the arena planner reserves a block live only during
that layer (ConvTranspose: one output pixel's accumulators, both numerics).
Layers onnxruntime keeps in float (attr ``ort_float``) stay on
the float kernels: their fma order is what makes them bit-exact.
"""
from __future__ import annotations

from .. import ops
from ..kernels.fast_pack import fc_scratch_bytes

# the layers whose operator module chooses (codegen/ops/: Op.select)
MOVED = ("conv_transpose", "conv2d")


def select_kernels(g):
    for n in g.nodes:
        if n.op in MOVED:
            ops.get(n.op).select(g, n, "speed")
            continue
        if n.op == "fully_connected" and n.attrs.get("ort_float"):  # one dequantized input row
            from ..kernels.fc_float_pack import fc_float_scratch_bytes
            n.attrs["scratch_bytes"] = fc_float_scratch_bytes(g.tensors[n.inputs[1]].shape[1])
            continue
        if n.attrs.get("ort_float") or n.attrs.get("int_epilogue"):  # float math: portable kernels
            continue
        if n.op == "fully_connected":
            w = g.tensors[n.inputs[1]]
            n.attrs["fast_kernel"] = "fc"
            n.attrs["scratch_bytes"] = fc_scratch_bytes(w.shape[1])
    return g
