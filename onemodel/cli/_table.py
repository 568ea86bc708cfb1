"""Plain-text and Markdown tables for the command line. A plain table fits the terminal: the
widest columns are narrowed and their cells wrap onto more lines."""
from __future__ import annotations

import os
import shutil
import sys
import textwrap

GAP = 2
MIN_WIDTH = 6


def terminal_width() -> int | None:
    """``COLUMNS`` when set, else the terminal's width; None when stdout is no terminal (a pipe
    or a file keeps whole rows, which suits grep)."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size((100, 24)).columns


def fit(natural: list[int], minimum: list[int], width: int | None) -> list[int]:
    """Column widths within ``width`` (gaps included): the widest column gives way first, none
    below its minimum (so a very narrow terminal still gets a readable, if wider, table)."""
    widths = list(natural)
    if width is None:
        return widths
    avail = width - GAP * (len(widths) - 1)
    while sum(widths) > avail:
        candidates = [i for i, w in enumerate(widths) if w > minimum[i]]
        if not candidates:
            break
        i = max(candidates, key=lambda j: widths[j])
        widths[i] -= 1
    return widths


def _wrap(cell: str, width: int) -> list[str]:
    return textwrap.wrap(cell, width, break_long_words=True, break_on_hyphens=True) or [""]


def render(headers: list[str], rows: list[list[str]], markdown: bool = False,
           width: int | None = -1, keep: tuple[int, ...] = (0,)) -> str:
    """The table as text; ``width`` -1 means the terminal's (see `terminal_width`), None no
    limit. Columns in ``keep`` (the first: names) never wrap; the others wrap between words
    where they can, inside words where they must."""
    rows = [[str(c) for c in r] for r in rows]
    if markdown:
        esc = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
        return "\n".join(lines)
    if width == -1:
        width = terminal_width()
    natural = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
               for i, h in enumerate(headers)]
    hard = [n if i in keep else min(n, max(len(h), MIN_WIDTH))
            for i, (n, h) in enumerate(zip(natural, headers))]
    words = [max([hard[i]] + [min(len(w), 24) for r in rows for w in r[i].split()])
             for i in range(len(headers))]
    widths = fit(natural, [min(w, n) for w, n in zip(words, natural)], width)
    if width is not None and sum(widths) + GAP * (len(widths) - 1) > width:
        widths = fit(widths, hard, width)  # words must break: the widest column's first
    out = [_line(headers, widths), _line(["-" * w for w in widths], widths)]
    for r in rows:
        cells = [_wrap(c, w) if len(c) > w else [c] for c, w in zip(r, widths)]
        for k in range(max(len(c) for c in cells)):
            out.append(_line([c[k] if k < len(c) else "" for c in cells], widths))
    return "\n".join(out)


def wrap_text(text: str, indent: str = "") -> str:
    """A paragraph wrapped to the terminal (unchanged when there is none)."""
    width = terminal_width()
    if width is None:
        return text
    return textwrap.fill(text, width, subsequent_indent=indent, break_on_hyphens=False)


def _line(cells: list[str], widths: list[int]) -> str:
    return (" " * GAP).join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()


def human_bytes(n: int) -> str:
    """A size for people: B, then KiB, MiB, GiB with one decimal."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover
