"""The subcommands of `tinyaot`: the one table of them.

Each module has HELP (the one line in `tinyaot --help`), EPILOG (examples and
exit codes), optionally DESCRIPTION, add_arguments(parser) and run(args) ->
exit status. codegen/cli.py builds the parser from COMMANDS, in this order.
A command imports what it runs (codegen/driver/, the compiler) inside run(),
so `tinyaot --help` stays fast.
"""
from __future__ import annotations

from . import bench, boards, export, golden, keygen, profile, quantize, report, run, sign, validate, verify
from . import tune
from . import compile as compile_  # the module; the builtin compile() stays unshadowed
from . import verify_signature

COMMANDS = {
    "compile": compile_,
    "run": run,
    "verify": verify,
    "golden": golden,
    "bench": bench,
    "report": report,
    "validate": validate,
    "profile": profile,
    "tune": tune,
    "quantize": quantize,
    "export": export,
    "boards": boards,
    "keygen": keygen,
    "sign": sign,
    "verify-signature": verify_signature,
}
