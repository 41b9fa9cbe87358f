"""tinyaot command line: the parser of every subcommand (codegen/commands/) and main().

Exit codes: 0 success; 1 verification found mismatches; 2 user error (bad
model, golden file or option: one line on stderr, nothing written);
70 internal error (a tinyaot bug: please report it).
"""
from __future__ import annotations

import argparse
import os
import sys

from . import __version__
from .commands import COMMANDS
from .commands.options import EXIT_CODES, RAW, resolve_numerics
from .errors import TinyAotError

EXAMPLES = """examples:
  tinyaot compile models/digits_cnn_int8.onnx -o build/digits
  tinyaot run models/digits_cnn_int8.onnx --board host --inputs in.npz -o out.npz
  tinyaot verify models/digits_cnn_int8.onnx --golden models/digits_cnn_int8_golden.npz \\
      --board qemu-m4 --json
  tinyaot compile models/digits_cnn_int8.onnx --board qemu-m4 --ram-limit 64K
  tinyaot verify M.onnx --golden M_golden.npz --board qemu-m55 --optimize size
  tinyaot report models/digits_cnn_int8.onnx --board qemu-m4
  tinyaot validate models/digits_cnn_int8.onnx --inputs models/digits_cnn_int8_golden.npz
  tinyaot profile models/digits_cnn_int8.onnx --board qemu-m4 --png profile.png
  tinyaot quantize models/digits_cnn_f32.onnx --calib calib.npz -o model_int8.onnx
"""


def build_parser():
    ap = argparse.ArgumentParser(
        prog="tinyaot", description="Ahead-of-time compiler: quantized ONNX or int8 TFLite -> static-arena C.",
        epilog=EXAMPLES + "\n" + EXIT_CODES, formatter_class=RAW)
    ap.add_argument("--version", action="version", version=f"tinyaot {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, cmd in COMMANDS.items():
        p = sub.add_parser(name, help=cmd.HELP, description=getattr(cmd, "DESCRIPTION", None),
                           epilog=cmd.EPILOG, formatter_class=RAW)
        cmd.add_arguments(p)
        p.set_defaults(fn=cmd.run)
    return ap


def main(argv=None):
    ap = build_parser()
    a = ap.parse_args(argv)
    resolve_numerics(a)  # --numerics left out: by the model's file type
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
