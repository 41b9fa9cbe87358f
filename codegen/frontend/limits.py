"""32-bit limits, checked before anything is allocated or any C is written.

The generated C and the kernels index with int32_t / uint32_t (dimensions,
element counts, arena offsets, array sizes) and Cortex-M addresses are 32
bits, so every tensor, every constant, the sum of the constants and the
arena must stay below 2**31 bytes. Checking the ONNX dims with Python
integers first also means a hostile file cannot make tinyaot allocate a
huge array: an initializer whose dims claim 2**40 elements is rejected from
its header, before numpy reads it.
"""
from __future__ import annotations

import math

import onnx
from onnx import TensorProto

from ..errors import TinyAotError

LIMIT = 2**31 - 1  # bytes: int32_t index / offset range
DIM_LIMIT = 2**31 - 1

_FIXED = {TensorProto.FLOAT: 4, TensorProto.UINT8: 1, TensorProto.INT8: 1, TensorProto.UINT16: 2,
          TensorProto.INT16: 2, TensorProto.INT32: 4, TensorProto.INT64: 8, TensorProto.BOOL: 1,
          TensorProto.FLOAT16: 2, TensorProto.DOUBLE: 8, TensorProto.UINT32: 4,
          TensorProto.UINT64: 8, TensorProto.BFLOAT16: 2}


def _itemsize(dt):
    return _FIXED.get(dt)


def _human(n):
    return f"{n} bytes" if n < 2**20 else f"{n} bytes ({n / 2**30:.2f} GiB)"


def _check_const_tensor(t: onnx.TensorProto, path, node=None):
    name = t.name or None
    if t.data_type not in TensorProto.DataType.values() or t.data_type == TensorProto.UNDEFINED:
        raise TinyAotError(f"constant has an unknown data type ({t.data_type})", model=path,
                           node=node, tensor=name)
    dims = list(t.dims)
    if any(d < 0 for d in dims):
        raise TinyAotError(f"constant has a negative dimension {dims}", model=path, node=node,
                           tensor=name)
    count = math.prod(dims)
    item = _itemsize(t.data_type)
    if item is None:  # strings, sub-byte types: tinyaot never uses them as data
        return 0
    nbytes = count * item
    if nbytes > LIMIT:
        raise TinyAotError(f"constant of shape {dims} is {_human(nbytes)}, over the 32-bit "
                           f"limit of {LIMIT} bytes", model=path, node=node, tensor=name)
    if t.data_location == TensorProto.EXTERNAL:
        raise TinyAotError("constant stored as external data is not supported (embed it in "
                           "the .onnx file)", model=path, node=node, tensor=name)
    if t.HasField("raw_data") and len(t.raw_data) != nbytes:
        raise TinyAotError(f"constant of shape {dims} needs {nbytes} bytes of data, the file "
                           f"has {len(t.raw_data)}", model=path, node=node, tensor=name)
    return nbytes


def check_proto_limits(proto: onnx.ModelProto, path) -> int:
    """Initializer and Constant headers (before their data is read); returns their bytes."""
    path = str(path)
    total = 0
    for t in proto.graph.initializer:
        total += _check_const_tensor(t, path)
    for n in proto.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    total += _check_const_tensor(a.t, path, node=n.name or None)
    if total > LIMIT:
        raise TinyAotError(f"constants total {_human(total)}, over the 32-bit limit of {LIMIT} "
                           "bytes", model=path)
    check_attributes(proto, path)
    return total


def _check_value_dims(vi, path):
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return
    dims = [d.dim_value for d in tt.shape.dim if d.HasField("dim_value")]
    if any(d > DIM_LIMIT for d in dims):
        raise TinyAotError(f"dimension over the 32-bit limit in shape {dims}", model=path,
                           tensor=vi.name)
    item = _itemsize(tt.elem_type) or 1
    if dims and len(dims) == len(tt.shape.dim) and math.prod(dims) * item > LIMIT:
        raise TinyAotError(f"tensor of shape {dims} is {_human(math.prod(dims) * item)}, over "
                           f"the 32-bit limit of {LIMIT} bytes", model=path, tensor=vi.name)


def check_value_limits(proto: onnx.ModelProto, path):
    """Every shape shape inference found: no dimension or tensor over 2**31 bytes."""
    path = str(path)
    g = proto.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        _check_value_dims(vi, path)


