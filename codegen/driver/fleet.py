"""One model, many boards: verify a model on a list of boards, in parallel.

`scons board=all` (or `board=qemu-m3,qemu-m4`) goes through
codegen/commands/scons_job.py: one SCons node per board (so `-j N` runs N boards at
once; each board's work is independent: its own build directory, its own
QEMU process) and one final node that prints the table and fails if any
board failed. :func:`run_fleet` is the same without SCons (thread pool).

A model that cannot fit a board (weights + code beyond its flash, arena +
stack beyond its RAM) is reported as "does not fit", which is not a
failure. The golden inputs are embedded in the verification firmware; on a
small board they are run in as many firmware runs as needed, so that only
the model itself decides whether it fits.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..compiler import compile_model
from ..errors import TinyAotError
from ..paths import build_root as default_build_root
from ..targets.boards import board_or_error
from .verify import load_golden, run_model

# Flash kept free for code when deciding how many golden inputs go into one
# firmware: kernels + <name>_run (up to ~15 KiB on the shared models),
# startup, semihosting, harness and libc. Only an estimate: if the model
# itself fits but the firmware does not link, it is re-run with one input
# per firmware before the linker has the last word.
CODE_RESERVE = 24 * 1024
# The model's code is at least this much: weights + this > flash cannot fit.
MODEL_CODE_MIN = 4 * 1024
# RAM kept free besides the arena, the stack and the harness's output buffer
# (console buffer, harness and libc state, .data); the link has the last word.
RAM_RESERVE = 1024

PASS, FAIL, NOFIT, ERROR = "PASS", "FAIL", "does not fit", "ERROR"


def all_boards():
    """The boards a fleet runs on: the host and every QEMU board (a build-only
    part runs nowhere: `tinyaot report --board PART` measures it)."""
    from ..targets.parts import board_names
    return board_names(("shared-library", "firmware"))


def parse_boards(arg):
    """'all' or a comma-separated list -> board names (unknown: TinyAotError)."""
    names = all_boards() if arg == "all" else [b.strip() for b in str(arg).split(",") if b.strip()]
    if not names:
        raise TinyAotError(f"no boards in '{arg}'")
    for n in names:
        if board_or_error(n)["kind"] == "part":
            raise TinyAotError(f"board {n} is a build-only part (no QEMU machine runs it): "
                               f"use tinyaot report --board {n} for its fit and time")
    return list(dict.fromkeys(names))


_cache_lock = threading.Lock()
_cache: dict = {}


def compiled_once(model, numerics, optimize="speed"):
    """compile_model once per (model, numerics, optimize), shared by every board thread."""
    key = (os.path.abspath(str(model)), numerics, optimize)
    with _cache_lock:
        ev = _cache.get(key)
        if ev is None:
            ev = _cache[key] = {"lock": threading.Lock(), "c": None}
    with ev["lock"]:
        if ev["c"] is None:
            ev["c"] = compile_model(model, numerics=numerics, optimize=optimize)
        return ev["c"]


def fit(c, board):
    """(fits, reason, inputs per firmware run) of compiled model `c` on `board`."""
    if board["kind"] == "shared-library":
        return True, "", None
    weights = int(c.report["weights_bytes"])
    arena = int(c.report["arena_bytes"])
    flash, ram = int(board["flash_size"]), int(board["ram_size"])
    if weights + MODEL_CODE_MIN > flash:
        return False, f"weights {weights} B + code > flash {flash} B", 0
    if arena + int(board["stack_size"]) + _harness_output(board) + RAM_RESERVE > ram:
        return False, f"arena {arena} B + stack {board['stack_size']} B > RAM {ram} B", 0
    xin = c.graph.tensors[c.graph.inputs[0]]
    per_run = (flash - weights - CODE_RESERVE) // max(1, int(xin.size))
    if weights + MODEL_CODE_MIN + int(xin.size) > flash:
        return False, f"weights {weights} B + one input + code > flash {flash} B", 0
    return True, "", max(1, per_run)


def _harness_output(board):
    """The verification harness's static output buffer (boards/common/harness_main.c:
    TINYAOT_HARNESS_MAX_OUTPUT, 4 KiB unless the board's defines set it)."""
    for d in board.get("defines", []):
        if d.startswith("TINYAOT_HARNESS_MAX_OUTPUT="):
            return int(d.split("=", 1)[1].rstrip("uU"), 0)
    return 4096


def _overflow(msg):
    """A build/budget error that means "the model does not fit this board"."""
    return "overflowed" in msg or "will not fit in region" in msg or "does not fit" in msg


def _detail(msg):
    """One line for the table: the first compiler/linker error, else the first line."""
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip()]
    errs = [ln for ln in lines[1:] if "error" in ln.lower()]
    first = lines[0] if lines else ""
    return (first + " " + errs[0] if errs else first)[:240]


