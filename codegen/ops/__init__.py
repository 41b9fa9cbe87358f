"""The operator registry: the one place that dispatches on an IR operator's name.

Each module under codegen/ops/ holds one operator (see base.py for what it provides). To add
an operator, write its module from an existing one (docs/adding-an-operator.md): every module
here that defines OP (or OPS, a family sharing one kernel) is registered, in name order.
"""
from __future__ import annotations

import importlib
import pkgutil

from .base import Op, Pending, Traits, Unsupported

def _discover():
    """Every module's OP / OPS; a module with neither holds shared code (base.py, ...)."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        m = importlib.import_module(f"{__name__}.{info.name}")
        for op in getattr(m, "OPS", None) or ((m.OP,) if hasattr(m, "OP") else ()):
            assert op.name not in found, f"IR op {op.name} defined twice"
            found[op.name] = op
    return found


OPS: dict[str, Op] = _discover()

# ONNX op type -> lowering function, for the QDQ front end
ONNX_LOWERINGS = {}
for _op in OPS.values():
    for _onnx_type, _fn in _op.onnx.items():
        assert _onnx_type not in ONNX_LOWERINGS, f"ONNX {_onnx_type} lowered by two operators"
        ONNX_LOWERINGS[_onnx_type] = _fn

# TFLite builtin name -> lowering function, for the TFLite front end (frontend/tflite/)
TFLITE_LOWERINGS = {}
for _op in OPS.values():
    for _builtin, _fn in _op.tflite.items():
        assert _builtin not in TFLITE_LOWERINGS, f"TFLite {_builtin} lowered by two operators"
        TFLITE_LOWERINGS[_builtin] = _fn

# TFLite builtin name -> float32 lowering, for a .tflite's float region (frontend/tflite/)
TFLITE_FLOAT_LOWERINGS = {}
for _op in OPS.values():
    for _builtin, _fn in _op.tflite_float.items():
        assert _builtin not in TFLITE_FLOAT_LOWERINGS, f"TFLite {_builtin} run in float twice"
        TFLITE_FLOAT_LOWERINGS[_builtin] = _fn


# ONNX op type -> float32 lowering, for the float fallback (frontend/float_fallback.py)
ONNX_FLOAT_LOWERINGS = {}
for _op in OPS.values():
    for _onnx_type, _fn in _op.onnx_float.items():
        assert _onnx_type not in ONNX_FLOAT_LOWERINGS, f"ONNX {_onnx_type} run in float twice"
        ONNX_FLOAT_LOWERINGS[_onnx_type] = _fn


def traits(name: str) -> Traits:
    """The traits of IR op `name` (passes and planner read these, never op names)."""
    return get(name).traits


def get(name: str) -> Op:
    """The operator `name` (an internal error if the IR holds an unregistered one)."""
    try:
        return OPS[name]
    except KeyError:
        raise NotImplementedError(f"no operator module for IR op '{name}'") from None


def prepare(g, n, numerics):
    """Node n's compile-time parameters for `numerics` (its operator's typed record)."""
    return get(n.op).prepare(g, n, numerics)


__all__ = ["OPS", "ONNX_FLOAT_LOWERINGS", "ONNX_LOWERINGS", "TFLITE_FLOAT_LOWERINGS",
           "TFLITE_LOWERINGS", "Op", "Pending",
           "Traits", "Unsupported", "get", "prepare", "traits"]
