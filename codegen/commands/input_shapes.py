"""--input-shape on every command that reads a model: `NAME=D0,D1,...` fixes a symbolic (or
missing) dimension of an ONNX graph input.

`compile` passes the shapes to the compiler itself. Every other command (run, verify, golden,
report, validate, profile, export, quantize) runs the compiler and, besides it, onnxruntime
or a quantizer on the same file, possibly more than once; so for them the model is copied once
into a private temporary folder with those input dimensions written in (same file name, so
the generated names do not change), every step reads that copy, and the folder is removed
when the command ends.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile

from ..errors import TinyAotError


def add_input_shape(p):
    p.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,...",
                   help="fix a symbolic input dimension, e.g. input=1,3,32,32 (repeat per input)")


def shape_arg(values) -> dict:
    shapes = {}
    for v in values or []:
        if "=" not in v:
            raise TinyAotError(f"--input-shape wants NAME=d0,d1,..., got '{v}'")
        name, dims = v.rsplit("=", 1)
        try:
            shapes[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            raise TinyAotError(f"--input-shape: bad dimensions '{dims}'") from None
    return shapes


def _fixed_copy(path, shapes, folder):
    import onnx
    from ..frontend import is_tflite
    if is_tflite(path):
        raise TinyAotError("--input-shape applies to ONNX models (a .tflite file's input "
                           "shapes are static)", model=str(path))
    try:
        proto = onnx.load(str(path))
    except Exception:
        raise TinyAotError("cannot read the ONNX model", model=str(path)) from None
    inits = {i.name for i in proto.graph.initializer}
    names = [i.name for i in proto.graph.input if i.name not in inits]
    for name, dims in shapes.items():
        if name not in names:
            raise TinyAotError(f"--input-shape names '{name}', but the model's inputs are: "
                               + ", ".join(names), model=str(path))
        if not dims or any(d <= 0 for d in dims):
            raise TinyAotError(f"--input-shape {name}: every dimension must be > 0",
                               model=str(path), tensor=name)
    for inp in proto.graph.input:
        if inp.name in shapes:
            tt = inp.type.tensor_type
            del tt.shape.dim[:]
            for d in shapes[inp.name]:
                tt.shape.dim.add().dim_value = int(d)
    del proto.graph.value_info[:]  # inferred again from the fixed inputs
    out = os.path.join(folder, os.path.basename(str(path)))
    onnx.save(proto, out)
    return out


@contextlib.contextmanager
def fixed_input_shapes(a):
    """Around a command's run(a): a.model (a path or a list of them) replaced by copies
    with a.input_shape written in; nothing happens without --input-shape. Yields a function
    that puts the user's own paths back into a message (an error naming the copy)."""
    values = getattr(a, "input_shape", None)
    if not values or a.cmd == "compile":
        yield lambda text: text
        return
    shapes = shape_arg(values)
    folder = tempfile.mkdtemp(prefix="tinyaot-input-shape-")
    try:
        models = a.model if isinstance(a.model, list) else [a.model]
        copies = []
        for i, m in enumerate(models):
            sub = os.path.join(folder, str(i))
            os.makedirs(sub)
            copies.append(_fixed_copy(m, shapes, sub))
        a.model = copies if isinstance(a.model, list) else copies[0]

        def own_paths(text):
            for copy, m in zip(copies, models):
                text = text.replace(copy, str(m))
            return text
        out, sys.stdout = sys.stdout, _Rewriting(sys.stdout, own_paths)
        try:
            yield own_paths
        finally:
            sys.stdout = out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class _Rewriting:
    """stdout that shows the user's model path where the command prints its copy's."""

    def __init__(self, stream, rewrite):
        self._stream, self._rewrite = stream, rewrite

    def write(self, text):
        return self._stream.write(self._rewrite(text))

    def __getattr__(self, name):  # flush, isatty, encoding, fileno, ...
        return getattr(self._stream, name)
