"""fully_connected: ONNX MatMul by a constant and Gemm (+ a constant int32 bias Add folded
into it), rows x [N, K] weights, symmetric, per tensor or per output.

The layer's kernel is chosen here (`select`), in one place:
  ort_float (frontend/ort_facts.py: onnxruntime keeps the layer in float):
      speed: tinyaot_fully_connected_f32_s8, float weights packed in MLAS's order
             (numerics/mlas_fc_order.py, kernels/fc_float_pack.py), or on FPU targets the
             weight-specialised straight-line code of kernels/fc_float_unrolled.py;
      size:  tinyaot_fully_connected_f32_w8_s8 (int8 weights in flash, size_kernels.py);
  MatMulInteger's epilogue (integer_forms.py): the portable tinyaot_fully_connected_s8;
  tflite layers over the whole int8 range with one-SMLAL records, N % 8 == 0 and sums
      within its bound (fc_pairs), in either build: tinyaot_fully_connected_fast_w8_s8 (int8
      weights, two rows per int16 lane: kernels/fast_pack.py:pack_fc_pairs);
  otherwise the fast FC (int16-packed weights; under ort with the requantization as one
      exact SMMLAR in its weight stream when kernels/ort_requant_fixed.py finds one), or
      under --optimize size tinyaot_fully_connected_w8_s8 (size_kernels.py);
  under --optimize size, before all these for an integer layer: tinyaot_fully_connected_bits_s8
      where the pair kernel's requantization applies and fewer bits a weight store the
      weights in fewer bytes (fc_bits, kernels/bits_pack.py).
The requantization is the record's mode (conv_params.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..ir import QParams
from ..kernels import fc_float_unrolled as fu
from ..kernels import specialize as spec
from ..kernels.c_format import c_struct
from ..kernels import bits_pack
from ..kernels.bits_pack import BitsWeights
from ..kernels.fast_pack import (fc_pair_records, fc_scratch_bytes, pack_fc_pairs, pack_gemm,
                                 pack_gemm_fixed, smlal_requant, split_records)
from ..kernels.fc_float_pack import fc_float_scratch_bytes, input_table, pack_fc_float
from ..kernels.ort_requant_fixed import fc_fixed_requant
from ..numerics import ort_float as of
from ..numerics import u8s8_pairs as u8s8
from ..numerics.mlas_fc_order import ORDER_CODE, fc_float
from ..numerics.ort_float import float_weights
from . import integer_forms
from .base import Op, Pending, Traits, Unsupported, layer_mode
from .conv_params import FLOAT, ORT, TFLITE, ConvParams, prepare_conv_like, requantize_sums
from .conv_lowering import WEIGHT_TYPES, layer_weights
from .conv_records import RequantRecord, acc_range, emit_requant, emit_requant_record
from .matmul import lower_onnx as lower_activation_matmul
from .size_kernels import emit_fc_int_w8, emit_fc_w8, select_size
from .tflite_filters import tflite_bias, tflite_weights


@dataclass
class FloatFcRecord:  # tinyaot_float_fc_t
    CTYPE: ClassVar[str] = "tinyaot_float_fc_t"
    order: int
    k_block: int
    out_scale: float
    out_zp: int
    act_min: int
    act_max: int
    in_table: str
    weights: str
    bias: str


# ---- ONNX ----------------------------------------------------------------------------------

def lower_matmul_gemm(lw, node, name, attrs, ins, out, shape):
    op = node.op_type
    if (op == "MatMul" and ins[1] in lw.qrepr
            and not lw.graph.tensors[lw.qrepr[ins[1]]].is_const):
        return lower_activation_matmul(lw, node, name, attrs, ins, out, shape)
    x = lw.act_input(ins[0], name)
    w = lw.weight_input(ins[1], name, WEIGHT_TYPES)
    wt = lw.graph.tensors[w]
    trans_b = int(attrs.get("transB", 0)) if op == "Gemm" else 0
    if op == "Gemm" and (int(attrs.get("transA", 0)) or attrs.get("alpha", 1.0) != 1.0
                         or attrs.get("beta", 1.0) != 1.0):
        raise Unsupported("Gemm with transA or alpha/beta != 1")
    xt = lw.graph.tensors[x]
    attrs_fc = {}
    if op == "MatMul" and len(xt.shape) > 2 and len(wt.shape) == 2 and len(shape) == len(xt.shape):
        # [..., M, K] x [K, N]: the leading dims are rows of one fully connected layer, as
        # onnxruntime's MatMul flattens them into one GEMM; zero-copy reshapes either side
        k = int(xt.shape[-1])
        rows = int(np.prod(xt.shape[:-1]))
        fresh = f"{x}@rows" not in lw.graph.tensors
        x2 = lw.add_int_tensor(f"{x}@rows", (rows, k), xt.dtype, xt.q)
        if fresh:
            lw.emit("reshape", f"{name}@rows", [x], [x2.name])
        x, attrs_fc = x2.name, {"rows_out": True}
        shape = (rows, int(shape[-1]))
    elif len(xt.shape) != 2 or len(wt.shape) != 2:
        raise Unsupported("MatMul supports an N-D activation times a 2-D constant")
    w = _nk_weights(lw, wt, trans_b, name)
    b = None
    if op == "Gemm" and len(ins) > 2 and ins[2]:
        b = lw.bias_input(ins[2], name, x, w)
    lw.pending[out] = Pending("fully_connected", name, [x, w, b], attrs_fc, shape=shape)


def _nk_weights(lw, wt, trans_b, name):
    """Constant [K, N] (or [N, K] with transB) -> new constant [N, K], axis 0; a zero point
    is subtracted first (conv_lowering.layer_weights)."""
    axis = None
    if wt.q.per_channel:
        want = 0 if trans_b else 1
        if wt.q.axis != want:
            raise Unsupported("weights quantized along the reduction axis")
        axis = 0
    wt = lw.graph.tensors[layer_weights(lw, wt.name, wt.q.axis, name)]
    data = wt.data if trans_b else wt.data.T
    q = QParams(wt.q.scale, wt.q.zero_point, axis)
    t = lw.add_int_tensor(f"{wt.name}@NK", data.shape, wt.dtype, q, np.ascontiguousarray(data))
    t.weight_zp = wt.weight_zp
    return t.name


# ---- TFLite ----------------------------------------------------------------------------------

def lower_tflite(tl, op):
    """FULLY_CONNECTED(input, filter [N, K], bias): the input flattened to [size / K, K] as
    TFLite does (a zero-copy reshape), the output reshaped to its shape when it keeps dims."""
    x_idx, w_idx, b_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), tl.inp(op, 2), op.outputs[0]
    tl.check_int8(op, x_idx, y_idx)
    if int(op.options.get("weights_format", 0)) != 0:
        raise Unsupported("shuffled weights format is not supported")
    xt, wt, yt = tl.tensor(x_idx), tl.tensor(w_idx), tl.tensor(y_idx)
    if len(wt.shape) != 2:
        raise Unsupported("FULLY_CONNECTED needs a 2-D filter")
    n, k = wt.shape
    size = int(np.prod(xt.shape))
    if k <= 0 or size % k:
        raise Unsupported(f"input of {size} values is not a whole number of rows of {k}")
    rows = size // k
    if int(np.prod(yt.shape)) != rows * n:
        raise Unsupported(f"output shape {list(yt.shape)} does not hold {rows}x{n} values")
    w = tflite_weights(tl, op, w_idx, 0, lambda d: d, 0)
    x = tl.act(x_idx, "plain")
    if tuple(tl.graph.tensors[x].shape) != (rows, k):
        x = tl.reshape_to(x, (rows, k), f"{tl.names[x_idx]}@rows#{op.index}")
    b = tflite_bias(tl, op, b_idx, x, w, n)
    y = tl.new_act(y_idx)
    if tuple(yt.shape) == (rows, n):
        tl.emit("fully_connected", tl.node_name(op), [x, w, b], [y], tl.act_attrs(op))
        return
    y2 = tl.like(y, (rows, n), f"{y}@rows")
    tl.emit("fully_connected", tl.node_name(op), [x, w, b], [y2], tl.act_attrs(op))
    tl.emit("reshape", f"{tl.node_name(op)}@shape", [y2], [y])


# ---- the numpy oracle ------------------------------------------------------------------------

def fully_connected_int(x, w, p: ConvParams):
    """x [M, K], w [N, K]: exact sums, then p's requantization (ORT, TFLITE, EPILOGUE)."""
    acc = (x.astype(np.int64) - p.in_zp) @ w.astype(np.int64).T
    return requantize_sums(acc, p, 1)


