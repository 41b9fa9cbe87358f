"""What the float fallback's operators share (no operator here): their C pointers and the
float32 tensors' checks.

The float region (frontend/float_fallback.py) holds float32 tensors in the arena, row-major,
4-byte aligned (their element size); the kernels take `float *`.
"""
from __future__ import annotations

ORT, TFLITE = 0, 1  # the records' `mode`: onnxruntime's kernels, TFLite Micro's


def mode_of(numerics) -> int:
    return ORT if numerics == "ort" else TFLITE


def fptr(em, name, const=False):
    """C expression of float32 tensor `name`: a flash array for a constant, else its buffer."""
    t = em.g.tensors[name]
    if t.is_const:
        return em.const_once("float", f"{_cname(name)}_f32", t.data.reshape(-1))
    q = "const float" if const else "float"
    return f"({q} *)(void *){em.ptr(name)}"


def _cname(name):
    from ..kernels.c_format import c_ident
    return "c_" + c_ident(name)
