"""Debug/analysis builds of a compiled model (validate, profile, report).

Same flags as the normal builds (board.toml through codegen/targets/qemu.py),
plus extra defines and flags: the hook header, -fstack-usage and
-fcallgraph-info for the stack analysis, a map file. One object per source so
that every .su / .ci file can be found next to its object.
"""
from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..backend import emit_harness_data
from ..compiler import write_outputs
from ..errors import TinyAotError
from ..paths import RUNTIME_INCLUDE, runtime_sources
from ..targets.qemu import (board_sources, firmware_compile_flags, firmware_libs,
                            firmware_link_flags)

C_DIR = Path(__file__).resolve().parent / "c"


def _run(cmd, what):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise TinyAotError(f"{what} failed:\n{' '.join(map(str, cmd))}\n"
                           f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


def _kernel_sources(c):
    # Every runtime file; --gc-sections drops what the model does not call.
    return runtime_sources()


def build_host(c, out_dir, defines=(), extra_cflags=()):
    """Shared library of the model + kernels; returns its path."""
    from ..build import board_or_error
    b = board_or_error("host")
    write_outputs(c, out_dir)
    out_dir = Path(out_dir)
    so = out_dir / f"lib{c.module.name}-debug.so"
    cmd = [b["compiler"], *b["cflags"], *b.get("warn_cflags", []), "-std=c99",
           *[f"-D{d}" for d in defines], *extra_cflags,
           f"-I{RUNTIME_INCLUDE}", f"-I{out_dir}", f"-I{C_DIR}",
           str(out_dir / f"{c.module.name}.c"), *map(str, _kernel_sources(c)),
           *b.get("ldflags", ["-shared"]), "-o", str(so), "-lm"]
    _run(cmd, "host debug build")
    return so


def build_firmware(c, board, out_dir, inputs, main_c, defines=(), extra_cflags=(),
                   analysis=False):
    """Firmware ELF running `inputs` (N, in) through `main_c`.

    analysis=True adds -fstack-usage and -fcallgraph-info=su (files next to
    the objects in out_dir/obj). Returns (elf, map_path, obj_dir).
    """
    write_outputs(c, out_dir)
    out_dir = Path(out_dir)
    name = c.module.name
    g = c.graph
    xin, xout = g.tensors[g.inputs[0]], g.tensors[g.outputs[0]]
    (out_dir / "harness_data.c").write_text(emit_harness_data(name, inputs, xin.size, xout.size))
    obj_dir = out_dir / ("obj-dbg-" + board["name"])
    obj_dir.mkdir(parents=True, exist_ok=True)
    cflags = firmware_compile_flags(board, defines) + ["-std=c99", f"-I{RUNTIME_INCLUDE}",
                                                         f"-I{out_dir}", f"-I{C_DIR}"]
    cflags += list(extra_cflags)
    if analysis:
        cflags += ["-fstack-usage", "-fcallgraph-info=su"]
    srcs = [out_dir / f"{name}.c", out_dir / "harness_data.c", Path(main_c)]
    srcs += board_sources(board) + list(_kernel_sources(c))
    seen = set()
    jobs = []
    for s in srcs:
        stem = Path(s).stem
        while stem in seen:
            stem += "_"
        seen.add(stem)
        jobs.append((Path(s), obj_dir / f"{stem}.o"))

    def compile_one(job):
        src, obj = job
        _run([board["compiler"], *cflags, "-c", str(src), "-o", str(obj)], f"compiling {src.name}")
        return obj

    with ThreadPoolExecutor(max_workers=2) as ex:
        objs = list(ex.map(compile_one, jobs))
    elf = out_dir / f"{name}-{board['name']}-dbg.elf"
    map_path = elf.with_suffix(".map")
    _run([board["compiler"], *map(str, objs), *firmware_link_flags(board),
          f"-Wl,-Map={map_path}", "-o", str(elf), "-lm", *firmware_libs(board)], "firmware link")
    return elf, map_path, obj_dir


def private_dir(c, what):
    """A fresh directory under build/ (removed by the caller)."""
    import tempfile
    from ..paths import build_root
    base = str(build_root())
    os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix=f"{c.module.name}-{what}-", dir=base)
