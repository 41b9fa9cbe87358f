"""The generated API of a model's inputs and outputs: each end as the model declares it.

The integer graph reads and writes quantized tensors (int8, or uint8 at a uint8 end). Each
graph input and output is an `End`, typed as the model declares it (ir.Declared): a float
input with a QuantizeLinear behind it is taken as floats and quantized by the generated code,
a float output after a final DequantizeLinear is returned as floats; the numerics decides how
(QuantizeLinear / DequantizeLinear under `ort`, TFLite's QUANTIZE / DEQUANTIZE under `tflite`:
runtime_c/src/quantize/tinyaot_quantize_s8.c).

Names: a side (inputs, outputs) with one end keeps the plain names (`<name>_input()`,
`<NAME>_INPUT_SIZE`, argument `input`); with several, its k-th end is `<name>_input<k>()`,
`<NAME>_INPUT<k>_SIZE`, argument `input<k>`, in the model's order.

    --io-buffers arena (default)      --io-buffers user
    <name>_input[k]() / _output[k]()  (the quantized tensors in the arena)
    <name>_invoke()
    <name>_run(declared types)        <name>_run(declared types)
    <name>_run_quantized(...)         <name>_run_quantized(...)   (only with a float end)

`<name>_run` takes and returns every end as the model declares it. A model with a float end
also has `<name>_run_quantized`, the same inference on the quantized tensors: in the arena
mode the float `<name>_run` quantizes straight into the arena (no buffer of its own), in the
user mode it quantizes into a static buffer per float end and calls `_run_quantized`. `--io
int8` gives every end quantized (the API before float ends existed), `--io float` adds
`<name>_run_f32` with every end float (backend/float_io.py).

A model with one input and one output and no float end in its API is "plain": its C is
what c_emitter / io_buffers / io_types have always written, byte for byte; everything here
writes the C of the other models.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import TinyAotError
from ..kernels.c_format import c_float, c_struct

API_MODES = ("model", "int8", "float")  # --io


@dataclass(frozen=True)
class QuantizeParams:  # tinyaot_quantize_params_t
    CTYPE: ClassVar[str] = "tinyaot_quantize_params_t"
    scale: float
    zero_point: int
    qmin: int
    qmax: int
    rounding: int  # 0: half to even (onnxruntime), 1: half away from zero (TFLite)


ROUNDING = {"ort": 0, "tflite": 1}


@dataclass(frozen=True)
class End:
    """One graph input or output in the generated API."""
    side: str  # "input" / "output"
    index: int
    suffix: str  # "" when the side has one end, else str(index)
    tensor: str  # the IR (quantized) tensor
    name: str  # the model's name for it
    declared: str  # what <name>_run takes or returns: "float32", "int8", "uint8"
    qtype: str  # the IR tensor: "int8" or "uint8", or "float32" (float fallback output)
    shape: tuple
    size: int
    scale: np.float32
    zero_point: int

    @property
    def is_float(self) -> bool:
        """A float end the API converts (quantizes / dequantizes the integer tensor)."""
        return self.declared == "float32" and not self.native_float

    @property
    def native_float(self) -> bool:
        """The IR tensor is float32 itself (a float fallback output): passed as it is."""
        return self.qtype == "float32"

    @property
    def arg(self) -> str:
        return f"{self.side}{self.suffix}"

    def macro(self, up) -> str:
        return f"{up}_{self.side.upper()}{self.suffix}"

    def bytes_expr(self, up) -> str:
        """C expression of the IR tensor's size in bytes (<X>_SIZE counts elements)."""
        return f"{self.macro(up)}_SIZE * 4u" if self.native_float else f"{self.macro(up)}_SIZE"

    @property
    def c_qtype(self) -> str:
        return {"uint8": "uint8_t", "float32": "float"}.get(self.qtype, "int8_t")

    @property
    def c_type(self) -> str:
        return "float" if self.is_float else self.c_qtype

    @property
    def declared_bytes(self) -> int:
        return self.size * (4 if self.declared == "float32" else 1)

    def quantize_params(self, rounding) -> QuantizeParams:
        lo, hi = (0, 255) if self.qtype == "uint8" else (-128, 127)
        return QuantizeParams(self.scale, self.zero_point, lo, hi, rounding)


