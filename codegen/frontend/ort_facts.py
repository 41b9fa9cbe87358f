"""What onnxruntime's default session does with a model, asked of onnxruntime once.

`--numerics ort` means the bits onnxruntime's default session produces, and its optimizer
decides how each layer is computed. These facts are gathered here, when the model is loaded,
from the graph onnxruntime itself optimizes and saves (`optimized_model_filepath`), and
recorded on the IR nodes; no later stage opens the model file or starts a session.

Each IR node is found in that graph structurally (frontend/ort_match.py: by the computation
producing its tensor -- operator kind, weights, inputs -- never by tensor names, which the
optimizer renames, nor by order), and the node(s) found say how onnxruntime computes it:

- `ort_float` (conv2d, fully_connected, conv_transpose): ORT's optimized graph still computes
  the layer with a float Conv / Gemm / MatMul (not QLinearConv / QGemm); `ort_trans_b` the float
  Gemm's transB; `ort_threads` the intra-op thread count MLAS's float conv order depends on.
  A layer left in float rounds differently (a Conv followed by Relu, MatMul + bias Add that
  becomes a float Gemm, a bias whose scale is not s_x * s_w): those layers use the float
  kernels that repeat MLAS's fused multiply-add order.
- `ort_u8s8` (conv2d, fully_connected): run as QLinearConv / QGemm / QLinearMatMul on uint8
  activations and int8 weights (on x86 without VNNI those sums saturate in int16 pairs:
  reference/x86_saturation.py; tinyaot computes them exactly, as VNNI CPUs and Arm do).
- `ort_qlinear`, `ort_zp_shift`, `ort_u8` (avgpool, softmax): fused into QLinearAveragePool /
  QLinearSoftmax, and on which integer type. The two round differently from the float op:

    float AveragePool + QuantizeLinear:  round_half_even(mean / s_y) + zp_y
    QLinearAveragePool:                  round_half_even(mean / s_y + zp_y)

  (mean = float32 sum of (q - zp_x) * s_x in window order, / count). On x86 ORT also
  rewrites an int8 QDQ graph to uint8 (QDQS8ToU8), so the zero point added before rounding
  is the uint8 one (zp + 128): `ort_zp_shift` 0 or 128. QLinearSoftmax uses a 256-entry
  float table of exp and rounds (e * floor(1 / s_y)) / sum (ops/softmax.py); its saturation
  differs between the uint8 and int8 kernels (`ort_u8`).
- `ort_int8` (resize): run directly on int8 (the DequantizeLinear / QuantizeLinear dropped).
- `ort_fused`, `ort_fused_u8` (add, mul, matmul): fused into QLinearAdd / QLinearMul /
  QLinearMatMul, and whether that kernel ran on uint8.

A node found nowhere keeps the defaults (the float formula of its QDQ group).
"""
from __future__ import annotations

import functools
import os
import tempfile

import onnx

from ..errors import TinyAotError
from .ort_match import OrtMatch

# IR op -> the kinds of onnxruntime node (frontend/ort_match.py) that compute it
KINDS = {"conv2d": {"Conv"}, "fully_connected": {"MatMul", "Conv"},
         "conv_transpose": {"ConvTranspose"}, "avgpool": {"AveragePool", "GlobalAveragePool", "ReduceMean"},
         "softmax": {"Softmax"}, "resize": {"Resize", "Upsample"}, "add": {"Add"},
         "mul": {"Mul"}, "matmul": {"MatMul"}}
# IR op -> the QLinear kernel onnxruntime may fuse its QDQ group into
FUSED_KERNELS = {"add": "QLinearAdd", "mul": "QLinearMul", "matmul": "QLinearMatMul"}
# onnxruntime's integer kernels on (activation, weight): the zero point / weight positions
INTEGER_KERNELS = {"QLinearConv": (2, 3), "QGemm": (2, 3), "QLinearMatMul": (2, 3)}
FLOAT_COMPUTE = {"Conv", "FusedConv", "Gemm", "FusedGemm", "MatMul", "FusedMatMul", "ConvTranspose"}


