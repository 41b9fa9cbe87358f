"""Board lookup for the commands: a board name -> its board.toml (targets/qemu.py),
or one clear error naming the boards there are."""
from __future__ import annotations

from ..errors import TinyAotError
from ..paths import BOARDS_DIR
from .qemu import load_board


def all_boards():
    """Every board with a boards/<name>/board.toml, sorted."""
    return sorted(p.parent.name for p in BOARDS_DIR.glob("*/board.toml"))


def board_or_error(name):
    try:
        return load_board(name)
    except FileNotFoundError:
        raise TinyAotError(f"unknown board '{name}' (known: {', '.join(all_boards())})") from None
