"""Which pooling / softmax layers onnxruntime runs as QLinearAveragePool /
QLinearSoftmax, and in which type.

onnxruntime's QDQ optimizer fuses DequantizeLinear -> AveragePool ->
QuantizeLinear into com.microsoft QLinearAveragePool (a QOperator model has
that node already); in other graphs (e.g. the MLPerf Tiny models) it keeps
the float AveragePool. The two round differently:

  float AveragePool + QuantizeLinear:  round_half_even(mean / s_y) + zp_y
  QLinearAveragePool:                  round_half_even(mean / s_y + zp_y)

(mean = float32 sum of (q - zp_x) * s_x in window order, / count). On x86
ORT also rewrites an int8 QDQ graph to uint8 (QDQS8ToU8), so the zero point
added before rounding is the uint8 one (zp + 128); the float sum then rounds
like the uint8 kernel does. Each IR avgpool gets `ort_qlinear` (fused) and
`ort_zp_shift` (0, or 128 when ORT's kernel ran on uint8); prepare and the
kernels add zp + shift before rounding and subtract the shift after.

Softmax likewise: fused into QLinearSoftmax, ORT uses a 256-entry float table
of exp and rounds (e * floor(1 / s_y)) / sum (reference/ops.py); the
saturation differs between its uint8 and int8 kernels (`ort_u8`).

Pools (softmaxes) are matched by order: the k-th AveragePool of the model is the k-th
(QLinear)AveragePool of ORT's optimized graph (the optimizer renames tensors
but does not reorder pools).
"""
from __future__ import annotations

import functools
import os
import tempfile

import onnx

POOLS = {"AveragePool", "QLinearAveragePool"}
SOFTMAX = {"Softmax", "QLinearSoftmax"}


def optimized_graph(model_path):
    """ORT's optimized graph of the model (cached per file path, size and mtime)."""
    st = os.stat(str(model_path))
    return _optimized(str(model_path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _optimized(path, size, mtime):
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        opt = os.path.join(tmp, "optimized.onnx")
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.optimized_model_filepath = opt
        ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        return onnx.load(opt)


def ort_optimized_outputs(model_path, op_type):
    """Names of the first outputs of `op_type` nodes in ORT's optimized graph.

    Careful: on x86 ORT rewrites int8 QDQ graphs to uint8 and renames the
    tensors it converts (qdq_s8_to_u8_quant_token_*); match by order there."""
    return {n.output[0] for n in optimized_graph(model_path).graph.node if n.op_type == op_type}


def ort_pools(model_path, kinds=POOLS):
    """[(fused, runs_on_uint8)] for the (QLinear)AveragePool nodes of ORT's graph, in order."""
    m = optimized_graph(model_path)
    types = {}
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        types[vi.name] = vi.type.tensor_type.elem_type
    for init in m.graph.initializer:
        types[init.name] = init.data_type
    out = []
    for n in m.graph.node:
        if n.op_type not in kinds:
            continue
        fused = n.op_type.startswith("QLinear")
        u8 = fused and (types.get(n.input[2]) == onnx.TensorProto.UINT8 if len(n.input) > 2
                        else types.get(n.input[0]) == onnx.TensorProto.UINT8)
        out.append((fused, bool(u8)))
    return out


def model_pools(model_path, kinds=POOLS):
    m = onnx.load(str(model_path), load_external_data=False)
    return [n.name or f"{n.op_type}_{i}" for i, n in enumerate(m.graph.node) if n.op_type in kinds]


def mark_ort_qlinear_pools(g, model_path):
    for op, kinds in (("avgpool", POOLS), ("softmax", SOFTMAX)):
        nodes = [n for n in g.nodes if n.op == op]
        if not nodes:
            continue
        names = model_pools(model_path, kinds)
        ort_side = ort_pools(model_path, kinds)
        if len(names) != len(ort_side):  # cannot match: keep the float formula
            continue
        by_name = dict(zip(names, ort_side))
        for n in nodes:
            fused, u8 = by_name.get(n.name, (False, False))
            n.attrs["ort_qlinear"] = fused
            if fused and op == "avgpool":
                n.attrs["ort_zp_shift"] = 128 if u8 else 0
            if fused and op == "softmax":
                n.attrs["ort_u8"] = u8
    return g
