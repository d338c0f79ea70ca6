"""Tables and lines for a terminal that never break what a reader copies.

Set ids, numbers and signatures are never split across lines: a table that does not fit the
terminal is folded by whole columns (the key columns repeat in each part, like a wide data
frame), and a signature prints whole on its own line (a long one overflows the terminal rather
than wraps). No printed line ends in spaces.

Every value that reaches the terminal (or a Markdown table) goes through :func:`printable`:
control characters (escape sequences, bells, carriage returns, bidirectional overrides) are
shown as escapes, never sent, and table cells are rich ``Text`` (never parsed as markup), so a
set id ``[/INST]`` or ``\x1b]0;X\x07`` prints as those characters.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["fold_columns", "folded_tables", "print_unbroken", "printable", "cell", "md_cell"]

#: What a terminal would act on rather than show: C0 (but for the line break where a caller
#: keeps lines), DEL, C1, and the bidirectional embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f"
                                 "\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    return m.group().encode("unicode_escape").decode("ascii")


def printable(value: Any, *, lines: bool = False) -> str:
    """``str(value)`` safe to print: every control character is written as its escape
    (``\\x1b``, ``\\n``, ``\\u202e``), so nothing a value holds is interpreted by the
    terminal; with ``lines``, line breaks are kept (a whole Markdown document).

    Example:
        >>> printable("a\\x1b[2Jb\\tc")
        'a\\\\x1b[2Jb\\\\tc'
    """
    return (_CONTROL_KEEP_LINES if lines else _CONTROL).sub(_escape, str(value))


def md_cell(value: Any) -> str:
    """A Markdown table cell showing ``value`` as it is: :func:`printable`, ``|`` escaped."""
    return printable(value).replace("|", "\\|")


def cell(value: Any, style: str | None = None) -> Any:
    """A rich table cell showing ``value`` as it is: :func:`printable`, and never read as
    markup (``[/INST]`` stays text)."""
    from rich.text import Text

    return Text(printable(value), style=style or "")

_UNBOUNDED = 4096
_GAP = 2  # rich's padding between two columns of a box-less table
_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def fold_columns(key_widths: Sequence[int], widths: Sequence[int], width: int) -> list[list[int]]:
    """Groups of column indices, in order, each fitting ``width`` beside the key columns.

    A column wider than what is left on its own still gets a group of its own (it overflows;
    it is never cut).

    Example:
        >>> fold_columns([6], [7, 7, 7, 7], 30)
        [[0, 1], [2, 3]]
    """
    base = sum(w + _GAP for w in key_widths)
    groups: list[list[int]] = []
    used = base
    for i, w in enumerate(widths):
        if groups and groups[-1] and used + w + _GAP <= width + _GAP:
            groups[-1].append(i)
            used += w + _GAP
        else:
            groups.append([i])
            used = base + w + _GAP
    return groups or [[]]


def folded_tables(header: Sequence[str], rows: Sequence[Sequence[str]], *, keys: int,
                  width: int, title: str | None = None, right: Sequence[bool] | None = None,
                  styles: Sequence[str | None] | None = None) -> list[Any]:
    """Rich tables of ``rows`` (the first ``keys`` columns repeated in every part), each part
    fitting ``width`` where a single column allows; no cell is wrapped or cut. Each part is
    preceded by its title as a plain string (``"TITLE (1/2)"``), for :func:`print_unbroken`."""
    from rich.table import Table

    n = len(header)
    header = [printable(h) for h in header]
    rows = [[printable(c) for c in r] for r in rows]
    right = list(right) if right is not None else [i >= keys for i in range(n)]
    styles = list(styles) if styles is not None else [None] * n
    widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(n)]
    groups = fold_columns(widths[:keys], widths[keys:], width)
    out: list[Any] = []
    for g, group in enumerate(groups):
        cols = list(range(keys)) + [keys + i for i in group]
        part = f" ({g + 1}/{len(groups)})" if len(groups) > 1 else ""
        if title or part:  # a plain line, printed whole (a table title would wrap)
            out.append(((title or "") + part).strip())
        table = Table(box=None, pad_edge=False, header_style="bold")
        for c in cols:
            table.add_column(cell(header[c]), justify="right" if right[c] else "left",
                             no_wrap=True, min_width=widths[c], style=styles[c])
        for r in rows:
            table.add_row(*[cell(r[c]) for c in cols])
        out.append(table)
    return out


def print_unbroken(console: Any, *items: Any) -> None:
    """Print renderables and plain strings with no line wrapped and no trailing spaces.

    Strings are printed as they are (no markup, no highlighting), whole on their lines: a
    signature longer than the terminal overflows instead of breaking.
    """
    from rich.console import Console

    for item in items:
        if isinstance(item, str):
            for line in printable(item, lines=True).splitlines() or [""]:
                console.print(line.rstrip(), markup=False, highlight=False, soft_wrap=True,
                              crop=False)
            continue
        from rich.text import Text

        buf = io.StringIO()
        # tables are drawn on a page wide enough that nothing wraps or is cut (they were already
        # folded to the terminal's width by whole columns); prose (Text) wraps at the terminal
        # unless it says no_wrap
        wide = not isinstance(item, Text) or bool(item.no_wrap)
        shadow = Console(file=buf, width=_UNBOUNDED if wide else max(console.width, 20),
                         force_terminal=console.is_terminal, color_system=console.color_system,
                         no_color=console.no_color, legacy_windows=False)
        shadow.print(item, crop=False)
        text = _TRAILING.sub(r"\1", buf.getvalue())
        console.file.write(text)
        console.file.flush()
