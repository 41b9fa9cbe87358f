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
from ..kernels.c_format import c_array, c_float, c_ident
from ..kernels.specialize import merge as merge_spec
from . import io_api
from .io_buffers import header_api, run_functions
from ..planner.arena import scratch_name, staged_name
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
    # the fast kernels' specializations the calls use (kernels/specialize.py): {mask: bits}
    spec: dict = field(default_factory=dict)


def _dims4(shape):
    s = list(shape)
    while len(s) < 4:
        s.insert(0, 1)
    return s


_CTYPE_BYTES = {"int8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4,
                "float": 4}


class _Emitter:
    def __init__(self, g: Graph, plan, params, numerics, name, optimize="speed", unroll_fc=True,
                 external=None):
        self.g = g
        # --io-buffers user: {id(block): the API argument it is} (io_api.external_args)
        self.external = external or {}
        self.unroll_fc = unroll_fc  # kernels/fc_float_unrolled.py on FPU targets
        self.unroll_guard = False
        self.optimize = optimize  # size: tinyaot_add_s8 without tables (passes/kernel_select.py)
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
        self.spec = {}  # kernels/specialize.py: {mask: bits} of the fast kernels' calls
        self.staged = {}  # node name -> its _Staging (planner/staged_weights.py)

    def const(self, ctype, cname, values, align=None):
        arr = np.asarray(values)
        self.consts.append(c_array(ctype, cname, arr, align=align))
        self.blobs.append((cname, ctype, arr))
        self.weights_bytes += arr.size * _CTYPE_BYTES[ctype]
        return cname

    def const_once(self, ctype, cname, values, align=None):
        """const(), but a constant read by several layers (a float constant two float
        fallback nodes share) is defined once."""
        if cname in {b[0] for b in self.blobs}:
            return cname
        return self.const(ctype, cname, values, align=align)

    def ptr(self, tensor, const=False):
        b = self.plan.where[tensor]
        if b.external is not None:
            return self.external[id(b)]
        return f"(ARENA + {b.offset})"

    def scratch(self, n, ctype=None):
        """C expression of node n's scratch block in the arena (planner: Node.attrs
        ["scratch_bytes"]), as a `ctype *` when ctype is given."""
        where = f"(ARENA + {self.plan.where[scratch_name(n)].offset})"
        return where if ctype is None else f"({ctype} *)(void *){where}"

    def staging(self, n):
        """The copier into node n's staged-weights block (planner/staged_weights.py); with no
        block (the planner gave it none) its copy() hands back the flash array itself."""
        self.staged[n.name] = _Staging(self, self.plan.where.get(staged_name(n)))
        return self.staged[n.name]

    def specialize(self, uses):
        """Record what a fast kernel call needs compiled (kernels/specialize.py)."""
        merge_spec(self.spec, uses)

    def call(self, kernel, args):
        self.kernels.add(kernel)
        self.body.append(f"    if ({kernel}({', '.join(args)}) != TINYAOT_OK) return -1;")

    def emit_node(self, idx, n):
        lid = f"l{idx}"
        p = self.params.get(n.name, {})
        op = n.op
        info = {"index": idx, "op": op, "name": n.name, "kernel": None, "macs": 0,
                "weight_bytes": 0}
        before = self.weights_bytes
        ops.get(op).emit(self, lid, n, p, info)  # the operator's module (codegen/ops/)
        info["weight_bytes"] = self.weights_bytes - before
        st = self.staged.get(n.name)  # planner/staged_weights.py
        if st is not None and st.used:  # (none: an onnxruntime add its tables cannot serve)
            info["staged_bytes"] = st.used
        self.layers.append(info)


