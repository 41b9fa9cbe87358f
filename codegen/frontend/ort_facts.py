"""What onnxruntime's default session does with a model, asked of onnxruntime once.

`--numerics ort` means the bits onnxruntime's default session produces, and its optimizer
decides how each layer is computed. These facts are gathered here, when the model is loaded,
and recorded on the IR nodes; no later stage opens the model file or starts a session:

- `ort_float` (conv2d, fully_connected, conv_transpose): ORT's optimized graph still computes
  the layer with a float Conv / Gemm / MatMul (not QLinearConv / QGemm); `ort_trans_b` the float
  Gemm's transB; `ort_threads` the intra-op thread count MLAS's float conv order depends on.
- `ort_qlinear`, `ort_zp_shift`, `ort_u8` (avgpool, softmax): fused into QLinearAveragePool /
  QLinearSoftmax, and on which integer type.
- `ort_int8` (resize): run directly on int8 (the DequantizeLinear / QuantizeLinear dropped).
- `ort_fused`, `ort_fused_u8` (add, mul, matmul): fused into QLinearAdd / QLinearMul /
  QLinearMatMul, and whether that kernel ran on uint8.

Which layers onnxruntime runs in float, asked of onnxruntime itself.

`--numerics ort` means the bits onnxruntime's default session produces. Its
optimizer fuses most DequantizeLinear -> Conv -> QuantizeLinear groups into
integer kernels (QLinearConv, QGemm: int32 accumulation + float requantize)
but leaves some in float (e.g. a Conv followed by Relu, MatMul + bias Add
which becomes a float Gemm). A float layer rounds differently, so each IR
layer is marked `ort_float` when ORT's optimized graph still computes it
with a float Conv / Gemm / MatMul; those layers use the float kernels that
repeat MLAS's fused multiply-add order.

Which pooling / softmax layers onnxruntime runs as QLinearAveragePool /
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
of exp and rounds (e * floor(1 / s_y)) / sum (ops/softmax.py); the
saturation differs between its uint8 and int8 kernels (`ort_u8`).

Pools (softmaxes) are matched by order: the k-th AveragePool of the model is the k-th
(QLinear)AveragePool of ORT's optimized graph (the optimizer renames tensors
but does not reorder pools).

Did onnxruntime fuse the QDQ group that produces an integer tensor into a
QLinear* kernel (QLinearMul, QLinearMatMul, ...)? Asked of ORT's optimized
graph, once per model file.

The fused node's output is the QuantizeLinear's output, unless ORT's x86
int8 -> uint8 rewrite (QDQS8ToU8) renamed it; then the DequantizeLinear
reading it still has its original output name, which is matched instead.
"""
from __future__ import annotations

import functools
import os
import tempfile

import onnx

from ..errors import TinyAotError

# IR op -> the QLinear kernel onnxruntime may fuse its QDQ group into
FUSED_KERNELS = {"add": "QLinearAdd", "mul": "QLinearMul", "matmul": "QLinearMatMul"}


def gather_ort_facts(g, model_path, ort_threads=1):
    """Record onnxruntime's decisions on the IR nodes of g (loaded from model_path)."""
    mark_ort_float_nodes(g, model_path)
    for n in g.nodes:  # MLAS's float Conv order depends on ORT's intra-op threads
        if n.attrs.get("ort_float") and n.op == "conv2d":
            n.attrs["ort_threads"] = ort_threads
    mark_ort_qlinear_pools(g, model_path)  # QLinearAveragePool rounds after adding zp
    mark_ort_int8_resizes(g, model_path)  # Resize on int8 or in float (DQ -> Resize -> Q)
    mark_ort_fused(g, model_path)
    check_ort_float_region(g, model_path)  # the float fallback runs what ORT runs
    return g


# float fallback ops whose ONNX node must still be in onnxruntime's optimized graph (a reshape
# moves no value, dequantize / quantize are the region's ends)
_REGION_ENDS = {"reshape", "dequantize", "quantize"}