def gather_ort_facts(g, model_path, ort_threads=1, match=None):
    """Record onnxruntime's decisions on the IR nodes of g (loaded from model_path).
    `match`: the model matched with onnxruntime's graph (default: ort_match(model_path))."""
    check_float16_scales(g)
    match = ort_match(model_path) if match is None else match
    mark_ort_float_nodes(g, match)
    for n in g.nodes:  # MLAS's float Conv order depends on ORT's intra-op threads
        if n.attrs.get("ort_float") and n.op == "conv2d":
            n.attrs["ort_threads"] = ort_threads
    mark_ort_qlinear_pools(g, match)  # QLinearAveragePool rounds after adding zp
    mark_ort_int8_resizes(g, match)  # Resize on int8 or in float (DQ -> Resize -> Q)
    mark_ort_fused(g, match)
    check_ort_float_region(g, match)  # the float fallback runs what ORT runs
    return g


def check_float16_scales(g):
    """float16 scales make DequantizeLinear's outputs float16: onnxruntime (1.32, CPU) then
    rounds every dequantized value, each float kernel's result (it casts to float32 around
    the kernel and back) and QuantizeLinear's input to float16, which tinyaot's float32 /
    integer arithmetic does not reproduce (measured: outputs differ from the same model with
    the same scale values in float32). `tflite` takes the scales' values as they are."""
    if g.float16_scales:
        node, scale = g.float16_scales[0]
        raise TinyAotError(
            f"float16 quantization scale ({len(g.float16_scales)} in the model): onnxruntime "
            "computes the values between DequantizeLinear and QuantizeLinear in float16, which "
            "--numerics ort does not reproduce; use --numerics tflite, or store the scales as "
            "float32 (their values are exact in float32)", model=g.source, node=node,
            tensor=scale)


# float fallback ops whose ONNX node must still be in onnxruntime's optimized graph (a reshape
# moves no value, dequantize / quantize are the region's ends)
_REGION_ENDS = {"reshape", "dequantize", "quantize"}


def check_ort_float_region(g, match):
    """Each float fallback node (frontend/float_fallback.py) reproduces one onnxruntime float
    kernel, so ORT's optimized graph must still run that node as itself: a fusion
    (QLinearSoftmax, a Gelu from its Erf pattern, ...) is refused here rather than computed
    differently. The node is found structurally (frontend/ort_match.py), as every fact."""
    for n in g.nodes:
        op = n.attrs.get("onnx_op")
        if not op or n.op in _REGION_ENDS:
            continue
        found = match.nodes([n.attrs.get("onnx_check_tensor", n.attrs["onnx_tensors"][0])], {op})
        if any(o.op_type == op and o.domain in ("", "ai.onnx") for o in found):
            continue
        instead = [o.op_type if o.domain in ("", "ai.onnx") else f"{o.domain}.{o.op_type}"
                   for o in found]
        how = f"runs {instead[0]}" if instead else "fuses it with other nodes"
        raise TinyAotError(f"float fallback: onnxruntime's optimizer {how} instead of this "
                           f"{op}, and tinyaot reproduces only onnxruntime's plain float "
                           f"{op}", model=g.source, node=n.name)
    return g
    return g


