"""ConvInteger / MatMulInteger of a statically quantized graph -> conv2d /
fully_connected with a float epilogue (`--numerics ort`).

The pattern a static quantizer writes with the integer ops:

    ConvInteger(x, w, x_zp, w_zp) -> Cast(float) -> Mul(S) [-> Add(B)] -> QuantizeLinear

x an integer activation, w, x_zp, w_zp, S, B constants. onnxruntime runs those
nodes one by one (asked of its optimizer: no fusion), so the layer computes
the exact int32 sum of (x - x_zp) * (w - w_zp), then float32(acc) * S[c],
+ B[c], QuantizeLinear. The weights are stored as w - w_zp (zero point 0; int8,
or int16 when it does not fit: tinyaot_convolve_w16_s8 / tinyaot_fully_connected_w16_s8,
docs/numerics.md#weights-with-a-zero-point). Each node of the chain updates the
pending layer's `int_epilogue` attrs (pending_folds.py asks `fold_epilogue`);
QuantizeLinear emits it (frontend/qdq_lowering.lower_q) and conv_params.py turns
the attrs into the kernel's post-scale / post-bias (mode EPILOGUE). No operator
here: ConvInteger is lowered for conv2d.py, MatMulInteger for fully_connected.py.
"""
from __future__ import annotations

import numpy as np

from ..ir import QParams
from .base import Pending, Unsupported
from .conv_pads import conv_pads


def is_epilogue_node(lw, node) -> bool:
    """A Cast / Mul / Add applied to a pending ConvInteger / MatMulInteger result."""
    return node.op_type in ("Cast", "Mul", "Add") and any(
        i in lw.pending and "int_epilogue" in lw.pending[i].attrs for i in node.input)


def _dtype_name(dtype):
    return np.dtype(dtype).name


def _const(lw, x, what):
    if not x or x not in lw.consts:
        raise Unsupported(f"{what} '{x}' must be a constant (initializer)")
    return np.asarray(lw.consts[x])


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    """ConvInteger / MatMulInteger: a conv2d / fully_connected whose epilogue follows."""
    op = node.op_type
    oshape = shape
    ins = list(ins) + ["", ""]
    x, w_name, xz_name, wz_name = ins[:4]
    if x not in lw.graph.tensors or lw.graph.tensors[x].is_const:
        raise Unsupported(f"input '{x}' must be an integer activation (a graph input or a "
                          "QuantizeLinear output)")
    xt = lw.graph.tensors[x]
    w = _const(lw, w_name, "weight")
    if _dtype_name(w.dtype) not in ("int8", "uint8"):
        raise Unsupported(f"weight '{w_name}' must be int8 or uint8")
    xz = _const(lw, xz_name, "zero point") if xz_name else np.zeros((), xt.dtype)
    if xz.size != 1 or _dtype_name(xz.dtype) != xt.dtype:
        raise Unsupported(f"input zero point '{xz_name}' must be one {xt.dtype} value")
    wz = _const(lw, wz_name, "zero point") if wz_name else np.zeros((), w.dtype)
    # per output channel: axis 0 of [O, I, kh, kw]; MatMulInteger: per column of [K, N]
    ch_axis = 0 if op == "ConvInteger" else 1
    if wz.size not in (1, w.shape[ch_axis]):
        raise Unsupported(f"weight zero point '{wz_name}' must be one value or one per channel")
    zshape = [1] * w.ndim
    zshape[ch_axis] = -1
    wq = w.astype(np.int32) - wz.astype(np.int32).reshape(zshape if wz.size > 1 else ())
    wdtype = "int8" if wq.min() >= -128 and wq.max() <= 127 else "int16"
    wq = wq.astype(wdtype)
    # the activation as the kernel reads it: x's bytes with x_zp as zero point
    zp = int(xz.reshape(-1)[0])
    scale = xt.q.scale if xt.q is not None else np.ones(1, np.float32)
    q = QParams(np.asarray(scale, np.float32).reshape(-1)[:1], np.array([zp], np.int32), None)
    if xt.q is None:
        xt.q = q
    elif not xt.q.same_as(q):
        view = lw.add_int_tensor(f"{x}@{name}", xt.shape, xt.dtype, q)
        lw.emit("reinterpret", name, [x], [view.name])
        xt = view
    wt = lw.add_int_tensor(f"{w_name}@{name}", wq.shape, wdtype,
                           QParams(np.ones(1, np.float32), np.zeros(1, np.int32), None), wq)
    epi = {"int_epilogue": "acc", "post_scale": None, "post_bias": None}
    if op == "ConvInteger":
        if len(xt.shape) != 4:
            raise Unsupported("only 2-D ConvInteger (4-D tensors) is supported")
        kshape = tuple(attrs.get("kernel_shape", wq.shape[2:]))
        strides = tuple(attrs.get("strides", (1, 1)))
        dil = tuple(attrs.get("dilations", (1, 1)))
        pads = conv_pads(attrs, xt.shape[2:], kshape, strides, dil, oshape[2:])
        a = {"kernel": kshape, "strides": strides, "dilations": dil, "pads": pads,
             "group": int(attrs.get("group", 1)), **epi}
        lw.pending[out] = Pending("conv2d", name, [xt.name, wt.name, None], a, shape=oshape)
        return
    if len(xt.shape) != 2 or wq.ndim != 2:
        raise Unsupported("MatMulInteger supports a 2-D activation times a 2-D constant")
    wn = lw.add_int_tensor(f"{w_name}@{name}@NK", wq.T.shape, wdtype, wt.q,
                           np.ascontiguousarray(wq.T))
    lw.pending[out] = Pending("fully_connected", name, [xt.name, wn.name, None], dict(epi),
                              shape=oshape)


