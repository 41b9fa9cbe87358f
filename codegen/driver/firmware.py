"""The one firmware / host-library builder: SCons, flags from boards/<b>/board.toml.

`scons_targets` is called from the SConstruct; `build_generated` is what the
CLI calls: it runs `scons` on a generated directory and returns the artifact.
`build_compiled` writes a compiled model and its embedded inputs first. A
`Variant` builds the same directory another way (another main(), defines,
include directories, no stack check): validate, profile, report and the
stack-painting run use it, so every firmware, the verification one included,
comes out of the same SCons rules.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..errors import TinyAotError
from ..paths import REPO_ROOT, RUNTIME_INCLUDE, SCONSTRUCT, build_root, runtime_sources
from ..targets.boards import board_or_error
from ..targets.qemu import (board_sources, firmware_compile_flags, firmware_libs,
                           firmware_link_flags)

HOST_CFLAGS_EXTRA = ["-std=c99"]
# Debug mains and hook headers of the variant builds (validate, profile, stack painting).
DEBUG_C_DIR = Path(__file__).resolve().parent / "c"


@dataclass(frozen=True)
class Variant:
    """A build of a generated directory besides the verification firmware.

    tag names its objects and artifact apart (obj-<board>-<tag>/,
    <name>-<board>-<tag>.elf, lib<name>-<tag>.so); main replaces the board's
    harness main(); defines and include_dirs go to every object. board:
    (key, value) pairs that replace board.toml's for this build, e.g. a part's
    cflags on the QEMU board that times it, or a roomier copy of a part's
    linker script (codegen/targets/parts.py)."""
    tag: str
    main: str | None = None
    defines: tuple = ()
    include_dirs: tuple = ()
    board: tuple = ()

    def apply(self, board: dict) -> dict:
        """`board` with this variant's replacements."""
        out = dict(board)
        for key, value in self.board:
            out[key] = Path(value) if key == "linker_script" else (
                list(value) if isinstance(value, (list, tuple)) else value)
        return out

    def save(self, gen_dir):
        """Written next to the sources; the SConstruct reads it back (variant=PATH)."""
        path = os.path.join(gen_dir, f"variant-{self.tag}.json")
        with open(path, "w") as f:
            json.dump(asdict(self), f, indent=1)
        return path

    @classmethod
    def load(cls, path):
        with open(path) as f:
            d = json.load(f)
        return cls(d["tag"], d.get("main"), tuple(d.get("defines", ())),
                   tuple(d.get("include_dirs", ())),
                   tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in d.get("board", ())))


@dataclass(frozen=True)
class Firmware:
    """What a firmware build leaves: the ELF, its map file, the object directory
    (a .su file next to each object, for driver/stack.py)."""
    elf: str
    map: str
    obj_dir: str


def _gen_info(gen_dir):
    with open(os.path.join(gen_dir, "report.json")) as f:
        rep = json.load(f)
    return rep["name"], rep.get("kernels", [])


def _suffix(variant):
    return f"-{variant.tag}" if variant else ""


def firmware_paths(gen_dir, name, board_name, variant=None):
    """Firmware(elf, map, obj_dir) a build of gen_dir leaves (the verification
    firmware's map keeps its historic name <name>.map)."""
    sfx = _suffix(variant)
    return Firmware(os.path.join(gen_dir, f"{name}-{board_name}{sfx}.elf"),
                    os.path.join(gen_dir, f"{name}-{board_name}{sfx}.map" if variant
                                 else f"{name}.map"),
                    os.path.join(gen_dir, f"obj-{board_name}{sfx}"))


