"""`tinyaot tune`: each layer's kernel variant, measured on the emulator, under a flash limit.

1. Candidates: the model is compiled with --optimize speed and size; a layer whose kernel
   differs between them has both variants (speed: int16-widened weights / float weights,
   DSP loops; size: int8 weights in flash); a float FC emitted as straight-line code also
   has "loop" (the speed kernel's loop). Every other layer has one kernel.
2. Trials (trials.py, in a process pool or on Ray: runner.py): the fixed speed build, the
   fixed size build and, when some layer has it, the build with every such FC as a loop;
   each verified bit-exact against the golden on the board and profiled under the cycle
   model. A candidate whose build is not bit-exact is never chosen.
3. Choice (knapsack.py): the cheapest assignment whose predicted linked image fits the
   flash limit (base + kernels' code + layers' own bytes), exactly.
4. Check: the tuned build is verified and measured as a whole; a predicted image that
   the linked one overshoots (alignment, the run function's code) lowers the limit by the
   overshoot and the choice is made again (at most MAX_ROUNDS times). The RAM limit is
   checked on that build (arena + stack, as verify checks it); it is not traded.
5. The record (record.py) keeps the measurements per layer signature: a second run in the
   same context measures nothing again; another model whose layers all have recorded
   signatures is built once (not profiled) for its image's other bytes.
"""
from __future__ import annotations

import hashlib
import os
import time

from ..errors import TinyAotError
from . import knapsack
from . import record as rec_io
from .runner import run_trials

MAX_ROUNDS = 3
OBJECTIVES = ("cycles", "instructions")


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def enumerate_layers(model, numerics):
    """[{index, node, op, signature, key, candidates}] in execution order."""
    from ..compiler import compile_model
    from ..passes.layer_signature import layer_signature, signature_key
    speed = compile_model(model, numerics=numerics)
    size = compile_model(model, numerics=numerics, optimize="size")
    size_kernel = {li["name"]: li["kernel"] for li in size.module.layers}
    out = []
    for li in speed.module.layers:
        n = speed.graph.nodes[li["index"]]
        cands = ["speed"]
        if size_kernel.get(n.name) != li["kernel"]:
            cands.append("size")
        if "_fc_unrolled" in str(li["kernel"]):
            cands.append("loop")
        sig = layer_signature(speed.graph, n, speed.numerics)
        out.append({"index": li["index"], "node": n.name, "op": n.op, "signature": sig,
                    "key": signature_key(sig), "candidates": cands})
    return out, speed.numerics


def _specs(model, golden, key, board, numerics, part, layers):
    base = {"model": os.path.abspath(model), "golden": os.path.abspath(golden), "key": key,
            "board": board, "numerics": numerics, "part": part}
    specs = [dict(base, label="speed", optimize="speed", choices=None),
             dict(base, label="size", optimize="size", choices=None)]
    loops = {x["node"]: {"variant": "loop", "signature": x["key"]}
             for x in layers if "loop" in x["candidates"]}
    if loops:
        specs.append(dict(base, label="loop", optimize="speed", choices=loops))
    return specs


def _layers_cached(rec, layers):
    return all(x["key"] in rec["measurements"]
               and set(x["candidates"]) <= set(rec["measurements"][x["key"]]["candidates"])
               for x in layers)


def _merge(rec, layers, sha, name, trials):
    """The trials' figures into the record's cache."""
    by_label = {t["label"]: t for t in trials}
    for x in layers:
        m = rec["measurements"].setdefault(x["key"], {"signature": x["signature"],
                                                      "candidates": {}})
        for v in x["candidates"]:
            t = by_label[v]
            f = t["layers"][x["node"]]
            m["candidates"][v] = {
                "cycles": f["cycles"], "instructions": f["instructions"], "bytes": f["bytes"],
                "kernels": f["kernels"], "kernel_name": f["kernel_name"],
                "bit_exact": t["mismatches"] == 0}
    _merge_model(rec, sha, name, trials)


