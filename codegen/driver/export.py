"""`tinyaot export`: a self-contained C library folder for the user's firmware.

    DIR/
      README.md        API, numbers (arena, flash, instructions), how to build
      tinyaot.mk       Makefile fragment (include it; TINYAOT_SRCS / _CFLAGS / _LIB)
      CMakeLists.txt   add_subdirectory(DIR) -> target `tinyaot`
      tinyaot.cmake    include(DIR/tinyaot.cmake) -> the same target
      report.json      the compiler's report per model
      tinyaot-files.json  every file written here, with its SHA-256 (export_folder.py)
      include/         <name>.h per model + exactly the public runtime headers used,
                       tinyaot_model_config.h (what the fast kernels compile: every model's)
      src/             <name>.c per model + exactly the runtime kernels used, in
                       their runtime_c/src folders (conv/, ..., internal/ for the
                       helpers they include as "../internal/x.h")
      example/         a complete program for the board: `make run` runs it
                       (export_example.py)

Several models can go into one folder (`tinyaot export A.onnx B.onnx ...`):
they share the kernel sources and each keeps its own static arena; every
non-static symbol is `<name>_...` (`_run`, and with the input and output in
the arena, the default, `_input`, `_output`, `_invoke`) or a `tinyaot_`
kernel, so nothing clashes.
The folder needs neither Python nor SCons to build. Exporting again into it
keeps the files the user added (export_folder.py).
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
from ..kernels import specialize
from ..paths import RUNTIME_INCLUDE, RUNTIME_SRC, runtime_sources
from ..targets.boards import board_or_error

# Flags the library needs whatever the user's own flags are: C99, and no
# fused multiply-add (the ort numerics repeat MLAS's float order exactly).
REQUIRED_CFLAGS = ["-std=c99", "-ffp-contract=off"]
# The library's own optimization level, after the user's flags (the last -O wins): the DSP
# kernels' inline asm takes all 14 free core registers, which arm-none-eabi-gcc allocates at
# -O2 (the level every board, test and benchmark builds) but not at every level (-O0, -Og,
# -O1 and -O3 fail with "impossible constraints" in some kernels). TINYAOT_OPT overrides it.
KERNEL_OPT = "-O2"
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
_CALL_RE = re.compile(r"\b(tinyaot_[A-Za-z0-9_]+)\s*\(")
_COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def _source_text(src):
    """A kernel's source with the files it includes from runtime_c/src (its .inc parts,
    the internal headers: include_closure), comments dropped: a call in any of them links
    against another kernel."""
    parts = [src] + [RUNTIME_SRC / rel for rel in include_closure([], [src])[1]]
    return "\n".join(_COMMENT_RE.sub(" ", f.read_text()) for f in parts)


def kernel_closure(kernels):
    """Kernel source files for `kernels`, plus any other public kernel they call (a
    kernel's <name>_get_buffer_size is in <name>.c)."""
    have = {p.stem: p for p in runtime_sources()}
    todo, done = [k for k in sorted(kernels)], set()
    while todo:
        k = todo.pop()
        if k in done:
            continue
        if k not in have:
            raise TinyAotError(f"internal: no runtime_c/src/{k}.c for kernel '{k}'")
        done.add(k)
        for callee in _CALL_RE.findall(_source_text(have[k])):
            callee = callee.removesuffix("_get_buffer_size")
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


def measure_part(model, c, board_name, timed=True):
    """A build-only part: the model linked with the part's startup and linker script
    (report_model), TinyAotError unless it fits; with `timed`, one inference in the
    cycle model at the part's clock."""
    from .report import report_model
    fit = report_model(model, board=board_name, numerics=c.numerics, compiled=c)["totals"][
        "part_fit"]
    if not fit["fits"]:
        raise TinyAotError(f"does not fit part {board_name}: {'; '.join(fit['problems'])} "
                           f"(image flash {fit['flash_bytes']:,} of {fit['flash_size']:,} B, "
                           f"RAM {fit['ram_bytes']:,} of {fit['ram_size']:,} B)", model=str(model))
    m = {"instructions": None, "flash": {"total": fit["flash_bytes"]}, "part_fit": fit,
         "cycles": None}
    if timed:
        from .profile import profile_model
        cyc = profile_model(model, board=board_name, numerics=c.numerics, compiled=c,
                            cycles=True)["cycles"]
        m["instructions"] = cyc["instructions"]
        m["cycles"] = cyc["parts"][0]
    return m


def export(models, board_name, out_dir, numerics="ort", measure_on_board=True, io_buffers="arena",
           ort_threads=1, optimize="speed", io="int8", inputs=None, float_fallback=True,
           tuning=None):
    """Compile `models` for `board_name` into the folder `out_dir`; returns a summary dict.
    inputs: per model, an .npz of inputs for the example to embed (None: one
    input at the zero point)."""
    from .export_example import example_files, example_inputs, header_note, with_header_note
    from .export_folder import check_destination, install, write_manifest
    board = board_or_error(board_name)
    models = [str(m) for m in models]
    if not models:
        raise TinyAotError("export needs at least one model")
    inputs = list(inputs or [])
    if len(inputs) > len(models):
        raise TinyAotError(f"{len(inputs)} --inputs files for {len(models)} model(s) (one per "
                           "model, in the same order)")
    measuring = measure_on_board and board["kind"] != "shared-library"
    if measuring:
        from .toolchain import require_tools
        require_tools(board, hint=" (or --no-measure to export without measuring)")
    out_dir = os.path.abspath(str(out_dir))
    previous = check_destination(out_dir)  # refuses before any work; nothing touched
    compiled = [compile_model(m, numerics=numerics, io_buffers=io_buffers, ort_threads=ort_threads,
                              optimize=optimize, io=io, float_fallback=float_fallback,
                              tuning=tuning)
                for m in models]
    names = [c.module.name for c in compiled]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TinyAotError(f"two models compile to the same C name '{dup[0]}' "
                           "(rename one of the .onnx files)")
    embedded = [example_inputs(c, _example_inputs(c, inputs[k]) if k < len(inputs) else None)
                for k, c in enumerate(compiled)]
    kernels = set().union(*(c.module.kernels for c in compiled))
    ksrcs = kernel_closure(kernels)
    headers, internal = include_closure([c.module.source for c in compiled], ksrcs)
    numbers = {}
    if board["kind"] == "part":  # linked for the part itself: its fit, and its time if measured
        for model, c in zip(models, compiled):
            numbers[c.module.name] = measure_part(model, c, board_name, timed=measure_on_board)
    else:
        from .fleet import fit
        for model, c in zip(models, compiled):
            ok, reason, _ = fit(c, board)
            if not ok:
                raise TinyAotError(f"does not fit board {board_name}: {reason}", model=model)
        for model, c in zip(models, compiled):
            m = {"instructions": None, "flash": None}
            if measuring:
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
                # the board's FPU and alignment requirements, in the export's copy only
                f.write(with_header_note(c.module.header, header_note(c, board)))
        kernel_files = [p.relative_to(RUNTIME_SRC).as_posix() for p in ksrcs]
        for rel in kernel_files + internal:   # same folders as runtime_c/src
            os.makedirs(os.path.join(tmp, "src", os.path.dirname(rel)), exist_ok=True)
            shutil.copyfile(RUNTIME_SRC / rel, os.path.join(tmp, "src", rel))
        for h in headers:
            shutil.copyfile(RUNTIME_INCLUDE / h, os.path.join(tmp, "include", h))
        # the fast kernels compile what these models use (kernels/specialize.py)
        with open(os.path.join(tmp, "include", specialize.HEADER), "w") as f:
            f.write(specialize.header_text(_spec_union(compiled), names))
        srcs = [c.module.name + ".c" for c in compiled] + kernel_files
        libm = any("<math.h>" in p.read_text() for p in ksrcs)
        # a build-only part runs nowhere here: its board/ files are the platform code
        example = example_files(compiled, board, embedded) if board["kind"] != "part" else {}
        part = _copy_part(board, tmp) if board["kind"] == "part" else None
        files = {
            "tinyaot.mk": _makefile(srcs, libm, part),
            "tinyaot.cmake": _cmake(srcs, libm, part),
            "CMakeLists.txt": _cmakelists(),
            "README.md": _readme(compiled, numbers, board, numerics, srcs, headers, libm,
                                 example, embedded, part),
        }
        files.update({f"example/{k}": v for k, v in example.items()})
        for fn, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, fn)), exist_ok=True)
            with open(os.path.join(tmp, fn), "w") as f:
                f.write(text)
        with open(os.path.join(tmp, "report.json"), "w") as f:
            rep = {c.module.name: dict(c.report, board=board_name, measured=numbers[c.module.name])
                   for c in compiled}
            json.dump(rep, f, indent=2, sort_keys=True, default=_jsonable)
            f.write("\n")
        write_manifest(tmp)
        kept = install(tmp, out_dir, previous)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"dir": out_dir, "models": names, "sources": srcs, "headers": headers,
            "numbers": numbers, "example": sorted(example), "kept": kept,
            "arena": {c.module.name: c.report["arena_bytes"] for c in compiled}}


