"""Worst-case stack of a linked firmware, checked against the board.

Every firmware build (codegen/build.py:build_generated, so `tinyaot verify`
and the SCons job too) compiles with -fstack-usage; right after the link this
module bounds the stack exactly as `tinyaot report` does (the .su frames over
the call graph of the ELF, codegen/tools/report.py) and fails the build when

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
from pathlib import Path

from ..errors import TinyAotError
from .budget import human, parse_size

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
    from .report import _su_table, call_graph, worst_stack
    su = _su_table(obj_dir)
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
    from ..targets.qemu import firmware_size
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