def check_ort_float_region(g, model_path):
    """Each float fallback node (frontend/float_fallback.py) reproduces one onnxruntime float
    kernel, so ORT's optimized graph must still run that node as itself: a fusion
    (QLinearSoftmax, a Gelu from its Erf pattern, ...) is refused here rather than computed
    differently."""
    mine = [n for n in g.nodes if n.attrs.get("onnx_op") and n.op not in _REGION_ENDS]
    if not mine:
        return g
    runs = {}
    kinds = []
    for o in optimized_graph(model_path).graph.node:
        kind = o.op_type if o.domain in ("", "ai.onnx") else f"{o.domain}.{o.op_type}"
        kinds.append(kind)
        for t in o.output:
            runs[t] = kind
    for n in mine:
        op, out = n.attrs["onnx_op"], n.attrs["onnx_tensors"][0]
        if runs.get(out) != op:
            instead = runs.get(out) or next((k for k in kinds if op in k and k != op), None)
            how = f"runs {instead}" if instead else "fuses it with other nodes"
            raise TinyAotError(f"float fallback: onnxruntime's optimizer {how} instead of this "
                               f"{op}, and tinyaot reproduces only onnxruntime's plain float "
                               f"{op}", model=g.source, node=n.name)
    return g


def mark_ort_fused(g, model_path):
    for n in g.nodes:
        kernel = FUSED_KERNELS.get(n.op)
        if kernel is not None:
            fused, u8 = ort_fused_on(model_path, n.outputs[0], kernel)
            if fused:  # absent: onnxruntime runs the QDQ group in float
                n.attrs["ort_fused"] = True
                n.attrs["ort_fused_u8"] = u8
    return g



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


FLOAT_COMPUTE = {"Conv", "FusedConv", "Gemm", "FusedGemm", "MatMul", "FusedMatMul", "ConvTranspose"}
PASS_THROUGH = {"ReorderOutput", "Relu", "Clip"}


def float_tensors_in_ort(model_path):
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




def ort_fused(model_path, q_output, op_type) -> bool:
    """True if ORT's optimized graph computes `q_output` (an ONNX QuantizeLinear
    output of model_path) with an `op_type` node."""
    return ort_fused_on(model_path, q_output, op_type)[0]


def ort_fused_on(model_path, q_output, op_type):
    """(fused, runs_on_uint8): like ort_fused, and whether ORT's node has uint8
    operands (a uint8 model, or ORT's x86 int8 -> uint8 rewrite)."""
    try:
        st = os.stat(str(model_path))
    except OSError:
        return False, False
    nodes, dq_of = _graphs(str(model_path), st.st_mtime_ns, st.st_size)
    want_dq = set(dq_of.get(q_output, ()))
    for op, outs, dq_users, u8 in nodes:
        if op != op_type:
            continue
        if q_output in outs or want_dq & set(dq_users):
            return True, u8
    return False, False


@functools.lru_cache(maxsize=32)
def _graphs(path, mtime, size):
    import onnx

    orig = onnx.load(path)
    dq_of = {}
    for n in orig.graph.node:
        if n.op_type == "DequantizeLinear":
            dq_of.setdefault(n.input[0], []).append(n.output[0])
    m = optimized_graph(path)
    consumers = {}
    for n in m.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    types = {vi.name: vi.type.tensor_type.elem_type
             for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)}
    types.update({i.name: i.data_type for i in m.graph.initializer})
    nodes = []
    for n in m.graph.node:
        dq_users = tuple(c.output[0] for o in n.output for c in consumers.get(o, ())
                         if c.op_type == "DequantizeLinear")
        u8 = any(types.get(i) == onnx.TensorProto.UINT8 for i in n.input)
        nodes.append((n.op_type, tuple(n.output), dq_users, u8))
    return tuple(nodes), {k: tuple(v) for k, v in dq_of.items()}
