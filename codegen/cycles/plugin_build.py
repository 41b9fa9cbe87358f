"""Build the QEMU plugin (codegen/cycles/plugin/*.c) with the host compiler, on demand.

The shared object lands in <build>/cycles/ named by a hash of its sources and
flags, so it is built once per change and concurrent users never see a
half-written file (written to a temporary name, then renamed).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import TinyAotError
from ..paths import build_root

PLUGIN_DIR = Path(__file__).resolve().parent / "plugin"
SOURCES = ("cyclemodel.c", "thumb_decode.c")
HEADERS = ("qemu_plugin_api.h", "thumb_decode.h")
CFLAGS = ["-O2", "-std=gnu11", "-fPIC", "-shared", "-fvisibility=hidden",
          "-Wall", "-Wextra", "-Werror"]


def host_compiler():
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise TinyAotError("the cycle model needs a host C compiler (gcc) to build its QEMU plugin")
    return cc


def plugin_path() -> Path:
    cc = host_compiler()
    h = hashlib.sha256(" ".join([cc] + CFLAGS).encode())
    for name in SOURCES + HEADERS:
        h.update((PLUGIN_DIR / name).read_bytes())
    out_dir = build_root() / "cycles"
    so = out_dir / f"cyclemodel-{h.hexdigest()[:16]}.so"
    if so.is_file():
        return so
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="cyclemodel-", suffix=".so.tmp", dir=out_dir)
    os.close(fd)
    cmd = [cc, *CFLAGS, "-o", tmp, *[str(PLUGIN_DIR / s) for s in SOURCES]]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise TinyAotError(f"building the cycle-model plugin failed:\n{' '.join(cmd)}\n"
                           f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    os.replace(tmp, so)
    return so
