"""C emission of the newer kernels (MatMul, ConvTranspose), called from c_emitter._Emitter.

Kept apart from c_emitter.py; each function takes the emitter, the layer id,
the IR node, its prepared parameters and the report info dict.
"""
from __future__ import annotations

import numpy as np

from ..kernels.c_format import c_float


def operand(em, lid, tag, t):
    if t.is_const:
        return em.const("int8_t", f"{lid}_{tag}", t.data.reshape(-1))
    return em.ptr(t.name)


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