def check_graph_limits(g, path):
    """The integer IR: at least one input and one output, each quantized per tensor
    (the API gives one scale and zero point per end); every tensor non-empty and
    under 2**31 bytes."""
    path = str(path)
    if not g.inputs or not g.outputs:
        raise TinyAotError(
            f"the model must have at least one input and one output; it has {len(g.inputs)} "
            f"input(s) and {len(g.outputs)} output(s)", model=path)
    din, dout = g.declared_ends()
    for side, names, declared in (("input", g.inputs, din), ("output", g.outputs, dout)):
        for name, d in zip(names, declared):
            q = g.tensors[name].q
            if q is not None and q.per_channel:
                raise TinyAotError(f"graph {side} is quantized per axis ({q.describe()}); the "
                                   f"generated API has one scale and zero point per {side}: "
                                   "quantize it per tensor", model=path, tensor=d.name)
    total = 0
    for name, t in g.tensors.items():
        shape = tuple(int(d) for d in t.shape)
        if any(d <= 0 for d in shape):
            raise TinyAotError(f"tensor has an empty or negative dimension {list(shape)}",
                               model=path, tensor=name)
        nbytes = math.prod(shape) * (4 if t.dtype in ("int32", "float32") else
                                     8 if t.dtype in ("int64", "float64") else
                                     2 if t.dtype in ("int16", "uint16") else 1)
        if nbytes > LIMIT:
            raise TinyAotError(f"tensor of shape {list(shape)} is {_human(nbytes)}, over the "
                               f"32-bit limit of {LIMIT} bytes", model=path, tensor=name)
        if t.is_const:
            total += nbytes
    if total > LIMIT:
        raise TinyAotError(f"constants total {_human(total)}, over the 32-bit limit", model=path)


def check_plan_limits(plan, path):
    """Arena size and every block's end must be addressable with 32-bit offsets."""
    if plan.size > LIMIT:
        raise TinyAotError(f"the arena needs {_human(plan.size)}, over the 32-bit limit of "
                           f"{LIMIT} bytes", model=str(path))
    for b in getattr(plan, "blocks", []):
        if b.offset is not None and b.offset >= 0 and b.offset + b.size > LIMIT:
            raise TinyAotError(f"arena offset {b.offset} + {b.size} bytes is over the 32-bit "
                               "limit", model=str(path), tensor=b.name)


class ort_rejects:
    """Context manager: onnxruntime's own errors on loading the model -> TinyAotError.

    Only onnxruntime's exception types are translated (a bug of ours still
    shows as an internal error)."""

    def __init__(self, path):
        self.path = str(path)

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if exc is None or not type(exc).__module__.startswith("onnxruntime"):
            return False
        lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
        msg = lines[-1] if lines else type(exc).__name__
        msg = msg.replace(self.path, "<model>")
        raise TinyAotError(f"onnxruntime rejects the model: {msg[:300]}", model=self.path) from None


def check_attributes(proto: onnx.ModelProto, path):
    """Attributes of standard ops have the type their schema says (an `axis` that
    is a list, a `strides` that is a string...) and exist in that opset."""
    path = str(path)
    opset = None
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            opset = imp.version
    if opset is None:
        return
    for i, n in enumerate(proto.graph.node):
        if n.domain not in ("", "ai.onnx"):
            continue
        try:
            schema = onnx.defs.get_schema(n.op_type, opset, "")
        except Exception:  # noqa: BLE001 - unknown op: lowering lists it as unsupported
            continue
        for a in n.attribute:
            want = schema.attributes.get(a.name)
            name = n.name or f"{n.op_type}_{i}"
            if want is None:
                raise TinyAotError(f"{n.op_type} (opset {opset}) has no attribute '{a.name}'",
                                   model=path, node=name)
            if a.type != int(want.type):
                got = onnx.AttributeProto.AttributeType.Name(a.type)
                exp = onnx.AttributeProto.AttributeType.Name(int(want.type))
                raise TinyAotError(f"attribute '{a.name}' must be {exp}, got {got}",
                                   model=path, node=name)


class out_of_range_params:
    """Context manager: the ValueError / OverflowError the fixed-point helpers
    (numerics/tflite_fixedpoint.py) raise for multipliers they cannot represent
    (e.g. a scale of 3e38) -> TinyAotError naming the node. Errors raised
    anywhere else pass through unchanged."""

    def __init__(self, path):
        self.path = str(path)
        self.node = None

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if not isinstance(exc, (ValueError, OverflowError)):
            return False
        last = tb
        while last.tb_next is not None:
            last = last.tb_next
        if not last.tb_frame.f_code.co_filename.endswith("tflite_fixedpoint.py"):
            return False
        raise TinyAotError(f"quantization scales give a fixed-point parameter out of range "
                           f"({exc})", model=self.path, node=self.node) from None