def _channel_vector(arr, cout, ch_axis, rank, what):
    """A float constant that is one value, or one per output channel broadcast
    along channel axis `ch_axis` of a rank-`rank` result -> float32 [cout]."""
    a = np.asarray(arr)
    if a.dtype != np.float32:
        raise Unsupported(f"{what} must be float32, is {a.dtype}")
    if a.size == 1:
        return np.full(cout, a.reshape(-1)[0], np.float32)
    dims = [1] * (rank - a.ndim) + list(a.shape)
    if a.ndim > rank or a.size != cout or dims[ch_axis] != cout:
        raise Unsupported(f"{what} must be one value or one per output channel")
    return a.reshape(-1).astype(np.float32)


def fold_epilogue(lw, node, name, attrs) -> bool:
    """A Cast / Mul / Add of the pending layer's result: the next stage of its epilogue."""
    if not is_epilogue_node(lw, node):
        return False
    op = node.op_type
    src = next(i for i in node.input if i in lw.pending and "int_epilogue" in lw.pending[i].attrs)
    p = lw.pending[src]
    stage = p.attrs["int_epilogue"]
    if p.act_lo is not None or p.act_hi is not None:
        raise Unsupported("Mul / Add after the activation of an integer layer")
    rank = len(p.shape)
    cout = p.shape[1]
    if op == "Cast":
        if stage != "acc" or int(attrs.get("to", 0)) != 1:  # 1: FLOAT
            raise Unsupported("only one Cast to float of the int32 result is supported")
        new = "float"
    else:
        other = next((i for i in node.input if i != src), None)
        if other is None or other not in lw.consts:
            raise Unsupported(f"the other {op} operand must be a float constant")
        vec = _channel_vector(lw.consts[other], cout, 1, rank, f"{op} constant '{other}'")
        if op == "Mul" and stage == "float":
            p.attrs["post_scale"], new = vec, "scaled"
        elif op == "Add" and stage == "scaled":
            p.attrs["post_bias"], new = vec, "biased"
        else:
            raise Unsupported(f"{op} of the integer result: expected Cast(float) -> Mul(scale) "
                              "[-> Add(bias)] -> QuantizeLinear")
    del lw.pending[src]
    p.attrs["int_epilogue"] = new
    p.tensors.append(src)
    lw.pending[node.output[0]] = p
    return True