def verify_on_board(model, golden, board_name, numerics="ort", key="outputs", max_vectors=None,
                    build_root=None, optimize="speed"):
    """Verify `model` on one board; returns a table row (never raises for a board problem)."""
    row = {"board": board_name, "model": os.path.basename(str(model)), "numerics": numerics,
           "result": ERROR, "arena": None, "flash": None, "instructions": None,
           "vectors": 0, "passed": 0, "detail": "", "runs": 0}
    try:
        board = board_or_error(board_name)
        inputs, expected = load_golden(golden, key)
        if max_vectors:
            inputs, expected = inputs[:max_vectors], expected[:max_vectors]
        c = compiled_once(model, numerics, optimize)
        row["model"] = c.module.name
        row["arena"] = int(c.report["arena_bytes"])
        row["vectors"] = int(len(inputs))
        ok, reason, per_run = fit(c, board)
        if not ok:
            if optimize == "speed" and "flash" in reason and fit(
                    compiled_once(model, numerics, "size"), board)[0]:
                reason += "; fits with optimize=size"  # passes/kernel_select.py
            row.update(result=NOFIT, detail=reason)
            return row
        if len(c.graph.inputs) != 1 or len(c.graph.outputs) != 1:
            # several ends: verify_model reads every end's golden arrays (golden_keys.py)
            from .verify import verify_model
            r = verify_model(model, golden, board=board_name, numerics=numerics, key=key,
                             compiled=c, optimize=optimize)
            row.update(flash=r.get("flash_bytes"), vectors=int(r["vectors"]),
                       instructions=r.get("instructions_per_inference"),
                       passed=int(r["vectors_passed"]))
            row["result"] = PASS if r["vectors_passed"] == r["vectors"] else FAIL
            if row["result"] == FAIL:
                row["detail"] = f"{r['mismatches']} elements differ"
            return row
        # One build directory for all of this board's firmware runs: SCons
        # then rebuilds only the inputs and relinks between runs.
        bdir = tempfile.mkdtemp(prefix=f"{c.module.name}-{numerics}-{board_name}-fleet-",
                                dir=build_root or _build_base())
        try:
            outs, instr, flash = _run_chunks(row, model, inputs, board_name, numerics, c,
                                             per_run or len(inputs), bdir)
        finally:
            if not os.environ.get("TINYAOT_KEEP_BUILD"):
                shutil.rmtree(bdir, ignore_errors=True)
        if expected.size != outs.size:
            raise TinyAotError(f"golden '{key}' has {expected.size} values, the model gives "
                               f"{outs.size}", model=str(golden))
        exp = expected.reshape(outs.shape).astype(np.int32)
        bad = (outs.astype(np.int32) != exp).reshape(len(outs), -1).any(axis=1)
        row.update(flash=flash, instructions=max(instr) if instr else None,
                   passed=int((~bad).sum()))
        row["result"] = PASS if not bad.any() else FAIL
        if bad.any():
            row["detail"] = f"vectors {np.flatnonzero(bad).tolist()[:8]} differ"
    except TinyAotError as e:
        msg = str(e)
        if _overflow(msg):
            row.update(result=NOFIT, detail=("linker: region overflowed" if "overflowed" in msg
                                             else msg.splitlines()[0][:200]))
        else:
            row.update(result=ERROR, detail=_detail(msg))
    except Exception as e:  # a board that crashes must not hide the others' results
        row.update(result=ERROR, detail=f"{type(e).__name__}: {e}".splitlines()[0][:200])
    return row


def _build_base():
    base = str(default_build_root())
    os.makedirs(base, exist_ok=True)
    return base


def _run_chunks(row, model, inputs, board_name, numerics, c, step, bdir):
    outs, instr, flash = [], [], None
    i = 0
    while i < len(inputs):
        try:
            o, info = run_model(model, inputs[i:i + step], board=board_name, numerics=numerics,
                                compiled=c, build_dir=bdir)
        except TinyAotError as e:
            if step > 1 and _overflow(str(e)):   # the estimate was too optimistic
                step = 1
                continue
            raise
        outs.append(o)
        row["runs"] += 1
        instr += info.get("instructions") or []
        if info.get("flash_split"):
            flash = info["flash_split"]["total"]
        i += len(o)
    return np.concatenate(outs), instr, flash


def run_fleet(jobs, workers=2, **kw):
    """jobs: iterable of (model, golden, board, numerics, key); returns rows in job order."""
    jobs = list(jobs)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as ex:
        futs = [ex.submit(verify_on_board, m, g, b, n, k, **kw) for m, g, b, n, k in jobs]
        return [f.result() for f in futs]


def failed(rows):
    return [r for r in rows if r["result"] not in (PASS, NOFIT)]


def format_table(rows):
    def num(v):
        return "-" if v is None else f"{v:,}"
    head = ["board", "model", "numerics", "arena B", "flash B", "instr/inference", "vectors",
            "result"]
    body = [[r["board"], r["model"], r["numerics"], num(r["arena"]), num(r["flash"]),
             num(r["instructions"]),
             f"{r['passed']}/{r['vectors']}" if r["result"] in (PASS, FAIL) else "-",
             r["result"] + (f" ({r['detail']})" if r["detail"] else "")] for r in rows]
    w = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    fmt = lambda cells: "  ".join(str(x).ljust(w[i]) for i, x in enumerate(cells)).rstrip()  # noqa: E731
    lines = [fmt(head), fmt(["-" * n for n in w])] + [fmt(b) for b in body]
    nf = failed(rows)
    nofit = sum(r["result"] == NOFIT for r in rows)
    lines.append(f"{len(rows) - len(nf)}/{len(rows)} ok" + (f" ({nofit} do not fit)" if nofit else "")
                 + (f"; FAILED: {', '.join(r['board'] + ' ' + r['model'] for r in nf)}" if nf else ""))
    return "\n".join(lines)