def _merge_model(rec, sha, name, trials):
    """The model's own figures: the image's other bytes, the fixed builds, kernels' code."""
    for t in trials:
        for k, b in t["kernel_code"].items():
            rec["kernel_code"][k] = max(b, rec["kernel_code"].get(k, 0))
    rec["models"][sha] = {
        "name": name, "base_bytes": max(t["base_bytes"] for t in trials),
        "fixed": {t["label"]: _summary(t) for t in trials if t["label"] in ("speed", "size")}}


def _summary(t):
    return {"flash": t["flash"], "cycles": t["cycles"], "instructions": t["instructions"],
            "arena_bytes": t["arena_bytes"], "bit_exact": t["mismatches"] == 0}


def _solve(rec, layers, sha, objective, limit):
    cands = []
    for x in layers:
        meas = rec["measurements"][x["key"]]["candidates"]
        cs = [knapsack.Candidate(v, int(meas[v][objective]), int(meas[v]["bytes"]),
                                 frozenset(meas[v]["kernels"]))
              for v in x["candidates"] if meas[v]["bit_exact"]]
        if not cs:
            raise TinyAotError(f"layer '{x['node']}': no kernel variant is bit-exact on this "
                               "board (every trial build mismatched the golden)")
        cands.append(cs)
    return knapsack.solve(cands, rec["kernel_code"], rec["models"][sha]["base_bytes"], limit)


def _why(x, meas, choice, objective, linked, kernel_code):
    """One line: the candidates' figures and what made the choice."""
    alts = "; ".join(f"{v} {meas[v][objective]:,} {objective} {meas[v]['bytes']:,} B"
                     + ("" if meas[v]["bit_exact"] else " (not bit-exact)")
                     for v in x["candidates"])
    if len(x["candidates"]) == 1:
        return f"one kernel ({alts})"
    exact = [v for v in x["candidates"] if meas[v]["bit_exact"]]
    fastest = min(exact, key=lambda v: (meas[v][objective], meas[v]["bytes"]))
    if choice == fastest:
        return f"fastest ({alts})"
    missing = [k for k in meas[fastest]["kernels"] if k not in linked]
    if missing:
        code = sum(kernel_code.get(k, 0) for k in missing)
        return (f"{fastest} needs {', '.join(missing)} ({code:,} B of code), which does not "
                f"fit with the rest ({alts})")
    return f"{fastest}'s {meas[fastest]['bytes'] - meas[choice]['bytes']:,} B more do not fit ({alts})"


def tune_model(model, board="qemu-m4", numerics=None, part=None, flash_limit=None,
               ram_limit=None, objective="cycles", out="tuning.json", golden=None, key=None,
               cluster=None, jobs=2, progress=None):
    """Tune `model`; write and return the record, plus the run's own facts (trials, time)."""
    from ..cycles import select_parts
    from ..driver.verify import default_golden_key, require_board_runs
    from ..targets.boards import board_or_error
    t0 = time.monotonic()
    progress = progress or (lambda text: None)
    if objective not in OBJECTIVES:
        raise TinyAotError(f"unknown --objective '{objective}' (choose from cycles, instructions)")
    b = board_or_error(board)
    if b["kind"] != "firmware":
        raise TinyAotError(f"tune measures on a QEMU board (--board qemu-m4, ...), not "
                           f"'{board}'")
    require_board_runs(b)
    names = [p.name for p in select_parts(b)]
    part = part or ("ideal" if "ideal" in names else names[0])
    select_parts(b, [part])  # a bad --part fails before any build
    if not os.path.isfile(str(model)):
        raise TinyAotError("no such model file", model=str(model))
    golden = golden or os.path.splitext(str(model))[0] + "_golden.npz"
    if not os.path.isfile(golden):
        raise TinyAotError(f"tune checks every candidate against a golden file: {golden} is "
                           "missing (--golden PATH; tinyaot golden writes one)", model=str(model))
    limit = int(flash_limit) if flash_limit is not None else int(b["flash_size"])
    layers, numerics = enumerate_layers(model, numerics)
    key = key or default_golden_key(golden, numerics)
    ctx = rec_io.context(b, part, objective, numerics)
    rec = rec_io.usable(rec_io.load(out), ctx)
    sha = _sha256(model)
    name = os.path.basename(str(model))
    trials_run = 0
    layers_known = _layers_cached(rec, layers)
    if not (layers_known and sha in rec["models"]):
        specs = _specs(model, golden, key, board, numerics, part, layers)
        if layers_known:  # every layer measured (another model): this model's image alone
            specs = [dict(specs[1], profile=False)]  # the size build, not profiled
            progress("every layer's signature is in the record: one build for the image")
        done = []

        def on_done(i, r):
            done.append(r)
            fits = [t for t in done if t["label"] in ("speed", "size") and t["flash"] <= limit
                    and t[objective] is not None]
            best = min((t[objective] for t in fits), default=None)
            progress(f"trials {len(done)}/{len(specs)}; best fixed build under the limit: "
                     + (f"{best:,} {objective}" if best is not None else "none yet"))
        trials = run_trials(specs, cluster=cluster, jobs=jobs, on_done=on_done)
        trials_run = len(trials)
        if layers_known:
            _merge_model(rec, sha, name, trials)
        else:
            _merge(rec, layers, sha, name, trials)
    limits = {"flash": limit, "ram": int(ram_limit) if ram_limit is not None else None}
    prev = rec.get("tuned") or {}
    reuse = (prev.get("model_sha256") == sha and prev.get("limits") == limits
             and [x["node"] for x in prev.get("layers", [])] == [x["node"] for x in layers])
    if reuse:
        progress("the record's choice is current: nothing measured")
    else:
        rec["tuned"] = _choose_and_check(rec, layers, sha, name, limits, objective, b, model,
                                         golden, key, numerics, part, progress)
    # reused: no trial measured; checked: the tuned build was built and measured
    res = {"record": rec, "trials": trials_run, "reused": trials_run == 0, "checked": not reuse,
           "seconds": round(time.monotonic() - t0, 1), "out": out}
    rec_io.save(rec, out)
    return res


