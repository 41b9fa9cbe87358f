"""Builds through SCons: flags from boards/<b>/board.toml, one place.

`scons_targets` is called from the SConstruct; `build_generated` is what the
CLI calls: it runs `scons` on a generated directory and returns the artifact.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .errors import TinyAotError
from .paths import REPO_ROOT, RUNTIME_INCLUDE, SCONSTRUCT, build_root, runtime_sources
from .targets.qemu import (firmware_compile_flags, firmware_libs, firmware_link_flags,
                           harness_sources, load_board)

HOST_CFLAGS_EXTRA = ["-std=c99"]


def board_or_error(name):
    try:
        return load_board(name)
    except FileNotFoundError:
        known = sorted(p.name for p in (REPO_ROOT / "boards").iterdir()
                       if (p / "board.toml").exists())
        raise TinyAotError(f"unknown board '{name}' (known: {', '.join(known)})") from None


def _gen_info(gen_dir):
    with open(os.path.join(gen_dir, "report.json")) as f:
        rep = json.load(f)
    return rep["name"], rep.get("kernels", [])


def scons_targets(Environment, root, board_name, gen_dir, harness=True, stack_check=True):
    board = board_or_error(board_name)
    gen_dir = os.path.abspath(gen_dir)
    name, _ = _gen_info(gen_dir)
    kernels = [str(p) for p in runtime_sources()]
    if board["kind"] == "shared-library":
        env = Environment(CC=board["compiler"], ENV=os.environ,
                          CCFLAGS=board["cflags"] + board.get("warn_cflags", []) + HOST_CFLAGS_EXTRA
                          + [f for f in os.environ.get("TINYAOT_HOST_CFLAGS", "").split() if f],
                          CPPPATH=[str(RUNTIME_INCLUDE), gen_dir],
                          LINKFLAGS=[f for f in os.environ.get("TINYAOT_HOST_LDFLAGS", "").split() if f],
                          LIBS=["m"], SHLIBPREFIX="lib")
        kenv = env.Clone(CPPPATH=[str(RUNTIME_INCLUDE)])
        kdir = _host_kernel_dir(kenv)
        objs = [kenv.SharedObject(os.path.join(kdir, Path(k).stem + ".os"), k) for k in kernels]
        objs.append(env.SharedObject(os.path.join(gen_dir, "obj", name + ".os"),
                                     os.path.join(gen_dir, name + ".c")))
        return env.SharedLibrary(os.path.join(gen_dir, name), objs)
    env = Environment(CC=board["compiler"], AR=board["toolchain_prefix"] + "ar",
                      RANLIB=board["toolchain_prefix"] + "ranlib", ENV=os.environ,
                      # -fstack-usage: .su next to each object, for the stack check
                      # after the link (codegen/tools/stack_check.py); no code change.
                      CCFLAGS=firmware_compile_flags(board) + ["-std=c99", "-fstack-usage"],
                      CPPPATH=[str(RUNTIME_INCLUDE), gen_dir],
                      LINKFLAGS=firmware_link_flags(board) + [f"-Wl,-Map={gen_dir}/{name}.map"],
                      LIBS=[], PROGSUFFIX=".elf")
    objdir = os.path.join(gen_dir, "obj-" + board_name)
    # The kernels form a static library, so only the ones the model calls link in.
    kobjs = [env.Object(os.path.join(objdir, Path(k).stem + ".o"), k) for k in kernels]
    lib = env.StaticLibrary(os.path.join(objdir, "tinyaot"), kobjs)
    srcs = [os.path.join(gen_dir, name + ".c")]
    if harness:
        srcs.append(os.path.join(gen_dir, "harness_data.c"))
        srcs += [str(s) for s in harness_sources(board)]
    objs = [env.Object(os.path.join(objdir, Path(s).stem + ".o"), s) for s in srcs]
    libs = [lib[0], "m"] + [x[2:] if x.startswith("-l") else x for x in firmware_libs(board)]
    prog = env.Program(os.path.join(gen_dir, name + "-" + board_name), objs, LIBS=libs)
    env.Depends(prog, str(board["linker_script"]))
    if harness and stack_check:  # build_generated passes stack_check=0 and checks itself
        env.AddPostAction(prog, _scons_stack_check(board, gen_dir, objdir))
    return prog


def _host_kernel_dir(kenv):
    """Host builds: the runtime kernels do not depend on the model, so their
    objects live in one folder per compiler command line (build/host-kernels/
    <hash>) and SCons rebuilds them only when a kernel source, header or flag
    changes: a model build then compiles its own C file only."""
    import hashlib
    line = kenv.subst("$SHCC $SHCFLAGS $SHCCFLAGS $_CCCOMCOM")
    return str(build_root() / "host-kernels" / hashlib.sha1(line.encode()).hexdigest()[:16])


def _scons_stack_check(board, gen_dir, objdir):
    """SCons post-link action: the worst-case stack check of stack_check.py."""
    def action(target, source, env):
        from .tools.stack_check import check_generated
        try:
            st = check_generated(gen_dir, str(target[0]), objdir, board)
        except TinyAotError as e:
            print(f"tinyaot: error: {e}", file=sys.stderr)
            return 1
        print(f"stack {st['worst_case_bytes']} B worst case, {board['name']} reserves "
              f"{st['reserved_bytes']} B; RAM {st['ram_needed_bytes']} of {st['ram_limit_bytes']} B")
        return 0

    from SCons.Script import Action
    return Action(action, strfunction=lambda *a, **k: None)


def build_generated(gen_dir, board_name, harness=True, quiet=True, ram_limit=None, info=None):
    """Run SCons on a generated directory; returns the artifact path.

    A firmware is then checked for its worst-case stack (stack_check.py):
    TinyAotError if the board's stack reservation or RAM is too small; the
    numbers go to info["stack"] when a dict is passed."""
    board = board_or_error(board_name)
    gen_dir = os.path.abspath(gen_dir)
    name, _ = _gen_info(gen_dir)
    cmd = [sys.executable, "-m", "SCons", "-f", str(SCONSTRUCT), "-Q", "-j2",
           f"board={board_name}", f"gen={gen_dir}", f"harness={'1' if harness else '0'}",
           "stack_check=0"]
    proc = subprocess.run(cmd, cwd=str(REPO_ROOT), capture_output=True, text=True)
    if proc.returncode != 0:
        raise TinyAotError(f"build failed for board {board_name}:\n{proc.stdout[-4000:]}"
                           f"{proc.stderr[-4000:]}")
    if board["kind"] == "shared-library":
        return os.path.join(gen_dir, f"lib{name}.so")
    elf = os.path.join(gen_dir, f"{name}-{board_name}.elf")
    if harness:
        from .tools.stack_check import check_generated
        st = check_generated(gen_dir, elf, os.path.join(gen_dir, "obj-" + board_name), board,
                             ram_limit=ram_limit)
        if info is not None:
            info["stack"] = st
    return elf


def scons_verify(Environment, Command, AlwaysBuild, Default, root, board_name, args):
    """The default `scons board=B` job: compile, build, verify, report."""
    if board_name == "all" or "," in board_name:  # a fleet: codegen/fleet.py
        from .fleet import scons_fleet
        return scons_fleet(Command, AlwaysBuild, Default, board_name, args)
    from .verify import verify_model
    from .paths import DEFAULT_GOLDEN, DEFAULT_MODEL

    model = args.get("model", str(DEFAULT_MODEL))
    golden = args.get("golden", str(DEFAULT_GOLDEN) if "model" not in args else None)
    numerics = args.get("numerics", "ort")
    key = args.get("key", "outputs")
    io_buffers = args.get("io_buffers", "arena")  # scons ... io_buffers=user
    optimize = args.get("optimize", "speed")  # scons ... optimize=size

    def action(target, source, env):
        from .cli import print_report
        try:
            rep = verify_model(model, golden, board=board_name, numerics=numerics, key=key,
                               io_buffers=io_buffers, optimize=optimize)
        except TinyAotError as e:
            print(f"tinyaot: error: {e}", file=sys.stderr)
            return 2
        print_report(rep)
        return 0 if rep["mismatches"] == 0 else 1

    from SCons.Script import Action

    t = Command("verify-" + board_name, [], Action(action, strfunction=lambda *a, **k: None))
    AlwaysBuild(t)
    Default(t)
