"""C emission of the newer kernels (Mul, ...), called from c_emitter._Emitter.

Kept apart from c_emitter.py; each function takes the emitter, the layer id,
the IR node, its prepared parameters and the report info dict.
"""
from __future__ import annotations

import numpy as np

from ..kernels.c_format import c_float
from ..ops.physical import dims4, physical


def broadcast_strides(x, out):
    """Element strides of x for each *physical* axis of out (0 where x broadcasts)."""
    dims, perm = physical(x) if not x.is_const else (list(x.shape), tuple(range(len(x.shape))))
    rx, r = len(x.shape), len(out.shape)
    logical = [0] * rx
    step = 1
    for k in range(rx - 1, -1, -1):
        logical[perm[k]] = step
        step *= dims[k]
    padded = [0] * (r - rx) + [logical[i] if x.shape[i] != 1 else 0 for i in range(rx)]
    _, operm = physical(out)
    return [padded[a] for a in operm]


def operand(em, lid, tag, t):
    if t.is_const:
        return em.const("int8_t", f"{lid}_{tag}", t.data.reshape(-1))
    return em.ptr(t.name)


def emit_mul(em, lid, n, p, info):
    g = em.g
    a, b = (g.tensors[i] for i in n.inputs)
    y = g.tensors[n.outputs[0]]
    odims, _ = physical(y)
    sa = dims4(broadcast_strides(a, y), 0)
    sb = dims4(broadcast_strides(b, y), 0)
    d = dims4(odims, 1)
    em.consts.append(f"static const int32_t {lid}_dims[4] = {{ {', '.join(map(str, d))} }};\n")
    em.consts.append(f"static const int32_t {lid}_as[4] = {{ {', '.join(map(str, sa))} }};\n")
    em.consts.append(f"static const int32_t {lid}_bs[4] = {{ {', '.join(map(str, sb))} }};\n")
    fields = [str(p["mode"]), str(p["a_zp"]), str(p["b_zp"]), str(p["out_zp"]), str(p["act_min"]),
              str(p["act_max"]), c_float(p.get("a_scale", 0.0)), c_float(p.get("b_scale", 0.0)),
              c_float(p.get("out_scale", 0.0)), c_float(p.get("ratio", 0.0)),
              str(p.get("out_mult", 0)), str(p.get("out_shift", 0))]
    em.consts.append(f"static const tinyaot_mul_params_t {lid}_p = {{ {', '.join(fields)} }};\n")
    pa = operand(em, lid, "a", a)
    pb = operand(em, lid, "b", b)
    info["kernel"] = "tinyaot_mul_s8"
    em.call("tinyaot_mul_s8", [f"{lid}_dims", f"{lid}_as", f"{lid}_bs", f"&{lid}_p", pa, pb,
                               em.ptr(y.name)])
    info["macs"] = int(np.prod(y.shape))


def emit_reduce_mean_ort(em, lid, n, p, info):
    g = em.g
    x = g.tensors[n.inputs[0]]
    y = g.tensors[n.outputs[0]]
    nb, c, h, w = x.shape
    em.consts.append(
        f"static const tinyaot_requantize_params_t {lid}_p = {{ 1, {p['in_zp']}, {p['out_zp']}, "
        f"{p['act_min']}, {p['act_max']}, {c_float(p['in_scale'])}, {c_float(p['out_scale'])}, "
        "0, 0 };\n")
    info["kernel"] = "tinyaot_reduce_mean_hw_f32_s8"
    em.call("tinyaot_reduce_mean_hw_f32_s8", [str(nb), str(h * w), str(c), f"&{lid}_p",
                                              em.ptr(x.name), em.ptr(y.name)])

