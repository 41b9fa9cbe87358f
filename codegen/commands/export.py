"""`tinyaot export`: a self-contained C library folder (model + kernels, Make/CMake)."""
from __future__ import annotations

import json

from .options import add_numerics, examples

HELP = "a self-contained C library folder (model + kernels, Make/CMake)"
EPILOG = examples(
    "tinyaot export models/digits_cnn_int8.onnx --board qemu-m4 -o out/digits",
    "tinyaot export a.onnx b.onnx --board qemu-m4 -o out/two --no-measure --json")


def add_arguments(p):
    p.add_argument("model", nargs="+", help="quantized ONNX model(s); several share the kernels")
    p.add_argument("--board", required=True, help="board the numbers in the README are measured on")
    add_numerics(p)
    p.add_argument("-o", "--output", required=True, help="output folder")
    p.add_argument("--no-measure", action="store_true",
                   help="do not run one inference in QEMU for flash and instruction counts")
    p.add_argument("--io-buffers", choices=["arena", "user"], default="arena",
                   help="where the model's input/output live (default %(default)s, see compile)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def run(a):
    from ..driver.export import export

    r = export(a.model, a.board, a.output, numerics=a.numerics, measure_on_board=not a.no_measure,
               io_buffers=a.io_buffers, ort_threads=a.ort_threads, optimize=a.optimize,
               float_fallback=a.float_fallback)
    if a.json:
        print(json.dumps(r, indent=2, default=str))
        return 0
    for name in r["models"]:
        n = r["numbers"][name]
        extra = "" if n["instructions"] is None else \
            f", flash {n['flash']['total']} B, {n['instructions']} instructions on {a.board}"
        print(f"{name}: arena {r['arena'][name]} B{extra}")
    print(f"wrote {r['dir']}: {len(r['sources'])} sources, {len(r['headers'])} runtime headers, "
          "README.md, tinyaot.mk, CMakeLists.txt, tinyaot.cmake")
    return 0
