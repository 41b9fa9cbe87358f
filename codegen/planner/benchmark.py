"""`python -m codegen.planner.benchmark`: the README's memory table.

For each shared model (../shared/models) and the default model: the arena
with the caller's input/output buffers (default), its lower bound, the
caller's input + output bytes, the arena with `--io-buffers arena` (then the
whole RAM the model needs), the arena before in-place planning, and TFLite
Micro's `arena_used_bytes` (which counts the input and output tensors: they
live in its arena).
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


def measure(path, numerics):
    from ..compiler import compile_model
    from .arena import plan_arena

    user = compile_model(path, numerics=numerics)
    arena = compile_model(path, numerics=numerics, io_buffers="arena")
    g = user.graph
    no_inplace = plan_arena(g, inplace=False)
    return {
        "arena": user.plan.size, "lower_bound": user.plan.lower_bound,
        "io": g.tensors[g.inputs[0]].nbytes + g.tensors[g.outputs[0]].nbytes,
        "arena_io": arena.plan.size, "arena_io_lower_bound": arena.plan.lower_bound,
        "no_inplace": no_inplace.size, "inplace_ops": len(user.plan.to_json()["inplace"]),
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
    lines = ["| model | numerics | arena B | lower bound B | caller's in+out B | arena+in+out B "
             "| arena B, `--io-buffers arena` (lower bound) | without in place B | in-place ops "
             "| TFLM arena_used_bytes |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key, num, m in rs:
        tflm = f(TFLM_ARENA[key]) if key in TFLM_ARENA else "-"
        lines.append(f"| {key} | {num} | {f(m['arena'])} | {f(m['lower_bound'])} | {f(m['io'])} | "
                     f"{f(m['arena'] + m['io'])} | {f(m['arena_io'])} ({f(m['arena_io_lower_bound'])}) | "
                     f"{f(m['no_inplace'])} | {m['inplace_ops']} | {tflm} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(rows()))
    sys.exit(0)
