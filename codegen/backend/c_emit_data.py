"""C emission of the resize kernels.

Called from c_emitter._Emitter.emit_node, like c_emit_more.py. Index and
weight tables come from prepare._resize; the kernels only read them.
"""
from __future__ import annotations

from ..kernels.c_format import c_float


def _ints(em, name, vals):
    vals = [int(v) for v in vals]
    em.consts.append(f"static const int32_t {name}[{len(vals)}] = {{ {', '.join(map(str, vals))} }};\n")
    return name


def emit_resize(em, lid, n, p, info):
    g = em.g
    x = g.tensors[n.inputs[0]]
    y = g.tensors[n.outputs[0]]
    nb, c, h, w = x.shape
    _, _, oh, ow = y.shape
    table = "NULL" if p["table"] is None else em.const("int8_t", f"{lid}_table", p["table"])
    if p["kind"] == "nearest":
        info["kernel"] = "tinyaot_resize_nearest_s8"
        em.call("tinyaot_resize_nearest_s8", [
            _ints(em, f"{lid}_d", [nb, h, w, c, oh, ow]), em.const("int32_t", f"{lid}_yi", p["y_idx"]),
            em.const("int32_t", f"{lid}_xi", p["x_idx"]), table, em.ptr(x.name), em.ptr(y.name)])
        return
    if p["kind"] == "bilinear_ort":
        mode = 0
        (y0, y1, fy1, fy0), (x0, x1, fx1, fx0) = p["ax_h"], p["ax_w"]  # d1 weighs i2, d2 weighs i1
        f = [em.const("float", f"{lid}_{k}", v) for k, v in
             (("fy0", fy0), ("fy1", fy1), ("fx0", fx0), ("fx1", fx1))]
        wy = wx = "NULL"
    else:
        mode = 1
        (y0, y1, wyv), (x0, x1, wxv) = p["ax_h"], p["ax_w"]
        f = ["NULL"] * 4
        wy, wx = em.const("int32_t", f"{lid}_wy", wyv), em.const("int32_t", f"{lid}_wx", wxv)
    idx = [em.const("int32_t", f"{lid}_{k}", v) for k, v in (("y0", y0), ("y1", y1), ("x0", x0),
                                                                ("x1", x1))]
    fields = [str(v) for v in (nb, h, w, c, oh, ow, mode)] + idx + f + [wy, wx] + [
        c_float(p.get("in_scale", 0.0)), c_float(p.get("out_scale", 0.0)), str(p.get("in_zp", 0)),
        str(p.get("out_zp", 0)), str(p["act_min"]), str(p["act_max"]), table]
    em.consts.append(f"static const tinyaot_resize_bilinear_params_t {lid}_p = "
                     f"{{ {', '.join(fields)} }};\n")
    info["kernel"] = "tinyaot_resize_bilinear_s8"
    info["macs"] = int(y.size * 4)
    em.call("tinyaot_resize_bilinear_s8", [f"&{lid}_p", em.ptr(x.name), em.ptr(y.name)])
