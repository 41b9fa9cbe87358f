"""tinyaot command line: the parser of every subcommand (codegen/commands/) and main().

Exit codes: 0 success; 1 verification found mismatches; 2 user error (bad
model, golden file or option: one line on stderr, nothing written);
70 internal error (a tinyaot bug: please report it).
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import sys

from . import __version__
from .commands import COMMANDS
from .commands.input_shapes import fixed_input_shapes
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
  tinyaot report models/digits_cnn_int8.onnx --board nrf52840
  tinyaot boards
  tinyaot validate models/digits_cnn_int8.onnx --inputs models/digits_cnn_int8_golden.npz
  tinyaot profile models/digits_cnn_int8.onnx --board qemu-m4 --png profile.png
  tinyaot quantize models/digits_cnn_f32.onnx --calib calib.npz -o model_int8.onnx
"""


class Parser(argparse.ArgumentParser):
    """argparse without abbreviations (`--io` is never read as `--io-buffers`),
    whose errors are one line that names the closest option or choice."""

    def __init__(self, *args, **kw):
        kw["allow_abbrev"] = False
        super().__init__(*args, **kw)
        self._seen = []

    def parse_known_args(self, args=None, namespace=None):
        self._seen = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _unknown_options(self):
        """The option-like words of the command line that are none of this parser's
        (at the top level, only those before the subcommand: it judges its own)."""
        out = []
        for w in self._seen:
            if w == "--" or (self._subparsers is not None and not w.startswith("-")):
                break
            name = w.split("=", 1)[0]
            if name.startswith("-") and not self._negative_number_matcher.match(name) \
                    and name not in self._option_string_actions:
                out.append(name)
        return out

    def error(self, message):
        unknown = self._unknown_options()
        if unknown:
            message = "; ".join(f"unknown option {u}{_closest(u, self._option_string_actions)}"
                                for u in unknown)
        else:
            m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
            if m:
                choices = re.findall(r"'([^']*)'", m.group(2))
                if message.startswith("argument cmd:"):
                    message = f"unknown command '{m.group(1)}'"
                message += _closest(m.group(1), choices)
        self.exit(2, f"{self.prog}: error: {message}; see `{self.prog} --help`\n")


def _closest(word, candidates):
    """' (did you mean X?)' for the closest candidate (options: of the same
    kind, long with long), or ''."""
    if word.startswith("-"):
        dashes = "--" if word.startswith("--") else "-"
        candidates = [c for c in candidates if c.startswith(dashes) == (dashes == "--")
                      and (dashes == "--" or not c.startswith("--"))]
    longer = [c for c in candidates if c.startswith(word)]
    near = longer if len(longer) == 1 else \
        difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def build_parser():
    ap = Parser(
        prog="tinyaot", description="Ahead-of-time compiler: quantized ONNX or int8 TFLite -> static-arena C.",
        epilog=EXAMPLES + "\n" + EXIT_CODES, formatter_class=RAW)
    ap.add_argument("--version", action="version", version=f"tinyaot {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    ap.subcommands = {}
    for name, cmd in COMMANDS.items():
        p = sub.add_parser(name, help=cmd.HELP, description=getattr(cmd, "DESCRIPTION", None),
                           epilog=cmd.EPILOG, formatter_class=RAW)
        cmd.add_arguments(p)
        p.set_defaults(fn=cmd.run)
        ap.subcommands[name] = p
    return ap


def main(argv=None):
    ap = build_parser()
    a, extra = ap.parse_known_args(argv)
    if extra:  # reported by the subcommand, which knows its options
        ap.subcommands[a.cmd].error(f"unrecognized arguments: {' '.join(extra)}")
    resolve_numerics(a)  # --numerics left out: by the model's file type
    own_paths = str
    try:
        with fixed_input_shapes(a) as own_paths:  # --input-shape: a copy with them written in
            return a.fn(a)
    except TinyAotError as e:
        print(f"tinyaot: error: {own_paths(str(e))}", file=sys.stderr)
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
