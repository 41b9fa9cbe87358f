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


def emit_matmul(em, lid, n, p, info):
    g = em.g
    a, b = (g.tensors[i] for i in n.inputs)
    y = g.tensors[n.outputs[0]]
    m, k = a.shape[-2:]
    nn = b.shape[-1]
    batches = int(np.prod(a.shape[:-2], dtype=np.int64))
    fields = [str(p["mode"]), str(p["a_zp"]), str(p["b_zp"]), str(p["out_zp"]), str(p["act_min"]),
              str(p["act_max"]), c_float(p.get("a_scale", 0.0)), c_float(p.get("b_scale", 0.0)),
              c_float(p.get("out_scale", 0.0)), c_float(p.get("scale", 0.0)),
              str(p.get("mult", 0)), str(p.get("shift", 0))]
    em.consts.append(f"static const tinyaot_matmul_params_t {lid}_p = {{ {', '.join(fields)} }};\n")
    info["kernel"] = "tinyaot_matmul_s8"
    info["macs"] = int(batches * m * k * nn)
    em.call("tinyaot_matmul_s8", [str(batches), str(m), str(k), str(nn), f"&{lid}_p",
                                  operand(em, lid, "a", a), operand(em, lid, "b", b), em.ptr(y.name)])


def conv_transpose_filter(w, group):
    """ONNX ConvTranspose weights [C_in, C_out/group, kH, kW] -> [kH][kW][C_out][C_in/group],
    the order tinyaot_transpose_conv_*_s8 read (input channels contiguous)."""
    cin, og, kh, kw = w.shape
    cg = cin // group
    # [g, cg, og, kh, kw] -> [kh, kw, g, og, cg]
    return np.ascontiguousarray(w.reshape(group, cg, og, kh, kw).transpose(3, 4, 0, 2, 1)
                                .reshape(kh, kw, group * og, cg))


def transpose_conv_scratch_bytes(out_c):
    """tinyaot_transpose_conv_s8_get_buffer_size / ..._f32_s8_get_buffer_size: one
    output pixel's accumulators (int32 or float)."""
    return 4 * out_c


def emit_conv_transpose(em, lid, n, p, info):
    """ConvTranspose: ort -> onnxruntime's float kernel, tflite -> the integer one."""
    x = em.g.tensors[n.inputs[0]]
    w = em.g.tensors[n.inputs[1]]
    y = em.g.tensors[n.outputs[0]]
    group = n.attrs["group"]
    dims = em.conv_dims(lid, n)
    info["macs"] = int(x.size * w.shape[1] * w.shape[2] * w.shape[3])
    filt = em.const("int8_t", f"{lid}_w", conv_transpose_filter(w.data, group), align=4)
    scratch = em.scratch(n)
    if "filter_scale" in p:
        em.float_layer(lid, em.g, n, w, p, filt, scales=np.tile(p["filter_scale"], group),
                       bias_f=p["bias_f"])
        info["kernel"] = "tinyaot_transpose_conv_f32_s8"
        em.call(info["kernel"], [dims, f"&{lid}_fp", em.ptr(x.name), f"(float *)(void *){scratch}",
                                 em.ptr(y.name)])
        return
    q = em.requant(lid, p)
    info["kernel"] = "tinyaot_transpose_conv_s8"
    em.call(info["kernel"], [dims, q, em.ptr(x.name), filt, f"(int32_t *)(void *){scratch}",
                             em.ptr(y.name)])
