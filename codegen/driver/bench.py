"""`tinyaot bench`: every shared and own model on a board, both numerics.

Writes bench/results.json and bench/results.md. Instruction counts come from
QEMU with -icount shift=0 (deterministic). Modelled cycles come from the cycle
model (codegen/cycles: an estimate from Arm's documented timings, for the ideal
zero-wait part and the STM32L4R5). TFLite Micro + CMSIS-NN runs in the same
bench, under the same QEMU and cycle model, from ../shared/anchors
(codegen/cycles/compare.py); flash image and static RAM are sized the same way
from both ELFs.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ..paths import REPO_ROOT, build_root
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


def _bench_row(key, num, model, golden, gkey, board, optimize, tflm_runs, tuning=None):
    """Verify one model, then price its firmware and TFLM's with the cycle model
    (tuning: a `tinyaot tune` record the build follows)."""
    from ..cycles import compare
    from ..targets.boards import board_or_error
    b = board_or_error(board)
    base = build_root()
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"bench-{key}-{num}-", dir=base) as bd:
        r = verify_model(model, golden, board=board, numerics=num, key=gkey, optimize=optimize,
                         build_dir=bd, tuning=str(tuning) if tuning else None)
        elves = sorted(Path(bd).glob(f"*-{board}.elf"))
        ours = compare.price_tinyaot(elves[0], b) if elves and b["kind"] == "firmware" else None
    if ours and r.get("flash"):
        # the one flash figure (driver/linkmap.py, what verify reports) for tinyaot's side
        ours["flash"] = r["flash"]["total"]
    if key not in tflm_runs:
        tflm_runs[key] = compare.price_tflm(key, b) if key not in OWN_MODELS else None
    tflm = tflm_runs[key]
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
        # the cycle model (codegen/cycles), tinyaot and TFLite Micro alike
        "cycle_model": ours, "tflm": tflm,
        "tflm_cmsis_nn_instructions": tflm["instructions"] if tflm else None,
        "ratio_to_tflm": compare.ratio(ours["instructions"], tflm["instructions"])
        if ours and tflm else None,
        "tflm_arena_bytes": tflm["arena_bytes"] if tflm else None,
    }
    if ours and tflm:
        row["ratios_to_tflm"] = {
            "instructions": compare.ratio(ours["instructions"], tflm["instructions"]),
            **{f"cycles_{p}": compare.ratio(ours["cycles"][p], tflm["cycles"].get(p))
               for p in ours["cycles"]},
            "flash_image": compare.ratio(ours["flash"], tflm["flash"]),
            "ram_static": compare.ratio(ours["ram"], tflm["ram"]),
            "arena": compare.ratio(r["arena_bytes"], tflm["arena_bytes"]),
        }
    return row


TUNED_FRACTION = 0.8  # the tuned row's flash limit: this fraction of TFLM's image


def tuned_rows(key, num, model, golden, gkey, board, tflm_runs, records, log=print):
    """`bench --tuned`: the model tuned (codegen/tuning) with no limit and under
    TUNED_FRACTION x the TFLM + CMSIS-NN image, each benched as any row. The records in
    `records` are the tuner's cache: a second bench measures no trial again."""
    import shutil

    from ..cycles import compare
    from ..targets.boards import board_or_error
    from ..tuning.tune import tune_model
    if key not in tflm_runs:
        tflm_runs[key] = compare.price_tflm(key, board_or_error(board))
    tflm = tflm_runs[key]
    limits = [("tuned", None)]
    if tflm:
        limits.append((f"tuned {TUNED_FRACTION:g}x TFLM", int(TUNED_FRACTION * tflm["flash"])))
    records.mkdir(parents=True, exist_ok=True)
    rows, first = [], None
    for label, limit in limits:
        out = records / f"{key}-{num}-{'nolimit' if limit is None else limit}.json"
        if first is not None and not out.exists():
            shutil.copy(first, out)  # the layers' measurements: only the choice is new
        t = tune_model(str(model), board=board, numerics=num, flash_limit=limit, out=str(out),
                       golden=str(golden), key=gkey)
        first = first or out
        row = _bench_row(key, num, model, golden, gkey, board, "speed", tflm_runs, tuning=out)
        row.update({"optimize": label, "flash_limit": limit, "tuning_seconds": t["seconds"],
                    "tuning_trials": t["trials"]})
        rows.append(row)
        log(bench_line(row))
    return rows


def run_bench(board="qemu-m4", out_dir=None, numerics=("ort", "tflite"), log=print,
              tick=lambda n=1: None, optimize="speed", tuned=False):
    """Every model of the bench; tuned: instead, each shared model's tuned rows
    (tuned_rows) into bench/tuned/."""
    rows = []
    tflm_runs = {}
    for key, stem, num in bench_jobs(numerics):
        model = Path(str(stem) + ".onnx")
        golden = Path(str(stem) + "_golden.npz")
        if not model.exists():
            if num == numerics[0]:
                log(f"skip {key}: {model} missing")
            tick()
            continue
        gkey = KEYS[num] if key not in OWN_MODELS else "outputs"
        if tuned:
            if key not in OWN_MODELS:  # TFLM's image sets the limit: the shared models
                out = Path(out_dir or REPO_ROOT / "bench" / "tuned")
                rows += tuned_rows(key, num, model, golden, gkey, board, tflm_runs,
                                   out / "records", log)
            tick()
            continue
        row = _bench_row(key, num, model, golden, gkey, board, optimize, tflm_runs)
        rows.append(row)
        log(bench_line(row))
        tick()
    # size builds in bench/size/: the speed table in bench/ stays what the README quotes
    out_dir = Path(out_dir or REPO_ROOT / "bench" / ("tuned" if tuned else
                                                     "size" if optimize == "size" else ""))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out_dir / "results.md").write_text(markdown_table(rows))
    return rows


