"""Which QDQ groups onnxruntime fuses into QLinear* contrib kernels.

Some ops (Mul, Concat, ...) round differently when ORT runs them as a fused
QLinear kernel than as DequantizeLinear -> float op -> QuantizeLinear, and
whether it fuses depends on its optimizer (e.g. a Relu between the op and the
QuantizeLinear). This asks ORT's default session, once per model file, for
the output tensor names of every node of its optimized graph, by op type.
"""
from __future__ import annotations

import functools
import os
import tempfile


def ort_optimized_outputs(model_path, op_type, domain="com.microsoft") -> set:
    """Output tensor names of `op_type` nodes in ORT's optimized graph of model_path."""
    try:
        st = os.stat(str(model_path))
    except OSError:
        return set()
    return set(_optimized(str(model_path), st.st_mtime_ns, st.st_size).get((domain, op_type), ()))


@functools.lru_cache(maxsize=32)
def _optimized(path, mtime, size):
    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        opt = os.path.join(tmp, "optimized.onnx")
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.optimized_model_filepath = opt
        ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        m = onnx.load(opt)
    out = {}
    for n in m.graph.node:
        out.setdefault((n.domain or "", n.op_type), []).extend(o for o in n.output if o)
    return {k: tuple(v) for k, v in out.items()}