def fully_connected_u8s8_delta(x, w):
    """What onnxruntime's QGemm / QLinearMatMul adds to the exact sums on x86-64
    without VNNI (numerics/u8s8_pairs.py): (delta [M, N], saturated pairs); x [M, K]
    int8 (onnxruntime runs on x + 128), w [N, K]."""
    return u8s8.pair_delta(np.asarray(x, dtype=np.int64) + 128, w)


def fully_connected_float(x, wt, p: ConvParams):
    """onnxruntime's float Gemm/MatMul in MLAS's order (numerics/mlas_fc_order.py)."""
    xf = of.dequantize(x, p.in_scale, p.in_zp)
    y = fc_float(xf, float_weights(wt), p.bias_f, p.fc_order, p.k_block)
    return of.quantize(y, p.out_scale, p.out_zp, p.act_min, p.act_max)


# ---- C -------------------------------------------------------------------------------------

def _emit_float(em, lid, n, p, info, rows):
    """onnxruntime's float Gemm/MatMul: float weights packed for MLAS's order."""
    x, w, y = (em.g.tensors[t] for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
    nout, k = w.shape
    wf, bf = float_weights(w), p.bias_f
    xt = input_table(p.in_scale, p.in_zp)
    table = em.const("float", f"{lid}_xt", xt)
    unrolled = _emit_unrolled(em, lid, n, p, wf, bf, float(np.abs(xt).max()), rows)
    wp = em.const("float", f"{lid}_wp", pack_fc_float(wf, p.fc_order), align=8)
    bias = em.const("float", f"{lid}_bf", bf)
    em.consts.append(c_struct(f"{lid}_fp", FloatFcRecord(
        ORDER_CODE[p.fc_order], p.k_block, p.out_scale, p.out_zp, p.act_min, p.act_max,
        table, wp, bias)))
    scratch = em.scratch(n, "float")
    info["kernel"] = "tinyaot_fully_connected_f32_s8"
    em.kernels.add("tinyaot_dequantize_row_f32_s8")  # called by both paths
    if unrolled is None:
        em.call(info["kernel"], [str(rows), str(k), str(nout), f"&{lid}_fp",
                                 em.ptr(x.name), scratch, em.ptr(y.name)])
        return
    # the FPU build carries only the unrolled layer's arrays, the others only the loop's
    em.consts.append("#endif\n")
    em.weights_bytes -= 4 * (wf.size + nout)  # wp, bf: not in the FPU build
    info["kernel"] = f"{unrolled} (FPU; else tinyaot_fully_connected_f32_s8)"
    em.kernels.add("tinyaot_fully_connected_f32_s8")
    em.body += [f"#ifdef {fu.GUARD_MACRO}",
                f"    tinyaot_dequantize_row_f32_s8({em.ptr(x.name)}, {k}, {table}, {scratch});",
                f"    {unrolled}({scratch}, {em.ptr(y.name)});", "#else",
                f"    if (tinyaot_fully_connected_f32_s8({rows}, {k}, {nout}, &{lid}_fp, "
                f"{em.ptr(x.name)}, {scratch}, {em.ptr(y.name)}) != TINYAOT_OK) return -1;",
                "#endif"]


def _emit_unrolled(em, lid, n, p, wf, bf, x_max, rows):
    """kernels/fc_float_unrolled.py under --optimize speed (not with --integrity, whose
    digest lists one set of arrays): emits the unrolled layer's stream and function inside
    `#ifdef TINYAOT_FC_UNROLLED ... #else` (the caller closes it after the loop kernel's
    arrays) and returns the function's name; None when the layer keeps the loop kernel
    (also its per-layer variant "loop", passes/kernel_select.py)."""
    if n.attrs.get("variant") == "loop":
        return None
    if not (em.unroll_fc and layer_mode(em, n) == "speed" and fu.eligible(p.fc_order, rows, wf)):
        return None
    u = fu.unroll_fc(wf, bf, x_max, p.out_scale, p.out_zp, p.act_min, p.act_max)
    if not em.unroll_guard:
        em.consts.append(fu.GUARD_C)
        em.unroll_guard = True
    em.consts.append(f"#ifdef {fu.GUARD_MACRO}\n")
    stream = em.const("float", f"{lid}_wu", u.stream, align=8)
    fname = fu.function_name(lid)
    em.consts.append(fu.c_function(fname, u, p.out_scale, stream))
    em.consts.append("#else\n")
    return fname


# words of padding before a pair kernel's weight stream (emit_fc_pairs)
FC_PAIR_PAD = 2


@dataclass
class FcPairs:
    """What tinyaot_fully_connected_fast_w8_s8 reads of a layer (fc_pairs)."""
    weights: np.ndarray  # fast_pack.pack_fc_pairs's words
    rq: np.ndarray       # fast_pack.fc_pair_records's {step, headers}
    bias: np.ndarray


def _full_range_records(w, p):
    """The one-SMLAL records of a tflite layer over the whole int8 range (the one
    requantization of the pair and bits kernels), or None."""
    if p.mode != TFLITE or p.act_min > -128 or p.act_max < 127 or np.any(np.asarray(p.mult) < 0):
        return None
    return smlal_requant(p.mult, p.shift, p.bias, p.out_zp, acc_range(p.bias, w))


def fc_pairs(w, p):
    """FcPairs when a layer of weights w [N][K] takes tinyaot_fully_connected_fast_w8_s8:
    tflite over the whole int8 range with one-SMLAL records for every channel (the
    kernel's one requantization), N a multiple of 8 (every row in its asm groups of four
    pairs), the pairs' sums with their biases within its bound; else None. (Also a
    one-pixel pointwise conv's, ops/conv2d.py.)"""
    records = None if w.shape[0] % 8 else _full_range_records(w, p)
    if records is None:
        return None
    r = records.reshape(-1, 5)
    words = pack_fc_pairs(w, p.in_zp, r[:, 0] == 0, r[:, 4])
    if words is None:
        return None
    return FcPairs(words, *fc_pair_records(records))


@dataclass
class FcBits:
    """What tinyaot_fully_connected_bits_s8 reads of a layer (fc_bits)."""
    weights: BitsWeights
    rq: np.ndarray    # fast_pack.split_records's {step, headers}
    bias: np.ndarray


def fc_bits(w, p):
    """FcBits when a layer of weights w [N][K] (int8) takes tinyaot_fully_connected_bits_s8
    under --optimize size: the pair kernel's requantization (tflite over the whole int8
    range, one-SMLAL records) and some width below 8 bits that stores the weights with
    their outliers in fewer bytes (kernels/bits_pack.py); else None."""
    records = _full_range_records(w, p)
    packed = None if records is None else bits_pack.smallest(w)
    if packed is None:
        return None
    return FcBits(packed, *split_records(records))


def _emit_split_q(em, lid, p, rq, bias):
    """`<lid>_q`, the tinyaot_requant_t of a kernel that reads split one-SMLAL records
    (fast_pack.split_records: the pair and bits kernels), with its arrays `bias` and `rq`;
    returns its address."""
    r = RequantRecord(p.in_zp, p.out_zp, p.act_min, p.act_max)
    r.bias = em.const("int32_t", f"{lid}_bias", bias)
    r.rq = em.const("int32_t", f"{lid}_rq", rq)
    em.consts.append(c_struct(f"{lid}_q", r))
    return f"&{lid}_q"


def emit_fc_bits(em, lid, n, p, info, rows, bits: FcBits):
    """tinyaot_fully_connected_bits_s8 for node n (a layer fc_bits allows, --optimize size):
    the weights in bits.weights.bits bits, their outliers apart; its scratch is the size
    FC's (one int16 row)."""
    w = em.g.tensors[n.inputs[1]]
    nout, k = w.shape
    q = _emit_split_q(em, lid, p, bits.rq, bits.bias)
    stream = em.const("uint32_t", f"{lid}_wb", bits.weights.stream.view(np.uint32), align=4)
    outliers = em.const("uint16_t", f"{lid}_wo", bits.weights.outliers, align=2)
    info["kernel"] = "tinyaot_fully_connected_bits_s8"
    info["weight_bits"] = bits.weights.bits
    em.call(info["kernel"], [str(rows), str(k), str(nout), str(bits.weights.bits), q,
                             em.ptr(n.inputs[0]), stream, outliers, em.scratch(n, "int16_t"),
                             em.ptr(n.outputs[0])])


def emit_fc_pairs(em, lid, n, p, info, rows, w, pairs: FcPairs):
    """tinyaot_fully_connected_fast_w8_s8 for node n (a layer fc_pairs allows, in either
    build; w its weights [N][K]): int8 weights in flash, two rows per int16 lane; against
    the int16 kernel half the flash and, on a part with flash wait states, half the weight
    reads, at fewer cycles per MAC; against the size build's tinyaot_fully_connected_w8_s8
    the same bytes, less code and fewer cycles."""
    nout, k = w.shape
    q = _emit_split_q(em, lid, p, pairs.rq, pairs.bias)
    # the stream 8 bytes past a 16-byte boundary (8 or 24 mod 32): a quad's first run of
    # loads takes 12 of its 32 bytes, and where a quad starts a flash cache line (32 B on
    # the STM32L4R5) that run waits for the line's second flash word as well (its model:
    # +6 cycles a quad, ad01 +8 %); two words of padding keep every quad off a line's start
    words = np.concatenate([np.zeros(FC_PAIR_PAD, np.int32), pairs.weights])
    filt = f"({em.const('int32_t', f'{lid}_wp', words, align=16)} + {FC_PAIR_PAD})"
    info["kernel"] = "tinyaot_fully_connected_fast_w8_s8"
    em.call(info["kernel"], [str(rows), str(k), str(nout), q, em.ptr(n.inputs[0]), filt,
                             em.scratch(n, "uint32_t"), em.ptr(n.outputs[0])])


def _emit_fast(em, lid, n, p, info, rows):
    """tinyaot_fully_connected_fast_s8 (runtime_c/include/tinyaot_fast_kernels.h): it keeps
    the float scales (not the records), or under ort reads an exact fixed-point
    requantization from its weight stream."""
    w = em.g.tensors[n.inputs[1]]
    if p.mode == TFLITE and np.any(np.asarray(p.mult) < 0):
        raise NotImplementedError("fast kernels need non-negative multipliers")
    nout, k = w.shape
    fixed = (fc_fixed_requant(w.data, p.bias, p.scale, p.in_zp, p.out_zp, p.act_min, p.act_max)
             if p.mode == ORT else None)
    q, rec = (None, None) if fixed is not None else emit_requant_record(em, lid, p, fast=True,
                                                                          weights=w.data)
    em.specialize(spec.fc_uses(rec, fixed is not None))
    scratch = em.scratch(n, "uint32_t")
    if fixed is None:
        filt = em.const("int32_t", f"{lid}_wp", pack_gemm(w.data, 4), align=8)
    else:  # the requantization inline in the weight stream, q without arrays
        filt = em.const("int32_t", f"{lid}_wp", pack_gemm_fixed(w.data, fixed), align=8)
        em.consts.append(c_struct(f"{lid}_q",
                                  RequantRecord(p.in_zp, p.out_zp, p.act_min, p.act_max)))
        q = f"&{lid}_q"
        info["requant"] = "ort fixed-point (SMMLAR)"
    info["kernel"] = "tinyaot_fully_connected_fast_s8"
    em.call(info["kernel"], [str(rows), str(k), str(nout), q, em.ptr(n.inputs[0]), filt, scratch,
                             em.ptr(n.outputs[0])])


class FullyConnected(Op):
    name = "fully_connected"
    traits = Traits(align=8)
    onnx = {"MatMul": lower_matmul_gemm, "Gemm": lower_matmul_gemm,
            "MatMulInteger": integer_forms.lower_onnx}
    tflite = {"FULLY_CONNECTED": lower_tflite}

    def select(self, g, n, optimize):
        for k in ("fast_kernel", "int_w8", "f32_w8", "scratch_bytes"):
            n.attrs.pop(k, None)  # chosen afresh
        k = g.tensors[n.inputs[1]].shape[1]
        if n.attrs.get("ort_float"):  # one dequantized input row
            n.attrs["scratch_bytes"] = fc_float_scratch_bytes(k)
        elif not n.attrs.get("int_epilogue"):  # MatMulInteger (float epilogue): portable kernel
            n.attrs["fast_kernel"] = "fc"
            n.attrs["scratch_bytes"] = fc_scratch_bytes(k)
        if optimize == "size":
            select_size(g, n)

    def prepare(self, g, n, numerics):
        return prepare_conv_like(g, n, numerics)

    def reference(self, g, n, ins, p, numerics):
        if p.mode == FLOAT:
            return fully_connected_float(ins[0], g.tensors[n.inputs[1]], p)
        return fully_connected_int(ins[0], ins[1], p)

    def emit(self, em, lid, n, p, info):
        x = em.g.tensors[n.inputs[0]]
        w = em.g.tensors[n.inputs[1]]
        y = em.g.tensors[n.outputs[0]]
        nout, k = w.shape
        rows = x.size // k
        info["macs"] = int(rows * nout * k)
        if n.attrs.get("f32_w8"):  # --optimize size
            return emit_fc_w8(em, lid, n, p, info, rows)
        if n.attrs.get("int_w8") == "fc":  # --optimize size: fewer bits where they pay
            bits = fc_bits(w.data, p)
            if bits is not None:
                return emit_fc_bits(em, lid, n, p, info, rows, bits)
        integer = n.attrs.get("int_w8") or n.attrs.get("fast_kernel") == "fc"
        pairs = fc_pairs(w.data, p) if integer else None
        if pairs is not None:  # either build
            return emit_fc_pairs(em, lid, n, p, info, rows, w.data, pairs)
        if n.attrs.get("int_w8"):  # --optimize size, integer FC
            return emit_fc_int_w8(em, lid, n, p, info, rows)
        if n.attrs.get("ort_float"):
            return _emit_float(em, lid, n, p, info, rows)
        if n.attrs.get("fast_kernel") == "fc":
            return _emit_fast(em, lid, n, p, info, rows)
        q = emit_requant(em, lid, p)
        wide = w.dtype == "int16"  # w - zp beyond int8 (MatMulInteger): no fast kernel
        filt = em.const("int16_t" if wide else "int8_t", f"{lid}_w", w.data, align=4)
        info["kernel"] = "tinyaot_fully_connected_w16_s8" if wide else "tinyaot_fully_connected_s8"
        em.call(info["kernel"], [str(rows), str(k), str(nout), q, em.ptr(x.name), filt,
                                 em.ptr(y.name)])


OP = FullyConnected()
