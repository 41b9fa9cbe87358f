"""example/ of an export: a complete program for the export's board around the
library, so that `make -C DIR/example run` shows the model running before any
of the user's own code exists.

    example/main.c          runs every model on the inputs embedded in
                            example_data.c and prints each output
    example/example_data.*  those inputs (the ones given with --inputs, else
                            one input at the zero point)
    example/Makefile        builds with the board's flags through ../tinyaot.mk;
                            `make run` runs the program (QEMU for a QEMU board)
    firmware boards also get the platform code a bare-metal program needs:
    example/startup_*.c     vector table, .data/.bss set-up and, for a
                            hard-float build, the FPU switched on before main()
    example/semihost.c/.h   the console (ARM semihosting; QEMU prints it)
    example/linker.ld       the board's memory map

The platform files are copies of boards/ (the same code every verification
firmware runs); on real hardware they are the user's own.
"""
from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np

OUTPUT_PREFIX = "output"  # main.c prints "output <model> <i> <status>: v0 v1 ..."


def needs_fpu(board):
    """A hard-float (or softfp) build: the compiler may use FPU registers
    anywhere, so the FPU must be enabled before the library's first call."""
    return any(f in ("-mfloat-abi=hard", "-mfloat-abi=softfp") for f in board.get("cflags", []))


def io_ctype(c):
    """The C type of the model's int8 API (uint8 models keep uint8_t)."""
    return "uint8_t" if c.report["io"]["input"]["dtype"] == "uint8" else "int8_t"


def requirements_text(board):
    """The FPU and alignment lines of the header note and the README."""
    flags = " ".join(board.get("cflags", []))
    if board["kind"] == "shared-library":
        fpu = [f"Built for the host ({flags or 'default flags'}): no FPU set-up."]
    elif needs_fpu(board):
        fpu = [f"FPU: built for {board['name']} with {flags}, a hard-float build:",
               "the compiler may use FPU registers in any function, so the FPU must be",
               "on before the first call into this library (CPACR: full access to",
               "CP10 and CP11, then DSB and ISB; CMSIS: SCB->CPACR |= 0xFu << 20).",
               "Otherwise the first FPU instruction faults (UsageFault NOCP, escalated",
               "to HardFault), which without a fault handler looks like a hang.",
               "The example's startup code does it first thing in Reset_Handler."]
    else:
        fpu = [f"FPU: none needed (built for {board['name']} with {flags}: soft float)."]
    align = ["Alignment: the arena (16 bytes) and the weights are aligned inside the",
             "library by the compiler: nothing to do. Buffers passed to the model",
             "(input, output) must be 4-byte aligned; the stack 8-byte aligned at",
             "every call (AAPCS; the startup code's initial SP is)."]
    return fpu, align


def header_note(c, board):
    """A comment placed after the generated header's own, in the export only."""
    fpu, align = requirements_text(board)
    lines = [f"Exported by `tinyaot export --board {board['name']}`."] + fpu + align
    return "/* " + "\n * ".join(lines) + " */\n"


def with_header_note(header, note):
    """The header with `note` after its first comment block."""
    end = header.find("*/")
    if end < 0:
        return note + header
    end += 2
    return header[:end] + "\n" + note.rstrip("\n") + header[end:]


def _ctype(t):
    return "uint8_t" if t.dtype == "uint8" else "int8_t"


def example_inputs(c, given=None):
    """(N, input size) inputs to embed: `given` (already checked against the
    model) or one input at the zero point. A model with several inputs: a list, one
    (1, size) row per input at its zero point."""
    if len(c.graph.inputs) > 1:
        if given is not None:
            from ..errors import TinyAotError
            raise TinyAotError("the example runs a model of several inputs at their zero "
                               "points; leave out --inputs", model=str(c.report.get("model")))
        rows = []
        for name in c.graph.inputs:
            t = c.graph.tensors[name]
            rows.append(np.full((1, t.size), int(t.q.scalar()[1]),
                                dtype=np.uint8 if t.dtype == "uint8" else np.int8))
        return rows
    size = c.graph.tensors[c.graph.inputs[0]].size
    if given is not None:
        return np.asarray(given).reshape(len(given), size)
    zp = int(c.report["io"]["input"]["zero_point"])
    dt = np.uint8 if io_ctype(c) == "uint8_t" else np.int8
    return np.full((1, size), zp, dtype=dt)


