"""The user's I/O element type in the generated API (int8 or uint8; float for a float32
output the float fallback computes).

A uint8 model (quantize_static with QUInt8 activations) is computed in int8
inside (passes/uint8.py); its `<name>_run` keeps uint8 pointers, so the
caller's buffers have the type its quantization parameters are written for.
"""
from __future__ import annotations


def io_ctypes(g):
    """(input C type, output C type) of the generated API."""
    xin = g.tensors[g.inputs[0]]
    xout = g.tensors[g.outputs[0]]
    return tuple({"uint8": "uint8_t", "float32": "float"}.get(t.dtype, "int8_t")
                 for t in (xin, xout))


def apply_io_types(g, name, text):
    """Rewrite the `<name>_run` prototype / definition for uint8 I/O."""
    in_ct, out_ct = io_ctypes(g)
    if in_ct == "int8_t" and out_ct in ("int8_t", "float"):
        return text
    if out_ct == "float":  # a float32 output is written with its type (io_buffers.py)
        return text.replace(f"int {name}_run(const int8_t *input, float *output)",
                            f"int {name}_run(const {in_ct} *input, float *output)")
    return text.replace(f"int {name}_run(const int8_t *input, int8_t *output)",
                        f"int {name}_run(const {in_ct} *input, {out_ct} *output)")


def io_report(g):
    """What the model's boundary was and what the plain API takes (one input, one output).

    With --io int8, a float model input followed by QuantizeLinear (a float output
    preceded by DequantizeLinear) is integer I/O: the caller quantizes the input with
    the given scale / zero point (and dequantizes the output)."""
    din, dout = g.declared_ends()
    out = {}
    for key, names, declared in (("input", g.inputs, din), ("output", g.outputs, dout)):
        t = g.tensors[names[0]]
        d = declared[0]
        s, zp = t.q.scalar() if t.q is not None else (1.0, 0)
        out[key] = {
            "name": t.name, "dtype": t.dtype, "shape": list(t.shape),
            "scale": float(s), "zero_point": int(zp),
            "model_boundary": "float" if d.is_float else t.dtype,
            "onnx_name": d.name,
        }
    return out


def boundary_comment(g, header):
    """Add one header comment line per side saying how the model's boundary maps."""
    lines = []
    for key, r in io_report(g).items():
        if r["dtype"] == "float32":
            how = (f"the model's float32 {key}, computed by the float fallback (float values, "
                   "no scale or zero point)")
            lines.append(f" * {key} boundary: {how}.")
            continue
        if r["model_boundary"] == "float":
            how = ("the model's float input '%s' is quantized by the caller: "
                   "q = round(x / scale) + zero_point" % r["onnx_name"] if key == "input" else
                   "the model's float output '%s' is scale * (q - zero_point)" % r["onnx_name"])
        else:
            how = f"the model's own {r['dtype']} {key}"
        lines.append(f" * {key} boundary: {how} (scale {r['scale']:.9g}, zero point "
                     f"{r['zero_point']}, {r['dtype']}).")
    marker = " * real value = scale * (q - zero_point). */"
    if marker not in header:
        return header
    return header.replace(marker, "\n".join(lines) + "\n" + marker, 1)
