"""Integer IR + arena plan + prepared parameters -> <name>.c and <name>.h.

Every layer becomes one call into runtime_c with constant arguments; weights,
biases and multipliers are `static const` (flash); activations live at fixed
offsets of one static, aligned arena. No malloc, no stdio.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import __version__, ops
from ..ir import Graph
from ..kernels import fc_float_unrolled as fu
from ..kernels.c_format import c_array, c_float, c_ident
from .io_buffers import header_api, run_functions
from ..planner.arena import scratch_name
from ..planner.poison import POISON_DEFAULTS, poison_after, poison_prologue


@dataclass
class CModule:
    name: str
    source: str
    header: str
    weights_bytes: int = 0
    layers: list = field(default_factory=list)  # per-layer info for the report
    kernels: set = field(default_factory=set)  # runtime_c functions used
    # (cname, ctype, values) of every const() array, in emission order (integrity.py)
    blobs: list = field(default_factory=list)


def _dims4(shape):
    s = list(shape)
    while len(s) < 4:
        s.insert(0, 1)
    return s


class _Emitter:
    def __init__(self, g: Graph, plan, params, numerics, name, optimize="speed", unroll_fc=True):
        self.g = g
        self.unroll_fc = unroll_fc  # kernels/fc_float_unrolled.py on FPU targets
        self.unroll_guard = False
        self.optimize = optimize  # size: tinyaot_add_s8 without tables (passes/optimize.py)
        self.plan = plan
        self.params = params
        self.numerics = numerics
        self.name = name
        self.consts = []
        self.blobs = []
        self.body = []
        self.weights_bytes = 0
        self.layers = []
        self.kernels = set()

    def const(self, ctype, cname, values, align=None):
        arr = np.asarray(values)
        self.consts.append(c_array(ctype, cname, arr, align=align))
        self.blobs.append((cname, ctype, arr))
        self.weights_bytes += arr.size * {"int8_t": 1, "int32_t": 4, "float": 4}[ctype]
        return cname

    def ptr(self, tensor, const=False):
        b = self.plan.where[tensor]
        if b.external in ("input",):
            return "input"
        if b.external in ("output", "input+output"):
            return "output"
        return f"(ARENA + {b.offset})"

    def scratch(self, n, ctype=None):
        """C expression of node n's scratch block in the arena (planner: Node.attrs
        ["scratch_bytes"]), as a `ctype *` when ctype is given."""
        where = f"(ARENA + {self.plan.where[scratch_name(n)].offset})"
        return where if ctype is None else f"({ctype} *)(void *){where}"

    def call(self, kernel, args):
        self.kernels.add(kernel)
        self.body.append(f"    if ({kernel}({', '.join(args)}) != TINYAOT_OK) return -1;")

    def requant(self, lid, p, fast=False, float_records=False, bias_in_records=False):
        """The layer's tinyaot_requant_t; `fast` (a fast kernel's): also the
        one-SMLAL records when every channel allows (fast_pack.smlal_requant);
        `float_records` (fast conv / depthwise, ort, whole int8 range): the
        {bias, scale} records (fast_pack.float_requant); `bias_in_records`
        (kernels that read only the records when there are some: the size
        kernels): no separate bias array then."""
        from ..kernels.fast_pack import float_requant, smlal_requant

        words = None  # the records, emitted where the speed build always had them
        if "scale" in p:
            if "post_bias" not in p and float_records and p["act_min"] <= -128 and p["act_max"] >= 127:
                words = float_requant(p["scale"], p["bias"])
        elif fast:
            words = smlal_requant(p["mult"], p["shift"], p["bias"])
        bias = ("NULL" if words is not None and bias_in_records
                else self.const("int32_t", f"{lid}_bias", p["bias"]))
        if "scale" in p:
            scale = self.const("float", f"{lid}_scale", p["scale"])
            extra = f"{scale}, NULL, NULL"
            if "post_bias" in p:  # ConvInteger / MatMulInteger: float(acc) * scale + post_bias, Q
                pb = self.const("float", f"{lid}_post_bias", p["post_bias"])
                extra += f", {pb}, {c_float(p['out_scale'])}, NULL"
            elif words is not None:
                extra += f", NULL, 0.0f, {self.const('int32_t', f'{lid}_rq', words, align=8)}"
            else:
                extra += ", NULL, 0.0f, NULL"
        elif words is None:
            mult = self.const("int32_t", f"{lid}_mult", p["mult"])
            shift = self.const("int32_t", f"{lid}_shift", p["shift"])
            extra = f"NULL, {mult}, {shift}, NULL, 0.0f, NULL"
        else:  # the words hold mult and shift too
            extra = f"NULL, NULL, NULL, NULL, 0.0f, {self.const('int32_t', f'{lid}_rq', words, align=8)}"
        self.consts.append(
            f"static const tinyaot_requant_t {lid}_q = {{ {p['in_zp']}, {p['out_zp']}, "
            f"{p['act_min']}, {p['act_max']}, {bias}, {extra} }};\n")
        return f"&{lid}_q"

    def emit_node(self, idx, n):
        lid = f"l{idx}"
        p = self.params.get(n.name, {})
        op = n.op
        info = {"index": idx, "op": op, "name": n.name, "kernel": None, "macs": 0,
                "weight_bytes": 0}
        before = self.weights_bytes
        mod = ops.find(op)  # an operator module (codegen/ops/) emits its own layer
        if mod is not None:
            mod.emit(self, lid, n, p, info)
        elif op == "conv2d":
            self.emit_conv(lid, n, p, info)
        elif op == "fully_connected":
            self.emit_fc(lid, n, p, info)
        elif op == "matmul":
            from .c_emit_more import emit_matmul
            emit_matmul(self, lid, n, p, info)
        elif op == "conv_transpose":
            from .c_emit_more import emit_conv_transpose
            emit_conv_transpose(self, lid, n, p, info)
        else:
            raise NotImplementedError(f"no C emitter for op {op}")
        info["weight_bytes"] = self.weights_bytes - before
        self.layers.append(info)

    def float_layer(self, lid, g, n, w, p, filt, scales=None, bias_f=None):
        """Parameters of an onnxruntime float layer (int8 weights + their scales,
        one per output channel; default: along the weights' axis 0)."""
        if scales is None:
            scales = np.broadcast_to(w.q.scale.astype(np.float32), (w.shape[0],))
        scale = self.const("float", f"{lid}_ws", scales)
        bias = self.const("float", f"{lid}_bf", _float_bias(g, n) if bias_f is None else bias_f)
        self.consts.append(
            f"static const tinyaot_float_conv_t {lid}_fp = {{ {c_float(p['in_scale'])}, "
            f"{p['in_zp']}, {c_float(p['out_scale'])}, {p['out_zp']}, {p['act_min']}, "
            f"{p['act_max']}, {filt}, {scale}, {bias} }};\n")

    def in_place(self, n):
        """Did the plan put a node flagged inplace_depthwise's output on its input?"""
        bx, by = self.plan.where[n.inputs[0]], self.plan.where[n.outputs[0]]
        return (bool(n.attrs.get("inplace_depthwise")) and bx.external is None
                and by.external is None and bx.offset == by.offset)

    def conv_dims(self, lid, n):
        x = self.g.tensors[n.inputs[0]]
        y = self.g.tensors[n.outputs[0]]
        a = n.attrs
        _, c, h, w = x.shape
        _, oc, oh, ow = y.shape
        kh, kw = a["kernel"]
        vals = [h, w, c, oh, ow, oc, kh, kw, a["strides"][0], a["strides"][1],
                a["dilations"][0], a["dilations"][1], a["pads"][0], a["pads"][1], a["group"]]
        self.consts.append(f"static const tinyaot_conv_dims_t {lid}_d = {{ "
                           f"{', '.join(str(int(v)) for v in vals)} }};\n")
        return f"&{lid}_d"

    def emit_conv(self, lid, n, p, info):
        g = self.g
        w = g.tensors[n.inputs[1]]
        x = g.tensors[n.inputs[0]]
        y = g.tensors[n.outputs[0]]
        group = n.attrs["group"]
        cin = x.shape[1]
        depthwise = group == cin and group > 1 and w.shape[1] == 1
        dims = self.conv_dims(lid, n)
        kh, kw = n.attrs["kernel"]
        info["macs"] = int(y.size * kh * kw * (w.shape[1]))
        if n.attrs.get("f32_w8"):  # --optimize size (passes/optimize.py)
            from .size_kernels import emit_conv_w8
            emit_conv_w8(self, lid, n, p, info, dims)
            return
        if n.attrs.get("int_w8") and not self.in_place(n):  # --optimize size, integer conv
            from .size_kernels import emit_conv_int_w8
            emit_conv_int_w8(self, lid, n, p, info, dims)
            return
        if n.attrs.get("ort_float"):
            from ..kernels.conv_f32_pack import emit_plan
            scratch, tiles = emit_plan(self, lid, n, w, p)
            # plans with no fma tile (depthwise, one pixel: MLAS's M=1 kernels) have their own kernel
            info["kernel"] = "tinyaot_convolve_f32_s8" if tiles else "tinyaot_convolve_f32_m1_s8"
            self.call(info["kernel"], [dims, f"&{lid}_fp", f"&{lid}_pl", self.ptr(x.name), scratch,
                                       self.ptr(y.name)])
            return
        if n.attrs.get("fast_kernel") in ("conv", "depthwise"):
            self.emit_fast(lid, n, p, info, dims, w)
            return
        q = self.requant(lid, p)
        if depthwise and self.in_place(n):  # planner/depthwise_inplace.py
            filt = self.const("int8_t", f"{lid}_w", w.data[:, 0].transpose(1, 2, 0), align=4)
            plane = self.scratch(n)
            info["kernel"] = "tinyaot_depthwise_conv_inplace_s8"
            self.call(info["kernel"], [dims, q, self.ptr(x.name), filt, plane])
            return
        if depthwise:
            filt = self.const("int8_t", f"{lid}_w", w.data[:, 0].transpose(1, 2, 0), align=4)
            kernel = "tinyaot_depthwise_conv_s8"
        else:
            filt = self.const("int8_t", f"{lid}_w", w.data.transpose(0, 2, 3, 1), align=4)
            kernel = "tinyaot_convolve_s8"
        info["kernel"] = kernel
        self.call(kernel, [dims, q, self.ptr(x.name), filt, self.ptr(y.name)])

    def emit_fc(self, lid, n, p, info):
        g = self.g
        x = g.tensors[n.inputs[0]]
        w = g.tensors[n.inputs[1]]
        y = g.tensors[n.outputs[0]]
        nout, k = w.shape
        rows = x.size // k
        info["macs"] = int(rows * nout * k)
        if n.attrs.get("f32_w8"):  # --optimize size (passes/optimize.py)
            from .size_kernels import emit_fc_w8
            emit_fc_w8(self, lid, n, p, info, rows)
            return
        if n.attrs.get("int_w8"):  # --optimize size, integer FC
            from .size_kernels import emit_fc_int_w8
            emit_fc_int_w8(self, lid, n, p, info, rows)
            return
        if n.attrs.get("ort_float"):
            self.emit_fc_float(lid, n, p, info, rows)
            return
        if n.attrs.get("fast_kernel") == "fc":
            self.emit_fast(lid, n, p, info, None, w, rows=rows)
            return
        q = self.requant(lid, p)
        filt = self.const("int8_t", f"{lid}_w", w.data, align=4)
        info["kernel"] = "tinyaot_fully_connected_s8"
        self.call("tinyaot_fully_connected_s8", [str(rows), str(k), str(nout), q,
                                                 self.ptr(x.name), filt, self.ptr(y.name)])

    def emit_fc_float(self, lid, n, p, info, rows):
        """onnxruntime's float Gemm/MatMul: float weights packed for MLAS's order."""
        from ..kernels.fc_float_pack import input_table, pack_fc_float
        from ..numerics.mlas_fc_order import ORDER_CODE
        from ..numerics.ort_float import float_weights

        x, w, y = (self.g.tensors[t] for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
        nout, k = w.shape
        wf, bf = float_weights(w), _float_bias(self.g, n)
        xt = input_table(p["in_scale"], p["in_zp"])
        table = self.const("float", f"{lid}_xt", xt)
        unrolled = self.unrolled_fc(lid, p, wf, bf, float(np.abs(xt).max()), rows)
        wp = self.const("float", f"{lid}_wp", pack_fc_float(wf, p["fc_order"]), align=8)
        bias = self.const("float", f"{lid}_bf", bf)
        self.consts.append(
            f"static const tinyaot_float_fc_t {lid}_fp = {{ {ORDER_CODE[p['fc_order']]}, "
            f"{p['k_block']}, {c_float(p['out_scale'])}, {p['out_zp']}, {p['act_min']}, "
            f"{p['act_max']}, {table}, {wp}, {bias} }};\n")
        scratch = self.scratch(n, "float")
        info["kernel"] = "tinyaot_fully_connected_f32_s8"
        self.kernels.add("tinyaot_dequantize_row_f32_s8")  # called by both paths
        if unrolled is None:
            self.call(info["kernel"], [str(rows), str(k), str(nout), f"&{lid}_fp",
                                       self.ptr(x.name), scratch, self.ptr(y.name)])
            return
        # the FPU build carries only the unrolled layer's arrays, the others only the loop's
        self.consts.append("#endif\n")
        self.weights_bytes -= 4 * (wf.size + nout)  # wp, bf: not in the FPU build
        info["kernel"] = f"{unrolled} (FPU; else tinyaot_fully_connected_f32_s8)"
        self.kernels.add("tinyaot_fully_connected_f32_s8")
        self.body += [f"#ifdef {fu.GUARD_MACRO}",
                      f"    tinyaot_dequantize_row_f32_s8({self.ptr(x.name)}, {k}, {table}, "
                      f"{scratch});",
                      f"    {unrolled}({scratch}, {self.ptr(y.name)});", "#else",
                      f"    if (tinyaot_fully_connected_f32_s8({rows}, {k}, {nout}, &{lid}_fp, "
                      f"{self.ptr(x.name)}, {scratch}, {self.ptr(y.name)}) != TINYAOT_OK) return -1;",
                      "#endif"]

    def unrolled_fc(self, lid, p, wf, bf, x_max, rows):
        """kernels/fc_float_unrolled.py under --optimize speed (not with --integrity,
        whose digest lists one set of arrays): emits the unrolled layer's stream and
        function inside `#ifdef TINYAOT_FC_UNROLLED ... #else` (the caller closes it
        after the loop kernel's arrays) and returns the function's name; None when
        the layer keeps the loop kernel."""
        if not (self.unroll_fc and self.optimize == "speed"
                and fu.eligible(p["fc_order"], rows, wf)):
            return None
        u = fu.unroll_fc(wf, bf, x_max, p["out_scale"], p["out_zp"],
                         p["act_min"], p["act_max"])
        if not self.unroll_guard:
            self.consts.append(fu.GUARD_C)
            self.unroll_guard = True
        self.consts.append(f"#ifdef {fu.GUARD_MACRO}\n")
        stream = self.const("float", f"{lid}_wu", u.stream, align=8)
        fname = fu.function_name(lid)
        self.consts.append(fu.c_function(fname, u, p["out_scale"], stream))
        self.consts.append("#else\n")
        return fname

    def emit_fast(self, lid, n, p, info, dims, w, rows=None):
        """A layer on the fast kernels (passes/kernel_select.py, kernels/fast_pack.py)."""
        from ..kernels.fast_pack import conv_gemm_weights, pack_depthwise, pack_gemm, pack_gemm_fixed
        from ..kernels.ort_requant_fixed import fc_fixed_requant
        if "mult" in p and np.any(np.asarray(p["mult"]) < 0):
            raise NotImplementedError("fast kernels need non-negative multipliers")
        kind = n.attrs["fast_kernel"]
        # fc: tinyaot_fully_connected_fast_s8 keeps the float scales (not its records),
        # or under ort reads an exact fixed-point requantization from its weights
        fixed = fc_fixed_requant(p, w.data) if kind == "fc" else None
        q = None if fixed is not None else self.requant(lid, p, fast=True, float_records=kind != "fc")
        x, y = n.inputs[0], n.outputs[0]
        if kind == "depthwise":
            wt = w.data[:, 0].transpose(1, 2, 0)  # [k_h][k_w][c]
            filt = self.const("int32_t", f"{lid}_wp", pack_depthwise(wt.reshape(-1, wt.shape[-1])),
                              align=8)
            kernel = "tinyaot_depthwise_conv_fast_s8"
            args = [dims, q, self.ptr(x), filt, self.ptr(y)]
        else:
            scratch = self.scratch(n, "uint32_t")
            if kind == "conv":
                filt = self.const("int32_t", f"{lid}_wp", pack_gemm(conv_gemm_weights(w.data)),
                                  align=8)
                kernel = "tinyaot_convolve_fast_s8"
                args = [dims, q, self.ptr(x), filt, scratch, self.ptr(y)]
            else:
                nout, k = w.shape
                if fixed is None:
                    filt = self.const("int32_t", f"{lid}_wp", pack_gemm(w.data, 4), align=8)
                else:  # the requantization inline in the weight stream, q without arrays
                    filt = self.const("int32_t", f"{lid}_wp", pack_gemm_fixed(w.data, fixed), align=8)
                    self.consts.append(
                        f"static const tinyaot_requant_t {lid}_q = {{ {p['in_zp']}, {p['out_zp']}, "
                        f"{p['act_min']}, {p['act_max']}, NULL, NULL, NULL, NULL, NULL, 0.0f, NULL }};\n")
                    q = f"&{lid}_q"
                    info["requant"] = "ort fixed-point (SMMLAR)"
                kernel = "tinyaot_fully_connected_fast_s8"
                args = [str(rows), str(k), str(nout), q, self.ptr(x), filt, scratch, self.ptr(y)]
        info["kernel"] = kernel
        self.call(kernel, args)

def _float_bias(g, n):
    b = n.inputs[2] if len(n.inputs) > 2 else None
    w = g.tensors[n.inputs[1]]
    if not b:
        return np.zeros(w.shape[0], dtype=np.float32)
    bt = g.tensors[b]
    scale = np.broadcast_to(bt.q.scale.astype(np.float32), bt.data.shape)
    return (bt.data.astype(np.float32) * scale).astype(np.float32)


_HOOK_DEFAULTS = """/* Debug hooks (tinyaot validate / profile): empty unless a build defines
 * TINYAOT_HOOKS_HEADER, a header that defines them. */
#ifdef TINYAOT_HOOKS_HEADER
#include TINYAOT_HOOKS_HEADER
#endif
#ifndef TINYAOT_TRACE
#define TINYAOT_TRACE(layer, ptr, bytes) ((void)0)
#endif
#ifndef TINYAOT_PROFILE
#define TINYAOT_PROFILE(layer) ((void)0)
#endif
"""


def emit_c(g: Graph, plan, params, numerics, name=None, hooks=False, optimize="speed",
           unroll_fc=True) -> CModule:
    """hooks: after each layer i, emit TINYAOT_PROFILE(i) and
    TINYAOT_TRACE(i, output pointer, output bytes) (empty macros by default).
    unroll_fc: eligible float FC layers as weight-specialized straight-line code
    on FPU targets (kernels/fc_float_unrolled.py)."""
    name = c_ident(name or g.name)
    if len(g.inputs) != 1 or len(g.outputs) != 1:
        raise NotImplementedError("exactly one input and one output are supported")
    em = _Emitter(g, plan, params, numerics, name, optimize, unroll_fc)
    for i, n in enumerate(g.nodes):
        em.emit_node(i, n)
        if hooks:
            out = g.tensors[n.outputs[0]]
            em.body.append(f"    TINYAOT_PROFILE({i});")
            em.body.append(f"    TINYAOT_TRACE({i}, (const void *){em.ptr(out.name)}, {out.nbytes}u);")
        em.body.extend(poison_after(plan, i))
    xin = g.tensors[g.inputs[0]]
    xout = g.tensors[g.outputs[0]]
    up = name.upper()
    s_in, zp_in = xin.q.scalar() if xin.q is not None else (np.float32(1.0), 0)
    s_out, zp_out = xout.q.scalar() if xout.q is not None else (np.float32(1.0), 0)
    guard = f"TINYAOT_{up}_H"
    header = f"""/* Generated by tinyaot {__version__} from {_basename(g.source)}. Do not edit.
 * numerics: {numerics}; optimize: {optimize}; arena: {plan.size} bytes (static, inside {name}.c).
 * input  '{g.inputs[0]}': {xin.dtype} {list(xin.shape)}, row-major in ONNX axis order.
 * output '{g.outputs[0]}': {xout.dtype} {list(xout.shape)}, row-major in ONNX axis order.
 * real value = scale * (q - zero_point). */
#ifndef {guard}
#define {guard}

#include <stdint.h>

#ifdef __cplusplus
extern "C" {{
#endif

#define {up}_ARENA_SIZE {plan.size}u
#define {up}_INPUT_SIZE {xin.size}u
#define {up}_OUTPUT_SIZE {xout.size}u
#define {up}_INPUT_SCALE {c_float(s_in)}
#define {up}_INPUT_ZERO_POINT ({zp_in})
#define {up}_OUTPUT_SCALE {c_float(s_out)}
#define {up}_OUTPUT_ZERO_POINT ({zp_out})

{header_api(g, plan, name, up)}
#ifdef __cplusplus
}}
#endif

#endif
"""
    arena_decl = (f"static int8_t {name}_arena[{max(plan.size, 8)}] __attribute__((aligned(16)));\n"
                  f"#define ARENA {name}_arena\n")
    # arena I/O: <name>_input()/_output() point into the arena even with no layer
    uses_arena = plan.io_buffers == "arena" or any("ARENA" in line for line in em.body)
    src = [f"/* Generated by tinyaot {__version__} from {_basename(g.source)}. Do not edit. */",
           f'#include "{name}.h"', "", "#include <stddef.h>", "", '#include "tinyaot_kernels.h"',
           '#include "tinyaot_fast_kernels.h"', ""]
    if hooks:
        src.append(_HOOK_DEFAULTS)
    if uses_arena:
        src.append(arena_decl)
    src.extend(em.consts)
    if uses_arena:
        src.append(POISON_DEFAULTS)
    keep = [plan.where[g.inputs[0]]] if plan.io_buffers == "arena" else []
    prologue = poison_prologue(plan, keep) if uses_arena else []
    src.extend(run_functions(g, plan, name, up, em.body, prologue))
    from .io_types import apply_io_types, boundary_comment
    header = boundary_comment(g, apply_io_types(g, name, header))
    return CModule(name, apply_io_types(g, name, "\n".join(src)), header, em.weights_bytes,
                   em.layers, em.kernels, em.blobs)


def _basename(path):
    import os
    return os.path.basename(str(path)) if path else "model"


def emit_harness_data(name, inputs: np.ndarray, input_size, output_size) -> str:
    """harness_data.c for boards/common/harness_main.c: all inputs in flash."""
    flat = np.asarray(inputs, dtype=np.int8).reshape(len(inputs), -1)
    up = name.upper()
    return "\n".join([
        "/* Generated by tinyaot: golden inputs for the verification firmware. */",
        "#include <stddef.h>",
        "#include <stdint.h>",
        f'#include "{name}.h"',
        '#include "harness.h"',
        "",
        f"const uint32_t tinyaot_harness_num_inputs = {len(flat)}u;",
        f"const uint32_t tinyaot_harness_input_size = {input_size}u;",
        f"const uint32_t tinyaot_harness_output_size = {output_size}u;",
        c_array("int8_t", "tinyaot_harness_inputs", flat, per_line=32).replace(
            "static const", "const", 1),
        "",
        f"#if defined({up}_IO_BUFFERS_IN_ARENA) && {up}_IO_BUFFERS_IN_ARENA",
        "/* The input and output live in the model's arena: copy them in and out",
        " * outside the timed call (harness.h), which is the inference alone. */",
        "#include <string.h>",
        "",
        "void tinyaot_harness_load(const int8_t *input)",
        "{",
        f"    memcpy((void *){name}_input(), input, {up}_INPUT_SIZE);",
        "}",
        "",
        "void tinyaot_harness_store(int8_t *output)",
        "{",
        f"    memcpy(output, (const void *){name}_output(), {up}_OUTPUT_SIZE);",
        "}",
        "",
        "int tinyaot_harness_run(const int8_t *input, int8_t *output)",
        "{",
        "    (void)input;",
        "    (void)output;",
        f"    return {name}_invoke();",
        "}",
        "#else",
        "int tinyaot_harness_run(const int8_t *input, int8_t *output)",
        "{",
        f"    return {name}_run((const void *)input, (void *)output);",
        "}",
        "#endif",
        "",
    ])
