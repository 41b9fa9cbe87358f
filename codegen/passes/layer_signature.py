"""A layer's signature: what its kernels' cost depends on, as a tuning record keys it.

`tinyaot tune` measures each layer's kernel variants and keeps the figures under this
signature, so a second model with a layer of the same signature reuses them. It holds the
operator, every input and output's shape, type and quantization class (per-tensor or
per-channel, zero point zero or not), the operator's scalar attributes (kernel size,
strides, pads, dilations, groups, the fused activation's bounds, onnxruntime's float
decision) and the numerics. Weight values are left out (the integer kernels' cost does
not depend on them) except for a float fully-connected layer, whose straight-line code
holds its nonzero weights: there a digest of the weights is part of the signature.

Attributes set by kernel selection itself (the chosen kernel, its scratch, the variant)
are not part of it: the signature is the same whatever the layer runs.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np

# set by kernel selection (ops/*.select, passes/kernel_select.py): not what the layer is
_SELECTION_ATTRS = {"fast_kernel", "int_w8", "f32_w8", "scratch_bytes", "variant", "w8_columns",
                    "w8_block_pairs", "winograd_candidate", "winograd", "onnx_tensors",
                    "f32_blocks_candidate", "f32_block_tiles", "stage_candidate", "staged_bytes"}


def _quant_class(t):
    q = t.q
    if q is None:
        return None
    zp0 = bool(np.all(np.asarray(q.zero_point) == 0))
    return {"per_channel": q.per_channel, "zero_point_zero": zp0}


def _scalar(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return True
    if isinstance(v, (tuple, list)):
        return all(_scalar(x) for x in v)
    return isinstance(v, (np.integer, np.floating))


def _plain(v):
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def layer_signature(g, n, numerics) -> dict:
    """The signature of node `n` of graph `g` (a JSON-ready dict)."""
    def end(name):
        if not name:
            return None
        t = g.tensors[name]
        return {"shape": [int(s) for s in t.shape], "dtype": t.dtype, "const": t.is_const,
                "quant": _quant_class(t)}

    attrs = {k: _plain(v) for k, v in sorted(n.attrs.items())
             if k not in _SELECTION_ATTRS and _scalar(v)}
    sig = {"op": n.op, "numerics": numerics, "inputs": [end(t) for t in n.inputs],
           "outputs": [end(t) for t in n.outputs], "attrs": attrs}
    if n.op == "fully_connected" and n.attrs.get("ort_float"):
        w = g.tensors[n.inputs[1]].data
        sig["weights_sha256"] = hashlib.sha256(np.ascontiguousarray(w).tobytes()).hexdigest()
    return sig


def signature_key(sig: dict) -> str:
    """A short stable key of a signature (the tuning record's cache key)."""
    text = json.dumps(sig, sort_keys=True, separators=(",", ":"))
    return sig["op"] + ":" + hashlib.sha256(text.encode()).hexdigest()[:16]