def _spec_union(compiled):
    """The fast kernels' specializations every model of the folder uses."""
    masks = {}
    for c in compiled:
        specialize.merge(masks, c.module.spec)
    return masks


def _example_inputs(c, path):
    """The inputs in `path` (an .npz, 'inputs') for model c, checked against it."""
    from .golden import load_array
    from .golden_check import check_inputs, model_io
    x = load_array(path)
    check_inputs(x, model_io(c)[0], path)
    return x


def _copy_part(board, tmp):
    """A build-only part's startup and linker script into board/: what a firmware for
    that part links besides the model. Returns what the Make / CMake / README need."""
    os.makedirs(os.path.join(tmp, "board"))
    files = [Path(p) for p in board["sources"]] + [Path(board["linker_script"])]
    for f in files:
        shutil.copyfile(f, os.path.join(tmp, "board", f.name))
    return {"name": board["name"], "sources": [Path(p).name for p in board["sources"]],
            "linker_script": Path(board["linker_script"]).name, "runs_on": board.get("runs_on"),
            "cflags": list(board["cflags"]), "opt_cflags": list(board.get("opt_cflags", [])),
            "ldflags": list(board.get("ldflags", [])) + [
                f"-Wl,--defsym=__stack_size={int(board['stack_size'])}"],
            "flash_size": int(board["flash_size"]), "ram_size": int(board["ram_size"]),
            "stack_size": int(board["stack_size"])}


