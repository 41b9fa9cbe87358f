"""`tinyaot bench`: every shared and own model on a board, both numerics.

Writes bench/results.json and bench/results.md. Instruction counts come from
QEMU with -icount shift=0 (deterministic), so they are measurements, not
timings; the comparison columns are TFLite Micro + CMSIS-NN on the same
QEMU board (numbers measured outside this project, quoted in issue #5/#9).
"""
from __future__ import annotations

import json
from pathlib import Path

from ..paths import REPO_ROOT
from .verify import verify_model

SHARED = (REPO_ROOT / ".." / "shared" / "models").resolve()
MODELS = [
    ("ad01", SHARED / "anomaly_detection_ad01" / "ad01_int8"),
    ("kws01", SHARED / "keyword_spotting_kws01" / "kws_ref_model"),
    ("ic01", SHARED / "image_classification_ic01" / "pretrainedResnet_quant"),
    ("vww01", SHARED / "visual_wake_words_vww01" / "vww_96_int8"),
    ("sww01", SHARED / "streaming_wakeword_sww01" / "str_ww_ref_model"),
    ("digits", REPO_ROOT / "models" / "digits_cnn_int8"),
    ("mbv2_block", REPO_ROOT / "models" / "mbv2_block_int8"),
    ("conv1d", REPO_ROOT / "models" / "conv1d_int8"),
    ("decoder", REPO_ROOT / "models" / "decoder_int8"),
    ("data_ops", REPO_ROOT / "models" / "data_ops_int8"),
    ("misc_ops", REPO_ROOT / "models" / "misc_ops_int8"),
]
# own models: golden `outputs` are onnxruntime's; there is no TFLM golden for them
OWN_MODELS = {"digits", "mbv2_block", "conv1d", "decoder", "data_ops", "misc_ops"}
# TFLite Micro + CMSIS-NN on qemu-m4: instructions per inference, arena bytes.
TFLM_CMSIS_NN = {
    "ad01": (582880, 2580), "kws01": (7697360, 22820), "ic01": (29863240, 54996),
    "vww01": (24101880, 100708), "sww01": (2227520, 16596),
}
KEYS = {"ort": "outputs_onnxruntime", "tflite": "outputs_tflm"}


def bench_jobs(numerics=("ort", "tflite")):
    """(model key, stem, numerics) of every run the bench makes."""
    jobs = []
    for key, stem in MODELS:
        for num in numerics:
            if key in OWN_MODELS and num == "tflite":
                continue  # its golden is onnxruntime's; tflite numerics differ by design
            jobs.append((key, stem, num))
    return jobs


def run_bench(board="qemu-m4", out_dir=None, numerics=("ort", "tflite"), log=print,
              tick=lambda n=1: None, optimize="speed"):
    rows = []
    for key, stem, num in bench_jobs(numerics):
        model = Path(str(stem) + ".onnx")
        golden = Path(str(stem) + "_golden.npz")
        if not model.exists():
            if num == numerics[0]:
                log(f"skip {key}: {model} missing")
            tick()
            continue
        gkey = KEYS[num] if key not in OWN_MODELS else "outputs"
        r = verify_model(model, golden, board=board, numerics=num, key=gkey, optimize=optimize)
        tflm = TFLM_CMSIS_NN.get(key)
        ins = r["instructions_per_inference"]
        row = {
            "model": key, "numerics": num, "board": board, "optimize": optimize,
            "instructions": ins, "macs": r["macs"],
            "mac_per_instruction": round(r["macs"] / ins, 3) if ins else None,
            "arena_bytes": r["arena_bytes"], "arena_lower_bound": r["arena_lower_bound_bytes"],
            # the linked image's flash (driver/linkmap.py) and its split
            "flash_bytes": r["flash"]["total"] if r.get("flash") else None,
            "flash_code": r["flash"]["code"] if r.get("flash") else None,
            "flash_weights": r["flash"]["weights"] if r.get("flash") else None,
            "flash_tables": r["flash"]["tables"] if r.get("flash") else None,
            "vectors": r["vectors"], "mismatches": r["mismatches"],
            "tflm_cmsis_nn_instructions": tflm[0] if tflm else None,
            "ratio_to_tflm": round(ins / tflm[0], 3) if tflm and ins else None,
            "tflm_arena_bytes": tflm[1] if tflm else None,
        }
        rows.append(row)
        log(f"{key:6s} {num:6s} {ins:>10} instr  {row['mac_per_instruction']} MAC/instr  "
            f"arena {row['arena_bytes']}  mismatches {row['mismatches']}")
        tick()
    # size builds in bench/size/: the speed table in bench/ stays what the README quotes
    out_dir = Path(out_dir or REPO_ROOT / "bench" / ("size" if optimize == "size" else ""))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out_dir / "results.md").write_text(markdown_table(rows))
    return rows


BENCH_HEADER = ["model", "numerics", "vectors exact", "instructions", "MACs", "MAC/instr",
                "TFLM+CMSIS-NN instr", "ratio", "arena B (lower bound)", "TFLM arena B",
                "flash B (code / weights / tables)"]


def _cell(v):
    return "-" if v is None else (f"{v:,}" if isinstance(v, int) else str(v))


def bench_cells(r):
    """One row of the results table as strings (markdown and terminal)."""
    return [r["model"], r["numerics"],
            f"{r['vectors'] - (1 if r['mismatches'] else 0)}/{r['vectors']}"
            f"{'' if not r['mismatches'] else ' (' + str(r['mismatches']) + ' elements differ)'}",
            _cell(r["instructions"]), _cell(r["macs"]), _cell(r["mac_per_instruction"]),
            _cell(r["tflm_cmsis_nn_instructions"]), _cell(r["ratio_to_tflm"]),
            f"{_cell(r['arena_bytes'])} ({_cell(r['arena_lower_bound'])})",
            _cell(r["tflm_arena_bytes"]), _flash(r)]


def _flash(r):
    if r.get("flash_bytes") is None:
        return "-"
    return (f"{_cell(r['flash_bytes'])} ({_cell(r['flash_code'])} / {_cell(r['flash_weights'])}"
            f" / {_cell(r['flash_tables'])})")


def markdown_table(rows):
    head = ("| " + " | ".join(BENCH_HEADER) + " |\n" + "|---" * len(BENCH_HEADER) + "|\n")
    return head + "\n".join("| " + " | ".join(bench_cells(r)) + " |" for r in rows) + "\n"
