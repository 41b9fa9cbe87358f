"""`--io float`: a float wrapper around `<name>_run`, bit-exact with onnxruntime.

    int <name>_run_f32(const float *input, float *output);

quantizes the input as onnxruntime's QuantizeLinear does (MLAS: x / scale,
clamped to [qmin - zp, qmax - zp], rounded half to even, + zp), runs the
integer model and dequantizes the output as DequantizeLinear does
(float(q - zp) * scale). For a model whose ONNX input / output were float
(QuantizeLinear after the input, DequantizeLinear before the output) this
is exactly the float model onnxruntime runs. The integer `<name>_run` stays;
the wrapper adds two static buffers (input + output bytes) outside the arena.
"""
from __future__ import annotations

from ..kernels.c_format import c_float

IO_MODES = ("int8", "float")


def _range(dtype):
    return (0, 255) if dtype == "uint8" else (-128, 127)


def float_wrapper(g, name):
    """(header declaration, C source) of <name>_run_f32."""
    xin = g.tensors[g.inputs[0]]
    xout = g.tensors[g.outputs[0]]
    if xout.dtype == "float32":  # the float fallback already gives floats
        return _float_out_wrapper(xin, name)
    si, zi = xin.q.scalar()
    so, zo = xout.q.scalar()
    lo, hi = _range(xin.dtype)
    ict = "uint8_t" if xin.dtype == "uint8" else "int8_t"
    oct_ = "uint8_t" if xout.dtype == "uint8" else "int8_t"
    decl = (f"/* --io float: quantizes input like QuantizeLinear (scale {float(si):.9g}, zero point\n"
            f" * {zi}), runs {name}_run, dequantizes like DequantizeLinear (scale {float(so):.9g},\n"
            f" * zero point {zo}). Bit-exact with onnxruntime for finite inputs. Returns 0 on\n"
            f" * success. */\n"
            f"int {name}_run_f32(const float *input, float *output);\n")
    src = f"""
/* --io float (codegen/backend/float_io.py) */
static {ict} {name}_qin[{xin.size}];
static {oct_} {name}_qout[{xout.size}];

int {name}_run_f32(const float *input, float *output)
{{
    for (uint32_t i = 0; i < {xin.size}u; ++i) {{
        float v = input[i] / {c_float(si)};
        if (v < {c_float(float(lo - zi))}) v = {c_float(float(lo - zi))};
        if (v > {c_float(float(hi - zi))}) v = {c_float(float(hi - zi))};
        v = (v + 12582912.0f) - 12582912.0f; /* round half to even */
        {name}_qin[i] = ({ict})((int32_t)v + ({zi}));
    }}
    if ({name}_run({name}_qin, {name}_qout) != 0) return -1;
    for (uint32_t i = 0; i < {xout.size}u; ++i) {{
        output[i] = (float)((int32_t){name}_qout[i] - ({zo})) * {c_float(so)};
    }}
    return 0;
}}
"""
    return decl, src


def _float_out_wrapper(xin, name):
    """<name>_run_f32 of a model whose output is float32 already: only the input is
    quantized."""
    si, zi = xin.q.scalar()
    lo, hi = _range(xin.dtype)
    ict = "uint8_t" if xin.dtype == "uint8" else "int8_t"
    decl = (f"/* --io float: quantizes input like QuantizeLinear (scale {float(si):.9g}, zero point\n"
            f" * {zi}), runs {name}_run (its output is float32 already). Returns 0 on\n"
            f" * success. */\n"
            f"int {name}_run_f32(const float *input, float *output);\n")
    src = f"""
/* --io float (codegen/backend/float_io.py) */
static {ict} {name}_qin[{xin.size}];

int {name}_run_f32(const float *input, float *output)
{{
    for (uint32_t i = 0; i < {xin.size}u; ++i) {{
        float v = input[i] / {c_float(si)};
        if (v < {c_float(float(lo - zi))}) v = {c_float(float(lo - zi))};
        if (v > {c_float(float(hi - zi))}) v = {c_float(float(hi - zi))};
        v = (v + 12582912.0f) - 12582912.0f; /* round half to even */
        {name}_qin[i] = ({ict})((int32_t)v + ({zi}));
    }}
    return {name}_run({name}_qin, output);
}}
"""
    return decl, src


def add_float_io(module, g):
    decl, src = float_wrapper(g, module.name)
    marker = "#ifdef __cplusplus\n}\n#endif"
    head = module.header
    k = head.rfind(marker)
    module.header = head[:k] + decl + "\n" + head[k:] if k >= 0 else head + decl
    module.source = module.source + src
    return module
