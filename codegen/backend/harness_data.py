"""harness_data.c: a model's inputs in flash for the verification firmware, and their layout.

boards/common/harness_main.c runs `tinyaot_harness_run(record, output)` on every input record
and prints the output record as hex. A record holds each graph input (output) in turn, in
the form the API function the harness calls takes it (`Layout.entry`):

  "quantized"  the quantized tensors: `<name>_input<k>()` / `_invoke()` / `_output<k>()` in
               the arena mode (copied in and out outside the timed call, so the count is the
               inference alone), `<name>_run` (or `_run_quantized`) in the user mode;
  "model"      each end as the model declares it, through `<name>_run` (a float end as
               float32: quantizing and dequantizing are part of the count).

With a float end every slot starts at a multiple of 4 bytes (so is every record); with
none the slots are packed, which for one input and one output is the layout every earlier
version used. The driver packs and unpacks records with the same Layout (pack_inputs,
unpack_outputs), so the Python side and the C side cannot disagree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.c_format import c_array
from .io_api import core_name, is_plain

ENTRIES = ("quantized", "model")


@dataclass(frozen=True)
class Slot:
    end: object  # io_api.End
    offset: int  # bytes into the record
    dtype: str  # numpy dtype of its values: float32, int8 or uint8

    @property
    def nbytes(self) -> int:
        return self.end.size * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class Layout:
    entry: str
    inputs: tuple
    outputs: tuple
    input_size: int  # bytes per input record
    output_size: int

    @property
    def plain(self) -> bool:
        return is_plain([s.end for s in self.inputs], [s.end for s in self.outputs]) and \
            self.entry == "quantized"


def _slots(ends, entry, align):
    slots, pos = [], 0
    for e in ends:
        dtype = "float32" if (entry == "model" and e.is_float) else e.qtype
        pos = (pos + align - 1) // align * align
        slots.append(Slot(e, pos, dtype))
        pos += slots[-1].nbytes
    return tuple(slots), (pos + align - 1) // align * align


def harness_layout(ins, outs, entry="quantized") -> Layout:
    """The record layout of the ends (io_api.api_ends) for the API form `entry`."""
    if entry not in ENTRIES:
        raise ValueError(f"entry must be one of {ENTRIES}, not {entry!r}")
    if not any(e.is_float for e in ins + outs):
        # with no float end both forms are the quantized tensors: the arena mode's
        # firmware then times <name>_invoke alone, not the copies of <name>_run
        entry = "quantized"
    align = 4 if entry == "model" and any(e.is_float for e in ins + outs) else 1
    si, n_in = _slots(ins, entry, align)
    so, n_out = _slots(outs, entry, align)
    return Layout(entry, si, so, n_in, n_out)


def pack_inputs(layout: Layout, arrays) -> np.ndarray:
    """Per input end an array (N, ...) of its slot's dtype -> records (N, input_size) int8."""
    n = len(arrays[0])
    rec = np.zeros((n, layout.input_size), dtype=np.uint8)
    for s, a in zip(layout.inputs, arrays):
        flat = np.ascontiguousarray(np.asarray(a, dtype=s.dtype).reshape(n, -1))
        rec[:, s.offset:s.offset + s.nbytes] = flat.view(np.uint8).reshape(n, -1)
    return rec.view(np.int8)


def unpack_outputs(layout: Layout, records) -> list:
    """Output records (N, output_size) bytes -> per output end (N, size) of its slot's dtype."""
    raw = np.ascontiguousarray(np.asarray(records).view(np.uint8).reshape(len(records), -1))
    out = []
    for s in layout.outputs:
        out.append(raw[:, s.offset:s.offset + s.nbytes].copy().view(np.dtype(s.dtype))
                   .reshape(len(raw), s.end.size))
    return out


def _ptr(base, s, const):
    return (f"({'const ' if const else ''}void *)({base} + {s.offset})" if s.offset
            else f"({'const ' if const else ''}void *){base}")


