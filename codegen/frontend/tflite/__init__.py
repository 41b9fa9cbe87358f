"""TFLite front end: a .tflite flatbuffer -> the integer IR.

reader.py reads the file into plain records, fold.py evaluates constant builtins, lower.py
walks the operators; each builtin's lowering lives in its IR operator's module
(codegen/ops/<op>.py, `Op.tflite`), reached through ops.TFLITE_LOWERINGS.
"""
from __future__ import annotations

from ...errors import TinyAotError


def is_tflite(path) -> bool:
    return str(path).lower().endswith(".tflite")


def load_tflite(path, input_shapes=None, float_fallback=True):
    from .lower import lower_tflite
    from .reader import read_tflite
    m = read_tflite(path)
    ins = {m.tensors[i].name: m.tensors[i].shape for i in m.inputs}
    for name, dims in (input_shapes or {}).items():
        if name not in ins:
            raise TinyAotError(f"--input-shape names '{name}', but the model's inputs are: "
                               + ", ".join(ins), model=str(path))
        if tuple(int(d) for d in dims) != tuple(ins[name]):
            raise TinyAotError(f"--input-shape {name}: a .tflite model has static shapes "
                               f"({list(ins[name])})", model=str(path), tensor=name)
    return lower_tflite(m, float_fallback)