def api_ends(g, io="model"):
    """(inputs, outputs): an End per graph input / output. io "int8": every end quantized."""
    if io not in API_MODES:
        raise TinyAotError(f"unknown --io '{io}' (choose from {', '.join(API_MODES)})")
    din, dout = g.declared_ends()

    def ends(side, names, declared):
        out = []
        for k, (t_name, d) in enumerate(zip(names, declared)):
            t = g.tensors[t_name]
            qtype = t.dtype if t.dtype in ("uint8", "float32") else "int8"
            s, zp = (t.q.scalar() if t.q is not None else (np.float32(1.0), 0))
            typ = d.dtype if (d.is_float and io != "int8") else qtype
            out.append(End(side, k, "" if len(names) == 1 else str(k), t_name, d.name, typ,
                           qtype, tuple(t.shape), t.size, np.float32(s), int(zp)))
        return out

    return ends("input", g.inputs, din), ends("output", g.outputs, dout)


def is_plain(ins, outs) -> bool:
    """One input, one output, both quantized in the API: the C every earlier version wrote."""
    return len(ins) == 1 and len(outs) == 1 and not any(e.is_float for e in ins + outs)


def has_float(ins, outs) -> bool:
    return any(e.is_float for e in ins + outs)


def core_name(name, ins, outs) -> str:
    """The function running the inference on the quantized tensors' pointers."""
    return f"{name}_run_quantized" if has_float(ins, outs) else f"{name}_run"


def external_args(plan, ins, outs):
    """--io-buffers user: {id(block): C argument} of the blocks in the caller's buffers.
    A block holding an output is written through that output (the first of them); one
    holding only an input is read through it."""
    home = {}
    for e in outs + ins:
        home.setdefault(id(plan.where[e.tensor]), e.arg)
    return home


def _params(ends, quantized=False, prefix=""):
    return ", ".join(
        f"{'const ' if e.side == 'input' else ''}{e.c_qtype if quantized else e.c_type} "
        f"*{prefix}{e.arg}" for e in ends)


def prototype(fn, ins, outs, quantized=False):
    return f"int {fn}({_params(ins + outs, quantized)})"


# ---- the header ---------------------------------------------------------------------

def _comment(text, close=True, lead="/* "):
    """A C comment wrapped at 95 columns (paragraphs separated by blank lines in text)."""
    out = []
    for k, para in enumerate(text.split("\n\n")):
        first = lead if k == 0 else " * "
        out += textwrap.wrap(para, 95, initial_indent=first, subsequent_indent=" * ",
                             break_long_words=False, break_on_hyphens=False)
    if close:
        out[-1] += " */"
    return "\n".join(out) + "\n"


def _end_comment(name, e, numerics):
    label = f"{e.side:<6}" if not e.suffix else f"{e.side} {e.suffix}"
    q = f"{e.qtype}, scale {float(e.scale):.9g}, zero point {e.zero_point}"
    if not e.is_float:
        return f"{label} '{e.name}': {e.qtype} {list(e.shape)}; {q}."
    how = ({"ort": "QuantizeLinear", "tflite": "TFLite's QUANTIZE"} if e.side == "input" else
           {"ort": "DequantizeLinear", "tflite": "TFLite's DEQUANTIZE"})[numerics]
    verb = "quantizes" if e.side == "input" else "dequantizes"
    return (f"{label} '{e.name}': float32 {list(e.shape)}; {q} inside ({name}_run {verb} it as "
            f"{how} does).")


def header_text(g, plan, name, numerics, optimize, ins, outs, version, source):
    up = name.upper()
    top = (f"Generated by tinyaot {version} from {source}. Do not edit.\n\n"
           f"numerics: {numerics}; optimize: {optimize}; arena: {plan.size} bytes (static, inside "
           f"{name}.c). Tensors are row-major in ONNX axis order; real value = scale * (q - "
           f"zero_point).\n\n" + "\n\n".join(_end_comment(name, e, numerics) for e in ins + outs))
    guard = f"TINYAOT_{up}_H"
    macros = [f"#define {up}_ARENA_SIZE {plan.size}u",
              f"#define {up}_NUM_INPUTS {len(ins)}u", f"#define {up}_NUM_OUTPUTS {len(outs)}u"]
    macros += [f"#define {e.macro(up)}_SIZE {e.size}u" for e in ins + outs]
    for e in ins + outs:
        macros += [f"#define {e.macro(up)}_SCALE {c_float(e.scale)}",
                   f"#define {e.macro(up)}_ZERO_POINT ({e.zero_point})"]
    return (_comment(top) + f"#ifndef {guard}\n#define {guard}\n\n#include <stdint.h>\n\n"
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
            "/* <X>_SIZE: elements, one byte each in the quantized tensor (a float end's\n"
            " * <name>_run argument holds <X>_SIZE floats). */\n" + "\n".join(macros) + "\n\n"
            + _header_api(plan, name, up, ins, outs)
            + "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n")


