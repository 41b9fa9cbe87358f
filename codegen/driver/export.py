"""`tinyaot export`: a self-contained C library folder for the user's firmware.

    DIR/
      README.md        API, numbers (arena, flash, instructions), how to build
      tinyaot.mk       Makefile fragment (include it; TINYAOT_SRCS / _CFLAGS / _LIB)
      CMakeLists.txt   add_subdirectory(DIR) -> target `tinyaot`
      tinyaot.cmake    include(DIR/tinyaot.cmake) -> the same target
      report.json      the compiler's report per model
      include/         <name>.h per model + exactly the public runtime headers used
      src/             <name>.c per model + exactly the runtime kernels used, in
                       their runtime_c/src folders (conv/, ..., internal/ for the
                       helpers they include as "../internal/x.h")

Several models can go into one folder (`tinyaot export A.onnx B.onnx ...`):
they share the kernel sources and each keeps its own static arena; every
non-static symbol is `<name>_...` (`_run`, and with the input and output in
the arena, the default, `_input`, `_output`, `_invoke`) or a `tinyaot_`
kernel, so nothing clashes.
The folder needs neither Python nor SCons to build.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..compiler import _jsonable, compile_model
from ..errors import TinyAotError
from ..paths import RUNTIME_INCLUDE, RUNTIME_SRC, runtime_sources
from ..targets.boards import board_or_error

# Flags the library needs whatever the user's own flags are: C99, and no
# fused multiply-add (the ort numerics repeat MLAS's float order exactly).
REQUIRED_CFLAGS = ["-std=c99", "-ffp-contract=off"]
_MARKER = "tinyaot.mk"
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
_CALL_RE = re.compile(r"\b(tinyaot_[A-Za-z0-9_]+)\s*\(")


def kernel_closure(kernels):
    """Kernel source files for `kernels`, plus any other public kernel they call."""
    have = {p.stem: p for p in runtime_sources()}
    todo, done = [k for k in sorted(kernels)], set()
    while todo:
        k = todo.pop()
        if k in done:
            continue
        if k not in have:
            raise TinyAotError(f"internal: no runtime_c/src/{k}.c for kernel '{k}'")
        done.add(k)
        for callee in _CALL_RE.findall(have[k].read_text()):
            if callee in have and callee not in done:
                todo.append(callee)
    return [have[k] for k in sorted(done)]


def include_closure(texts, files=()):
    """runtime_c files reached through #include "..." from `texts` (the generated
    C) and `files` (kernel sources): the public headers, as names in
    runtime_c/include, and the internal ones (helpers, a kernel's .inc parts), as
    paths relative to runtime_c/src. A name is looked up next to the file that
    includes it first, then in runtime_c/include (the compiler's order)."""
    public, internal = set(), set()
    todo = [(t, None) for t in texts] + [(Path(f).read_text(), Path(f).parent) for f in files]
    while todo:
        text, here = todo.pop()
        for inc in _INCLUDE_RE.findall(text):
            near = (here / inc).resolve() if here is not None else None
            if near is not None and near.is_file() and near.is_relative_to(RUNTIME_SRC):
                rel = near.relative_to(RUNTIME_SRC).as_posix()
                if rel not in internal:
                    internal.add(rel)
                    todo.append((near.read_text(), near.parent))
            elif (RUNTIME_INCLUDE / inc).is_file() and inc not in public:
                public.add(inc)
                todo.append(((RUNTIME_INCLUDE / inc).read_text(), RUNTIME_INCLUDE))
    return sorted(public), sorted(internal)


def header_closure(texts, files=()):
    """The public runtime_c/include headers reached from `texts` and `files`."""
    return include_closure(texts, files)[0]


def measure(model, c, board_name):
    """Run one inference (zero input) on the board: instructions and the image's flash."""
    from .verify import run_ends
    board = board_or_error(board_name)
    if not (shutil.which(board["compiler"]) and shutil.which(board.get("qemu", "qemu-system-arm"))):
        return {"instructions": None, "flash": None}      # no toolchain/QEMU: numbers unknown
    g = c.graph
    x = [np.zeros((1,) + tuple(g.tensors[t].shape), dtype=g.tensors[t].dtype) for t in g.inputs]
    try:  # the quantized tensors (<name>_invoke in the arena mode): the inference alone
        _, info = run_ends(model, x, board=board_name, numerics=c.numerics, compiled=c,
                           entry="quantized")
    except TinyAotError as e:
        if "overflowed" in str(e) or "will not fit in region" in str(e):
            raise TinyAotError(f"does not fit board {board_name} (linker: region overflowed)",
                               model=str(model)) from None
        raise
    ins = info.get("instructions")
    return {"instructions": int(ins[0]) if ins else None,
            "flash": info["flash_split"] if info.get("flash_split") else None}


def export(models, board_name, out_dir, numerics="ort", measure_on_board=True, io_buffers="arena",
           ort_threads=1, optimize="speed"):
    """Compile `models` for `board_name` into the folder `out_dir`; returns a summary dict."""
    board = board_or_error(board_name)
    models = [str(m) for m in models]
    if not models:
        raise TinyAotError("export needs at least one model")
    out_dir = os.path.abspath(str(out_dir))
    if os.path.exists(out_dir) and (not os.path.isdir(out_dir) or (
            os.listdir(out_dir) and not os.path.exists(os.path.join(out_dir, _MARKER)))):
        raise TinyAotError(f"{out_dir} exists and is not an earlier tinyaot export "
                           "(refusing to overwrite it)")
    compiled = [compile_model(m, numerics=numerics, io_buffers=io_buffers, ort_threads=ort_threads,
                              optimize=optimize)
                for m in models]
    names = [c.module.name for c in compiled]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TinyAotError(f"two models compile to the same C name '{dup[0]}' "
                           "(rename one of the .onnx files)")
    kernels = set().union(*(c.module.kernels for c in compiled))
    ksrcs = kernel_closure(kernels)
    headers, internal = include_closure([c.module.source for c in compiled], ksrcs)
    numbers = {}
    from .fleet import fit
    for model, c in zip(models, compiled):
        ok, reason, _ = fit(c, board)
        if not ok:
            raise TinyAotError(f"does not fit board {board_name}: {reason}", model=model)
    for model, c in zip(models, compiled):
        m = {"instructions": None, "flash": None}
        if measure_on_board and board["kind"] != "shared-library":
            m = measure(model, c, board_name)
        numbers[c.module.name] = m

    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tinyaot-export-", dir=parent)
    try:
        os.makedirs(os.path.join(tmp, "src"))
        os.makedirs(os.path.join(tmp, "include"))
        for c in compiled:
            with open(os.path.join(tmp, "src", c.module.name + ".c"), "w") as f:
                f.write(c.module.source)
            with open(os.path.join(tmp, "include", c.module.name + ".h"), "w") as f:
                f.write(c.module.header)
        kernel_files = [p.relative_to(RUNTIME_SRC).as_posix() for p in ksrcs]
        for rel in kernel_files + internal:   # same folders as runtime_c/src
            os.makedirs(os.path.join(tmp, "src", os.path.dirname(rel)), exist_ok=True)
            shutil.copyfile(RUNTIME_SRC / rel, os.path.join(tmp, "src", rel))
        for h in headers:
            shutil.copyfile(RUNTIME_INCLUDE / h, os.path.join(tmp, "include", h))
        srcs = [c.module.name + ".c" for c in compiled] + kernel_files
        libm = any("<math.h>" in p.read_text() for p in ksrcs)
        files = {
            "tinyaot.mk": _makefile(srcs, libm),
            "tinyaot.cmake": _cmake(srcs, libm),
            "CMakeLists.txt": _cmakelists(),
            "README.md": _readme(compiled, numbers, board, numerics, srcs, headers, libm),
        }
        for fn, text in files.items():
            with open(os.path.join(tmp, fn), "w") as f:
                f.write(text)
        with open(os.path.join(tmp, "report.json"), "w") as f:
            rep = {c.module.name: dict(c.report, board=board_name, measured=numbers[c.module.name])
                   for c in compiled}
            json.dump(rep, f, indent=2, sort_keys=True, default=_jsonable)
            f.write("\n")
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"dir": out_dir, "models": names, "sources": srcs, "headers": headers,
            "numbers": numbers,
            "arena": {c.module.name: c.report["arena_bytes"] for c in compiled}}


def _makefile(srcs, libm):
    src_list = " \\\n    ".join(f"$(TINYAOT_DIR)src/{s}" for s in srcs)
    return f"""# Generated by tinyaot export: Makefile fragment for the model library.
#
#   include path/to/this/folder/tinyaot.mk
#   CFLAGS += <your -mcpu/-mthumb/-mfloat-abi/-O flags>
#   app.elf: main.o $(TINYAOT_LIB)
#   	$(CC) $(CFLAGS) ... -o $@ main.o $(TINYAOT_LIB) $(TINYAOT_LDLIBS)
#   main.o: CFLAGS += $(TINYAOT_INCLUDES)
#
# Either link $(TINYAOT_LIB) (built here from $(TINYAOT_SRCS) with
# $(CC) $(CFLAGS) $(TINYAOT_CFLAGS) into $(TINYAOT_OBJDIR)), or add
# $(TINYAOT_SRCS) to your own sources and compile them with $(TINYAOT_CFLAGS).
# Including this file does not change your default goal.

TINYAOT_DIR := $(dir $(lastword $(MAKEFILE_LIST)))
TINYAOT_SRCS := \\
    {src_list}
TINYAOT_INCLUDES := -I$(TINYAOT_DIR)include
TINYAOT_CFLAGS := $(TINYAOT_INCLUDES) {' '.join(REQUIRED_CFLAGS)}
TINYAOT_LDLIBS := {'-lm' if libm else ''}
TINYAOT_OBJDIR ?= build/tinyaot
TINYAOT_OBJS := $(patsubst $(TINYAOT_DIR)src/%.c,$(TINYAOT_OBJDIR)/%.o,$(TINYAOT_SRCS))
TINYAOT_LIB := $(TINYAOT_OBJDIR)/libtinyaot.a

_tinyaot_saved_goal := $(.DEFAULT_GOAL)

$(TINYAOT_OBJDIR)/%.o: $(TINYAOT_DIR)src/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(TINYAOT_CFLAGS) -c $< -o $@

$(TINYAOT_LIB): $(TINYAOT_OBJS)
	$(AR) rcs $@ $^

.DEFAULT_GOAL := $(_tinyaot_saved_goal)
"""


def _cmake(srcs, libm):
    src_list = "\n".join(f"    ${{TINYAOT_DIR}}/src/{s}" for s in srcs)
    return f"""# Generated by tinyaot export: include(path/to/this/folder/tinyaot.cmake)
# defines the static library target `tinyaot` (include directory PUBLIC);
# then: target_link_libraries(your_app PRIVATE tinyaot)
# Your toolchain / CMAKE_C_FLAGS give the -mcpu etc.; the library adds
# only what bit-exactness needs (C99, -ffp-contract=off).
set(TINYAOT_DIR ${{CMAKE_CURRENT_LIST_DIR}})
set(TINYAOT_SOURCES
{src_list}
)
if(NOT TARGET tinyaot)
  add_library(tinyaot STATIC ${{TINYAOT_SOURCES}})
  target_include_directories(tinyaot PUBLIC ${{TINYAOT_DIR}}/include)
  set_target_properties(tinyaot PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_options(tinyaot PRIVATE -ffp-contract=off)
{'  target_link_libraries(tinyaot PUBLIC m)' if libm else ''}
endif()
"""


def _cmakelists():
    return """# Generated by tinyaot export: add_subdirectory(path/to/this/folder)
# gives the target `tinyaot`; see tinyaot.cmake.
cmake_minimum_required(VERSION 3.13)
if(NOT CMAKE_PROJECT_NAME)
  project(tinyaot C)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/tinyaot.cmake)
"""


def _fmt(v, unit=""):
    return "not measured" if v is None else f"{v:,}{unit}"


def _plain(c):
    from ..backend.io_api import api_ends, is_plain
    return is_plain(*api_ends(c.graph, c.options.get("io", "model")))


def _flash_cell(fl):
    if not fl:
        return "not measured"
    return (f"{fl['total']:,} (code {fl['code']:,}, weights {fl['weights']:,}, "
            f"tables {fl['tables']:,})")


def _readme(compiled, numbers, board, numerics, srcs, headers, libm):
    rows = []
    for c in compiled:
        n = numbers[c.module.name]
        fl = n["flash"]
        rows.append(f"| `{c.module.name}` | {c.report['model']} | {c.report['arena_bytes']:,} | "
                    f"{c.report['weights_bytes']:,} | "
                    f"{_flash_cell(fl)} | "
                    f"{_fmt(n['instructions'])} | {c.report['macs']:,} |")
    api = []
    for c in compiled:
        nm, up = c.module.name, c.module.name.upper()
        if not _plain(c):  # several inputs / outputs or float ends: the header says it all
            protos = [ln for ln in c.module.header.splitlines() if ln.startswith("int ")]
            api.append("```c\n" + f'#include "{nm}.h"\n' + "\n".join(protos) + "\n```\n"
                       f"{len(c.graph.inputs)} input(s), {len(c.graph.outputs)} output(s), each "
                       f"as the model declares it (include/{nm}.h); I/O buffers "
                       f"`{c.plan.io_buffers}`; arena {up}_ARENA_SIZE bytes, static, inside "
                       f"{nm}.c.\n")
            continue
        if c.plan.io_buffers == "arena":
            call = f"""int8_t *in = {nm}_input();         /* {up}_INPUT_SIZE bytes inside the arena */
/* quantize: in[i] = round(x / {up}_INPUT_SCALE) + {up}_INPUT_ZERO_POINT */
int status = {nm}_invoke();         /* 0 = ok; overwrites the input */
const int8_t *out = {nm}_output();  /* {up}_OUTPUT_SIZE bytes, valid until the next input */
/* (or {nm}_run(in_buf, out_buf): copies in, invokes, copies out) */"""
        else:
            call = f"""int8_t in[{up}_INPUT_SIZE], out[{up}_OUTPUT_SIZE];
/* quantize: in[i] = round(x / {up}_INPUT_SCALE) + {up}_INPUT_ZERO_POINT */
int status = {nm}_run(in, out);   /* 0 = ok */"""
        api.append(f"""```c
#include "{nm}.h"
{call}
/* dequantize: y = {up}_OUTPUT_SCALE * (out[i] - {up}_OUTPUT_ZERO_POINT) */
```
input `{c.report['input']['name']}` int8 {c.report['input']['shape']}, output
`{c.report['output']['name']}` int8 {c.report['output']['shape']} (row-major, ONNX axis order);
I/O buffers `{c.plan.io_buffers}`; arena {up}_ARENA_SIZE bytes, static, inside {nm}.c.
""")
    flags = " ".join(board.get("cflags", []))
    return f"""# tinyaot model library

Generated by `tinyaot export` for board `{board['name']}` (numerics `{numerics}`:
bit-exact with {'onnxruntime' if numerics == 'ort' else 'TFLite Micro'}). Plain C99, no malloc, no
stdio, no Python or SCons needed to build it.

| C name | model | arena B | weights B | flash B on {board['name']} | instructions / inference on {board['name']} | MACs |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Flash is that of a linked firmware image on {board['name']}: code (the model, its
kernels, the board's startup and harness, libc/libgcc) + weights + tables, the
harness's input data left out; your firmware adds its own code and drops the
harness. Instructions were counted in QEMU (`-icount shift=0`) for one
inference, built with `{flags}`. The arena is a `static`, 16-byte aligned buffer in
the model's .c file (RAM); with `--io-buffers arena` (the default) it also holds
the input and output, so it is all the RAM the model needs besides the stack.

## API

{chr(10).join(api)}
`<name>_run` / `<name>_invoke` are not reentrant (one static arena per model). Several models
in one firmware each have their own arena and share the kernels.

## Files

* `src/`: {', '.join(srcs)}
* `include/`: {', '.join([c.module.name + '.h' for c in compiled] + headers)}

Compile every `.c` under `src/` with `-Iinclude {' '.join(REQUIRED_CFLAGS)}` (needed for
bit-exactness: no fused multiply-add) plus your CPU flags{', and link `-lm`' if libm else ''}.

## Make

```make
include path/to/this/folder/tinyaot.mk
main.o: CFLAGS += $(TINYAOT_INCLUDES)
app.elf: main.o $(TINYAOT_LIB)
\t$(CC) $(CFLAGS) $(LDFLAGS) -o $@ main.o $(TINYAOT_LIB) $(TINYAOT_LDLIBS)
```

## CMake

```cmake
add_subdirectory(path/to/this/folder tinyaot)   # or include(path/to/this/folder/tinyaot.cmake)
target_link_libraries(app PRIVATE tinyaot)
```
"""