def _makefile(srcs, libm, part=None):
    src_list = " \\\n    ".join(f"$(TINYAOT_DIR)src/{s}" for s in srcs)
    return f"""# Generated by tinyaot export: Makefile fragment for the model library.
#
#   include path/to/this/folder/tinyaot.mk
#   CFLAGS += <your -mcpu/-mthumb/-mfloat-abi/-O flags>
#
# The library compiles at $(TINYAOT_OPT) (default {KERNEL_OPT}, after your CFLAGS), whatever
# your -O: its inline asm needs the registers GCC frees at that level.
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
TINYAOT_OPT ?= {KERNEL_OPT}
TINYAOT_CFLAGS := $(TINYAOT_INCLUDES) {' '.join(REQUIRED_CFLAGS)} $(TINYAOT_OPT)
TINYAOT_LDLIBS := {'-lm' if libm else ''}
TINYAOT_OBJDIR ?= build/tinyaot
TINYAOT_OBJS := $(patsubst $(TINYAOT_DIR)src/%.c,$(TINYAOT_OBJDIR)/%.o,$(TINYAOT_SRCS))
TINYAOT_LIB := $(TINYAOT_OBJDIR)/libtinyaot.a
{_make_part(part)}
_tinyaot_saved_goal := $(.DEFAULT_GOAL)

$(TINYAOT_OBJDIR)/%.o: $(TINYAOT_DIR)src/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(TINYAOT_CFLAGS) -c $< -o $@

$(TINYAOT_LIB): $(TINYAOT_OBJS)
	$(AR) rcs $@ $^

.DEFAULT_GOAL := $(_tinyaot_saved_goal)
"""


def _make_part(part):
    if not part:
        return ""
    return f"""
# The part this folder was exported for ({part['name']}): its CPU and build
# flags, its startup and linker script (board/). A bare-metal firmware:
#   $(CC) $(TINYAOT_PART_CFLAGS) ... main.c $(TINYAOT_PART_SRCS) $(TINYAOT_LIB) \\
#       $(TINYAOT_PART_LDFLAGS) -o app.elf $(TINYAOT_LDLIBS) -lc -lgcc
TINYAOT_PART_CFLAGS := {' '.join(part['cflags'] + part['opt_cflags'])}
TINYAOT_PART_SRCS := {' '.join('$(TINYAOT_DIR)board/' + s for s in part['sources'])}
TINYAOT_PART_LDFLAGS := {' '.join(part['cflags'] + part['ldflags'])} -T$(TINYAOT_DIR)board/{part['linker_script']}
"""


