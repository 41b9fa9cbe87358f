"""Firmware runs that several tests check from different angles, done once per
test session: the first test (on any pytest-xdist worker) builds and runs, the
others wait for it and load the result.

Keyed by the model's bytes, the inputs' bytes and the arguments, so a test
reusing a run checks exactly what it would have computed itself.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from pathlib import Path

_DIR = None


def set_dir(path):
    """conftest.py: one directory per session, shared by the xdist workers."""
    global _DIR
    _DIR = Path(path)
    _DIR.mkdir(parents=True, exist_ok=True)


def _key(what, model, inputs, args):
    h = hashlib.sha256()
    h.update(repr((what, args)).encode())
    h.update(Path(model).read_bytes())
    h.update(repr((inputs.dtype.str, inputs.shape)).encode())
    h.update(inputs.tobytes())
    return h.hexdigest()[:32]


def once(what, model, inputs, args, compute):
    """compute() once per session for (what, model bytes, inputs, args)."""
    if _DIR is None:
        return compute()
    path = _DIR / _key(what, model, inputs, args)
    with open(str(path) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second worker waits for the first
        if path.exists():
            with open(path, "rb") as f:
                return pickle.load(f)
        result = compute()
        tmp = str(path) + f".{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            pickle.dump(result, f)
        os.replace(tmp, path)
        return result


def run_model_once(model, inputs, board, numerics, build_dir):
    """codegen.driver.verify.run_model of a fresh compile, once per session: the outputs
    and the per-input status and instruction counts."""
    import numpy as np

    from codegen.compiler import compile_model
    from codegen.driver.verify import run_model

    def compute():
        c = compile_model(model, numerics=numerics)
        outs, info = run_model(model, inputs, board=board, numerics=numerics,
                               build_dir=build_dir, compiled=c)
        return outs, {"status": info["status"], "instructions": info.get("instructions")}
    return once("run_model", model, np.asarray(inputs), (board, numerics), compute)
