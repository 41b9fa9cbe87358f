"""Which layers onnxruntime runs in float, asked of onnxruntime itself.

`--numerics ort` means the bits onnxruntime's default session produces. Its
optimizer fuses most DequantizeLinear -> Conv -> QuantizeLinear groups into
integer kernels (QLinearConv, QGemm: int32 accumulation + float requantize)
but leaves some in float (e.g. a Conv followed by Relu, MatMul + bias Add
which becomes a float Gemm). A float layer rounds differently, so each IR
layer is marked `ort_float` when ORT's optimized graph still computes it
with a float Conv / Gemm / MatMul; those layers use the float kernels that
repeat MLAS's fused multiply-add order.
"""
from __future__ import annotations


FLOAT_COMPUTE = {"Conv", "FusedConv", "Gemm", "FusedGemm", "MatMul", "FusedMatMul", "ConvTranspose"}
PASS_THROUGH = {"ReorderOutput", "Relu", "Clip"}


def float_tensors_in_ort(model_path):
    from .ort_qlinear import optimized_graph  # one optimizer run per model, shared

    m = optimized_graph(model_path)
    out = set()
    frontier = []
    for n in m.graph.node:
        if n.op_type in FLOAT_COMPUTE and n.domain in ("", "com.microsoft.nchwc", "com.microsoft"):
            frontier.extend(n.output)
    consumers = {}
    for n in m.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    while frontier:
        t = frontier.pop()
        if t in out:
            continue
        out.add(t)
        for c in consumers.get(t, []):
            if c.op_type in PASS_THROUGH or c.domain == "com.microsoft.nchwc":
                frontier.extend(c.output)
    return out


def mark_ort_float_nodes(g, model_path):
    floats = float_tensors_in_ort(model_path)
    for n in g.nodes:
        if n.op in ("conv2d", "fully_connected", "conv_transpose"):
            n.attrs["ort_float"] = bool(floats & set(n.attrs.get("onnx_tensors", ())))
        if n.op == "fully_connected" and n.attrs["ort_float"] and _float_gemm_trans_b(g, n, model_path):
            n.attrs["ort_trans_b"] = 1  # absent: 0
        if n.op == "conv_transpose" and not n.attrs["ort_float"]:
            # onnxruntime has no integer ConvTranspose: it always runs the float one,
            # which is all tinyaot reproduces.
            from ..errors import TinyAotError
            raise TinyAotError("onnxruntime does not run this ConvTranspose as a float "
                               "ConvTranspose; tinyaot cannot reproduce what it runs instead",
                               model=g.source, node=n.name)
    return g


def mark_ort_int8_resizes(g, model_path):
    """`ort_int8` on each IR resize that onnxruntime runs directly on int8 (its
    optimizer dropped the DequantizeLinear / QuantizeLinear around it; 1.32
    does that for nearest mode with equal parameters, an exact copy either
    way). Resizes are matched by order: the optimizer does not reorder them."""
    resizes = [n for n in g.nodes if n.op == "resize"]
    if not resizes:
        return g
    from .ort_qlinear import optimized_graph

    m = optimized_graph(model_path)
    producer = {o: n for n in m.graph.node for o in n.output}
    ort_resizes = [n for n in m.graph.node if n.op_type == "Resize"]
    for n, o in zip(resizes, ort_resizes):
        src = producer.get(o.input[0])
        n.attrs["ort_int8"] = src is None or src.op_type != "DequantizeLinear"
    return g


def _float_gemm_trans_b(g, n, model_path):
    """transB of the float Gemm / MatMul onnxruntime runs for IR fully_connected
    `n`: with the row count it decides MLAS's summation order
    (numerics/mlas_fc_order.py). MLAS's M=1 kernels need alpha 1 and no transA."""
    from onnx import helper
    from ..errors import TinyAotError
    from .ort_qlinear import optimized_graph

    mine = set(n.attrs.get("onnx_tensors", ()))
    for o in optimized_graph(model_path).graph.node:
        if o.op_type in ("Gemm", "FusedGemm", "MatMul", "FusedMatMul") and mine & set(o.output):
            a = {x.name: helper.get_attribute_value(x) for x in o.attribute}
            if a.get("alpha", 1.0) != 1.0 or a.get("transA", 0) or a.get("beta", 1.0) not in (0.0, 1.0):
                raise TinyAotError(f"onnxruntime runs this layer as a float {o.op_type} with "
                                   f"alpha/beta/transA tinyaot does not reproduce",
                                   model=g.source, node=n.name)
            return int(a.get("transB", 0))
    return 0
