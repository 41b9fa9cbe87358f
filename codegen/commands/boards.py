"""`tinyaot boards`: every board and part with its memory, core, clock and whether it runs in QEMU."""
from __future__ import annotations

import json

from .options import examples

HELP = "every board and part: memory, core, clock, runs in QEMU?"
EPILOG = examples(
    "tinyaot boards", "tinyaot boards --json",
    note="QEMU boards run verify, run, profile and fleets; build-only parts take report "
         "--board (fits? ms at the part's clock) and export --board (flags, startup, linker "
         "script). See docs/boards.md.")


def add_arguments(p):
    p.add_argument("--json", action="store_true", help="print the list as JSON on stdout")


def run(a):
    from ..targets.parts import catalogue, format_boards
    infos = catalogue()
    if a.json:
        print(json.dumps([i.as_dict() for i in infos], indent=2))
    else:
        print(format_boards(infos))
    return 0
