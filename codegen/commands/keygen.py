"""`tinyaot keygen`: an Ed25519 key pair for signing firmware (driver/signing.py)."""
from __future__ import annotations

from .options import examples, print_or_json

HELP = "create an Ed25519 key pair for signing firmware"
EPILOG = examples("tinyaot keygen -o keys/", "tinyaot keygen -o keys/ --name release --json")


def add_arguments(p):
    from ..driver.signing import DEFAULT_KEY_NAME
    p.add_argument("-o", "--output", default=".", help="directory for the key files (default .)")
    p.add_argument("--name", default=DEFAULT_KEY_NAME, help="file stem (default %(default)s)")
    p.add_argument("--force", action="store_true", help="overwrite existing key files")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def run(a):
    from ..driver.signing import generate_keypair
    priv, pub = generate_keypair(a.output, a.name, a.force)
    print_or_json(a, f"wrote {priv} (private, keep secret) and {pub} (public)",
                  {"private_key": priv, "public_key": pub})
    return 0
