"""Memory budgets: does a compiled model fit the board's flash and RAM?

Checked at compile time, before any C is written, from numbers the compiler
knows exactly: the arena (static RAM), the board's reserved stack
(``stack_size``, what the linker sets aside) and the constant data of the
model (weights and tables, in flash): an early error when those alone are
over. Code size is only known after linking: a command that links
(verify, run, fleet, bench) then checks the linked image's flash
(driver/linkmap.py, the figure every command reports) with check_flash.

The limits are the board's ``ram_size`` / ``flash_size`` unless overridden
(``--ram-limit`` / ``--flash-limit``), e.g. for a smaller part of the same
family or for the share of memory the application leaves to the model.
"""
from __future__ import annotations

import re

from ..errors import TinyAotError

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kKmM]i?[bB]?|[bB])?\s*$")


def parse_size(text, option="size"):
    """'65536', '64K', '64KiB', '1M' -> bytes (K = 1024)."""
    if text is None:
        return None
    if isinstance(text, int):
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise TinyAotError(f"{option}: cannot read '{text}' as a size (e.g. 65536, 64K, 1M)")
    n = int(m.group(1))
    unit = (m.group(2) or "").upper()[:1]
    return n * {"": 1, "B": 1, "K": 1024, "M": 1024 * 1024}[unit]


def human(n):
    """Exact bytes for messages: '64 KiB' when a whole number of KiB, else '1568 B'."""
    n = int(n)
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def budget_of(compiled, board):
    """What the model needs and what the board offers (bytes)."""
    arena = int(compiled.plan.size)
    stack = int(board.get("stack_size", 0) or 0)
    const = int(compiled.module.weights_bytes)
    return {
        "ram": {"arena": arena, "stack": stack, "total": arena + stack},
        "flash": {"weights_and_tables": const, "total": const},
    }


def check_budget(compiled, board, ram_limit=None, flash_limit=None, model=None):
    """Raise TinyAotError if the model cannot fit; returns the budget dict."""
    ram_limit = parse_size(ram_limit, "--ram-limit")
    flash_limit = parse_size(flash_limit, "--flash-limit")
    need = budget_of(compiled, board)
    name = board.get("name", "board")
    ram_have = ram_limit if ram_limit is not None else board.get("ram_size")
    flash_have = flash_limit if flash_limit is not None else board.get("flash_size")
    ram_src = "--ram-limit" if ram_limit is not None else name
    flash_src = "--flash-limit" if flash_limit is not None else name
    need["ram"]["limit"] = ram_have
    need["flash"]["limit"] = flash_have
    model = model or compiled.report.get("model")
    problems = []
    r = need["ram"]
    if ram_have is not None and r["total"] > int(ram_have):
        problems.append(f"needs {human(r['total'])} RAM (arena {human(r['arena'])} + stack "
                        f"{human(r['stack'])}), {ram_src} has {human(int(ram_have))} "
                        f"({r['total'] - int(ram_have)} B over)")
    f = need["flash"]
    if flash_have is not None and f["total"] > int(flash_have):
        problems.append(f"needs at least {human(f['total'])} flash (weights and tables "
                        f"{human(f['weights_and_tables'])}, code not counted), {flash_src} has "
                        f"{human(int(flash_have))} ({f['total'] - int(flash_have)} B over)")
    if problems:
        hint = _size_hint(compiled, flash_have) if f["total"] > int(flash_have or f["total"]) else ""
        raise TinyAotError("does not fit: " + "; ".join(problems) + hint, model=model)
    return need


def check_flash(image, board, flash_limit=None, model=None):
    """After the link: the image's flash (linkmap.flash_image) against --flash-limit,
    else the board's flash_size. TinyAotError (one line) if it is over."""
    limit = parse_size(flash_limit, "--flash-limit")
    have = limit if limit is not None else board.get("flash_size")
    if have is None or image["total"] <= int(have):
        return
    src = "--flash-limit" if limit is not None else board.get("name", "board")
    raise TinyAotError(f"does not fit: flash image {image['total']} B (code {image['code']} B, "
                       f"weights {image['weights']} B, tables {image['tables']} B), {src} has "
                       f"{human(int(have))} ({image['total'] - int(have)} B over)", model=model)


def _size_hint(compiled, flash_have):
    """' (try --optimize size: ...)' when the speed build is over the flash limit
    and the size build (passes/kernel_select.py) would be under it; else ''."""
    opts = dict(compiled.options or {})
    if opts.get("optimize", "speed") != "speed" or "path" not in opts:
        return ""
    from ..compiler import compile_model
    opts["optimize"] = "size"
    opts.pop("tuning", None)  # the whole size build's figure
    try:
        small = int(compile_model(opts.pop("path"), **opts).module.weights_bytes)
    except TinyAotError:
        return ""
    if small > int(flash_have):
        return ""
    return (f"; with --optimize size the weights and tables take {human(small)}: "
            "try --optimize size")
