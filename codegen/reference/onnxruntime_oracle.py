"""onnxruntime as the independent oracle: final and intermediate tensors."""
from __future__ import annotations

import numpy as np
import onnx


def with_outputs(model: onnx.ModelProto, names) -> onnx.ModelProto:
    """A copy of the model with the tensors `names` added as graph outputs."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for name in names:
        if name not in have:
            m.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
            have.add(name)
    return m


def run_onnxruntime(model_path, feeds: dict, extra_outputs=(), disable_opt=False):
    """Run the ONNX model with ORT's CPU provider; extra_outputs exposes
    intermediate tensors (by ONNX name) as additional graph outputs."""
    import onnxruntime as ort

    model = with_outputs(onnx.load(str(model_path)), extra_outputs)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1  # MLAS's float conv order depends on it: tinyaot's default
    if disable_opt:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    outs = sess.run(names, feeds)
    return dict(zip(names, outs))
