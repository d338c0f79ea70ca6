"""``divmeter reproduce`` as tables: published and reproduced side by side, per paper and table
(Markdown, terminal, and the HTML page made from the Markdown)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["reproduction_markdown", "reproduction_tables", "reproduction_html", "summary_line"]

HEAD = ("data", "metric", "statistic", "scores", "published", "divmeter", "diff", "tolerance",
        "status")


def _num(v: float | None, digits: int = 4) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _signed(v: float | None) -> str:
    return "–" if v is None else f"{v:+.4f}".replace("-0.0000", "+0.0000")


def _scores(row: Any) -> str:
    kind, name = row.claim.scores
    return {"column": f"column {name}", "metric": f"divmeter {name}",
            "printed": "printed values"}[kind]


def _where(row: Any) -> str:
    c = row.claim
    if c.file is None:
        return "the paper's values"
    folder, _, name = c.file.partition("/")
    return f"{folder}/{name.split('_' + c.task)[0]} · {c.task}" if c.task else c.file


def _cells(row: Any) -> list[str]:
    c = row.claim
    return [_where(row), c.metric, c.statistic, _scores(row), f"{c.published:g}",
            _num(row.reproduced), _signed(row.diff), _num(row.tolerance), row.status]


def _groups(rep: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in rep.rows:
        out.setdefault(f"{r.claim.paper}: {r.claim.table}", []).append(r)
    return out


def summary_line(rep: Any) -> str:
    """One line: how many published numbers were checked and how many hold.

    Example:
        >>> from divmeter.studies.reproduce import reproduce
        >>> summary_line(reproduce(["cdm"]))
        'cdm: 27 of 27 published numbers reproduced within their tolerance.'
    """
    n = rep.counts()
    checked = n["ok"] + n["off"]
    line = (f"{', '.join(rep.papers) or 'nothing'}: {n['ok']} of {checked} published numbers "
            "reproduced within their tolerance")
    if n["off"]:
        line += f"; {n['off']} OFF"
    if n["not reproducible"]:
        line += (f"; {n['not reproducible']} printed numbers the released data cannot give "
                 "(listed, not counted)")
    return line + "."


def _notes(rep: Any) -> list[str]:
    out = []
    for r in rep.rows:
        if r.note:
            out.append(f"{r.claim.paper} {r.claim.table}, {_where(r)}, {r.claim.metric} "
                       f"{r.claim.statistic} ({r.status}): {r.note}")
    return list(dict.fromkeys(out))


def reproduction_markdown(rep: Any) -> str:
    """One Markdown table per paper table, then the notes, the data and the signature."""
    from divmeter.studies.reproduce.published import PAPERS

    lines = [f"{summary_line(rep)}", ""]
    for title, rows in _groups(rep).items():
        paper = title.split(":")[0]
        lines += [f"### {title}", "", f"{PAPERS[paper][0]}", "",
                  "| " + " | ".join(HEAD) + " |",
                  "|" + "|".join("---" if i < 4 or i == 8 else "---:" for i in range(9)) + "|"]
        lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
        lines.append("")
    notes = _notes(rep)
    if notes:
        lines += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    for p, why in rep.skipped.items():
        lines.append(f"- not reproduced: {p} ({why})")
    for name, d in rep.data.items():
        lines.append(f"Data: {name} from {d['repository']} at {d['commit']} ({d['path']}).")
    lines.append(f"Signature: `{rep.signature}`")
    return "\n".join(lines) + "\n"


def reproduction_tables(rep: Any, *, width: int = 100, off_only: bool = False) -> list[Any]:
    """Terminal renderables: one table per paper table (only the rows off their tolerance
    or not reproducible with ``off_only``), the notes and the summary line (the papers left
    out are said on stderr by the command)."""
    from divmeter.report.terminal import folded_tables

    out: list[Any] = []
    for title, rows in _groups(rep).items():
        shown = [r for r in rows if r.status != "ok"] if off_only else rows
        if not shown:
            continue
        out += folded_tables(list(HEAD), [_cells(r) for r in shown], keys=3, width=width,
                             title=title, right=[False] * 4 + [True] * 4 + [False])
    out += ["notes:", *[f"  {n}" for n in _notes(rep)]] if _notes(rep) else []
    out += [f"data: {name} from {d['repository']} at {d['commit'][:12]} ({d['path']})"
            for name, d in rep.data.items()]
    out += [f"signature: {rep.signature}", summary_line(rep)]
    return out


def reproduction_html(rep: Any, out: str | os.PathLike[str]) -> Path:
    """The Markdown report as one self-contained HTML page."""
    from divmeter.report.html import text_report

    return text_report(reproduction_markdown(rep), out, title="divmeter reproduce",
                       source=", ".join(rep.papers))
