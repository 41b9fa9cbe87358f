"""tinyaot command line: compile, run, verify (+ report, validate, profile,
quantize: codegen/tools/cli_tools.py).

Exit codes: 0 success; 1 verification found mismatches; 2 user error (bad
model, golden file or option: one line on stderr, nothing written);
70 internal error (a tinyaot bug: please report it).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from . import __version__
from .errors import TinyAotError
from .tools.cli_tools import EXIT_CODES, RAW, add_optimize, examples

EXAMPLES = """examples:
  tinyaot compile models/digits_cnn_int8.onnx -o build/digits
  tinyaot run models/digits_cnn_int8.onnx --board host --inputs in.npz -o out.npz
  tinyaot verify models/digits_cnn_int8.onnx --golden models/digits_cnn_int8_golden.npz \\
      --board qemu-m4 --json
  tinyaot compile models/digits_cnn_int8.onnx --board qemu-m4 --ram-limit 64K
  tinyaot verify M.onnx --golden M_golden.npz --board qemu-m55 --optimize size
  tinyaot report models/digits_cnn_int8.onnx --board qemu-m4
  tinyaot report models/digits_cnn_int8.onnx --board nrf52840
  tinyaot boards
  tinyaot validate models/digits_cnn_int8.onnx --inputs models/digits_cnn_int8_golden.npz
  tinyaot profile models/digits_cnn_int8.onnx --board qemu-m4 --png profile.png
  tinyaot quantize models/digits_cnn_f32.onnx --calib calib.npz -o model_int8.onnx
