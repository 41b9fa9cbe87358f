"""tinyaot's own regression models (models/make_regression_models.py), as the tests run them."""
from __future__ import annotations

import onnx


def tflite_variant(model, tmp_path):
    """TFLite has no HardSigmoid kernel and its AVERAGE_POOL_2D never counts the
    padding, so tflite numerics reject both (end_to_end/test_regression_models.py). To still run
    misc_ops' other operators under tflite: HardSigmoid -> HardSwish,
    count_include_pad -> 0 (expected outputs: onnxruntime on this variant)."""
    m = onnx.load(str(model))
    for n in m.graph.node:
        if n.op_type == "HardSigmoid":
            n.op_type = "HardSwish"
            del n.attribute[:]
        for a in n.attribute:
            if a.name == "count_include_pad":
                a.i = 0
    path = tmp_path / "misc_ops_tflite.onnx"
    onnx.save(m, str(path))
    return path
