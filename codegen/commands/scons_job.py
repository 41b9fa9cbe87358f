"""The default job of the SConstruct: `scons board=B [model= golden= numerics= key=
io_buffers= optimize=]` compiles, builds, verifies and prints the report of
`tinyaot verify`; `board=all` or `board=B1,B2` verifies on a fleet of boards
(one SCons node per board, so `-j N` runs N at once, and a final table).

Exit status: 0 bit-exact; 1 an output differs (or a board failed); 2 a user
error (one line on stderr).
"""
from __future__ import annotations

import os
import sys
import threading

from ..errors import TinyAotError
from ..paths import DEFAULT_GOLDEN, DEFAULT_MODEL


def _args(args):
    model = args.get("model", str(DEFAULT_MODEL))
    golden = args.get("golden", str(DEFAULT_GOLDEN) if "model" not in args else None)
    return model, golden, args.get("numerics", "ort"), args.get("key", "outputs")


def scons_verify(Environment, Command, AlwaysBuild, Default, root, board_name, args):
    """`scons board=B`: one node that verifies the model on B and prints the report."""
    if board_name == "all" or "," in board_name:
        return scons_fleet(Command, AlwaysBuild, Default, board_name, args)
    from ..driver.verify import print_verify, verify_model

    model, golden, numerics, key = _args(args)
    io_buffers = args.get("io_buffers", "arena")  # scons ... io_buffers=user
    optimize = args.get("optimize", "speed")  # scons ... optimize=size

    def action(target, source, env):
        try:
            rep = verify_model(model, golden, board=board_name, numerics=numerics, key=key,
                               io_buffers=io_buffers, optimize=optimize)
        except TinyAotError as e:
            print(f"tinyaot: error: {e}", file=sys.stderr)
            return 2
        print_verify(rep)
        return 0 if rep["mismatches"] == 0 else 1

    from SCons.Script import Action

    t = Command("verify-" + board_name, [], Action(action, strfunction=lambda *a, **k: None))
    AlwaysBuild(t)
    Default(t)


_print_lock = threading.Lock()


def _say(line):
    with _print_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def scons_fleet(Command, AlwaysBuild, Default, board_arg, args):
    """`scons board=all|B1,B2 [model= golden= numerics= key=]`: one node per board + table."""
    from SCons.Script import Action, Exit

    from ..driver.fleet import (ERROR, compiled_once, failed, format_table, parse_boards,
                                verify_on_board)
    from ..driver.verify import load_golden

    model, golden, numerics, key = _args(args)
    optimize = args.get("optimize", "speed")  # scons ... optimize=size
    try:
        boards = parse_boards(board_arg)
        if golden is None:
            raise TinyAotError("a golden file is needed (golden=PATH)", model=str(model))
        load_golden(golden, key)          # user mistakes: one line, exit 2, before any build
        compiled_once(model, numerics, optimize)
    except TinyAotError as e:
        print(f"tinyaot: error: {e}", file=sys.stderr)
        Exit(2)
    rows = {}

    def board_action(name):
        def action(target, source, env):
            _say(f"{name}: verifying {os.path.basename(str(model))} ({numerics})")
            rows[name] = r = verify_on_board(model, golden, name, numerics, key,
                                             optimize=optimize)
            _say(f"{name}: {r['result']}" + (f" ({r['detail']})" if r["detail"] else ""))
            return 0
        return action

    nodes = []
    for b in boards:
        t = Command("fleet-" + b, [], Action(board_action(b), strfunction=lambda *a, **k: None))
        AlwaysBuild(t)
        nodes.append(t)

    def table(target, source, env):
        got = [rows.get(b) or {"board": b, "model": os.path.basename(str(model)),
                               "numerics": numerics, "result": ERROR, "arena": None,
                               "flash": None, "instructions": None, "vectors": 0, "passed": 0,
                               "detail": "not run"} for b in boards]
        print(format_table(got), flush=True)
        return 1 if failed(got) else 0

    t = Command("fleet-table", nodes, Action(table, strfunction=lambda *a, **k: None))
    AlwaysBuild(t)
    Default(t)