def bench_models(models, board="qemu-m4", goldens=None, numerics="ort", out_dir=None,
                 log=print, tick=lambda n=1: None, optimize="speed"):
    """`tinyaot bench MODEL ...`: the bench's row for each of the user's own models
    (verified against its golden file: goldens[i], else <stem>_golden.npz beside
    it), without TFLite Micro's side (it exists for the shared models only).
    Writes results.json and results.md only into out_dir, when given."""
    from ..errors import TinyAotError
    from .verify import default_golden_key
    rows = []
    for k, model in enumerate(models):
        model = Path(model)
        golden = Path(goldens[k]) if goldens and k < len(goldens) else \
            model.with_name(model.stem + "_golden.npz")
        if not golden.exists():
            raise TinyAotError(f"no golden file {golden} (give one with --golden, or make it: "
                               f"tinyaot golden {model} --inputs IN.npz -o {golden})",
                               model=str(model))
        key = default_golden_key(golden, numerics)
        row = _bench_row(model.stem, numerics, model, golden, key, board, optimize,
                         {model.stem: None})
        rows.append(row)
        log(bench_line(row))
        tick()
    if out_dir:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
        (out / "results.md").write_text(markdown_table(rows))
    return rows


BENCH_HEADER = ["model", "numerics", "vectors exact", "MACs", "instructions", "TFLM instr", "ratio",
                "cycles ideal", "TFLM", "ratio", "cycles STM32L4R5", "ms @120 MHz", "TFLM", "ratio",
                "flash image B", "TFLM", "ratio", "static RAM B", "TFLM", "ratio",
                "arena B (lower bound)", "TFLM arena B", "ratio"]


def bench_line(r):
    """One line per run: our figure and, where TFLM ran, its figure and the ratio."""
    ours, tflm, rat = r.get("cycle_model") or {}, r.get("tflm") or {}, r.get("ratios_to_tflm") or {}

    def pair(label, a, b, k):
        return f"{label} {_cell(a)}" + (f" vs {_cell(b)} ({rat.get(k)}x)" if b is not None else "")

    cyc, tcyc = ours.get("cycles", {}), tflm.get("cycles", {})
    parts = [f"{r['model']:6s} {r['numerics']:6s} mismatches {r['mismatches']}",
             pair("instr", ours.get("instructions", r["instructions"]), tflm.get("instructions"),
                  "instructions")]
    for p in cyc:
        parts.append(pair(f"cycles[{p}]", cyc[p], tcyc.get(p), f"cycles_{p}"))
    parts += [pair("flash", ours.get("flash"), tflm.get("flash"), "flash_image"),
              pair("ram", ours.get("ram"), tflm.get("ram"), "ram_static"),
              pair("arena", r["arena_bytes"], r["tflm_arena_bytes"], "arena")]
    return "  ".join(parts)


def _cell(v):
    return "-" if v is None else (f"{v:,}" if isinstance(v, int) else str(v))


def bench_cells(r):
    """One row of the results table as strings (markdown and terminal)."""
    ours, tflm = r.get("cycle_model") or {}, r.get("tflm") or {}
    rat = r.get("ratios_to_tflm") or {}

    def get(d, *ks):
        for k in ks:
            d = d.get(k) if isinstance(d, dict) else None
        return d

    tuned = str(r.get("optimize", "")).startswith("tuned")  # bench --tuned: which limit
    return [r["model"] + (f" ({r['optimize']})" if tuned else ""), r["numerics"],
            f"{r['vectors'] - (1 if r['mismatches'] else 0)}/{r['vectors']}"
            f"{'' if not r['mismatches'] else ' (' + str(r['mismatches']) + ' elements differ)'}",
            _cell(r["macs"]),
            _cell(ours.get("instructions", r["instructions"])), _cell(tflm.get("instructions")),
            _cell(rat.get("instructions")),
            _cell(get(ours, "cycles", "ideal")), _cell(get(tflm, "cycles", "ideal")),
            _cell(rat.get("cycles_ideal")),
            _cell(get(ours, "cycles", "stm32l4r5")), _cell(get(ours, "ms", "stm32l4r5")),
            _cell(get(tflm, "cycles", "stm32l4r5")), _cell(rat.get("cycles_stm32l4r5")),
            _cell(ours.get("flash")), _cell(tflm.get("flash")), _cell(rat.get("flash_image")),
            _cell(ours.get("ram")), _cell(tflm.get("ram")), _cell(rat.get("ram_static")),
            f"{_cell(r['arena_bytes'])} ({_cell(r['arena_lower_bound'])})",
            _cell(r["tflm_arena_bytes"]), _cell(rat.get("arena"))]


# The terminal table: each figure with its ratio to TFLM in one cell (fits 160 columns).
BENCH_TERM_HEADER = ["model", "numerics", "exact", "instructions (x TFLM)", "cycles ideal",
                     "cycles STM32L4R5", "ms", "flash image B", "static RAM B", "arena B"]


def bench_term_cells(r):
    c = bench_cells(r)

    def both(v, ratio):
        return v if ratio == "-" else f"{v} ({ratio}x)"

    return [c[0], c[1], c[2].split(" ")[0], both(c[4], c[6]), both(c[7], c[9]),
            both(c[10], c[13]), c[11], both(c[14], c[16]), both(c[17], c[19]),
            both(c[20].split(" ")[0], c[22])]


def markdown_table(rows):
    head = ("| " + " | ".join(BENCH_HEADER) + " |\n" + "|---" * len(BENCH_HEADER) + "|\n")
    return head + "\n".join("| " + " | ".join(bench_cells(r)) + " |" for r in rows) + "\n"