def scons_targets(Environment, root, board_name, gen_dir, harness=True, stack_check=True,
                  variant=None):
    board = board_or_error(board_name)
    if variant is not None:
        board = variant.apply(board)
    gen_dir = os.path.abspath(gen_dir)
    name, _ = _gen_info(gen_dir)
    kernels = [str(p) for p in runtime_sources()]
    sfx = _suffix(variant)
    # SCons runs its commands through the shell: quote a define such as
    # HOOKS_HEADER="x.h" so that the compiler sees the quotes.
    defines = [shlex.quote(d) for d in variant.defines] if variant else []
    extra_inc = [str(d) for d in variant.include_dirs] if variant else []
    if board["kind"] == "shared-library":
        env = Environment(CC=board["compiler"], ENV=os.environ, CCFLAGS=host_ccflags(board),
                          CPPPATH=[str(RUNTIME_INCLUDE), gen_dir] + extra_inc,
                          LINKFLAGS=[f for f in os.environ.get("TINYAOT_HOST_LDFLAGS", "").split() if f],
                          LIBS=["m"], SHLIBPREFIX="lib")
        # the kernels' objects: a finished folder of the cache (built once, under
        # a lock, by whichever build needs it first), plain inputs to this build
        kdir = host_kernel_cache(board)
        objs = [env.File(os.path.join(kdir, Path(k).stem + ".os")) for k in kernels]
        for o in objs:
            o.attributes.shared = 1  # position-independent objects (SharedObject built them)
        objs.append(env.SharedObject(os.path.join(gen_dir, "obj", name + sfx + ".os"),
                                     os.path.join(gen_dir, name + ".c"),
                                     CCFLAGS=env["CCFLAGS"] + [f"-D{d}" for d in defines]))
        return env.SharedLibrary(os.path.join(gen_dir, name + sfx), objs)
    out = firmware_paths(gen_dir, name, board_name, variant)
    # -fstack-usage: .su next to each object, for the stack check after the
    # link (codegen/driver/stack.py); no code change.
    env = Environment(CC=board["compiler"], AR=board["toolchain_prefix"] + "ar",
                      RANLIB=board["toolchain_prefix"] + "ranlib", ENV=os.environ,
                      CCFLAGS=firmware_compile_flags(board, defines) + ["-std=c99", "-fstack-usage"],
                      CPPPATH=[str(RUNTIME_INCLUDE), gen_dir] + extra_inc,
                      LINKFLAGS=firmware_link_flags(board) + [f"-Wl,-Map={out.map}"],
                      LIBS=[], PROGSUFFIX=".elf")
    objdir = out.obj_dir
    # The kernels form a static library, so only the ones the model calls link in.
    # Those the model's tinyaot_model_config.h does not specialize come compiled
    # from the board's kernel cache, and those it does from the cache of its
    # specialization (models with the same config share them); both are keyed by
    # the flags that can reach a kernel (kernel_flags) and a variant's include
    # folders, so a profile or report build shares them too. TINYAOT_FW_KERNEL_CACHE=0
    # compiles them all in the build.
    cached = {}
    if os.environ.get("TINYAOT_FW_KERNEL_CACHE") != "0":
        cmd = " ".join([env.subst("$CC")] + kernel_flags(env["CCFLAGS"]))
        cached = {**firmware_kernel_cache(board, cmd, extra_inc),
                  **specialized_kernel_cache(board, cmd, gen_dir, extra_inc)}
    if cached:
        os.makedirs(objdir, exist_ok=True)
        for obj in cached.values():  # the stack check reads every object's .su in objdir
            su = obj[:-2] + ".su"
            if os.path.exists(su):
                shutil.copyfile(su, os.path.join(objdir, os.path.basename(su)))
    kobjs = [env.File(cached[k]) if k in cached
             else env.Object(os.path.join(objdir, Path(k).stem + ".o"), k) for k in kernels]
    lib = env.StaticLibrary(os.path.join(objdir, "tinyaot"), kobjs)
    srcs = [os.path.join(gen_dir, name + ".c")]
    if harness:
        srcs.append(os.path.join(gen_dir, "harness_data.c"))
        srcs += [str(s) for s in board_sources(board)]
        srcs.append(str(variant.main) if variant and variant.main else str(board["harness_main"]))
    objs = [env.Object(os.path.join(objdir, Path(s).stem + ".o"), s) for s in srcs]
    libs = [lib[0], "m"] + [x[2:] if x.startswith("-l") else x for x in firmware_libs(board)]
    prog = env.Program(out.elf[:-len(".elf")], objs, LIBS=libs)
    env.Depends(prog, str(board["linker_script"]))
    if harness and stack_check and not variant:  # build_generated passes stack_check=0 and checks itself
        env.AddPostAction(prog, _scons_stack_check(board, gen_dir, objdir))
    return prog


