"""The programs a board's builds and runs need, checked before any work: a
missing one is one line naming it and the fix (`./bootstrap.sh` installs
the Arm toolchain, QEMU and the host compiler), exit 2 like every user error,
instead of a compiler command line or a FileNotFoundError later on."""
from __future__ import annotations

import shutil

from ..errors import TinyAotError

# Besides the compiler: what the firmware builder (ar, ranlib), the stack check
# (objdump) and the flash figures (size, nm) call.
_BINUTILS = ("ar", "ranlib", "objdump", "size", "nm")


def board_programs(board, run=True):
    """The programs building (and with run, running) on `board` calls, in order."""
    progs = [board["compiler"]]
    if board["kind"] != "shared-library":
        progs += [board.get("toolchain_prefix", "") + t for t in _BINUTILS]
        if run:
            progs.append(board.get("qemu", "qemu-system-arm"))
    return progs


def missing_programs(board, run=True):
    return [p for p in board_programs(board, run) if shutil.which(p) is None]


def require_tools(board, run=True, hint=""):
    """TinyAotError naming what `board` needs that is not on PATH: the compiler
    (standing for its binutils when those are missing too) and QEMU."""
    missing = missing_programs(board, run)
    if not missing:
        return
    prefix = board.get("toolchain_prefix", "")
    if board["compiler"] in missing and prefix:
        rest = [m for m in missing if not m.startswith(prefix)]
        names = [f"{board['compiler']} (the {prefix.rstrip('-')} toolchain)"] + rest
    else:
        names = missing
    raise TinyAotError(f"{' and '.join(names)} not found on PATH (board {board['name']} "
                       f"needs {'them' if len(names) > 1 else 'it'}): run ./bootstrap.sh{hint}")
