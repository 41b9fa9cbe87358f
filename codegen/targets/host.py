"""Run a generated model built as a host shared library, through cffi."""
from __future__ import annotations

import numpy as np


def run_shared_library(so_path, name, inputs, input_size, output_size):
    """A plain model (one quantized input and output, backend/io_api.py): inputs (N, ...)
    int8 -> (N, output_size) int8 and per-call status codes."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(f"int {name}_run(const int8_t *input, int8_t *output);")
    lib = ffi.dlopen(str(so_path))
    fn = getattr(lib, f"{name}_run")
    flat = np.ascontiguousarray(np.asarray(inputs, dtype=np.int8).reshape(len(inputs), -1))
    if flat.shape[1] != input_size:
        raise ValueError(f"input has {flat.shape[1]} bytes, model expects {input_size}")
    outs = np.zeros((len(flat), output_size), dtype=np.int8)
    status = []
    for i in range(len(flat)):
        inb = ffi.from_buffer("int8_t[]", flat[i])
        outb = ffi.new(f"int8_t[{output_size}]")
        status.append(int(fn(inb, outb)))
        outs[i] = np.frombuffer(ffi.buffer(outb), dtype=np.int8)
    ffi.dlclose(lib)
    return outs, status


def run_library(so_path, function, layout, records):
    """Call `function` (an API entry whose arguments are layout's ends, in order) on every
    input record (N, layout.input_size); returns the output records (N, output_size) int8
    and the per-call status codes (backend/harness_data.py: the records of the firmware)."""
    from cffi import FFI

    slots = list(layout.inputs) + list(layout.outputs)
    ctype = {"float32": "float", "int8": "int8_t", "uint8": "uint8_t"}
    params = ", ".join(f"{'const ' if s.end.side == 'input' else ''}{ctype[s.dtype]} *"
                       for s in slots)
    ffi = FFI()
    ffi.cdef(f"int {function}({params});")
    lib = ffi.dlopen(str(so_path))
    fn = getattr(lib, function)
    recs = np.ascontiguousarray(np.asarray(records).view(np.int8).reshape(len(records), -1))
    outs = np.zeros((len(recs), max(layout.output_size, 1)), dtype=np.int8)
    status = []
    for i in range(len(recs)):
        rec = np.ascontiguousarray(recs[i])  # its own (aligned) buffer: float slots are 4-aligned
        out = np.zeros(max(layout.output_size, 1), dtype=np.int8)
        inb = ffi.from_buffer("int8_t[]", rec)
        outb = ffi.from_buffer("int8_t[]", out)
        args = [ffi.cast(f"{ctype[s.dtype]} *", inb + s.offset) for s in layout.inputs]
        args += [ffi.cast(f"{ctype[s.dtype]} *", outb + s.offset) for s in layout.outputs]
        status.append(int(fn(*args)))
        outs[i] = out
    ffi.dlclose(lib)
    return outs[:, :layout.output_size], status
