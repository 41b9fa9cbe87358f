"""One message for every node tinyaot cannot compile (QOperator rewrite and
QDQ lowering together): the first 8 are listed, the rest counted, because
the first ones are the cause and later ones usually follow from them."""
from __future__ import annotations

from ..errors import UnsupportedError

MAX_LISTED = 8


def unsupported_error(items, path) -> UnsupportedError:
    """items: [(op_type, node name, why)] in graph order."""
    lines = [f"{op} '{n}': {why}" for op, n, why in items]
    if len(lines) > MAX_LISTED:
        lines = lines[:MAX_LISTED] + [f"... and {len(lines) - MAX_LISTED} more"]
    return UnsupportedError(f"{len(items)} unsupported node(s): " + "; ".join(lines), model=path)
