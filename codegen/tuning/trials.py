"""One tuning trial: a whole-model build with one kernel variant per layer, measured.

A trial compiles the model with an assignment of variants (the fixed --optimize speed or
size build, or per-layer variants), then
* runs the verification firmware on the board with every golden vector (bit-exactness
  of every layer in it: the outputs are compared with the oracle's golden), and reads
  its linked image (driver/linkmap.py): each layer's own bytes (its l<i>_* constants
  and straight-line code) and each kernel object's code;
* runs the profiling firmware under the cycle model (codegen/cycles) for the part:
  each layer's modelled cycles and executed instructions.

Per-layer figures come from whole-model builds, not from one firmware per layer shape:
a layer's cycles on the ideal part are those of its own instructions, which the other
layers' variants do not change; on a part with flash wait states (stm32l4r5) they move
a little with code placement. The tuned build is measured again as a whole.

Trials are plain functions of a picklable spec, so a process pool or a Ray cluster
(runner.py) can run them.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

_KERNEL_RE = re.compile(r"\btinyaot_\w+")
_UNROLLED_RE = re.compile(r"(?:^|\.)l(\d+)_fc_unrolled(?:\.|$)")


def unrolled_code(map_text, model_name, board):
    """{layer index: bytes of its straight-line function} from a firmware's map."""
    from ..driver.linkmap import _is_code, flash_sections, parse_map
    lm = parse_map(map_text)
    out = {}
    obj = f"{model_name}.o"
    for s in flash_sections(lm, int(board["flash_origin"]), int(board["flash_size"])):
        for i in s.inputs:
            m = _UNROLLED_RE.search(i.name)
            if m and _is_code(i.name) and Path(i.obj.partition("(")[0]).name == obj:
                k = int(m.group(1))
                out[k] = out.get(k, 0) + i.size
    return out


def layer_kernels(kernel_text, linked):
    """The kernel objects a layer links, of those linked: the kernels it calls and the ones
    they call (driver/export.py's closure: tinyaot_convolve_f32_b8_s8 runs
    tinyaot_convolve_f32_tiles_s8), so a layer's choice carries all the code it brings."""
    from ..driver.export import kernel_closure
    from ..paths import runtime_sources
    files = {f.stem for f in runtime_sources()}
    called = set(_KERNEL_RE.findall(str(kernel_text or ""))) & files
    return sorted({f.stem for f in kernel_closure(called)} & set(linked))


def run_trial(spec):
    """spec: {model, golden, key, board, numerics, part, optimize, choices, label, and
    optionally ram_limit (checked as verify checks it) and profile (False: the image and
    bit-exactness alone, no cycles)}. Returns the trial's figures (a JSON-ready dict)."""
    from ..compiler import compile_model
    from ..driver.firmware import firmware_paths
    from ..driver.profile import profile_model
    from ..driver.verify import verify_model
    from ..paths import build_root
    from ..targets.boards import board_or_error
    board = board_or_error(spec["board"])
    tuning = (spec["choices"], None) if spec.get("choices") else None
    c = compile_model(spec["model"], numerics=spec["numerics"], optimize=spec["optimize"],
                      tuning=tuning)
    base = str(build_root())
    os.makedirs(base, exist_ok=True)
    bd = tempfile.mkdtemp(prefix=f"tune-{spec['label']}-", dir=base)
    try:
        v = verify_model(spec["model"], spec["golden"], board=spec["board"],
                         numerics=spec["numerics"], key=spec["key"], compiled=c, build_dir=bd,
                         ram_limit=spec.get("ram_limit"))
        map_text = Path(firmware_paths(os.path.abspath(bd), c.module.name,
                                       spec["board"]).map).read_text()
        unrolled = unrolled_code(map_text, c.module.name, board)
    finally:
        shutil.rmtree(bd, ignore_errors=True)
    prof = None
    if spec.get("profile", True):
        prof = profile_model(spec["model"], board=spec["board"], numerics=spec["numerics"],
                             compiled=c, cycles=True, parts=[spec["part"]])
    rows = {r["index"]: r for r in (prof or {}).get("layers", [])}
    flash = v["flash"]
    per_kernel = dict(flash["per_kernel"])
    layers = {}
    attributed = set()
    for li in c.module.layers:
        i = li["index"]
        own = flash["per_layer"].get(i) or flash["per_layer"].get(str(i)) or {}
        ks = layer_kernels(li["kernel"], per_kernel)
        attributed |= set(ks)
        row = rows.get(i)
        layers[li["name"]] = {
            "index": i, "op": li["op"], "kernel_name": li["kernel"],
            "cycles": int((row.get("cycles") or {}).get(spec["part"]) or 0) if row else None,
            "instructions": int(row.get("instructions_exact") or row["instructions"])
            if row else None,
            "bytes": int(own.get("weights", 0) + own.get("tables", 0) + unrolled.get(i, 0)),
            "kernels": ks}
    own_bytes = sum(x["bytes"] for x in layers.values())
    part = next(p for p in prof["cycles"]["parts"] if p["name"] == spec["part"]) if prof else None
    return {
        "label": spec["label"], "layers": layers,
        "kernel_code": {k: per_kernel[k] for k in sorted(attributed)},
        # everything else in the image: model run code, support, libraries, helper kernels
        "base_bytes": int(flash["total"] - own_bytes - sum(per_kernel[k] for k in attributed)),
        "flash": int(flash["total"]), "arena_bytes": int(v["arena_bytes"]),
        "mismatches": int(v["mismatches"]), "vectors": int(v["vectors"]),
        "cycles": int(part["cycles"]) if part else None,
        "instructions": int(prof["cycles"]["instructions"]) if prof else None,
    }