def _cmake(srcs, libm, part=None):
    src_list = "\n".join(f"    ${{TINYAOT_DIR}}/src/{s}" for s in srcs)
    return f"""# Generated by tinyaot export: include(path/to/this/folder/tinyaot.cmake)
# defines the static library target `tinyaot` (include directory PUBLIC);
# then: target_link_libraries(your_app PRIVATE tinyaot)
# Your toolchain / CMAKE_C_FLAGS give the -mcpu etc.; the library adds
# what bit-exactness needs (C99, -ffp-contract=off) and its own optimization
# level, TINYAOT_OPT (default {KERNEL_OPT}, after CMAKE_C_FLAGS_<CONFIG>: a Debug
# or Release build too), because its inline asm needs the registers GCC frees
# at that level.
set(TINYAOT_DIR ${{CMAKE_CURRENT_LIST_DIR}})
if(NOT DEFINED TINYAOT_OPT)
  set(TINYAOT_OPT {KERNEL_OPT})
endif()
set(TINYAOT_SOURCES
{src_list}
)
if(NOT TARGET tinyaot)
  add_library(tinyaot STATIC ${{TINYAOT_SOURCES}})
  target_include_directories(tinyaot PUBLIC ${{TINYAOT_DIR}}/include)
  set_target_properties(tinyaot PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_options(tinyaot PRIVATE -ffp-contract=off ${{TINYAOT_OPT}})
{'  target_link_libraries(tinyaot PUBLIC m)' if libm else ''}
endif()
{_cmake_part(part)}"""


def _cmake_part(part):
    if not part:
        return ""
    return f"""# The part this folder was exported for ({part['name']}): add
# ${{TINYAOT_PART_SOURCES}} to the executable, compile with ${{TINYAOT_PART_CFLAGS}},
# link with ${{TINYAOT_PART_LDFLAGS}} (the linker script and stack size).
set(TINYAOT_PART_SOURCES {' '.join('${TINYAOT_DIR}/board/' + s for s in part['sources'])})
set(TINYAOT_PART_CFLAGS {' '.join(part['cflags'] + part['opt_cflags'])})
set(TINYAOT_PART_LDFLAGS {' '.join(part['cflags'] + part['ldflags'])} -T${{TINYAOT_DIR}}/board/{part['linker_script']})
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


def _readme_part(part):
    if not part:
        return ""
    return f"""
## The part: {part['name']}