def _choose_and_check(rec, layers, sha, name, limits, objective, b, model, golden, key,
                      numerics, part, progress):
    from .trials import run_trial
    budget = limits["flash"]
    for _ in range(MAX_ROUNDS):
        sol = _solve(rec, layers, sha, objective, budget)
        if sol is None:
            base = rec["models"][sha]["fixed"].get("size", {}).get("flash")
            raise TinyAotError(f"no choice of kernels fits the flash limit of {limits['flash']:,} "
                               f"B (the size build takes {base:,} B)" if base else
                               f"no choice of kernels fits the flash limit of "
                               f"{limits['flash']:,} B", model=str(model))
        choices = {x["node"]: {"variant": v, "signature": x["key"]}
                   for x, v in zip(layers, sol.choice) if len(x["candidates"]) > 1}
        progress(f"checking the tuned build (predicted {sol.bytes:,} B, {sol.cost:,} "
                 f"{objective})")
        t = run_trial({"model": os.path.abspath(model), "golden": os.path.abspath(golden),
                       "key": key, "board": b["name"], "numerics": numerics, "part": part,
                       "optimize": "speed", "choices": choices, "label": "tuned",
                       "ram_limit": limits["ram"]})
        if t["flash"] <= limits["flash"]:
            break
        budget -= t["flash"] - limits["flash"]  # the prediction was short: ask for less
    else:
        raise TinyAotError(f"the tuned build takes {t['flash']:,} B, over the flash limit of "
                           f"{limits['flash']:,} B after {MAX_ROUNDS} rounds", model=str(model))
    if t["mismatches"]:
        raise TinyAotError(f"the tuned build is not bit-exact ({t['mismatches']} mismatches "
                           "against the golden); please report it", model=str(model))
    out_layers = []
    for x, v in zip(layers, sol.choice):
        meas = rec["measurements"][x["key"]]["candidates"]
        out_layers.append({"index": x["index"], "node": x["node"], "op": x["op"],
                           "signature": x["key"], "candidates": x["candidates"], "choice": v,
                           "why": _why(x, meas, v, objective, set(sol.kernels),
                                       rec["kernel_code"])})
    return {"model": name, "model_sha256": sha, "limits": limits, "layers": out_layers,
            "predicted": {"flash": sol.bytes, objective: sol.cost, "kernels": list(sol.kernels),
                          "granularity_bytes": sol.granularity},
            "measured": _summary(t), "fixed": rec["models"][sha]["fixed"]}