def harness_source(name, layout: Layout, records) -> str:
    """harness_data.c of a compiled model: its input records in flash, the output buffer
    and tinyaot_harness_run calling the API form layout.entry (harness.h)."""
    ins = [s.end for s in layout.inputs]
    outs = [s.end for s in layout.outputs]
    if layout.plain:  # a float32 output of the float fallback: its header's OUTPUT_BYTES
        return emit_harness_data(name, records, layout.input_size, layout.output_size,
                                 "OUTPUT_BYTES" if outs[0].native_float else "OUTPUT_SIZE")
    up = name.upper()
    head = _head(name, records, layout.input_size, layout.output_size, align=8)
    args = ", ".join([_ptr("input", s, True) for s in layout.inputs]
                     + [_ptr("output", s, False) for s in layout.outputs])
    if layout.entry == "model":
        return "\n".join(head + [
            "/* The inputs and outputs as the model declares them, through <name>_run (float",
            " * ends quantized and dequantized inside the timed call). */",
            "int tinyaot_harness_run(const int8_t *input, int8_t *output)", "{",
            f"    return {name}_run({args});", "}", ""])
    load = [f"    memcpy((void *){name}_{s.end.arg}(), {_ptr('input', s, True)}, "
            f"{s.end.bytes_expr(up)});" for s in layout.inputs]
    store = [f"    memcpy({_ptr('output', s, False)}, (const void *){name}_{s.end.arg}(), "
             f"{s.end.bytes_expr(up)});" for s in layout.outputs]
    return "\n".join(head + [
        f"#if defined({up}_IO_BUFFERS_IN_ARENA) && {up}_IO_BUFFERS_IN_ARENA",
        "/* The inputs and outputs live in the model's arena: copy them in and out",
        " * outside the timed call (harness.h), which is the inference alone. */",
        "#include <string.h>", "",
        "void tinyaot_harness_load(const int8_t *input)", "{", *load, "}", "",
        "void tinyaot_harness_store(int8_t *output)", "{", *store, "}", "",
        "int tinyaot_harness_run(const int8_t *input, int8_t *output)", "{",
        "    (void)input;", "    (void)output;", f"    return {name}_invoke();", "}",
        "#else",
        "int tinyaot_harness_run(const int8_t *input, int8_t *output)", "{",
        f"    return {core_name(name, ins, outs)}({args});", "}",
        "#endif", ""])


def _head(name, inputs, input_size, output_size, align=None):
    flat = np.asarray(inputs).view(np.int8).reshape(len(inputs), -1)
    return [
        "/* Generated by tinyaot: golden inputs for the verification firmware. */",
        "#include <stddef.h>",
        "#include <stdint.h>",
        f'#include "{name}.h"',
        '#include "harness.h"',
        "",
        f"const uint32_t tinyaot_harness_num_inputs = {len(flat)}u;",
        f"const uint32_t tinyaot_harness_input_size = {input_size}u;",
        f"const uint32_t tinyaot_harness_output_size = {output_size}u;",
        c_array("int8_t", "tinyaot_harness_inputs", flat, per_line=32, align=align).replace(
            "static const", "const", 1),
        "/* The output record (harness.h): the model's size, whatever it is. */",
        f"int8_t tinyaot_harness_output[{max(int(output_size), 1)}] __attribute__((aligned(8)));",
        f"const uint32_t tinyaot_harness_output_capacity = {max(int(output_size), 1)}u;",
        "",
    ]


def emit_harness_data(name, inputs: np.ndarray, input_size, output_size,
                      output_bytes_macro="OUTPUT_SIZE") -> str:
    """harness_data.c of a plain model (one quantized input and output; io_api.is_plain).
    output_size is in bytes; output_bytes_macro names the header's macro of that size
    (OUTPUT_BYTES for a float32 output)."""
    flat = np.asarray(inputs, dtype=np.int8).reshape(len(inputs), -1)
    up = name.upper()
    return "\n".join(_head(name, flat, input_size, output_size) + [
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
        f"    memcpy(output, (const void *){name}_output(), {up}_{output_bytes_macro});",
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