def specialized_kernels():
    """The runtime sources that include tinyaot_specialize.h (directly or through
    the headers they include): compiled per model, with its tinyaot_model_config.h."""
    inc_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    dirs = [RUNTIME_INCLUDE, RUNTIME_INCLUDE.parent / "src" / "internal"]

    def reaches(path, seen):
        for name in inc_re.findall(path.read_text()):
            if Path(name).name == "tinyaot_specialize.h":
                return True
            for base in [path.parent] + dirs:
                q = (base / name).resolve()
                if q.is_file():
                    if q not in seen:
                        seen.add(q)
                        if reaches(q, seen):
                            return True
                    break
        return False

    return {str(k) for k in runtime_sources() if reaches(Path(k), set())}


def firmware_kernel_cache(board, compile_cmd, include_dirs=()):
    """{source: object} of the runtime kernels no model specializes, compiled for
    the board by `compile_cmd` (the firmware's own compiler and flags, as SCons
    runs them, less those no kernel reads: kernel_flags), include_dirs a variant's,
    into build/fw-kernels/<board>-<key>/ with their .su files: the
    same objects every firmware build of the board would compile, made once
    (_cache_folder: complete or absent; the key covers the command and every
    runtime_c source and header)."""
    spec = specialized_kernels()
    plain = [str(k) for k in runtime_sources() if str(k) not in spec]

    def fill(tmp):
        _compile_kernels(board, compile_cmd, plain, tmp, include_dirs)

    key = _runtime_key([compile_cmd, str(RUNTIME_INCLUDE)] + list(include_dirs))
    final = _cache_folder(build_root() / "fw-kernels" / f"{board['name']}-{key}", fill)
    return {k: os.path.join(final, Path(k).stem + ".o") for k in plain}


def kernel_flags(flags):
    """The compile flags (a list, as SCons's CCFLAGS) that can change a runtime kernel's
    object: all but the -D of a TINYAOT_ macro that no runtime_c source or header names
    (a board's timer base, the harness's hooks, profile and stack-paint switches): such a
    macro cannot reach a kernel, so leaving it out keeps the object and lets builds that
    differ only in it share the kernel caches."""
    known = set()  # every TINYAOT_ name runtime_c's sources and headers mention
    for p in RUNTIME_INCLUDE.parent.rglob("*"):
        if p.is_file() and p.suffix in (".c", ".h", ".inc"):
            known.update(re.findall(r"\bTINYAOT_\w+", p.read_text()))
    out = []
    for f in flags:
        name = re.match(r"-D['\"]?(TINYAOT_\w+)", f)
        if not (name and name.group(1) not in known):
            out.append(f)
    return out


def specialized_kernel_cache(board, compile_cmd, gen_dir, include_dirs=()):
    """{source: object} of the kernels the model's tinyaot_model_config.h specializes
    (specialized_kernels), compiled as firmware_kernel_cache compiles the others, with
    that header on the include path, into build/fw-spec/<board>-<key>/: the key covers
    the command, every runtime source and the header's preprocessor lines (not its
    comment, which names the model), so models with the same specialization share the
    objects. {} without a config (the build compiles them). include_dirs: a variant's,
    after the runtime's (as the build orders them)."""
    cfg = Path(gen_dir) / "tinyaot_model_config.h"
    if not cfg.is_file():
        return {}
    text = cfg.read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith("#")]
    spec = sorted(specialized_kernels())

    def fill(tmp):
        inc = os.path.join(tmp, "config")
        os.makedirs(inc)
        Path(inc, cfg.name).write_text("\n".join(lines) + "\n")
        _compile_kernels(board, f"{compile_cmd} -I{shlex.quote(inc)}", spec, tmp, include_dirs)

    key = _runtime_key([compile_cmd, str(RUNTIME_INCLUDE), lines, list(include_dirs)])
    final = _cache_folder(build_root() / "fw-spec" / f"{board['name']}-{key}", fill)
    return {k: os.path.join(final, Path(k).stem + ".o") for k in spec}


def _compile_kernels(board, compile_cmd, sources, out_dir, include_dirs=()):
    """Each runtime source to out_dir/<stem>.o by compile_cmd (its .su beside it), the
    runtime's headers then include_dirs on the path, two at a time; a failure is the
    build's error."""
    from concurrent.futures import ThreadPoolExecutor
    inc = " ".join(f"-I{shlex.quote(str(d))}" for d in [RUNTIME_INCLUDE, *include_dirs])

    def compile_one(k):
        out = os.path.join(out_dir, Path(k).stem + ".o")
        cmd = f"{compile_cmd} {inc} -c -o {shlex.quote(out)} {shlex.quote(k)}"
        return k, subprocess.run(cmd, shell=True, capture_output=True, text=True)
    with ThreadPoolExecutor(2) as ex:
        for k, proc in ex.map(compile_one, sources):
            if proc.returncode != 0:
                raise TinyAotError(f"build failed for board {board['name']} (runtime "
                                   f"kernel {Path(k).name}):\n{proc.stderr[-4000:]}")