class _Staging:
    """Copies a layer's constants into its staged block (None: the layer has none), one
    after another (8-aligned), before its kernel call; the kernel is then given the copies."""

    def __init__(self, em, block):
        self.em, self.block, self.used = em, block, 0

    def _array(self, cname):
        """(C element type, bytes, 8-aligned bytes) of const array `cname`."""
        ctype, arr = next((t, a) for name, t, a in self.em.blobs if name == cname)
        nbytes = arr.size * _CTYPE_BYTES[ctype]
        return ctype, nbytes, -(-nbytes // 8) * 8

    def fits(self, cname):
        """Is there room left in the block for const array `cname`?"""
        return self.block is not None and self.used + self._array(cname)[2] <= self.block.size

    def copy(self, cname):
        """The C expression the kernel reads const array `cname` through: the copy this
        emits into the block, typed as the array's elements; `cname` itself with no block."""
        if self.block is None:
            return cname
        ctype, _, padded = self._array(cname)
        off = self.block.offset + self.used
        self.used += padded
        if self.used > self.block.size:
            raise AssertionError(f"{cname}: {self.used} B staged in a block of {self.block.size}")
        self.em.body.append(f"    __builtin_memcpy(ARENA + {off}, {cname}, sizeof {cname});")
        return f"(const {ctype} *)(const void *)(ARENA + {off})"


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
           unroll_fc=True, io="model") -> CModule:
    """hooks: after each layer i, emit TINYAOT_PROFILE(i) and
    TINYAOT_TRACE(i, output pointer, output bytes) (empty macros by default).
    unroll_fc: eligible float FC layers as weight-specialized straight-line code
    on FPU targets (kernels/fc_float_unrolled.py).
    io: the API's ends (io_api.py): "model" as the model declares them, "int8" all
    quantized, "float" as declared plus <name>_run_f32 with every end float."""
    name = c_ident(name or g.name)
    ins, outs = io_api.api_ends(g, io)
    external = io_api.external_args(plan, ins, outs) if plan.io_buffers != "arena" else None
    em = _Emitter(g, plan, params, numerics, name, optimize, unroll_fc, external)
    for i, n in enumerate(g.nodes):
        em.emit_node(i, n)
        if hooks:
            out = g.tensors[n.outputs[0]]
            em.body.append(f"    TINYAOT_PROFILE({i});")
            em.body.append(f"    TINYAOT_TRACE({i}, (const void *){em.ptr(out.name)}, {out.nbytes}u);")
        em.body.extend(poison_after(plan, i))
    if not io_api.is_plain(ins, outs):
        return _emit_ends(g, plan, numerics, name, hooks, optimize, em, ins, outs, io)
    module = _emit_plain(g, plan, numerics, name, hooks, optimize, em)
    if io == "float":  # <name>_run_f32 around <name>_run (backend/float_io.py)
        from .float_io import add_float_io
        add_float_io(module, g)
    return module


def _source_head(g, name, hooks, uses_arena, arena_decl, em):
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
    return src


def _arena_decl(name, plan):
    return (f"static int8_t {name}_arena[{max(plan.size, 8)}] __attribute__((aligned(16)));\n"
            f"#define ARENA {name}_arena\n")


def _emit_ends(g, plan, numerics, name, hooks, optimize, em, ins, outs, io):
    """A model that is not plain (io_api.py): several inputs / outputs, or float ends."""
    up = name.upper()
    header = io_api.header_text(g, plan, name, numerics, optimize, ins, outs, __version__,
                                _basename(g.source))
    uses_arena = plan.io_buffers == "arena" or any("ARENA" in line for line in em.body)
    src = _source_head(g, name, hooks, uses_arena, _arena_decl(name, plan), em)
    src.append(io_api.quantize_consts(name, ins + outs, numerics))
    keep = [plan.where[e.tensor] for e in ins] if plan.io_buffers == "arena" else []
    prologue = poison_prologue(plan, keep) if uses_arena else []
    src.extend(io_api.source_functions(g, plan, name, up, em.body, prologue, ins, outs))
    module = CModule(name, "\n".join(src), header, em.weights_bytes, em.layers,
                     em.kernels | io_api.kernels_used(ins, outs), em.blobs, em.spec)
    if io == "float":
        from .float_io import add_run_f32
        add_run_f32(module, g, plan, numerics, ins, outs)
    return module


def _emit_plain(g, plan, numerics, name, hooks, optimize, em):
    """One input, one output, both quantized in the API: the C of every earlier version."""
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
{_output_bytes(up, xout)}#define {up}_INPUT_SCALE {c_float(s_in)}
#define {up}_INPUT_ZERO_POINT ({zp_in})
#define {up}_OUTPUT_SCALE {c_float(s_out)}
#define {up}_OUTPUT_ZERO_POINT ({zp_out})

{header_api(g, plan, name, up)}
#ifdef __cplusplus
}}
#endif

#endif
"""
    # arena I/O: <name>_input()/_output() point into the arena even with no layer
    uses_arena = plan.io_buffers == "arena" or any("ARENA" in line for line in em.body)
    src = _source_head(g, name, hooks, uses_arena, _arena_decl(name, plan), em)
    keep = [plan.where[g.inputs[0]]] if plan.io_buffers == "arena" else []
    prologue = poison_prologue(plan, keep) if uses_arena else []
    src.extend(run_functions(g, plan, name, up, em.body, prologue))
    from .io_types import apply_io_types, boundary_comment
    header = boundary_comment(g, apply_io_types(g, name, header))
    return CModule(name, apply_io_types(g, name, "\n".join(src)), header, em.weights_bytes,
                   em.layers, em.kernels, em.blobs, em.spec)


def _output_bytes(up, xout):
    """A float32 output (float fallback) also gives its size in bytes."""
    if xout.dtype != "float32":
        return ""
    return f"#define {up}_OUTPUT_BYTES {xout.nbytes}u\n"


def _basename(path):
    import os
    return os.path.basename(str(path)) if path else "model"
