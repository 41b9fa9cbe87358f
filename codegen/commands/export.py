"""`tinyaot export`: a self-contained C library folder (model + kernels, Make/CMake)."""
from __future__ import annotations

import json

from .input_shapes import add_input_shape
from .options import add_numerics, examples

HELP = "a self-contained C library folder (model + kernels, Make/CMake)"
EPILOG = examples(
    "tinyaot export models/digits_cnn_int8.onnx --board qemu-m4 -o out/digits",
    "tinyaot export models/digits_cnn_int8.onnx --board nrf52840 -o out/nrf52840",
    "tinyaot export a.onnx b.onnx --board qemu-m4 -o out/two --no-measure --json",
    "tinyaot export my.onnx --board qemu-m4 -o out/my --inputs my_golden.npz --io float",
    note="The folder has example/: `make -C out/digits/example run` runs the model in QEMU.\n"
         "Exporting again into an export keeps the files you added there.")


def add_arguments(p):
    p.add_argument("model", nargs="+", help="quantized ONNX or int8 .tflite model(s); several share "
                                          "the kernels")
    add_input_shape(p)
    p.add_argument("--board", required=True,
                   help="board the numbers in the README are measured on; a build-only part "
                        "(tinyaot boards) also gives its flags, startup and linker script")
    add_numerics(p)
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.add_argument("--no-measure", action="store_true",
                   help="do not run one inference in QEMU for flash and instruction counts "
                        "(on a part: no cycle-model time; the fit is still checked)")
    p.add_argument("--io-buffers", choices=["arena", "user"], default="arena",
                   help="where the model's input/output live (default %(default)s, see compile)")
    p.add_argument("--io", default="int8", choices=["int8", "float"],
                   help="float: also export <name>_run_f32 (float in and out, see compile; "
                        "default %(default)s)")
    p.add_argument("--inputs", action="append", metavar="IN.npz",
                   help="inputs ('inputs', int8) the example embeds and runs; one file per "
                        "model, in order (default: one input at the zero point)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def run(a):
    from ..driver.export import export

    r = export(a.model, a.board, a.output, numerics=a.numerics, measure_on_board=not a.no_measure,
               io_buffers=a.io_buffers, ort_threads=a.ort_threads, optimize=a.optimize, io=a.io,
               inputs=a.inputs, float_fallback=a.float_fallback, tuning=a.tuning)
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
          "README.md, tinyaot.mk, CMakeLists.txt, tinyaot.cmake"
          + (f", example/ (make -C {r['dir']}/example run)" if r["example"] else ""))
    if r["kept"]:
        print(f"kept {len(r['kept'])} file(s) you added there: {', '.join(r['kept'])}")
    return 0
