"""Small QEMU firmwares that call runtime_c kernels directly, one call per case: the C of
the cases' constant arrays and requantization records, and the firmware built from them."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np

from tests.helpers.env import REPO

# TINYAOT_RUNTIME_C: test another copy of runtime_c/ (how the kernel tests were shown to fail)
RUNTIME = Path(os.environ.get("TINYAOT_RUNTIME_C", REPO / "runtime_c"))
INC = RUNTIME / "include"
SRC = RUNTIME / "src"


def c_words(name, ctype, arr):
    vals = ",".join(str(int(v)) for v in np.asarray(arr).reshape(-1))
    return f"static const {ctype} {name}[] __attribute__((aligned(8))) = {{{vals}}};\n"


def requant_c(i, c):
    """C of case i's tinyaot_requant_t `q<i>` (and its arrays) for a qemu case file."""
    from codegen.kernels.c_format import c_float
    src = [c_words(f"b{i}", "int32_t", c["bias"])]
    fields = {"scale": "NULL", "mult": "NULL", "shift": "NULL", "rq": "NULL"}
    if c.get("scale") is not None:
        src.append(f"static const float s{i}[] = {{{','.join(c_float(v) for v in c['scale'])}}};\n")
        fields["scale"] = f"s{i}"
    for f in ("mult", "shift", "rq"):
        if c.get(f) is not None:
            src.append(c_words(f"{f}{i}", "int32_t", c[f]))
            fields[f] = f"{f}{i}"
    src.append(f"static const tinyaot_requant_t q{i} = {{ {c['in_zp']}, {c['out_zp']}, {c['lo']}, "
               f"{c['hi']}, b{i}, {fields['scale']}, {fields['mult']}, {fields['shift']}, NULL, "
               f"0.0f, {fields['rq']} }};\n")
    return src


def conv_case_c(i, dims, q, x, w, wtype="int8_t"):
    """C of case i of a conv (or, dims None, fully connected) kernel: input x<i>,
    weights w<i> (wtype), its tinyaot_requant_t q<i> and tinyaot_conv_dims_t d<i>."""
    bias = q["bias"] if q["bias"] is not None else np.zeros(1, np.int32)  # unread
    src = [c_words(f"x{i}", "int8_t", x), c_words(f"w{i}", wtype, w),
           *requant_c(i, dict(q, lo=q["act_min"], hi=q["act_max"], bias=bias))]
    if dims is not None:
        src.append(f"static const tinyaot_conv_dims_t d{i} = {{{', '.join(map(str, dims))}}};")
    return src


def assert_outputs(res, wants, labels):
    """Each case's output record equals its expected int8 values."""
    for i, (want, r) in enumerate(zip(wants, res.outputs)):
        got = np.frombuffer(r.data, np.int8)[:want.size]
        np.testing.assert_array_equal(got, want.reshape(-1).astype(np.int8),
                                      err_msg=f"case {i}: {labels[i]}")


def cases_firmware(tmp_path, board, name, src, calls, scratch, out_size, kernel_c,
                   include_dirs=()):
    """A firmware whose input i runs `calls[i]` (one kernel call per case), built
    with `kernel_c` (a runtime_c/src file name, or a list of them; `include_dirs` ahead
    of runtime_c/include, e.g. one holding a tinyaot_model_config.h); returns
    (elf, its disassembly)."""
    from codegen.targets.qemu import build_firmware
    n = len(calls)
    src = src + [f"static uint32_t scratch[{scratch // 4}];",
                 f"const uint32_t tinyaot_harness_num_inputs = {n}u;",
                 "const uint32_t tinyaot_harness_input_size = 1u;",
                 f"const uint32_t tinyaot_harness_output_size = {out_size}u;",
                 f"const int8_t tinyaot_harness_inputs[] = {{{','.join(str(i) for i in range(n))}}};",
                 "int tinyaot_harness_run(const int8_t *input, int8_t *output)", "{",
                 f"    memset(output, 0, {out_size});", "    switch (input[0]) {", *calls,
                 "    default: return -1;", "    }", "}", ""]
    (tmp_path / f"{name}_cases.c").write_text("\n".join(src))
    kernels = [kernel_c] if isinstance(kernel_c, str) else list(kernel_c)
    elf = build_firmware([board["harness_main"], tmp_path / f"{name}_cases.c",
                          *(next(SRC.rglob(k)) for k in kernels)],
                         [*include_dirs, INC], board, tmp_path / f"{name}.elf")
    asm = subprocess.run([board["toolchain_prefix"] + "objdump", "-d", str(elf)],
                         capture_output=True, text=True, check=True).stdout
    return elf, asm


