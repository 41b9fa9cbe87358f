"""Worst-case stack of a linked firmware, checked against the board.

The bound: -fstack-usage (.su, exact per function as GCC allocated it) over
the call graph of the linked ELF (every direct call and tail call in the
disassembly, so implicit libgcc calls count too). Functions without a .su
entry (libc, libgcc) are measured from their prologue (push / vpush / sub
sp), which is exact for the leaf routines they are; indirect calls or
recursion make the bound "unbounded".

Every firmware build (driver/firmware.py:build_generated, so `tinyaot verify`
and the SCons job too) compiles with -fstack-usage; right after the link this
module bounds the stack (as `tinyaot report` shows it) and fails the build when

- the board's stack reservation (``stack_size``, what the linker script sets
  aside) is smaller than the worst case from the reset handler, or
- arena + worst-case stack + the other static data (.data/.bss besides the
  arena: harness buffers, board state) exceed the board's RAM (or
  ``--ram-limit``).

Costs one objdump of the code and a walk of the call graph (well under a
second for the shared models).
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from ..errors import TinyAotError
from ..targets.qemu import firmware_size
from .budget import human, parse_size

def su_table(obj_dir):
    su = {}
    for f in Path(obj_dir).glob("*.su"):
        for line in f.read_text().splitlines():
            parts = line.split("\t")
            if len(parts) >= 3:
                fn = parts[0].rsplit(":", 1)[-1]
                size = int(parts[1])
                # static functions of the same name in several files: keep the largest
                if fn not in su or su[fn][0] < size:
                    su[fn] = (size, parts[2])
    return su


_FN_RE = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
_CALL_RE = re.compile(r"\t(bl|blx|b|b\.w|b\.n)\t[0-9a-f]+ <([^>+]+)>")
_PUSH_RE = re.compile(r"\t(push|stmdb)(?:\.w)?\t(?:sp!, )?\{([^}]*)\}")
_VPUSH_RE = re.compile(r"\tvpush\t\{([^}]*)\}")
_SUB_RE = re.compile(r"\tsub(?:\.w|w)?\tsp, (?:sp, )?#(\d+)")
_INDIRECT_RE = re.compile(r"\tblx\t(r\d+|ip|lr)\b")


def _reg_count(lst):
    n = 0
    for part in lst.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-")
            n += int(re.sub(r"\D", "", b)) - int(re.sub(r"\D", "", a)) + 1
        elif part:
            n += 1
    return n


def call_graph(elf, board):
    """{function: {"callees": set, "frame": bytes from the prologue, "indirect": bool}}."""
    tool = board.get("toolchain_prefix", "") + "objdump"
    text = subprocess.run([tool, "-d", "--no-show-raw-insn", str(elf)], capture_output=True,
                          text=True, check=True).stdout
    funcs, cur = {}, None
    for line in text.splitlines():
        m = _FN_RE.match(line)
        if m:
            cur = funcs.setdefault(m.group(1), {"callees": set(), "frame": 0, "indirect": False,
                                                "prologue": True})
            continue
        if cur is None or not line.strip():
            continue
        if (m := _CALL_RE.search(line)) and m.group(2) != _name_of(cur, funcs):
            cur["callees"].add(m.group(2))
        if _INDIRECT_RE.search(line):
            cur["indirect"] = True
        if cur["prologue"]:
            if m := _PUSH_RE.search(line):
                cur["frame"] += 4 * _reg_count(m.group(2))
            elif m := _VPUSH_RE.search(line):
                regs = m.group(1)
                cur["frame"] += (8 if "d" in regs else 4) * _reg_count(regs)
            elif m := _SUB_RE.search(line):
                cur["frame"] += int(m.group(1))
                cur["prologue"] = False
    return funcs


def _name_of(entry, funcs):
    for k, v in funcs.items():
        if v is entry:
            return k
    return None


def worst_stack(root, funcs, su):
    """(bytes, path, notes): the deepest call chain from root."""
    notes = set()
    memo = {}

    def frame(fn):
        key = fn if fn in su else re.sub(r"\.\d+$", "", fn)  # objdump: f.constprop.0, .su: f.constprop
        if key in su:
            size, qual = su[key]
            if "dynamic" in qual and "bounded" not in qual:
                notes.add(f"{fn}: dynamic stack (not bounded)")
            return size
        return funcs.get(fn, {}).get("frame", 0)

    def visit(fn, stack):
        if fn in stack:
            notes.add(f"recursion through {fn}: unbounded")
            return 0, [fn]
        if fn in memo:
            return memo[fn]
        info = funcs.get(fn, {"callees": set(), "indirect": False})
        if info.get("indirect"):
            notes.add(f"{fn}: indirect call (its targets are not counted)")
        best, best_path = 0, []
        for callee in sorted(info["callees"]):
            s, p = visit(callee, stack | {fn})
            if s > best:
                best, best_path = s, p
        memo[fn] = (frame(fn) + best, [fn] + best_path)
        return memo[fn]

    total, path = visit(root, frozenset())
    return total, path, sorted(notes)


# The firmware's entry point: everything that runs is reached from here.
_ROOTS = ("Reset_Handler", "main")


def model_entry(name, funcs):
    """The model function the firmware calls: <name>_run, or <name>_invoke when the
    input and output live in the arena (the harness copies them outside the
    timed call and <name>_run is not linked)."""
    run = f"{name}_run"
    return run if run in funcs or f"{name}_invoke" not in funcs else f"{name}_invoke"


def stack_bound(elf, obj_dir, board, name):
    """{"model": bytes of <name>_run (or _invoke), "firmware": bytes from the reset handler,
    "path": the deepest chain, "notes": what the bound does not cover}."""
    su = su_table(obj_dir)
    funcs = call_graph(elf, board)
    model, model_path, notes = worst_stack(model_entry(name, funcs), funcs, su)
    root = next((r for r in _ROOTS if r in funcs), None)
    if root is None:
        fw, fw_path, fw_notes = model, model_path, notes
    else:
        fw, fw_path, fw_notes = worst_stack(root, funcs, su)
    return {"model": model, "model_path": model_path, "firmware": fw, "path": fw_path,
            "notes": sorted(set(notes) | set(fw_notes)), "su_files": len(list(Path(obj_dir).glob("*.su")))}


def check_stack(elf, obj_dir, board, name, arena, ram_limit=None, model=None):
    """Raise TinyAotError if the stack or the RAM does not fit; else the numbers."""
    bound = stack_bound(elf, obj_dir, board, name)
    if bound["su_files"] == 0:
        raise TinyAotError(f"no -fstack-usage output (.su) in {obj_dir}: cannot bound the stack",
                           model=model)
    size = firmware_size(elf, board)
    static = int(size["data"]) + int(size["bss"])
    other = max(static - int(arena), 0)
    stack = int(bound["firmware"])
    reserved = int(board.get("stack_size", 0) or 0)
    bname = board.get("name", "board")
    limit = parse_size(ram_limit, "--ram-limit")
    ram_have = limit if limit is not None else board.get("ram_size")
    ram_src = "--ram-limit" if limit is not None else bname
    need = int(arena) + stack + other
    res = {"worst_case_bytes": stack, "model_run_bytes": int(bound["model"]),
           "path": bound["path"], "notes": bound["notes"], "reserved_bytes": reserved,
           "ram_needed_bytes": need, "ram_limit_bytes": ram_have,
           "static_other_bytes": other, "arena_bytes": int(arena)}
    if ram_have is not None and need > int(ram_have):
        raise TinyAotError(f"does not fit: needs {human(need)} RAM (arena {human(arena)} + stack "
                           f"{human(stack)} worst case + other static data {human(other)}), "
                           f"{ram_src} has {human(int(ram_have))} ({need - int(ram_have)} B over)",
                           model=model)
    if stack > reserved:
        raise TinyAotError(f"stack does not fit: worst case {human(stack)} "
                           f"({' -> '.join(bound['path'])}) but {bname} reserves {human(reserved)} "
                           f"(stack_size in boards/{bname}/board.toml, {stack - reserved} B short)",
                           model=model)
    return res


def check_generated(gen_dir, elf, obj_dir, board, ram_limit=None):
    """check_stack for a generated directory (name and arena from its report.json)."""
    with open(Path(gen_dir) / "report.json") as f:
        rep = json.load(f)
    return check_stack(elf, obj_dir, board, rep["name"], rep.get("arena_bytes", 0),
                       ram_limit=ram_limit, model=rep.get("model"))
