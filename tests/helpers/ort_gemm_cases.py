"""onnxruntime's float32 Gemm / MatMul on random QDQ layers (the forms tinyaot lowers to a float
fully_connected), the numpy reference of MLAS's order for them, and their shapes."""
from __future__ import annotations

import functools

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from codegen.numerics.mlas_fc_order import fc_float, mlas_order

F32 = np.float32

# (M, K, N): N % 4 = 0..3, K % 8 != 0, K < 8, K up to 1000; MLPerf Tiny's shapes
# (ad01 640->128 and 128->640, ic01 64->10, kws01 / vww01 / sww01 heads); the
# FPU loops' cases: blocks of 8 outputs (then one of 4: N % 8 >= 4) with K / 4
# groups even or odd (the odd one alone first; K = 4: only it), pairs of groups
# entering the 16-pair loop part way, in one or several passes (K = 300, 640,
# 1000) or exactly one after the odd group (K = 132); blocks of 4 alone with 0
# to 2 triples and 0 to 2 leftover groups
M1_SHAPES = [(1, k, n) for k, n in [
    (640, 128), (128, 640), (64, 10), (256, 2), (1, 1), (1, 5), (2, 3), (3, 4), (5, 7),
    (7, 6), (8, 9), (9, 1), (13, 2), (31, 11), (100, 17), (127, 8), (129, 3), (300, 70),
    (517, 13), (1000, 6), (12, 4), (16, 8), (20, 5), (24, 9), (36, 12), (4, 16), (132, 24),
    (1000, 12)]]
# M > 1: MLAS's general SGEMM (K in blocks of 128 * 2^j by N), and N == 1 (the
# M1 TransposeB kernel over the rows)
MN_SHAPES = [(3, 300, 70), (5, 100, 70), (2, 700, 10), (4, 1000, 40), (3, 600, 100),
             (2, 300, 200), (6, 20, 5), (7, 9, 1), (5, 300, 1), (2, 1100, 16)]
FORMS = ["gemm", "gemm_tb", "matmul", "matmul_add", "gemm_relu"]


def ort_case(form, m, k, n, seed, threads=0):
    """(ORT's float y [m, n], the integer x, weights [n, k] int8, the float parameters, transB,
    ORT's optimized compute node)."""
    import onnxruntime as ort
    rng = np.random.default_rng(seed)
    trans_b = form == "gemm_tb"
    per_channel = seed % 2 == 1
    sx, zx = F32(rng.uniform(0.01, 0.05)), int(rng.integers(-20, 20))
    sw = (rng.uniform(0.001, 0.01, n) if per_channel else np.full(n, rng.uniform(0.001, 0.01))
          ).astype(F32)
    wq = rng.integers(-127, 128, (n, k)).astype(np.int8)
    bq = rng.integers(-3000, 3000, n).astype(np.int32)
    bs = (sx * sw).astype(F32)
    xq = rng.integers(-128, 128, (m, k)).astype(np.int8)
    axis = 0 if trans_b else 1
    stored = wq if trans_b else np.ascontiguousarray(wq.T)
    inits = [numpy_helper.from_array(v, nm) for nm, v in [
        ("sx", sx), ("zx", np.int8(zx)), ("wq", stored),
        ("sw", sw if per_channel else sw[:1].reshape(())),
        ("zw", np.zeros(n, np.int8) if per_channel else np.int8(0)),
        ]]
    nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wf"], axis=axis)]
    with_bias = form != "matmul"
    # a float bias initializer: with these tiny graphs ORT fuses DQ(int32 bias) into a QGemm
    # (an integer layer); its float Gemm sums the same way wherever C comes from
    inits.append(numpy_helper.from_array((bq.astype(F32) * bs).astype(F32), "bfc"))
    if form in ("gemm", "gemm_tb", "gemm_relu"):
        nodes.append(helper.make_node("Gemm", ["xf", "wf", "bfc"],
                                      ["y" if form != "gemm_relu" else "g"], transB=int(trans_b)))
        if form == "gemm_relu":
            nodes.append(helper.make_node("Relu", ["g"], ["y"]))
    elif form == "matmul":
        nodes.append(helper.make_node("MatMul", ["xf", "wf"], ["y"]))
    else:
        nodes.append(helper.make_node("MatMul", ["xf", "wf"], ["mm"]))
        nodes.append(helper.make_node("Add", ["mm", "bfc"], ["y"]))
    g = helper.make_graph(nodes, "fc", [helper.make_tensor_value_info("x", TensorProto.INT8,
                                                                      [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if threads:
        so.intra_op_num_threads = threads
    import tempfile, os
    with tempfile.TemporaryDirectory() as tmp:
        so.optimized_model_filepath = os.path.join(tmp, "opt.onnx")
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        ops = [nd.op_type for nd in onnx.load(so.optimized_model_filepath).graph.node]
    y = sess.run(None, {"x": xq})[0]
    p = {"in_scale": sx, "in_zp": zx, "w_scale": sw,
         "bias_f": ((bq.astype(F32) * bs).astype(F32) if with_bias else np.zeros(n, F32))}
    return y, xq, wq, p, trans_b, ops


def float_inputs(xq, wq, p):
    xf = ((xq.astype(np.int32) - p["in_zp"]).astype(F32) * p["in_scale"]).astype(F32)
    wf = (wq.astype(F32) * p["w_scale"][:, None]).astype(F32)
    return xf, wf


def reference(xq, wq, p, trans_b, relu):
    m, k = xq.shape
    n = wq.shape[0]
    order, kb = mlas_order(m, n, k, trans_b)
    xf, wf = float_inputs(xq, wq, p)
    y = fc_float(xf, wf, p["bias_f"], order, kb)
    return (np.maximum(y, F32(0)) if relu else y), order, kb


def bits_differ(a, b):
    return int((np.asarray(a, F32).view(np.uint32) != np.asarray(b, F32).view(np.uint32)).sum())


@functools.lru_cache(maxsize=None)
def cases(which):
    out = []
    shapes = M1_SHAPES if which == "m1" else MN_SHAPES
    for i, (m, k, n) in enumerate(shapes):
        for j, form in enumerate(FORMS):
            if which != "m1" and form == "gemm_relu":
                continue
            y, xq, wq, p, tb, ops = ort_case(form, m, k, n, seed=100 * i + j,
                                             threads=1 if m > 1 else 0)
            out.append((form, m, k, n, y, xq, wq, p, tb, ops))
    return out