def _list(words):
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _header_api(plan, name, up, ins, outs):
    floats = has_float(ins, outs)
    run_doc = (f"One inference, each input and output as the model declares it: reads "
               f"{_list([f'{e.macro(up)}_SIZE values from {e.arg}' for e in ins])}, writes "
               f"{_list([f'{e.macro(up)}_SIZE values to {e.arg}' for e in outs])}"
               + ("; the float ends are quantized and dequantized here" if floats else ""))
    if plan.io_buffers != "arena":
        text = _comment(f"I/O buffers: user (--io-buffers user). The quantized inputs and "
                        f"outputs are the caller's buffers, passed to "
                        f"{core_name(name, ins, outs)}; the arena holds only intermediate "
                        "tensors.") + f"#define {up}_IO_BUFFERS_IN_ARENA 0\n\n"
        if not floats:
            return (text + _comment(run_doc + ". Returns 0 on success. Not reentrant (one "
                                    "static arena).") + prototype(f"{name}_run", ins, outs) + ";\n")
        nbytes = sum(e.size for e in ins + outs if e.is_float)
        return (text + _comment(run_doc + f", through {nbytes} bytes of static buffers besides "
                                "the arena (the float ends' quantized values). Returns 0 on "
                                "success. Not reentrant (one static arena).")
                + prototype(f"{name}_run", ins, outs) + ";\n"
                + _comment("The same inference on the quantized tensors, in the caller's "
                           "buffers.")
                + prototype(f"{name}_run_quantized", ins, outs, quantized=True) + ";\n")
    where = _list([f"{e.arg} at offset {plan.where[e.tensor].offset}" for e in ins + outs])
    text = _comment(f"I/O buffers: arena (the default). The quantized inputs and outputs live in "
                    f"the arena ({where}), inside {up}_ARENA_SIZE: {name}_run needs no buffers of "
                    f"its own. With no copy at all: write each input's quantized values at "
                    f"{name}_input{'' if len(ins) == 1 else '<k>'}(), call {name}_invoke() (it "
                    f"overwrites the inputs) and read each output at "
                    f"{name}_output{'' if len(outs) == 1 else '<k>'}().")
    text += f"#define {up}_IO_BUFFERS_IN_ARENA 1\n\n"
    for e in ins:
        text += (_comment(f"Where to write the {e.macro(up)}_SIZE quantized values of {e.arg} "
                          f"before {name}_invoke().") + f"int8_t *{name}_{e.arg}(void);\n")
    for e in outs:
        text += (_comment(f"Where the {e.macro(up)}_SIZE quantized values of {e.arg} are after "
                          f"{name}_invoke(); valid until the next input is written.")
                 + f"const int8_t *{name}_{e.arg}(void);\n")
    text += (_comment("Runs one inference on the arena-resident inputs. Returns 0 on success. "
                      "Not reentrant (one static arena).") + f"int {name}_invoke(void);\n")
    text += (_comment(run_doc + "; a NULL pointer skips its end. Returns 0 on success.")
             + prototype(f"{name}_run", ins, outs) + ";\n")
    if floats:
        text += (_comment("The same with the quantized values, copied in and out (a NULL "
                          "pointer skips its end).")
                 + prototype(f"{name}_run_quantized", ins, outs, quantized=True) + ";\n")
    return text


# ---- the C source --------------------------------------------------------------------

def _qparams_name(name, e):
    return f"{name}_{e.arg}_q"


def quantize_consts(name, ends, numerics):
    """`static const tinyaot_quantize_params_t` of the float ends."""
    return "".join(c_struct(_qparams_name(name, e), e.quantize_params(ROUNDING[numerics]))
                   for e in ends if e.is_float)


def _convert(name, up, e, ptr):
    """The call quantizing float input e into ptr / dequantizing ptr into float output e."""
    if e.side == "input":
        return (f"tinyaot_quantize_s8({e.macro(up)}_SIZE, &{_qparams_name(name, e)}, {e.arg}, "
                f"(int8_t *)(void *){ptr})")
    return (f"tinyaot_dequantize_s8({e.macro(up)}_SIZE, &{_qparams_name(name, e)}, "
            f"(const int8_t *)(const void *){ptr}, {e.arg})")


