"""Small helpers shared by the ONNX frontend."""
from __future__ import annotations

import numpy as np
import onnx


def attr_dict(node):
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        out[a.name] = v
    return out


def np_dtype_name(dtype) -> str:
    return np.dtype(dtype).name
