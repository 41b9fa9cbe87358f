"""ConvInteger / MatMulInteger of a statically quantized graph -> conv2d /
fully_connected with a float epilogue (`--numerics ort`).

The pattern a static quantizer writes with the integer ops:

    ConvInteger(x, w, x_zp, w_zp) -> Cast(float) -> Mul(S) [-> Add(B)] -> QuantizeLinear

x an integer activation, w, x_zp, w_zp, S, B constants. onnxruntime runs those
nodes one by one (asked of its optimizer: no fusion), so the layer computes
the exact int32 sum of (x - x_zp) * (w - w_zp), then float32(acc) * S[c],
+ B[c], QuantizeLinear. The weights are stored as w - w_zp (int8, zero point
0; refused if that does not fit int8). Each node of the chain updates the
pending layer's `int_epilogue` attrs; QuantizeLinear emits it
(qdq_lowering.lower_q) and prepare.py turns the attrs into the kernel's
post-scale / post-bias.
"""
from __future__ import annotations

import numpy as np

from ..ir import QParams
from .onnx_loader_util import conv_pads, np_dtype_name

INTEGER_OPS = {"ConvInteger", "MatMulInteger"}


def is_epilogue_node(low, node) -> bool:
    """A Cast / Mul / Add applied to a pending ConvInteger / MatMulInteger result."""
    return node.op_type in ("Cast", "Mul", "Add") and any(
        i in low.pending and "int_epilogue" in low.pending[i].attrs for i in node.input)


def lower_integer_op(low, node, name, attrs, unsupported):
    if node.op_type in INTEGER_OPS:
        return _lower_core(low, node, name, attrs, unsupported)
    return _lower_epilogue(low, node, name, attrs, unsupported)


def _const(low, x, what, unsupported):
    if not x or x not in low.consts:
        raise unsupported(f"{what} '{x}' must be a constant (initializer)")
    return np.asarray(low.consts[x])


def _lower_core(low, node, name, attrs, unsupported):
    from ..ops.base import Pending

    op = node.op_type
    ins = list(node.input) + ["", ""]
    x, w_name, xz_name, wz_name = ins[:4]
    if x not in low.graph.tensors or low.graph.tensors[x].is_const:
        raise unsupported(f"input '{x}' must be an integer activation (a graph input or a "
                          "QuantizeLinear output)")
    xt = low.graph.tensors[x]
    w = _const(low, w_name, "weight", unsupported)
    if np_dtype_name(w.dtype) not in ("int8", "uint8"):
        raise unsupported(f"weight '{w_name}' must be int8 or uint8")
    xz = _const(low, xz_name, "zero point", unsupported) if xz_name else np.zeros((), xt.dtype)
    if xz.size != 1 or np_dtype_name(xz.dtype) != xt.dtype:
        raise unsupported(f"input zero point '{xz_name}' must be one {xt.dtype} value")
    wz = _const(low, wz_name, "zero point", unsupported) if wz_name else np.zeros((), w.dtype)
    # per output channel: axis 0 of [O, I, kh, kw]; MatMulInteger: per column of [K, N]
    ch_axis = 0 if op == "ConvInteger" else 1
    if wz.size not in (1, w.shape[ch_axis]):
        raise unsupported(f"weight zero point '{wz_name}' must be one value or one per channel")
    shape = [1] * w.ndim
    shape[ch_axis] = -1
    wq = w.astype(np.int32) - wz.astype(np.int32).reshape(shape if wz.size > 1 else ())
    if wq.min() < -128 or wq.max() > 127:
        raise unsupported("weights minus their zero point do not fit int8")
    wq = wq.astype(np.int8)
    # the activation as the kernel reads it: x's bytes with x_zp as zero point
    zp = int(xz.reshape(-1)[0])
    scale = xt.q.scale if xt.q is not None else np.ones(1, np.float32)
    q = QParams(np.asarray(scale, np.float32).reshape(-1)[:1], np.array([zp], np.int32), None)
    if xt.q is None:
        xt.q = q
    elif not xt.q.same_as(q):
        view = low.add_int_tensor(f"{x}@{name}", xt.shape, xt.dtype, q)
        low.emit("reinterpret", name, [x], [view.name])
        xt = view
    out = node.output[0]
    oshape = low.shape_of(out, name)
    wt = low.add_int_tensor(f"{w_name}@{name}", wq.shape, "int8",
                            QParams(np.ones(1, np.float32), np.zeros(1, np.int32), None), wq)
    epi = {"int_epilogue": "acc", "post_scale": None, "post_bias": None}
    if op == "ConvInteger":
        if len(xt.shape) != 4:
            raise unsupported("only 2-D ConvInteger (4-D tensors) is supported")
        kshape = tuple(attrs.get("kernel_shape", wq.shape[2:]))
        strides = tuple(attrs.get("strides", (1, 1)))
        dil = tuple(attrs.get("dilations", (1, 1)))
        pads = conv_pads(attrs, xt.shape[2:], kshape, strides, dil, oshape[2:])
        a = {"kernel": kshape, "strides": strides, "dilations": dil, "pads": pads,
             "group": int(attrs.get("group", 1)), **epi}
        low.pending[out] = Pending("conv2d", name, [xt.name, wt.name, None], a, shape=oshape)
        return
    if len(xt.shape) != 2 or wq.ndim != 2:
        raise unsupported("MatMulInteger supports a 2-D activation times a 2-D constant")
    wn = low.add_int_tensor(f"{w_name}@{name}@NK", wq.T.shape, "int8", wt.q,
                            np.ascontiguousarray(wq.T))
    low.pending[out] = Pending("fully_connected", name, [xt.name, wn.name, None], dict(epi),
                               shape=oshape)


