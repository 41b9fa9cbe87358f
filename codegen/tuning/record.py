"""The tuning record (JSON): what `tinyaot tune` measured and chose, and its cache.

    format          "tinyaot-tuning/1"
    context         board, part, objective, numerics, tinyaot version, toolchain
                    (the compiler's and QEMU's version lines): the figures hold for
                    this context alone; another one makes every figure stale
    measurements    {signature key: {signature, candidates {variant: {cost,
                    instructions, cycles, bytes, kernels, bit_exact, kernel_name}}}}
    kernel_code     {kernel object: code bytes}
    models          {model sha256: {name, base_bytes, fixed {speed|size: {flash,
                    cycles, instructions, bit_exact}}}}
    tuned           model, model_sha256, limits, layers [{index, node, op,
                    signature, candidates, choice, why}], predicted, measured

Every key is written sorted and nothing in it depends on time or the machine beyond
the toolchain it names, so the same model, board, limits and versions give the same
file. `load_choices` gives the compiler the choice ({node: {variant, signature}}).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache

from .. import __version__
from ..errors import TinyAotError

FORMAT = "tinyaot-tuning/1"


@lru_cache(maxsize=None)
def _version_line(tool):
    exe = shutil.which(tool)
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def context(board, part, objective, numerics):
    """What the measurements depend on besides the layers themselves."""
    prefix = board.get("toolchain_prefix", "arm-none-eabi-")
    return {"board": board["name"], "part": part, "objective": objective,
            "numerics": numerics, "tinyaot_version": __version__,
            "toolchain": {"cc": _version_line(prefix + "gcc"),
                          "qemu": _version_line(board.get("qemu", "qemu-system-arm"))}}


def empty(ctx):
    return {"format": FORMAT, "context": ctx, "measurements": {}, "kernel_code": {},
            "models": {}}


def load(path):
    """A record file, or None when there is none; bad JSON is a user error."""
    if path is None or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            rec = json.load(f)
    except (OSError, ValueError) as e:
        raise TinyAotError(f"{path}: not a tuning record ({e}); remove it or choose another "
                           "-o") from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise TinyAotError(f"{path}: not a tuning record (format {FORMAT} expected)")
    return rec


def usable(rec, ctx):
    """The record's cache when it was measured in this context, else a fresh one (a stale
    record is re-measured, never trusted)."""
    if rec is None or rec.get("context") != ctx:
        return empty(ctx)
    return rec


def save(rec, path):
    """Write atomically (a half-written record is never left behind)."""
    path = os.path.abspath(path)
    d = os.path.dirname(path) or "."
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tuning-", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def tuned_layers(path):
    """The record's tuned layers [{index, node, choice, why, candidates, ...}]."""
    load_choices(path)  # the same checks
    return load(str(path))["tuned"]["layers"]


def load_choices(path):
    """--tuning FILE: {node name: {"variant", "signature"}} of the record's tuned model."""
    if not os.path.isfile(str(path)):
        raise TinyAotError(f"--tuning {path}: no such file (write one with tinyaot tune)")
    rec = load(str(path))
    tuned = rec.get("tuned") or {}
    layers = tuned.get("layers")
    if not isinstance(layers, list):
        raise TinyAotError(f"--tuning {path}: the record has no tuned layers")
    out = {}
    for x in layers:
        try:
            out[str(x["node"])] = {"variant": str(x["choice"]), "signature": str(x["signature"])}
        except (KeyError, TypeError):
            raise TinyAotError(f"--tuning {path}: a layer entry lacks node, choice or "
                               "signature") from None
    return out
