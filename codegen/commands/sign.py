"""`tinyaot sign`: a signed manifest for a firmware image (driver/signing.py)."""
from __future__ import annotations

import os

from .options import examples, print_or_json

HELP = "sign a firmware image and its manifest (Ed25519)"
EPILOG = examples("tinyaot sign build/fw.elf --key keys/tinyaot_ed25519.pem "
                  "--model M.onnx --board qemu-m4")


def add_arguments(p):
    p.add_argument("firmware", help="firmware image (ELF or binary)")
    p.add_argument("--key", required=True, help="private key (PEM, from tinyaot keygen)")
    p.add_argument("--model", required=True, help="the ONNX model the firmware was built from")
    p.add_argument("--board", required=True, help="board the image is for")
    p.add_argument("--report", help="report.json of the compile (default: next to the image)")
    p.add_argument("--numerics", choices=["ort", "tflite"], help="if there is no report.json")
    p.add_argument("-o", "--output", help="manifest file (default <firmware>.manifest.json)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def run(a):
    from ..driver.signing import sign_firmware
    report = a.report
    if report is None:
        guess = os.path.join(os.path.dirname(os.path.abspath(a.firmware)), "report.json")
        report = guess if os.path.exists(guess) else None
    out = sign_firmware(a.firmware, a.key, a.model, a.board, report, a.numerics, a.output)
    print_or_json(a, f"signed {a.firmware}: manifest and signature in {out}",
                  {"firmware": a.firmware, "manifest": out})
    return 0