def ort_match(model_path):
    """The model matched structurally with ORT's optimized graph (cached per file)."""
    st = os.stat(str(model_path))
    return _match(str(model_path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _match(path, size, mtime):
    return OrtMatch(onnx.load(path), optimized_graph(path))


def ort_nodes(match, n):
    """ORT's nodes computing IR node n (by the original model's tensors it covers)."""
    names = [n.outputs[0], n.outputs[0].split("@")[0]] + list(n.attrs.get("onnx_tensors", ()))
    return match.nodes(names, KINDS.get(n.op, ()))


def mark_ort_fused(g, match):
    for n in g.nodes:
        kernel = FUSED_KERNELS.get(n.op)
        if kernel is None:
            continue
        fused = [o for o in ort_nodes(match, n) if o.op_type == kernel]
        if fused:  # absent: onnxruntime runs the QDQ group in float
            n.attrs["ort_fused"] = True
            n.attrs["ort_fused_u8"] = bool(match.is_uint8(fused[0], 2))
    return g


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


def mark_ort_qlinear_pools(g, match):
    """ort_qlinear (and the type it ran on) of each avgpool / softmax that onnxruntime
    fused into QLinearAveragePool / QLinearSoftmax."""
    for n in g.nodes:
        kernel = {"avgpool": "QLinearAveragePool", "softmax": "QLinearSoftmax"}.get(n.op)
        if kernel is None:
            continue
        found = ort_nodes(match, n)
        if not found:  # cannot tell: keep the float formula
            continue
        fused = [o for o in found if o.op_type == kernel]
        n.attrs["ort_qlinear"] = bool(fused)
        u8 = bool(fused) and bool(match.is_uint8(fused[0], 2))
        if fused and n.op == "avgpool":
            n.attrs["ort_zp_shift"] = 128 if u8 else 0
        if fused and n.op == "softmax":
            n.attrs["ort_u8"] = u8
    return g


def mark_ort_float_nodes(g, match):
    """ort_float, ort_trans_b (float layers) and ort_u8s8 (integer layers on uint8
    activations and int8 weights: reference/x86_saturation.py) of each weighted layer."""
    for n in g.nodes:
        if n.op not in ("conv2d", "fully_connected", "conv_transpose"):
            continue
        found = ort_nodes(match, n)
        floats = [o for o in found if o.op_type in FLOAT_COMPUTE
                  and o.domain in ("", "com.microsoft.nchwc", "com.microsoft")]
        n.attrs["ort_float"] = bool(floats)
        if n.op == "fully_connected" and floats and _float_gemm_trans_b(g, n, floats):
            n.attrs["ort_trans_b"] = 1  # absent: 0
        ints = [o for o in found if o.op_type in INTEGER_KERNELS]
        if not floats and ints:
            zp, w = INTEGER_KERNELS[ints[0].op_type]
            if match.is_uint8(ints[0], zp) and match.is_int8(ints[0], w):
                n.attrs["ort_u8s8"] = True
        if n.op == "conv_transpose" and not n.attrs["ort_float"]:
            # onnxruntime has no integer ConvTranspose: it always runs the float one,
            # which is all tinyaot reproduces.
            raise TinyAotError("onnxruntime does not run this ConvTranspose as a float "
                               "ConvTranspose; tinyaot cannot reproduce what it runs instead",
                               model=g.source, node=n.name)
    return g


def mark_ort_int8_resizes(g, match):
    """`ort_int8` on each IR resize that onnxruntime runs directly on int8 (its
    optimizer dropped the DequantizeLinear / QuantizeLinear around it; 1.32
    does that for nearest mode with equal parameters, an exact copy either way)."""
    for n in g.nodes:
        if n.op != "resize":
            continue
        found = [o for o in ort_nodes(match, n) if o.op_type in ("Resize", "Upsample")]
        if found:
            src = match.opt.producer.get(found[0].input[0])
            n.attrs["ort_int8"] = src is None or src.op_type != "DequantizeLinear"
    return g


def _float_gemm_trans_b(g, n, floats):
    """transB of the float Gemm / MatMul onnxruntime runs for IR fully_connected
    `n`: with the row count it decides MLAS's summation order
    (numerics/mlas_fc_order.py). MLAS's M=1 kernels need alpha 1 and no transA."""
    from onnx import helper
    for o in floats:
        if o.op_type in ("Gemm", "FusedGemm", "MatMul", "FusedMatMul"):
            a = {x.name: helper.get_attribute_value(x) for x in o.attribute}
            if a.get("alpha", 1.0) != 1.0 or a.get("transA", 0) or a.get("beta", 1.0) not in (0.0, 1.0):
                raise TinyAotError(f"onnxruntime runs this layer as a float {o.op_type} with "
                                   f"alpha/beta/transA tinyaot does not reproduce",
                                   model=g.source, node=n.name)
            return int(a.get("transB", 0))
    return 0
