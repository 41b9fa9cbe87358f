"""The default job of the SConstruct: `scons board=B [model= golden= numerics= key=
io_buffers= optimize= tuning=]` compiles, builds, verifies and prints the report of
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

# The variables `scons` understands: the verify job's, and the build of a
# generated folder's (gen=DIR, what the driver runs; driver/firmware.py).
VERIFY_VARIABLES = ("board", "model", "golden", "numerics", "key", "io_buffers", "optimize",
                    "tuning")
BUILD_VARIABLES = ("board", "gen", "variant", "harness", "stack_check", "kernels")


def check_variables(args):
    """A variable scons does not know is a typo (`modle=`), never silently the
    default: one line naming it and the closest known one; exit 2."""
    import difflib
    known = BUILD_VARIABLES if "gen" in args or "kernels" in args else VERIFY_VARIABLES
    for name in args:
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
            hint = f" (did you mean {near[0]}=?)" if near else ""
            print(f"tinyaot: error: unknown scons variable {name}={args[name]}{hint}; "
                  f"known: {', '.join(known)}", file=sys.stderr)
            from SCons.Script import Exit
            Exit(2)


def _args(args):
    model = args.get("model", str(DEFAULT_MODEL))
    golden = args.get("golden", str(DEFAULT_GOLDEN) if "model" not in args else None)
    from ..frontend import is_tflite
    tflite = is_tflite(model)
    # as the CLI: a .tflite is TFLite Micro's arithmetic (onnxruntime cannot run it),
    # compared with TFLite Micro's outputs (outputs_tflm) when the golden file has them
    numerics = args.get("numerics", "tflite" if tflite else "ort")
    key = args.get("key")
    if key is None:
        from ..driver.verify import default_golden_key
        key = default_golden_key(golden, numerics) if tflite and golden else "outputs"
    return model, golden, numerics, key


def scons_verify(Environment, Command, AlwaysBuild, Default, root, board_name, args):
    """`scons board=B`: one node that verifies the model on B and prints the report."""
    if board_name == "all" or "," in board_name:
        return scons_fleet(Command, AlwaysBuild, Default, board_name, args)
    from SCons.Script import Exit

    from ..compiler import compile_model
    from ..driver.toolchain import require_tools
    from ..driver.verify import check_golden_file, print_verify, verify_model
    from ..targets.boards import board_or_error

    model, golden, numerics, key = _args(args)
    io_buffers = args.get("io_buffers", "arena")  # scons ... io_buffers=user
    optimize = args.get("optimize", "speed")  # scons ... optimize=size
    tuning = args.get("tuning")  # scons ... tuning=FILE (tinyaot tune's record)
    try:  # user mistakes: one line, exit 2, before any build
        require_tools(board_or_error(board_name))
        if golden is None:
            raise TinyAotError("a golden file is needed (golden=PATH)", model=str(model))
        c = compile_model(model, numerics=numerics, io_buffers=io_buffers, optimize=optimize,
                          tuning=tuning)
        check_golden_file(c, golden, key)
    except TinyAotError as e:
        print(f"tinyaot: error: {e}", file=sys.stderr)
        Exit(2)

    def action(target, source, env):
        try:
            rep = verify_model(model, golden, board=board_name, numerics=numerics, key=key,
                               io_buffers=io_buffers, optimize=optimize, compiled=c)
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
    from ..driver.toolchain import require_tools
    from ..driver.verify import check_golden_file
    from ..targets.boards import board_or_error

    model, golden, numerics, key = _args(args)
    optimize = args.get("optimize", "speed")  # scons ... optimize=size
    try:
        if args.get("tuning"):
            raise TinyAotError("tuning=FILE holds one board's measurements: verify it on that "
                               "board alone (board=B)")
        boards = parse_boards(board_arg)
        if golden is None:
            raise TinyAotError("a golden file is needed (golden=PATH)", model=str(model))
        for b in boards:
            require_tools(board_or_error(b))
        c = compiled_once(model, numerics, optimize)  # user mistakes: one line, exit 2,
        check_golden_file(c, golden, key)  # before any build
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