"""


def _shape_arg(values):
    shapes = {}
    for v in values or []:
        if "=" not in v:
            raise TinyAotError(f"--input-shape wants NAME=d0,d1,..., got '{v}'")
        name, dims = v.rsplit("=", 1)
        try:
            shapes[name] = [int(d) for d in dims.split(",")]
        except ValueError:
            raise TinyAotError(f"--input-shape: bad dimensions '{dims}'") from None
    return shapes


def cmd_compile(a):
    from .compiler import compile_model, model_name, write_outputs

    dumps = []

    def dump(title, g):
        dumps.append(f"== after {title} ==\n{g.dump()}")

    c = compile_model(a.model, numerics=a.numerics, input_shapes=_shape_arg(a.input_shape),
                      dump=dump if a.dump_ir else None, io_buffers=a.io_buffers,
                      integrity=a.integrity, io=a.io, depthwise_inplace=a.depthwise_inplace,
                      ort_threads=a.ort_threads, optimize=a.optimize)
    out = a.output or os.path.join("build", model_name(a.model))
    from .build import board_or_error
    from .tools.budget import check_budget
    c.report["budget"] = check_budget(c, board_or_error(a.board), a.ram_limit, a.flash_limit,
                                      model=a.model)
    write_outputs(c, out)
    if a.plot_memory:  # planner/plot.py: one rectangle per arena block over the steps
        from .planner.plot import plot_memory
        plot_memory(c.plan, c.graph, a.plot_memory)
    if a.dump_ir:
        print("\n".join(dumps))
    if a.json:
        print(json.dumps(c.report, indent=2, default=str))
    else:
        r = c.report
        print(f"{r['model']}: wrote {out}/{r['name']}.c, {r['name']}.h, report.json "
              f"(arena {r['arena_bytes']} B, weights {r['weights_bytes']} B, {r['macs']} MACs)")
    return 0


def cmd_run(a):
    import numpy as np

    from .verify import load_golden, run_model

    inputs, _ = load_golden(a.inputs, "inputs")
    outs, info = run_model(a.model, inputs, board=a.board, numerics=a.numerics,
                           ram_limit=a.ram_limit, flash_limit=a.flash_limit,
                           io_buffers=a.io_buffers, depthwise_inplace=a.depthwise_inplace,
                           ort_threads=a.ort_threads, optimize=a.optimize)
    out = a.output
    tmp = out + ".tmp.npz"
    extra = {}
    if info.get("instructions"):
        extra["instructions"] = np.array(info["instructions"], dtype=np.int64)
    np.savez(tmp, outputs=outs, **extra)
    os.replace(tmp, out if out.endswith(".npz") else out)
    if a.json:
        print(json.dumps({"model": a.model, "board": a.board, "numerics": a.numerics,
                          "inputs": len(outs), "output_file": out,
                          "instructions": [int(x) for x in info.get("instructions") or []]},
                         indent=2))
    else:
        print(f"{len(outs)} input(s) run on {a.board}: outputs written to {out}")
    return 0


def print_report(r, file=sys.stdout):
    p = lambda s: print(s, file=file)  # noqa: E731
    opt = "" if r.get("optimize", "speed") == "speed" else f", optimize {r['optimize']}"
    p(f"model        {r['model']}  ({r['name']}, numerics {r['numerics']}{opt})")
    p(f"board        {r['board']}")
    io = ("input and output inside" if r.get("io_buffers") == "arena"
          else "input and output in the caller's buffers")
    p(f"arena        {r['arena_bytes']} B  (lower bound {r['arena_lower_bound_bytes']} B; {io})")
    if r.get("flash"):
        f = r["flash"]
        p(f"flash        {f['total']} B  (code {f['code']} B / weights {f['weights']} B)")
    else:
        p(f"weights      {r['weights_bytes']} B")
    if r.get("stack"):
        st = r["stack"]
        p(f"stack        {st['worst_case_bytes']} B worst case (board reserves {st['reserved_bytes']} B); "
          f"RAM {st['ram_needed_bytes']} B of {st['ram_limit_bytes']} B")
    if r.get("instructions_per_inference"):
        same = "same for every input" if r.get("instructions_same_for_all_inputs") else \
            f"min {r['instructions_min']}"
        p(f"instructions {r['instructions_per_inference']} per inference ({same}; "
          f"{r['macs']} MACs)")
    ok = r["vectors_passed"]
    p(f"golden       {ok}/{r['vectors']} vectors bit-exact ({r['key']}), "
      f"{r['mismatches']} mismatching elements, max |diff| {r['max_abs_diff']}")
    for m in r.get("first_mismatches", [])[:5]:
        p(f"  vector {m['vector']} element {m['index']}: got {m['got']}, expected {m['expected']}")
    p("PASS" if r["mismatches"] == 0 else "FAIL")


def cmd_verify(a):
    from .verify import default_golden_key, verify_model

    r = verify_model(a.model, a.golden, board=a.board, numerics=a.numerics,
                     key=a.key or default_golden_key(a.golden, a.numerics),
                     ram_limit=a.ram_limit, flash_limit=a.flash_limit, io_buffers=a.io_buffers,
                     depthwise_inplace=a.depthwise_inplace, ort_threads=a.ort_threads,
                     optimize=a.optimize)
    if a.json:
        print(json.dumps(r, indent=2, default=str))
    else:
        print_report(r)
    return 0 if r["mismatches"] == 0 else 1


def cmd_bench(a):
    from .bench import BENCH_TERM_HEADER, bench_jobs, bench_term_cells, run_bench
    from .tools.console import print_table, progress, use_color

    rich = use_color() and not a.json
    # Plain: one line per run as it finishes (stderr under --json); on a
    # terminal a progress bar, then the table.
    log = (lambda s: None) if rich else \
        (lambda s: print(s, file=sys.stderr)) if a.json else print
    with progress(f"bench on {a.board}", len(bench_jobs())) as tick:
        rows = run_bench(board=a.board, out_dir=a.output, log=log, tick=tick, optimize=a.optimize)
    default = "bench/size" if a.optimize == "size" else "bench"
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


def cmd_export(a):
    from .export import export

    r = export(a.model, a.board, a.output, numerics=a.numerics, measure_on_board=not a.no_measure,
               io_buffers=a.io_buffers, ort_threads=a.ort_threads, optimize=a.optimize)
    if a.json:
        print(json.dumps(r, indent=2, default=str))
        return 0
    for name in r["models"]:
        n = r["numbers"][name]
        extra = "" if n["instructions"] is None else \
            f", flash {n['flash']['total']} B, {n['instructions']} instructions on {a.board}"
        if n.get("part_fit"):  # a build-only part: its image, and the cycle model's time
            c = n.get("cycles")
            extra = f", image flash {n['flash']['total']} B on {a.board}" + (
                f", {c['ms']:.3f} ms at {c['clock_hz'] / 1e6:g} MHz (cycle model)" if c else "")
        print(f"{name}: arena {r['arena'][name]} B{extra}")
    print(f"wrote {r['dir']}: {len(r['sources'])} sources, {len(r['headers'])} runtime headers, "
          "README.md, tinyaot.mk, CMakeLists.txt, tinyaot.cmake")
    return 0


def cmd_boards(a):
    from .targets.parts import catalogue, format_boards
    infos = catalogue()
    if a.json:
        print(json.dumps([i.as_dict() for i in infos], indent=2))
    else:
        print(format_boards(infos))
    return 0


def build_parser():
    ap = argparse.ArgumentParser(
        prog="tinyaot", description="Ahead-of-time compiler: quantized ONNX -> static-arena C.",
        epilog=EXAMPLES + "\n" + EXIT_CODES, formatter_class=RAW)
    ap.add_argument("--version", action="version", version=f"tinyaot {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p, board_default="host"):
        p.add_argument("model", help="quantized ONNX model (QDQ)")
        p.add_argument("--board", default=board_default, help="host, qemu-m4, ... (default %(default)s)")
        p.add_argument("--numerics", default="ort", choices=["ort", "tflite"],
                       help="bit-exact reference: onnxruntime or TFLite Micro (default %(default)s)")
        p.add_argument("--ort-threads", type=int, default=1, metavar="N", help="--numerics ort: the intra-op thread count of the onnxruntime session to match (MLAS sums float convs in an order that depends on it; default %(default)s)")
        add_optimize(p)
        p.add_argument("--ram-limit", metavar="SIZE", help="RAM for arena + stack, e.g. 64K "
                       "(default: the board's ram_size); too much fails before any C is written")
        p.add_argument("--flash-limit", metavar="SIZE", help="flash limit, e.g. 256K "
                       "(default: the board's flash_size)")
        p.add_argument("--io-buffers", choices=["arena", "user"], default="arena",
                       help="arena (default): input/output inside the arena, reached through "
                            "<name>_input() / <name>_output() (smallest total RAM); user: in the "
                            "caller's buffers passed to <name>_run(in, out)")

    def depthwise_inplace(p):
        p.add_argument("--depthwise-inplace", action="store_true",
                       help="run depthwise convolutions in place (one channel plane of scratch) "
                            "where that makes the arena smaller; slower portable kernel")

    p = sub.add_parser("compile", help="write <name>.c, <name>.h and report.json",
                       formatter_class=RAW, epilog=examples(
                           "tinyaot compile models/digits_cnn_int8.onnx -o build/digits",
                           "tinyaot compile M.onnx --board qemu-m4 --ram-limit 64K --numerics tflite",
                           "tinyaot compile M.onnx --io float --plot-memory mem.png --json",
                           note="Writes <name>.c, <name>.h and report.json (all or nothing)."))
    common(p)
    depthwise_inplace(p)
    p.add_argument("-o", "--output", help="output directory (default build/<name>)")
    p.add_argument("--dump-ir", action="store_true", help="print the IR after each pass")
    p.add_argument("--io", default="int8", choices=["int8", "float"],
                   help="float: also emit <name>_run_f32 (quantizes / dequantizes like "
                        "onnxruntime's QuantizeLinear / DequantizeLinear; default %(default)s)")
    p.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,...",
                   help="fix a symbolic input shape")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--plot-memory", metavar="PNG", help="draw the arena plan over time")
    p.add_argument("--integrity", choices=["crc32", "sha256"],
                   help="emit <name>_verify(): checks a digest of the weights at boot")
    p.set_defaults(fn=cmd_compile)

    p = sub.add_parser("run", help="compile, build and run inputs on a board", formatter_class=RAW,
                       epilog=examples(
                           "tinyaot run models/digits_cnn_int8.onnx --board host "
                           "--inputs models/digits_cnn_int8_golden.npz -o out.npz",
                           "tinyaot run M.onnx --board qemu-m4 --inputs in.npz -o out.npz --json",
                           note="On QEMU, out.npz also has 'instructions' per input."))
    common(p)
    depthwise_inplace(p)
    p.add_argument("--inputs", required=True, help=".npz with an 'inputs' array (N, ...) int8")
    p.add_argument("-o", "--output", required=True, help="output .npz ('outputs')")
    p.add_argument("--json", action="store_true", help="print a summary as JSON on stdout")
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("verify", help="check bit-exactness against golden vectors",
                       formatter_class=RAW, epilog=examples(
                           "tinyaot verify models/digits_cnn_int8.onnx "
                           "--golden models/digits_cnn_int8_golden.npz --board qemu-m4",
                           "tinyaot verify M.onnx --golden M_golden.npz --board qemu-m4 "
                           "--numerics tflite --key outputs_tflm --json"))
    common(p)
    depthwise_inplace(p)
    p.add_argument("--golden", required=True, help="golden .npz (inputs + outputs)")
    p.add_argument("--key", help="array of expected outputs (default: outputs_onnxruntime for "
                                 "--numerics ort, outputs_tflm for tflite, when the file has it; "
                                 "else outputs)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    p.set_defaults(fn=cmd_verify)

    p = sub.add_parser("bench", help="instructions, arena and flash of every model on a board",
                       formatter_class=RAW, epilog=examples(
                           "tinyaot bench", "tinyaot bench --board qemu-m4 -o /tmp/bench --json",
                           note="Runs every shared and own model in both numerics; writes "
                                "results.json and results.md."))
    p.add_argument("--board", default="qemu-m4")
    p.add_argument("-o", "--output", help="output directory (default bench/)")
    add_optimize(p)
    p.add_argument("--json", action="store_true", help="print the rows as JSON on stdout")
    p.set_defaults(fn=cmd_bench)

    from .tools.cli_tools import add_tool_commands  # report, validate, profile, quantize
    add_tool_commands(sub)

    p = sub.add_parser("export", help="a self-contained C library folder (model + kernels, Make/CMake)",
                       formatter_class=RAW, epilog=examples(
                           "tinyaot export models/digits_cnn_int8.onnx --board qemu-m4 -o out/digits",
                           "tinyaot export a.onnx b.onnx --board qemu-m4 -o out/two --no-measure "
                           "--json"))
    p.add_argument("model", nargs="+", help="quantized ONNX model(s); several share the kernels")
    p.add_argument("--board", required=True, help="board the numbers in the README are measured on")
    p.add_argument("--numerics", default="ort", choices=["ort", "tflite"],
                   help="bit-exact reference: onnxruntime or TFLite Micro (default %(default)s)")
    p.add_argument("--ort-threads", type=int, default=1, metavar="N", help="--numerics ort: the intra-op thread count of the onnxruntime session to match (MLAS sums float convs in an order that depends on it; default %(default)s)")
    add_optimize(p)
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.add_argument("--no-measure", action="store_true",
                   help="do not run one inference in QEMU for flash and instruction counts")
    p.add_argument("--io-buffers", choices=["arena", "user"], default="arena",
                   help="where the model's input/output live (default %(default)s, see compile)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(fn=cmd_export)

    p = sub.add_parser("boards", help="every board and part: memory, core, clock, runs in QEMU?",
                       formatter_class=RAW, epilog=examples(
                           "tinyaot boards", "tinyaot boards --json",
                           note="QEMU boards run verify, run, profile and fleets; build-only "
                                "parts take report --board (fits? ms at the part's clock) and "
                                "export --board (flags, startup, linker script). docs/boards.md"))
    p.add_argument("--json", action="store_true", help="print the list as JSON on stdout")
    p.set_defaults(fn=cmd_boards)

    from .signing import add_signing_commands  # keygen, sign, verify-signature
    add_signing_commands(sub)
    return ap


def main(argv=None):
    ap = build_parser()
    a = ap.parse_args(argv)
    try:
        return a.fn(a)
    except TinyAotError as e:
        print(f"tinyaot: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug in tinyaot, not in the user's input
        if os.environ.get("TINYAOT_DEBUG"):
            raise
        print(f"tinyaot: internal error: {type(e).__name__}: {e} "
              "(set TINYAOT_DEBUG=1 for the traceback; please report it)", file=sys.stderr)
        return 70


if __name__ == "__main__":
    sys.exit(main())
