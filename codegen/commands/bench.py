"""`tinyaot bench`: every shared and own model on a board, both numerics."""
from __future__ import annotations

import json
import sys

from .options import add_optimize, examples

HELP = "instructions, arena and flash of every model on a board"
EPILOG = examples(
    "tinyaot bench", "tinyaot bench --board qemu-m4 -o /tmp/bench --json",
    "tinyaot bench my.onnx --board qemu-m4",
    "tinyaot bench my.onnx --golden my_golden.npz --numerics tflite --json",
    note="Without MODEL: every shared and repository model in both numerics; writes\n"
         "results.json and results.md (default bench/). With MODEL: your models, each\n"
         "verified against its golden file (--golden, else MODEL_golden.npz beside it);\n"
         "writes files only with -o.")


def add_arguments(p):
    p.add_argument("model", nargs="*", help="your model(s) (default: the bench's own set)")
    p.add_argument("--golden", action="append", metavar="G.npz",
                   help="golden file of each MODEL, in order (default: MODEL_golden.npz)")
    p.add_argument("--numerics", choices=["ort", "tflite"], default="ort",
                   help="with MODEL: the numerics to bench (default %(default)s)")
    p.add_argument("--board", default="qemu-m4")
    p.add_argument("-o", "--output", help="output directory (default bench/; with MODEL: none)")
    add_optimize(p)
    p.add_argument("--tuned", action="store_true",
                   help="instead, each shared model tuned (tinyaot tune) with no flash limit "
                        "and under 0.8x the TFLM + CMSIS-NN image; writes bench/tuned/ (the "
                        "tuning records in bench/tuned/records/ are reused by the next run)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON on stdout")


def run(a):
    from ..driver.bench import (BENCH_TERM_HEADER, bench_jobs, bench_models, bench_term_cells,
                                run_bench)
    from ..driver.console import print_table, progress, use_color
    from ..errors import TinyAotError
    if a.tuned and (a.model or a.optimize != "speed"):
        raise TinyAotError("--tuned benches the shared models against TFLM's image; tune your "
                           "own model with tinyaot tune, then verify it with --tuning FILE")
    if not a.model and (a.golden or a.numerics != "ort"):
        raise TinyAotError("--golden and --numerics go with MODEL (the bench's own set runs "
                           "every model in both numerics)")

    rich = use_color() and not a.json
    # Plain: one line per run as it finishes (stderr under --json); on a
    # terminal a progress bar, then the table.
    log = (lambda s: None) if rich else \
        (lambda s: print(s, file=sys.stderr)) if a.json else print
    if a.model:
        with progress(f"bench on {a.board}", len(a.model)) as tick:
            rows = bench_models(a.model, board=a.board, goldens=a.golden, numerics=a.numerics,
                                out_dir=a.output, log=log, tick=tick, optimize=a.optimize)
        wrote = (f"wrote {a.output}/results.json and results.md ({len(rows)} rows)" if a.output
                 else f"{len(rows)} model(s) on {a.board}")
    else:
        with progress(f"bench on {a.board}", len(bench_jobs())) as tick:
            rows = run_bench(board=a.board, out_dir=a.output, log=log, tick=tick,
                             optimize=a.optimize, tuned=a.tuned)
        default = "bench/tuned" if a.tuned else "bench/size" if a.optimize == "size" else "bench"
        wrote = f"wrote {a.output or default}/results.json and results.md ({len(rows)} rows)"
    if a.json:
        print(json.dumps(rows, indent=2))
    elif rich:
        print_table(wrote, f"bench on {a.board}", BENCH_TERM_HEADER,
                    [bench_term_cells(r) for r in rows],
                    right=tuple(range(2, len(BENCH_TERM_HEADER))), footer=[wrote])
    else:
        print(wrote)
    return 0 if all(r["mismatches"] == 0 for r in rows) else 1