def _c_rows(arr, per_line=24):
    """A 2-D array as a C initializer body: one braced row per input."""
    out = []
    for row in np.asarray(arr).reshape(len(arr), -1):
        vals = [str(int(v)) for v in row]
        lines = [", ".join(vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
        out.append("    {" + ",\n     ".join(lines) + "}")
    return ",\n".join(out)


def _data_files(compiled, inputs):
    h = ["/* Generated by tinyaot export: the inputs example/main.c runs. */",
         "#ifndef EXAMPLE_DATA_H", "#define EXAMPLE_DATA_H", "#include <stdint.h>"]
    c = ["/* Generated by tinyaot export: inputs embedded in flash, one row per input. */",
         '#include "example_data.h"']
    for comp, x in zip(compiled, inputs):
        nm, up, ct = comp.module.name, comp.module.name.upper(), io_ctype(comp)
        if isinstance(x, list):  # several inputs: <name>_example_input<k>, one row each
            h.append(f"#define {up}_EXAMPLE_INPUTS 1u")
            for k, (xk, name) in enumerate(zip(x, comp.graph.inputs)):
                ctk = _ctype(comp.graph.tensors[name])
                h.append(f"extern const {ctk} {nm}_example_input{k}[1][{xk.shape[1]}];")
                c.append(f"const {ctk} {nm}_example_input{k}[1][{xk.shape[1]}] = {{\n"
                         f"{_c_rows(xk)}\n}};")
            continue
        h += [f"#define {up}_EXAMPLE_INPUTS {len(x)}u",
              f"extern const {ct} {nm}_example_inputs[{len(x)}][{x.shape[1]}];"]
        c.append(f"const {ct} {nm}_example_inputs[{len(x)}][{x.shape[1]}] = {{\n"
                 f"{_c_rows(x)}\n}};")
    h.append("#endif")
    return "\n".join(h) + "\n", "\n".join(c) + "\n"


_PRINT_FIRMWARE = """#include "semihost.h"   /* the console: ARM semihosting (QEMU prints it) */

static void put_str(const char *s) { tinyaot_sh_puts(s); }
static void put_int(int32_t v) { tinyaot_sh_put_i32(v); }
static void put_u32(uint32_t v) { tinyaot_sh_put_u32(v); }
static void put_end(void) { tinyaot_sh_putc('\\n'); }
"""

_PRINT_HOST = """#include <stdio.h>

static void put_str(const char *s) { fputs(s, stdout); }
static void put_int(int32_t v) { printf("%ld", (long)v); }
static void put_u32(uint32_t v) { printf("%lu", (unsigned long)v); }
static void put_end(void) { putchar('\\n'); }
"""


def _main_c(compiled, board):
    firmware = board["kind"] != "shared-library"
    incs = "\n".join(f'#include "{c.module.name}.h"' for c in compiled)
    bufs, runs = [], []
    for c in compiled:
        nm, up, ct = c.module.name, c.module.name.upper(), io_ctype(c)
        n_in, n_out = len(c.graph.inputs), len(c.graph.outputs)
        if n_in == 1 and n_out == 1:  # the plain form, as it always was
            bufs.append(f"static {ct} {nm}_out[{up}_OUTPUT_SIZE];")
            runs.append(f"""    for (uint32_t i = 0; i < {up}_EXAMPLE_INPUTS; i++) {{
        int status = {nm}_run({nm}_example_inputs[i], {nm}_out);
        print_output("{nm}", i, status);
        for (uint32_t k = 0; k < {up}_OUTPUT_SIZE; k++) {{
            put_str(" ");
            put_int({nm}_out[k]);
        }}
        put_end();
        failed |= status != 0;
    }}""")
            continue
        # several ends (io_api.py names them input<k> / output<k>): every output printed
        # after the other on the model's line
        ins = ([f"{nm}_example_inputs[i]"] if n_in == 1
               else [f"{nm}_example_input{k}[0]" for k in range(n_in)])
        outs, prints = [], []
        for k, name in enumerate(c.graph.outputs):
            size = f"{up}_OUTPUT_SIZE" if n_out == 1 else f"{up}_OUTPUT{k}_SIZE"
            buf = f"{nm}_out{k}"
            bufs.append(f"static {_ctype(c.graph.tensors[name])} {buf}[{size}];")
            outs.append(buf)
            prints.append(f"""        for (uint32_t k = 0; k < {size}; k++) {{
            put_str(" ");
            put_int({buf}[k]);
        }}""")
        runs.append(f"""    for (uint32_t i = 0; i < {up}_EXAMPLE_INPUTS; i++) {{
        int status = {nm}_run({", ".join(ins + outs)});
        print_output("{nm}", i, status);
{chr(10).join(prints)}
        put_end();
        failed |= status != 0;
    }}""")
    fpu = ("\n * The startup code switches the FPU on before main() (the library is "
           "built hard-float)." if firmware and needs_fpu(board) else "")
    return f"""/* Generated by tinyaot export: the example program for {board['name']}.
 * Runs every model on the inputs in example_data.c and prints one line per
 * input: "{OUTPUT_PREFIX} <model> <input> <status>:" then the output values (the
 * stored integers; real value = <NAME>_OUTPUT_SCALE * (q - <NAME>_OUTPUT_ZERO_POINT)).{fpu} */
#include <stdint.h>
{incs}
#include "example_data.h"
{_PRINT_FIRMWARE if firmware else _PRINT_HOST}
/* Output buffers: 4-byte aligned, as the library asks of every buffer. */
{chr(10).join(b.replace("static ", "static __attribute__((aligned(4))) ", 1) for b in bufs)}

static void print_output(const char *model, uint32_t i, int status)
{{
    put_str("{OUTPUT_PREFIX} ");
    put_str(model);
    put_str(" ");
    put_u32(i);
    put_str(" ");
    put_int(status);
    put_str(":");
}}

int main(void)
{{
    int failed = 0;
{chr(10).join(runs)}
    put_str("done");
    put_end();
    return failed;
}}
"""


def _makefile_firmware(board, qemu_cmd, platform_srcs, platform_heads):
    cflags = list(board["cflags"]) + ["-O2", "-ffunction-sections", "-fdata-sections",
                                      "-Wall", "-Wextra"]
    ldflags = list(board.get("ldflags", [])) + [
        "-Tlinker.ld", f"-Wl,--defsym=__stack_size={int(board['stack_size'])}"]
    fpu = ("\n# The startup code switches the FPU on first thing: this is a hard-float build"
           "\n# (see ../README.md, Requirements)." if needs_fpu(board) else "")
    return f"""# Generated by tinyaot export: the example firmware for {board['name']}.
#   make        build build/app.elf (the library through ../tinyaot.mk)
#   make run    run it in QEMU; it prints each output and exits
# Platform code: {' '.join(platform_srcs)} (vector table and RAM set-up;
# the console), linker.ld (memory map): copies of tinyaot's {board['name']} board files.{fpu}
CC := {board['toolchain_prefix']}gcc
AR := {board['toolchain_prefix']}ar
CFLAGS := {' '.join(cflags)}
LDFLAGS := {' '.join(ldflags)}
LDLIBS := {' '.join(board.get('libs', []))}
QEMU := {qemu_cmd}

TINYAOT_OBJDIR := build/tinyaot
include ../tinyaot.mk

APP_SRCS := main.c example_data.c {' '.join(platform_srcs)}

build/app.elf: $(APP_SRCS) example_data.h {' '.join(platform_heads)} linker.ld $(TINYAOT_LIB)
\t@mkdir -p $(@D)
\t$(CC) $(CFLAGS) $(TINYAOT_INCLUDES) -I. $(LDFLAGS) -o $@ $(APP_SRCS) \\
\t    $(TINYAOT_LIB) $(TINYAOT_LDLIBS) $(LDLIBS)

run: build/app.elf
\t$(QEMU) -kernel build/app.elf

clean:
\trm -rf build

.PHONY: run clean
"""


def _makefile_host(board):
    cflags = list(board["cflags"]) + ["-Wall", "-Wextra"]
    return f"""# Generated by tinyaot export: the example program, built for the host.
#   make        build build/app (the library through ../tinyaot.mk)
#   make run    run it; it prints each output
CC ?= cc
CFLAGS := {' '.join(cflags)}

TINYAOT_OBJDIR := build/tinyaot
include ../tinyaot.mk

APP_SRCS := main.c example_data.c

build/app: $(APP_SRCS) example_data.h $(TINYAOT_LIB)
\t@mkdir -p $(@D)
\t$(CC) $(CFLAGS) $(TINYAOT_INCLUDES) -I. -o $@ $(APP_SRCS) $(TINYAOT_LIB) $(TINYAOT_LDLIBS)

run: build/app
\t./build/app

clean:
\trm -rf build

.PHONY: run clean
"""


def example_files(compiled, board, inputs):
    """{path under example/: text} for `compiled` models on `board`;
    inputs: per model, (N, input size) integer arrays (example_inputs)."""
    data_h, data_c = _data_files(compiled, inputs)
    files = {"main.c": _main_c(compiled, board), "example_data.h": data_h,
             "example_data.c": data_c}
    if board["kind"] == "shared-library":
        files["Makefile"] = _makefile_host(board)
        return files
    platform = platform_files(board)
    if platform is None:
        return {}
    from ..targets.qemu import qemu_command
    cmd = qemu_command("ELF", board)
    cmd = cmd[:cmd.index("-kernel")]
    srcs = sorted(n for n in platform if n.endswith(".c"))
    files["Makefile"] = _makefile_firmware(board, " ".join(shlex.quote(a) for a in cmd), srcs,
                                           sorted(n for n in platform if n.endswith(".h")))
    files.update(platform)
    return files


def platform_files(board):
    """{name: text}: the board's startup and semihosting sources, their header
    and its linker script (None if the board has no such files)."""
    srcs = [Path(s) for s in board.get("sources", [])
            if Path(s).stem.startswith(("startup", "semihost"))]
    heads = [Path(d) / "semihost.h" for d in board.get("include_dirs", [])
             if (Path(d) / "semihost.h").is_file()]
    if not any(s.stem.startswith("startup") for s in srcs) or not heads \
            or not board.get("linker_script"):
        return None
    files = {s.name: s.read_text() for s in srcs}
    files["semihost.h"] = heads[0].read_text()
    files["linker.ld"] = Path(board["linker_script"]).read_text()
    return files


def parse_example_output(text):
    """[(model, input, status, values)] from what example/main.c printed."""
    rows = []
    for line in text.splitlines():
        if not line.startswith(OUTPUT_PREFIX + " "):
            continue
        head, _, vals = line.partition(":")
        _, model, i, status = head.split()
        rows.append((model, int(i), int(status), [int(v) for v in vals.split()]))
    return rows
