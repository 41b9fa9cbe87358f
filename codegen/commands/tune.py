"""`tinyaot tune`: each layer's kernel variant, measured in QEMU, under a flash limit."""
from __future__ import annotations

import sys

from .options import examples, print_json

HELP = "choose each layer's kernel (speed / size / loop) by measuring it, under a flash limit"
DESCRIPTION = ("Measures each layer's kernel variants on a QEMU board with the cycle model, "
               "checks each against the golden, and picks per layer the fastest set whose "
               "linked image fits --flash-limit (an exact knapsack; the kernels' shared code "
               "counted once). Writes a tuning record that compile, verify, run, export, "
               "report, profile (--tuning FILE) and scons (tuning=FILE) take.")
EPILOG = examples(
    "tinyaot tune models/digits_cnn_int8.onnx --board qemu-m4 -o digits.tuning.json",
    "tinyaot tune M.onnx --board qemu-m4 --flash-limit 128K --part stm32l4r5",
    "tinyaot verify M.onnx --golden M_golden.npz --board qemu-m4 --tuning tuning.json",
    note="The record is also a cache: run again with the same -o and nothing is measured "
         "unless the board, part, objective, toolchain or tinyaot version changed.")


def add_arguments(p):
    p.add_argument("model", help="quantized ONNX model (QDQ) or int8 .tflite")
    p.add_argument("--board", default="qemu-m4", help="a QEMU board (default %(default)s)")
    p.add_argument("--numerics", default=None, choices=["ort", "tflite"],
                   help="bit-exact reference (default: tflite for a .tflite model, else ort)")
    p.add_argument("--part", help="the cycle model's part whose cycles are minimised (default: "
                   "ideal, the core's timings alone)")
    p.add_argument("--flash-limit", metavar="SIZE",
                   help="the linked image's flash, e.g. 128K (default: the board's flash)")
    p.add_argument("--ram-limit", metavar="SIZE",
                   help="the tuned build's arena must fit it, e.g. 64K (checked, not traded)")
    p.add_argument("--objective", default="cycles", choices=["cycles", "instructions"],
                   help="what to minimise (default %(default)s: modelled cycles of --part)")
    p.add_argument("--golden", help="golden .npz every candidate is checked against "
                   "(default: <model>_golden.npz beside the model)")
    p.add_argument("--key", help="golden array of expected outputs (default as verify)")
    p.add_argument("-o", "--output", default="tuning.json",
                   help="the tuning record (read as a cache, then written; default %(default)s)")
    p.add_argument("-j", "--jobs", type=int, default=2, metavar="N",
                   help="trials in parallel in a local process pool (default %(default)s)")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="run the trials on a Ray cluster (ray://host:10001, auto: the "
                        "cluster this machine is in, local: a Ray started here); needs "
                        "pip install 'tinyaot[cluster]'")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def _progress(a):
    if a.json or not sys.stderr.isatty():
        return None

    def show(text):
        sys.stderr.write(f"\r\033[Ktune: {text}")
        sys.stderr.flush()
    return show


def run(a):
    from ..driver.budget import parse_size
    from ..errors import TinyAotError
    from ..tuning.tune import tune_model
    if a.jobs < 1:
        raise TinyAotError("--jobs must be at least 1")
    flash = parse_size(a.flash_limit, "--flash-limit") if a.flash_limit else None
    ram = parse_size(a.ram_limit, "--ram-limit") if a.ram_limit else None
    show = _progress(a)
    try:
        r = tune_model(a.model, board=a.board, numerics=a.numerics, part=a.part,
                       flash_limit=flash, ram_limit=ram, objective=a.objective, out=a.output,
                       golden=a.golden, key=a.key, cluster=a.cluster, jobs=a.jobs,
                       progress=show)
    finally:
        if show:
            sys.stderr.write("\r\033[K")
    t = r["record"]["tuned"]
    if a.json:
        print_json({"record": a.output, "trials": r["trials"], "reused": r["reused"],
                    "checked": r["checked"], "seconds": r["seconds"], "tuned": t})
        return 0
    obj = r["record"]["context"]["objective"]
    m, fixed = t["measured"], t["fixed"]
    print(f"{t['model']}: tuned for {r['record']['context']['board']} (part "
          f"{r['record']['context']['part']}, flash limit {t['limits']['flash']:,} B): "
          f"{m['flash']:,} B, {m[obj]:,} {obj}, bit-exact")
    for v in ("speed", "size"):
        if v in fixed:
            f = fixed[v]
            fits = "fits" if f["flash"] <= t["limits"]["flash"] else "over the limit"
            cost = "-" if f[obj] is None else f"{f[obj]:,}"
            print(f"  fixed {v:<5} {f['flash']:>10,} B {cost:>14} {obj} ({fits})")
    chosen = [x for x in t["layers"] if len(x["candidates"]) > 1]
    counts = {v: sum(1 for x in chosen if x["choice"] == v) for v in ("speed", "size", "loop")}
    print("  layers: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n)
          + f" (of {len(chosen)} with a choice)")
    how = (f"{r['trials']} trial builds" if not r["reused"] else
           "measurements reused, the tuned build checked" if r["checked"] else
           "reused the record, nothing measured")
    print(f"wrote {a.output} ({how}; {r['seconds']:.0f} s)")
    return 0
