"""ONNX file -> checked ModelProto with static shapes -> integer IR.

Every problem with the user's file becomes a TinyAotError that names the
model (and node / tensor); nothing here lets a Python traceback through.
"""
from __future__ import annotations

import os

import onnx
from onnx import shape_inference

from ..errors import TinyAotError
from .qdq_lowering import lower_to_ir

# Opsets 22-25 change the operators tinyaot lowers only by types it does not take (bfloat16,
# 4-bit, float4 / float8) and two attributes checked at their nodes (QuantizeLinear's
# `precision`, DequantizeLinear's `output_dtype`, opset 23).
SUPPORTED_OPSETS = range(10, 26)


def load_model(path, input_shapes=None, float_fallback=True):
    """Read an ONNX file and return the integer IR graph (float_fallback: nodes no integer
    lowering takes run in float32, frontend/float_fallback.py)."""
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
    return lower_to_ir(proto, path, reported, float_fallback)


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