`board/` holds its startup ({', '.join('`' + x + '`' for x in part['sources'])}: vector table,
Reset_Handler, a weak SystemInit for the vendor's clock set-up) and its linker
script (`{part['linker_script']}`: the real memory map). Build flags:

* compile: `{' '.join(part['cflags'] + part['opt_cflags'])}`
* link: `{' '.join(part['cflags'] + part['ldflags'])} -Tboard/{part['linker_script']} -lc -lgcc`

`tinyaot.mk` has them as `TINYAOT_PART_CFLAGS`, `TINYAOT_PART_SRCS` and
`TINYAOT_PART_LDFLAGS`, `tinyaot.cmake` as `TINYAOT_PART_CFLAGS`,
`TINYAOT_PART_SOURCES` and `TINYAOT_PART_LDFLAGS`. With a vendor SDK, keep its
startup and take the memory map from the linker script.
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


def _readme(compiled, numbers, board, numerics, srcs, headers, libm, example, embedded,
            part=None):
    from .export_example import requirements_text
    rows = []
    for c in compiled:
        n = numbers[c.module.name]
        fl = n["flash"]
        if part:
            cyc = n.get("cycles")
            measured = (f"{fl['total']:,} | " + (f"{cyc['ms']:.3f} ms ({cyc['cycles']:,} cycles)"
                                                 if cyc else "not measured"))
        else:
            measured = f"{_flash_cell(fl)} | {_fmt(n['instructions'])}"
        rows.append(f"| `{c.module.name}` | {c.report['model']} | {c.report['arena_bytes']:,} | "
                    f"{c.report['weights_bytes']:,} | {measured} | {c.report['macs']:,} |")
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
        if c.report["io"].get("api") == "float":  # --io float: <name>_run_f32
            call += f"""
/* --io float: float in, float out; quantizes and dequantizes like onnxruntime */
float xf[{up}_INPUT_SIZE], yf[{up}_OUTPUT_SIZE];
int status_f = {nm}_run_f32(xf, yf);   /* 0 = ok */"""
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
    fpu, align = requirements_text(board)
    counts = ", ".join(f"{len(x)} for `{c.module.name}`" for c, x in zip(compiled, embedded))
    if part:
        ex = (f"No example: {board['name']} is a build-only part (no QEMU machine); `board/` "
              "holds its startup code and linker script.")
    elif not example:
        ex = (f"No example: the {board['name']} board files have no startup and console code "
              "to copy.")
    elif board["kind"] == "shared-library":
        ex = f"""`example/` is a program for the host: `make -C example run` builds it (the
library through `tinyaot.mk`) and runs every model on the inputs embedded in
`example/example_data.c` ({counts}), printing one line per input:
`output <model> <input> <status>: <values>`."""
    else:
        ex = f"""`example/` is a complete firmware for {board['name']}: `make -C example run`
builds it with the board's flags (the library through `tinyaot.mk`) and runs it in
QEMU. `main.c` runs every model on the inputs embedded in `example_data.c`
({counts}) and prints one line per input, `output <model> <input> <status>:
<values>`, over semihosting. The platform code is the board's: the startup code
(vector table, `.data`/`.bss`{', the FPU switched on' if 'hard-float' in ' '.join(fpu) else ''}),
the semihosting console and `linker.ld`; on your hardware these are your own."""
    if part:
        from ..targets.parts import board_info
        clock = board_info(board["name"]).clock_hz
        head = (f"| C name | model | arena B | weights B | image flash B on {board['name']} | "
                f"time / inference at {clock / 1e6:g} MHz (cycle model) | MACs |")
        about = f"""The image is what a firmware for the {board['name']} holds: the model, the
kernels it calls, `board/` (startup and linker script) and what they take from
libc/libgcc, linked with `board/{part['linker_script']}` and checked against the
part's {part['flash_size']:,} B of flash and {part['ram_size']:,} B of RAM
(.data + .bss with the arena, plus a {part['stack_size']:,} B stack). The time is the
cycle model's (an estimate from Arm's documented timings and the part's flash
wait states, not a measurement: tinyaot's docs/cycle-model.md) for one
inference built with `{flags}` and run on `{part['runs_on']}`, the QEMU board with
this core. The arena is a `static`, 16-byte aligned buffer in the model's .c
file (RAM); with `--io-buffers arena` (the default) it also holds the input and
output."""
    else:
        head = (f"| C name | model | arena B | weights B | flash B on {board['name']} | "
                f"instructions / inference on {board['name']} | MACs |")
        about = f"""Flash is that of a linked firmware image on {board['name']}: code (the model, its
kernels, the board's startup and harness, libc/libgcc) + weights + tables, the
harness's input data left out; your firmware adds its own code and drops the
harness. Instructions were counted in QEMU (`-icount shift=0`) for one
inference, built with `{flags}`. The arena is a `static`, 16-byte aligned buffer in
the model's .c file (RAM); with `--io-buffers arena` (the default) it also holds
the input and output, so it is all the RAM the model needs besides the stack."""
    return f"""# tinyaot model library

Generated by `tinyaot export` for board `{board['name']}` (numerics `{numerics}`:
bit-exact with {'onnxruntime' if numerics == 'ort' else 'TFLite Micro'}). Plain C99, no malloc, no
stdio, no Python or SCons needed to build it.

{head}
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

{about}
{_readme_part(part)}
## API

{chr(10).join(api)}
`<name>_run` / `<name>_invoke` are not reentrant (one static arena per model). Several models
in one firmware each have their own arena and share the kernels.

## Requirements

{chr(10).join(fpu)}

{chr(10).join(align)}

## Example

{ex}

## Files

* `src/`: {', '.join(srcs)}
* `include/`: {', '.join([c.module.name + '.h' for c in compiled] + headers + [specialize.HEADER])}

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

## Exporting again

`tinyaot export ... -o` this folder again replaces the files listed in
`tinyaot-files.json` and keeps every file you added (it says which); it refuses,
and changes nothing, if you edited one of the listed files. `example/build/` is
rebuilt, not kept.
"""
