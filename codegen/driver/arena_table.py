"""`python -m codegen.driver.arena_table`: the arena table of docs/memory-plan.md.

For each shared model (../shared/models) and the default model, in both I/O
modes: the arena, its lower bound counting activations only and counting
kernel scratch too (the largest sum of blocks live at one step, for the same
in-place and zero-copy decisions), and TFLite Micro's `arena_used_bytes`
(which counts the input and output tensors: they live in its arena, as in
tinyaot's default `--io-buffers arena`). With `--io-buffers user` the total
RAM is the arena plus the caller's input and output buffers.
"""
from __future__ import annotations

import sys

from ..paths import REPO_ROOT

TFLM_ARENA = {"kws01": 22820, "vww01": 100708, "ic01": 54996, "ad01": 2580, "sww01": 16596}
SHARED = {
    "ad01": "anomaly_detection_ad01/ad01_int8",
    "kws01": "keyword_spotting_kws01/kws_ref_model",
    "ic01": "image_classification_ic01/pretrainedResnet_quant",
    "vww01": "visual_wake_words_vww01/vww_96_int8",
    "sww01": "streaming_wakeword_sww01/str_ww_ref_model",
}


def bounds(c):
    """(activations only, with kernel scratch) lower bounds of a compiled plan."""
    from ..planner.arena import lower_bound
    acts = [b for b in c.plan.blocks if not getattr(b, "scratch", False)]
    return lower_bound(acts, len(c.graph.nodes)), c.plan.lower_bound


def measure(path, numerics):
    from ..compiler import compile_model

    arena = compile_model(path, numerics=numerics)  # the default: --io-buffers arena
    user = compile_model(path, numerics=numerics, io_buffers="user")
    g = arena.graph
    plan = arena.plan.to_json()
    return {
        "arena": arena.plan.size, "bounds": bounds(arena),
        "user": user.plan.size, "user_bounds": bounds(user),
        "io": sum(g.tensors[t].nbytes for t in g.inputs + g.outputs),
        "inplace_ops": len(plan["inplace"]), "concat_slices": len(plan["concat_slices"]),
    }


def rows(models=None):
    shared = (REPO_ROOT / ".." / "shared" / "models").resolve()
    out = []
    for key in sorted(SHARED):
        p = shared / (SHARED[key] + ".onnx")
        if p.exists():
            for num in ("ort", "tflite"):
                out.append((key, num, measure(p, num)))
    out.append(("digits", "ort", measure(REPO_ROOT / "models" / "digits_cnn_int8.onnx", "ort")))
    return out


def table(rs):
    f = "{:,}".format
    lines = ["| model | numerics | arena B (default: in+out inside) | lower bound B: activations "
             "/ + scratch | TFLM arena_used_bytes | `--io-buffers user` arena B (bounds) "
             "| + caller's in+out B = total RAM B | in-place ops |",
             "|---|---|---|---|---|---|---|---|"]
    for key, num, m in rs:
        tflm = f(TFLM_ARENA[key]) if key in TFLM_ARENA else "-"
        (a, s), (ua, us) = m["bounds"], m["user_bounds"]
        lines.append(f"| {key} | {num} | **{f(m['arena'])}** | {f(a)} / {f(s)} | {tflm} | "
                     f"{f(m['user'])} ({f(ua)} / {f(us)}) | {f(m['io'])} = {f(m['user'] + m['io'])} | "
                     f"{m['inplace_ops']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(rows()))
    sys.exit(0)
