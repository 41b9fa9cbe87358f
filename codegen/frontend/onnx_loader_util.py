"""Small helpers shared by the ONNX frontend."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from ..errors import TinyAotError


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


def tensor_shapes(proto):
    """name -> (shape tuple, numpy dtype) for every typed value in the graph."""
    out = {}
    g = proto.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = []
        ok = True
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            else:
                ok = False
        if ok and tt.elem_type in onnx.helper.get_all_tensor_dtypes():  # 0: type unknown
            out[vi.name] = (tuple(dims), onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
    for init in g.initializer:
        out[init.name] = (tuple(init.dims), onnx.helper.tensor_dtype_to_np_dtype(init.data_type))
    return out


def initializer_arrays(proto, path):
    arrays = {}
    for init in proto.graph.initializer:
        try:
            arrays[init.name] = numpy_helper.to_array(init)
        except Exception:
            raise TinyAotError("initializer cannot be read (external data or corrupt)",
                               model=path, tensor=init.name) from None
    for node in proto.graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            for a in node.attribute:
                if a.name == "value":
                    arrays[node.output[0]] = numpy_helper.to_array(a.t)
                elif a.name in ("value_float", "value_int"):
                    arrays[node.output[0]] = np.array(onnx.helper.get_attribute_value(a))
                elif a.name in ("value_floats", "value_ints"):
                    arrays[node.output[0]] = np.array(onnx.helper.get_attribute_value(a))
    return arrays
