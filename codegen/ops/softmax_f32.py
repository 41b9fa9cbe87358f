"""softmax_f32: Softmax / LogSoftmax of a float32 tensor (the float fallback).

Where the integer softmax does not apply (LogSoftmax; a Softmax whose result leaves the model
in float or goes on into other float operators; an axis the integer kernel does not take), the
row runs in float32 over any axis (n elements at stride `inner`):
  ort     MLAS's MlasComputeSoftmax as x86-64 with AVX-512F runs it (numerics/mlas_float.py):
          the row's max, exp(x - max) summed in 16 lanes, then e * (1 / sum); LogSoftmax
          (x - max) - logf(sum) with glibc's logf. Opset < 13 flattens from the axis on, as
          onnxruntime does; opset >= 13 takes one axis (onnxruntime transposes it last,
          which does not change a row's arithmetic).
  tflite  TFLite Micro's reference_ops::Softmax (beta 1) / LogSoftmax (numerics/tflm_float.py):
          the row's max, exp(x - max) with glibc's expf summed in order, then e / sum, or
          (x - max) - logf(sum).
TFLite's float SOFTMAX (beta 1) and LOG_SOFTMAX in a .tflite's float region are lowered here too.
Kernel: tinyaot_softmax_f32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..kernels.c_format import c_struct
from ..numerics import mlas_float as mf
from ..numerics import tflm_float as tf
from .base import Op, Traits, Unsupported
from .float_io import ORT, fptr, mode_of


@dataclass
class SoftmaxF32Params:  # tinyaot_softmax_f32_params_t
    CTYPE: ClassVar[str] = "tinyaot_softmax_f32_params_t"
    outer: int
    n: int
    inner: int
    log: int
    mode: int


def lower_float(lw, node, name, attrs, ins, out, shape):
    x = lw.float_input(ins[0], name)
    rank = len(shape)
    axis = int(attrs.get("axis", -1 if lw.opset >= 13 else 1)) % rank
    size = int(np.prod(shape, dtype=np.int64))
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    if lw.opset >= 13:
        n = int(shape[axis])
    else:  # coerced to 2-D at the axis
        n = size // outer
    lw.float_emit("softmax_f32", name, [x], out, shape,
                  {"outer": outer, "n": n, "inner": size // (outer * n),
                   "log": int(node.op_type == "LogSoftmax")}, onnx_op=node.op_type)


def lower_tflite_float(tl, op):
    """A float32 SOFTMAX (beta 1) / LOG_SOFTMAX of a .tflite, over the last axis."""
    if op.builtin == "SOFTMAX" and float(op.options.get("beta", 1.0)) != 1.0:
        raise Unsupported(f"float SOFTMAX with beta {op.options.get('beta')} (only beta 1)")
    x = tl.float_act(tl.inp(op, 0))
    shape = tl.graph.tensors[x].shape
    n = int(shape[-1]) if shape else 1
    size = int(np.prod(shape, dtype=np.int64))
    y = tl.new_float(op.outputs[0])
    tl.emit("softmax_f32", tl.node_name(op), [x], [y],
            {"outer": size // n, "n": n, "inner": 1, "log": int(op.builtin == "LOG_SOFTMAX"),
             "onnx_op": op.builtin})


def softmax_f32(x, p):
    rows = np.moveaxis(np.asarray(x, np.float32).reshape(p.outer, p.n, p.inner), 1, 2)
    rows = rows.reshape(-1, p.n)
    if p.mode == ORT:
        y = mf.softmax_rows(rows, log=bool(p.log))
    else:
        y = tf.log_softmax_rows(rows) if p.log else tf.softmax_rows(rows)
    return np.moveaxis(y.reshape(p.outer, p.inner, p.n), 2, 1)


class SoftmaxF32(Op):
    name = "softmax_f32"
    traits = Traits(inplace=(0,))  # a row's element k is read before it is written
    onnx_float = {"Softmax": lower_float, "LogSoftmax": lower_float}
    tflite_float = {"SOFTMAX": lower_tflite_float, "LOG_SOFTMAX": lower_tflite_float}

    def prepare(self, g, n, numerics):
        a = n.attrs
        return SoftmaxF32Params(a["outer"], a["n"], a["inner"], a["log"], mode_of(numerics))

    def reference(self, g, n, ins, p, numerics):
        return softmax_f32(ins[0], p).reshape(g.tensors[n.outputs[0]].shape)

    def emit(self, em, lid, n, p, info):
        em.consts.append(c_struct(f"{lid}_p", p))
        info["kernel"] = "tinyaot_softmax_f32"
        em.call(info["kernel"], [f"&{lid}_p", fptr(em, n.inputs[0], const=True),
                                 fptr(em, n.outputs[0])])


OP = SoftmaxF32()
