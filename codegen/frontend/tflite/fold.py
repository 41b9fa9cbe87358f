"""Builtins evaluated at compile time when every input is a constant (SHAPE always: TFLite
shapes are static), e.g. the SHAPE -> STRIDED_SLICE -> PACK chain a converter writes in front
of a RESHAPE. Each folder returns the output array; lower.py stores it as a constant. The
windows of STRIDED_SLICE and SLICE are computed as their lowering computes them
(codegen/ops/slice.py)."""
from __future__ import annotations

import numpy as np

from ...ops.slice import tflite_slice_slices, tflite_strided_slices


def _c(tl, op, k, what):
    return np.asarray(tl.const(op.inputs[k], what))


def _shape(tl, op):
    return np.asarray(tl.tensor(op.inputs[0]).shape,
                      dtype=np.int64 if int(op.options.get("out_type", 2)) == 4 else np.int32)


def _strided_slice(tl, op):
    x = _c(tl, op, 0, "input")
    return x[tuple(tflite_strided_slices(tl, op, x.shape))]


def _slice(tl, op):
    x = _c(tl, op, 0, "input")
    return x[tuple(tflite_slice_slices(tl, op, x.shape))]


def _pack(tl, op):
    xs = [np.asarray(tl.consts[i]) for i in op.inputs]
    return np.stack(xs, axis=int(op.options.get("axis", 0)))


def _concat(tl, op):
    xs = [np.asarray(tl.consts[i]) for i in op.inputs]
    return np.concatenate(xs, axis=int(op.options.get("axis", 0)))


def _transpose(tl, op):
    return np.transpose(_c(tl, op, 0, "input"), _c(tl, op, 1, "perm").reshape(-1))


def _reshape(tl, op):
    return _c(tl, op, 0, "input")  # lower.py reshapes every folded value to the output shape


FOLDERS = {
    "SHAPE": _shape,
    "STRIDED_SLICE": _strided_slice,
    "SLICE": _slice,
    "PACK": _pack,
    "CONCATENATION": _concat,
    "TRANSPOSE": _transpose,
    "RESHAPE": _reshape,
    "SQUEEZE": _reshape,
    "EXPAND_DIMS": _reshape,
}
