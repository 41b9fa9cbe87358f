"""ONNX file -> checked ModelProto with static shapes -> integer IR.

Every problem with the user's file becomes a TinyAotError that names the
model (and node / tensor); nothing here lets a Python traceback through.
"""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from ..errors import TinyAotError
from .qdq_lowering import lower_to_ir

SUPPORTED_OPSETS = range(10, 22)


def load_model(path, input_shapes=None):
    """Read an ONNX file and return the integer IR graph."""
    proto = read_onnx(path)
    reject_float_model(proto, path)
    from .limits import check_proto_limits, check_value_limits
    check_proto_limits(proto, path)  # 32-bit limits from the headers, before data is read
    from .qoperator import qoperator_to_qdq_report
    # QOperator form -> QDQ (no-op for QDQ models); nodes it cannot rewrite are
    # reported by the lowering, in one message with its own unsupported nodes
    proto, reported = qoperator_to_qdq_report(proto, path)
    try:
        proto = infer_static_shapes(proto, path, input_shapes or {})
        check_value_limits(proto, path)  # no inferred tensor over 2**31 bytes
        from .const_fold import fold_constants
        proto, _ = fold_constants(proto, path)  # shape arithmetic on constants
    except TinyAotError:
        if reported:  # e.g. shape inference failed on a node left unrewritten: report those
            from .unsupported import unsupported_error
            raise unsupported_error([(op, n, why) for n, (op, why) in reported.items()],
                                    path) from None
        raise
    return lower_to_ir(proto, path, reported)


def read_onnx(path) -> onnx.ModelProto:
    path = str(path)
    if not os.path.exists(path):
        raise TinyAotError("no such file", model=path)
    if os.path.isdir(path):
        raise TinyAotError("is a directory, not an ONNX file", model=path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TinyAotError(f"cannot read: {e.strerror}", model=path) from None
    if not data:
        raise TinyAotError("empty file, not an ONNX model", model=path)
    try:
        proto = onnx.load_from_string(data)
    except Exception:  # protobuf raises several types for garbage
        raise TinyAotError("not an ONNX model (protobuf parse failed)", model=path) from None
    if not proto.HasField("graph") or not proto.graph.node:
        raise TinyAotError("not an ONNX model (no graph or no nodes)", model=path)
    opset = default_opset(proto)
    if opset is None:
        raise TinyAotError("no ai.onnx opset import", model=path)
    if opset not in SUPPORTED_OPSETS:
        raise TinyAotError(
            f"opset {opset} is not supported (supported: {SUPPORTED_OPSETS.start}"
            f"-{SUPPORTED_OPSETS.stop - 1})",
            model=path,
        )
    # other domains are checked per node during lowering
    return proto


def reject_float_model(proto, path):
    """A model with no quantization at all gets one line saying so and how to
    quantize it, not one "not quantized" entry per node."""
    quantized = any(n.op_type in ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")
                    or n.op_type.startswith("QLinear") or n.op_type.endswith("Integer")
                    for n in proto.graph.node)
    init = {t.name for t in proto.graph.initializer}
    floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
              onnx.TensorProto.BFLOAT16)
    inputs = [i for i in proto.graph.input if i.name not in init]
    if not quantized and inputs and all(i.type.tensor_type.elem_type in floats for i in inputs):
        stem = os.path.splitext(os.path.basename(str(path)))[0]
        raise TinyAotError("a float model (no QuantizeLinear / DequantizeLinear): tinyaot "
                           "compiles int8 models; quantize it first: tinyaot quantize "
                           f"{path} --calib DATA.npz -o {stem}_int8.onnx", model=path)


def default_opset(proto):
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return None


def infer_static_shapes(proto, path, input_shapes) -> onnx.ModelProto:
    """Fix graph input shapes, run ONNX shape inference, demand static dims."""
    inits = {i.name for i in proto.graph.initializer}
    names = [i.name for i in proto.graph.input if i.name not in inits]
    for name, dims in input_shapes.items():
        if name not in names:
            raise TinyAotError(f"--input-shape names '{name}', but the model's inputs are: "
                               + ", ".join(names), model=path)
        if not dims or any(int(d) <= 0 for d in dims):
            raise TinyAotError(f"--input-shape {name}: every dimension must be > 0",
                               model=path, tensor=name)
    for inp in proto.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        if inp.name in input_shapes:
            dims = input_shapes[inp.name]
            del tt.shape.dim[:]
            for d in dims:
                tt.shape.dim.add().dim_value = int(d)
            continue
        if not tt.HasField("shape"):
            raise TinyAotError(
                "input has no shape; give one with --input-shape "
                f"{inp.name}=1,3,32,32",
                model=path, tensor=inp.name,
            )
        for d in tt.shape.dim:
            if not d.HasField("dim_value") or d.dim_value <= 0:
                raise TinyAotError(
                    f"input has a symbolic or missing dimension ({d.dim_param or '?'}); "
                    f"fix it with --input-shape {inp.name}=" + _example_dims(tt),
                    model=path, tensor=inp.name,
                )
    try:
        inferred = shape_inference.infer_shapes(proto, strict_mode=True, data_prop=True)
    except Exception as e:
        msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        raise TinyAotError(f"shape inference failed: {msg[:300]}", model=path) from None
    return inferred


def _example_dims(tt):
    dims = []
    for d in tt.shape.dim:
        dims.append(str(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else "1")
    return ",".join(dims) or "1"


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
