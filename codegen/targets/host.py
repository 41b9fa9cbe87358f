"""Run a generated model built as a host shared library, through cffi."""
from __future__ import annotations

import numpy as np


def run_shared_library(so_path, name, inputs, input_size, output_size):
    """inputs: (N, ...) int8 -> (N, output_size) int8 and per-call status codes."""
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