def fast_cases_on_qemu_m4(tmp_path, name, case_src, calls, scratch, wants, labels, kernel_c,
                          asm_patterns=()):
    """Builds and runs a qemu-m4 firmware of fast-kernel cases (`case_src`: their C lines;
    `calls`: one `case i: return ...;` line each, the harness's `scratch` (bytes) and
    `output` in reach) and checks that the disassembly has each of `asm_patterns` (the
    kernel's asm is in), that case i's output is wants[i] and that nothing was stored past
    it (64 bytes of room)."""
    import re

    import numpy as np

    from codegen.targets.qemu import load_board, run_firmware
    board = load_board("qemu-m4")
    src = ["#include <stdint.h>", "#include <string.h>", '#include "harness.h"',
           '#include "tinyaot_fast_kernels.h"', *case_src]
    out_size = max(w.size for w in wants) + 64
    elf, asm = cases_firmware(tmp_path, board, name, src, calls, scratch, out_size, kernel_c)
    for pat in asm_patterns:
        assert re.search(pat, asm), f"{pat} not in the firmware"
    res = run_firmware(elf, board, timeout=300)
    assert len(res.outputs) == len(calls)
    assert_outputs(res, wants, labels)
    for want, label, r in zip(wants, labels, res.outputs):  # (the harness zeroes the buffer)
        assert not np.frombuffer(r.data, np.int8)[want.size:].any(), (label, "stored past")


def conv_cases_on_qemu_m4(tmp_path, name, cases, header, kernel_c, call):
    """Runs cases (dims, q, x, weight words, want, label) of one conv kernel in a qemu-m4
    firmware, weights as int32 words `w<i>`, `call(i)` the C expression of case i's call,
    and checks each output against its want; returns the firmware's disassembly."""
    from codegen.targets.qemu import load_board, run_firmware
    board = load_board("qemu-m4")
    src = ["#include <stdint.h>", "#include <string.h>", '#include "harness.h"',
           f'#include "{header}"']
    calls = ["    case -1: return (int)scratch[0]; /* (the harness's scratch, unused here) */"]
    for i, (dims, q, x, words, _, _) in enumerate(cases):
        src += conv_case_c(i, dims, q, x, words, "int32_t")
        calls.append(f"    case {i}: return {call(i)};")
    out_size = max(c[4].size for c in cases)
    elf, asm = cases_firmware(tmp_path, board, name, src, calls, 4, out_size, kernel_c)
    res = run_firmware(elf, board, timeout=300)
    assert len(res.outputs) == len(calls)  # (the last input: the unused case)
    assert_outputs(res, [c[4] for c in cases], [c[5] for c in cases])
    return asm


def depthwise_fast_cases_on_qemu_m4(tmp_path, name, cases):
    """conv_cases_on_qemu_m4 for tinyaot_depthwise_conv_fast_s8 (weights: pack_depthwise's
    words); returns the firmware's disassembly."""
    return conv_cases_on_qemu_m4(tmp_path, name, cases, "tinyaot_fast_kernels.h",
                                 "tinyaot_depthwise_conv_fast_s8.c",
                                 lambda i: f"tinyaot_depthwise_conv_fast_s8(&d{i}, &q{i}, x{i}, "
                                           f"w{i}, output)")