def _checked(call, cond=None):
    return f"    if ({cond + ' && ' if cond else ''}{call} != TINYAOT_OK) return -1;"


def source_functions(g, plan, name, up, body, prologue, ins, outs):
    """The C definitions of the API functions (a model that is not plain)."""
    if plan.io_buffers != "arena":
        return _user_functions(plan, name, up, body, prologue, ins, outs)
    off = {e.arg: plan.where[e.tensor].offset for e in ins + outs}
    fns = [f"int8_t *{name}_{e.arg}(void)\n{{\n    return ARENA + {off[e.arg]};\n}}\n" for e in ins]
    fns += [f"const int8_t *{name}_{e.arg}(void)\n{{\n    return ARENA + {off[e.arg]};\n}}\n"
            for e in outs]
    fns.append("\n".join([f"int {name}_invoke(void)\n{{"] + prologue + body
                         + ["    return 0;\n}\n"]))

    def step(e, quantized):
        """Copy (or, at a float end of <name>_run, quantize / dequantize) one end."""
        if e.is_float and not quantized:
            return _checked(_convert(name, up, e, f"(ARENA + {off[e.arg]})"), f"{e.arg} != NULL")
        copy = (f"__builtin_memcpy(ARENA + {off[e.arg]}, {e.arg}, {e.bytes_expr(up)});"
                if e.side == "input" else
                f"__builtin_memcpy({e.arg}, ARENA + {off[e.arg]}, {e.bytes_expr(up)});")
        return f"    if ({e.arg} != NULL) {copy}"

    def run(fn, quantized):
        lines = [prototype(fn, ins, outs, quantized) + "\n{"]
        lines += [step(e, quantized) for e in ins]
        lines.append(f"    if ({name}_invoke() != 0) return -1;")
        lines += [step(e, quantized) for e in outs]
        return "\n".join(lines + ["    return 0;\n}\n"])

    fns.append(run(f"{name}_run", False))
    if has_float(ins, outs):
        fns.append(run(f"{name}_run_quantized", True))
    return fns


def _user_functions(plan, name, up, body, prologue, ins, outs):
    home = external_args(plan, ins, outs)
    core = core_name(name, ins, outs)
    lines = [prototype(core, ins, outs, quantized=True) + "\n{"]
    lines += [f"    (void){e.arg};" for e in ins + outs]
    for e in ins:  # an input the model hands on unchanged: its bytes are the output's
        h = home[id(plan.where[e.tensor])]
        if h != e.arg:
            lines.append(f"    __builtin_memmove({h}, {e.arg}, {e.bytes_expr(up)});")
    lines += prologue + body
    for e in outs:  # the same tensor given as several outputs
        h = home[id(plan.where[e.tensor])]
        if h != e.arg:
            lines.append(f"    __builtin_memcpy({e.arg}, {h}, {e.bytes_expr(up)});")
    fns = ["\n".join(lines + ["    return 0;\n}\n"])]
    if core == f"{name}_run":
        return fns
    bufs = [f"static {e.c_qtype} {name}_q_{e.arg}[{e.size}];" for e in ins + outs if e.is_float]
    run = [prototype(f"{name}_run", ins, outs) + "\n{"]
    run += [_checked(_convert(name, up, e, f"{name}_q_{e.arg}")) for e in ins if e.is_float]
    args = ", ".join(f"{name}_q_{e.arg}" if e.is_float else e.arg for e in ins + outs)
    run.append(f"    if ({core}({args}) != 0) return -1;")
    run += [_checked(_convert(name, up, e, f"{name}_q_{e.arg}")) for e in outs if e.is_float]
    fns.append("\n".join(bufs) + "\n\n" + "\n".join(run + ["    return 0;\n}\n"]))
    return fns


def kernels_used(ins, outs):
    used = set()
    if any(e.is_float for e in ins):
        used.add("tinyaot_quantize_s8")
    if any(e.is_float for e in outs):
        used.add("tinyaot_dequantize_s8")
    return used


def io_report(ins, outs):
    """report.json's view of each end."""
    def one(e):
        return {"name": e.tensor, "onnx_name": e.name, "dtype": e.qtype, "shape": list(e.shape),
                "scale": float(e.scale), "zero_point": e.zero_point, "api_type": e.declared,
                "c_name": e.arg}
    return [one(e) for e in ins], [one(e) for e in outs]
