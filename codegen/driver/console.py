"""Terminal output: rich tables, colour and progress bars, only on a terminal.

Off a terminal (pipes, files, CI), with NO_COLOR set or TERM=dumb, the
commands print exactly their plain-text tables (tests and scripts parse
them) and no progress at all. Tables go to stdout, progress bars to stderr,
each only when that stream is a terminal.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager


def _terminal(stream):
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM") != "dumb" and not os.environ.get("CI")


def use_color(stream=None):
    """Rich tables and colour on `stream` (default stdout)?"""
    return _terminal(stream or sys.stdout) and not os.environ.get("NO_COLOR")


def _console(stream):
    from rich.console import Console
    return Console(file=stream, highlight=False, soft_wrap=False)


def print_table(plain, title, header, rows, *, right=(), mark_row=None, mark="", footer=(),
                total_row=False, stream=None):
    """Print `plain` as is, or on a terminal the same table with rich: header,
    rows of strings, columns in `right` right-aligned, row `mark_row` in red
    with `mark` after it; footer lines below, each a string or (string, rich
    style); total_row: the last row is a total, set apart by a rule."""
    stream = stream or sys.stdout
    if not use_color(stream):
        print(plain, file=stream)
        return
    from rich.table import Table
    from rich.text import Text
    t = Table(title=title, title_justify="left", header_style="bold cyan", show_lines=False)
    for k, h in enumerate(header):
        # the first two columns (index, name) stay on one line; the others
        # wrap, headers included, when the terminal is narrower than the table
        t.add_column(h, justify="right" if k in right else "left", no_wrap=k < 2)
    for k, cells in enumerate(rows):
        if total_row and k == len(rows) - 1:
            t.add_section()
        if k == mark_row:
            cells = list(cells[:-1]) + [f"{cells[-1]}  {mark}".strip()]
        t.add_row(*cells, style="bold red" if k == mark_row else None)
    con = _console(stream)
    con.print(t)
    for line in footer:
        text, style = line if isinstance(line, tuple) else (line, None)
        con.print(Text(text, style=style))


@contextmanager
def progress(description, total):
    """Yields advance(n=1); a rich progress bar on stderr when it is a
    terminal, nothing otherwise."""
    if not _terminal(sys.stderr) or not total:
        yield lambda n=1: None
        return
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn)
    from rich.console import Console
    con = Console(file=sys.stderr, no_color=bool(os.environ.get("NO_COLOR")))
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=con, transient=True) as p:
        task = p.add_task(description, total=total)
        yield lambda n=1: p.advance(task, n)


@contextmanager
def stdout_to_stderr():
    """Whatever a library prints while this runs goes to stderr, from Python
    (onnxruntime's calibrators print their progress) or from C, so that
    stdout stays ours (pure JSON under --json)."""
    import contextlib
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
