"""`tinyaot verify-signature`: a firmware image against its signed manifest (exit 1 if not)."""
from __future__ import annotations

import sys

from .options import examples, print_or_json

HELP = "check a firmware image against its signed manifest"
EPILOG = examples("tinyaot verify-signature build/fw.elf --pubkey keys/tinyaot_ed25519.pub",
                  note="Exit 1 when the image or its manifest was modified or signed "
                       "with another key.")


def add_arguments(p):
    p.add_argument("firmware", help="firmware image")
    p.add_argument("--pubkey", required=True, help="public key (PEM)")
    p.add_argument("--manifest", help="manifest file (default <firmware>.manifest.json)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def run(a):
    from ..driver.signing import SignatureInvalid, verify_signature
    manifest = a.manifest or str(a.firmware) + ".manifest.json"
    try:
        m = verify_signature(a.firmware, manifest, a.pubkey)
    except SignatureInvalid as e:
        if a.json:
            print_or_json(a, "", {"firmware": a.firmware, "valid": False, "error": str(e)})
        print(f"tinyaot: signature INVALID: {a.firmware}: {e}", file=sys.stderr)
        return 1
    print_or_json(a, f"signature OK: {a.firmware} ({m['model']}, board {m['board']}, numerics "
                  f"{m['numerics']}, tinyaot {m['tinyaot_version']})",
                  {"firmware": a.firmware, "valid": True, "manifest": m})
    return 0
