"""sign_flip: uint8 <-> int8 at the model boundary, x ^ 0x80 (exactly x -/+ 128).

Not an ONNX operator: passes/uint8.py computes every uint8 model in int8 (zero points
- 128, exact) and inserts this at a uint8 graph input (into the arena) and output (into
the user's buffer). Emitted inline, one XOR per byte.
"""
from __future__ import annotations

import numpy as np

from .base import Op


class SignFlip(Op):
    name = "sign_flip"

    def reference(self, g, n, ins, p, numerics):
        out_dtype = g.tensors[n.outputs[0]].dtype
        return (np.asarray(ins[0]).astype(np.int16)
                + (-128 if out_dtype == "int8" else 128)).astype(out_dtype)

    def emit(self, em, lid, n, p, info):
        t = em.g.tensors[n.inputs[0]]
        info["kernel"] = "inline (x ^ 0x80)"
        em.body.append(
            f"    {{ const uint8_t *s_ = (const uint8_t *){em.ptr(n.inputs[0])}; "
            f"uint8_t *d_ = (uint8_t *){em.ptr(n.outputs[0])}; "
            f"for (uint32_t i_ = 0; i_ < {t.size}u; ++i_) d_[i_] = (uint8_t)(s_[i_] ^ 0x80u); }}")


OP = SignFlip()
