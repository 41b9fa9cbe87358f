"""layout: a real transpose of the bytes, from one physical order to another.

Not an ONNX operator: passes/layout.py inserts it where a tensor's bytes are not in the
order its consumer needs (NHWC for the spatial kernels, row-major for a reshape, ...).
Attributes: from_perm (the input's physical order) and to_perm (the output's); the logical
tensor does not change, so its oracle is the identity. tinyaot_transpose_s8 permutes the
physical dims, padded on the left to rank 4.
"""
from __future__ import annotations

from .base import Op
from .physical import int32_array


class Layout(Op):
    name = "layout"

    def reference(self, g, n, ins, p, numerics):
        return ins[0]  # the oracle holds logical arrays: only the bytes move

    def emit(self, em, lid, n, p, info):
        t = em.g.tensors[n.inputs[0]]
        src = n.attrs["from_perm"]
        dst = n.attrs["to_perm"]
        phys = [t.shape[a] for a in src]
        r = [list(src).index(a) for a in dst]  # output axis k is input (physical) axis r[k]
        pad = 4 - len(phys)
        dims = int32_array(em, f"{lid}_dims", [1] * pad + phys)
        perm = int32_array(em, f"{lid}_perm", list(range(pad)) + [x + pad for x in r])
        info["kernel"] = "tinyaot_transpose_s8"
        em.call("tinyaot_transpose_s8", [dims, perm, em.ptr(n.inputs[0]), em.ptr(n.outputs[0])])


OP = Layout()