def _runtime_key(what):
    """16 hex digits over `what` (JSON) and every runtime_c source and header (by content)."""
    import hashlib
    h = hashlib.sha1()
    h.update(json.dumps(what).encode())
    for p in sorted(RUNTIME_INCLUDE.parent.rglob("*")):
        if p.is_file() and p.suffix in (".c", ".h", ".inc"):
            h.update(p.relative_to(RUNTIME_INCLUDE.parent).as_posix().encode() + b"\0")
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _cache_folder(final, fill):
    """The folder `final`, made by fill(tmp) into a private folder renamed into
    place under a lock: it appears complete or not at all, and concurrent builds
    on one build tree wait for the first and then use its folder."""
    import fcntl
    import tempfile
    if final.is_dir():
        return str(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(str(final) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if final.is_dir():
            return str(final)
        tmp = tempfile.mkdtemp(prefix=final.name + ".tmp-", dir=str(final.parent))
        try:
            fill(tmp)
            os.chmod(tmp, 0o755)  # mkdtemp's 0700 would hide it from other users of the tree
            os.rename(tmp, str(final))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return str(final)


def host_ccflags(board):
    """The compiler flags of every host object (the kernels' and the model's)."""
    return (board["cflags"] + board.get("warn_cflags", []) + HOST_CFLAGS_EXTRA
            + [f for f in os.environ.get("TINYAOT_HOST_CFLAGS", "").split() if f])


def host_kernel_cache(board):
    """build/host-kernels/<key>/: every runtime kernel compiled for the host.

    The kernels do not depend on the model, so a host model build compiles its
    own C file only and links these. The first build that needs the folder
    compiles the kernels (its own SCons database) under a lock (_cache_folder);
    concurrent builds on one build tree (CI, make -j, several terminals) wait
    for it and then use it. Any change to a kernel, a header, the flags or the
    compiler gives another key, hence another folder."""
    def fill(tmp):
        cmd = [sys.executable, "-m", "SCons", "-f", str(SCONSTRUCT), "-Q", "-j2",
               f"board={board['name']}", f"kernels={tmp}"]
        proc = subprocess.run(cmd, cwd=str(REPO_ROOT), capture_output=True, text=True)
        if proc.returncode != 0:
            raise TinyAotError(f"build failed for board {board['name']} (runtime kernels):\n"
                               f"{proc.stdout[-4000:]}{proc.stderr[-4000:]}")

    key = _runtime_key([board["compiler"], host_ccflags(board)])
    return _cache_folder(build_root() / "host-kernels" / key, fill)


def scons_kernel_targets(Environment, board_name, out_dir):
    """`scons board=host kernels=DIR`: every runtime kernel as a host object in DIR
    (what host_kernel_cache runs)."""
    board = board_or_error(board_name)
    if board["kind"] != "shared-library":
        raise TinyAotError(f"kernels=DIR builds host kernel objects, not for board {board_name}")
    env = Environment(CC=board["compiler"], ENV=os.environ, CCFLAGS=host_ccflags(board),
                      CPPPATH=[str(RUNTIME_INCLUDE)])
    return [env.SharedObject(os.path.join(out_dir, Path(k).stem + ".os"), str(k))
            for k in runtime_sources()]


def _scons_stack_check(board, gen_dir, objdir):
    """SCons post-link action: the worst-case stack check of driver/stack.py."""
    def action(target, source, env):
        from .stack import check_generated
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


def build_generated(gen_dir, board_name, harness=True, quiet=True, ram_limit=None, info=None,
                    variant=None):
    """Run SCons on a generated directory; returns the artifact path.

    The verification firmware (no variant) is then checked for its
    worst-case stack (driver/stack.py): TinyAotError if the board's stack
    reservation or RAM is too small; the numbers go to info["stack"] when a
    dict is passed. A variant's firmware is not checked (its caller
    analyses it, or it is a debug build)."""
    board = board_or_error(board_name)
    from .toolchain import require_tools
    require_tools(board, run=False)
    gen_dir = os.path.abspath(gen_dir)
    name, _ = _gen_info(gen_dir)
    cmd = [sys.executable, "-m", "SCons", "-f", str(SCONSTRUCT), "-Q", "-j2",
           f"board={board_name}", f"gen={gen_dir}", f"harness={'1' if harness else '0'}",
           "stack_check=0"]
    if variant is not None:
        cmd.append(f"variant={variant.save(gen_dir)}")
    proc = subprocess.run(cmd, cwd=str(REPO_ROOT), capture_output=True, text=True)
    if proc.returncode != 0:
        raise TinyAotError(f"build failed for board {board_name}:\n{proc.stdout[-4000:]}"
                           f"{proc.stderr[-4000:]}")
    if board["kind"] == "shared-library":
        return os.path.join(gen_dir, f"lib{name}{_suffix(variant)}.so")
    fw = firmware_paths(gen_dir, name, board_name, variant)
    if harness and variant is None:
        from .stack import check_generated
        st = check_generated(gen_dir, fw.elf, fw.obj_dir, board, ram_limit=ram_limit)
        if info is not None:
            info["stack"] = st
    return fw.elf


def harness_layout_of(c, entry="quantized"):
    """The harness record layout of compiled model c for the API form `entry`
    (backend/harness_data.py)."""
    from ..backend.harness_data import harness_layout
    from ..backend.io_api import api_ends
    return harness_layout(*api_ends(c.graph, c.options.get("io", "model")), entry)


def as_records(layout, inputs):
    """inputs: a list with an array (N, ...) per graph input (packed here), or records
    (N, layout.input_size) already packed -> the records, int8."""
    from ..backend.harness_data import pack_inputs
    if isinstance(inputs, (list, tuple)):
        return pack_inputs(layout, inputs)
    a = np.asarray(inputs)
    a = a.view(np.int8) if a.dtype.itemsize == 1 else a.astype(np.int8)
    return a.reshape(len(a), -1)


def zero_point_records(c, n=1):
    """n records of every quantized input at its zero point (a real zero)."""
    layout = harness_layout_of(c)
    return as_records(layout, [np.full((n, s.end.size), s.end.zero_point, dtype=s.dtype)
                               for s in layout.inputs])


def write_harness(c, out_dir, inputs, boot_check=False, layout=None):
    """<name>.c/.h, report.json and harness_data.c (every input in flash) in out_dir.
    inputs: as as_records takes them; layout: the API form the firmware calls (default:
    the quantized tensors, harness_layout_of). boot_check: the firmware also checks the
    weights' digest at boot (--integrity)."""
    from ..backend.harness_data import harness_source
    from ..compiler import write_outputs
    write_outputs(c, out_dir)
    layout = layout or harness_layout_of(c)
    per = as_records(layout, inputs)
    if per.shape[1] != layout.input_size:
        raise TinyAotError(f"each input record must have {layout.input_size} bytes, got "
                           f"{per.shape[1]}", model=str(c.report.get("model")))
    with open(os.path.join(out_dir, "harness_data.c"), "w") as f:
        f.write(harness_source(c.module.name, layout, per))
        if boot_check:  # integrity.py: the firmware checks its weights at boot
            from ..integrity import harness_verify_c
            f.write(harness_verify_c(c.module.name))


def build_compiled(c, board, out_dir, inputs, variant=None, layout=None, **kw):
    """A compiled model's firmware running `inputs` (as write_harness takes them):
    Firmware(elf, map, obj_dir). board: a board dict or name; kw as for build_generated."""
    bname = board if isinstance(board, str) else board["name"]
    write_harness(c, out_dir, inputs, layout=layout)
    build_generated(out_dir, bname, harness=True, variant=variant, **kw)
    return firmware_paths(os.path.abspath(out_dir), c.module.name, bname, variant)


def build_host_library(c, out_dir, variant):
    """A compiled model as a host shared library built as `variant`; returns its path."""
    from ..compiler import write_outputs
    write_outputs(c, out_dir)
    return build_generated(out_dir, "host", harness=False, variant=variant)


def private_dir(c, what):
    """A fresh directory under build/ (removed by the caller)."""
    import tempfile
    base = str(build_root())
    os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix=f"{c.module.name}-{what}-", dir=base)