def _channel_vector(arr, cout, ch_axis, rank, what, unsupported):
    """A float constant that is one value, or one per output channel broadcast
    along channel axis `ch_axis` of a rank-`rank` result -> float32 [cout]."""
    a = np.asarray(arr)
    if a.dtype != np.float32:
        raise unsupported(f"{what} must be float32, is {a.dtype}")
    if a.size == 1:
        return np.full(cout, a.reshape(-1)[0], np.float32)
    dims = [1] * (rank - a.ndim) + list(a.shape)
    if a.ndim > rank or a.size != cout or dims[ch_axis] != cout:
        raise unsupported(f"{what} must be one value or one per output channel")
    return a.reshape(-1).astype(np.float32)


def _lower_epilogue(low, node, name, attrs, unsupported):
    op = node.op_type
    src = next(i for i in node.input if i in low.pending and "int_epilogue" in low.pending[i].attrs)
    p = low.pending[src]
    stage = p.attrs["int_epilogue"]
    if p.act_lo is not None or p.act_hi is not None:
        raise unsupported("Mul / Add after the activation of an integer layer")
    rank = len(p.shape)
    cout = p.shape[1]
    if op == "Cast":
        if stage != "acc" or int(attrs.get("to", 0)) != 1:  # 1: FLOAT
            raise unsupported("only one Cast to float of the int32 result is supported")
        new = "float"
    else:
        other = next((i for i in node.input if i != src), None)
        if other is None or other not in low.consts:
            raise unsupported(f"the other {op} operand must be a float constant")
        vec = _channel_vector(low.consts[other], cout, 1, rank, f"{op} constant '{other}'",
                              unsupported)
        if op == "Mul" and stage == "float":
            p.attrs["post_scale"], new = vec, "scaled"
        elif op == "Add" and stage == "scaled":
            p.attrs["post_bias"], new = vec, "biased"
        else:
            raise unsupported(f"{op} of the integer result: expected Cast(float) -> Mul(scale) "
                              "[-> Add(bias)] -> QuantizeLinear")
    del low.pending[src]
    p.attrs["int_epilogue"] = new
    p.tensors.append(src)
    low.pending[node.output[0]] = p
