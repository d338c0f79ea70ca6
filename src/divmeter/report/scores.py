"""Tables of ``divmeter score`` records: terminal (rich, fits the console width) and Markdown.

Every metric column says which way is more diverse and its range (from the registry). On a
terminal too narrow for the full column names, the columns are numbered ``[1]``, ``[2]``, ... and
a legend under the table gives each number's full name: a header is never cut, so two metrics
(``self-bleu`` and ``self-bleu:n=3``) never look alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from divmeter.report.metric_text import range_text

__all__ = ["metric_facts", "format_score", "records_markdown", "records_table", "summary_table",
           "null_reasons"]

_VALUE_WIDTH = 7  # "-0.1234"


def metric_facts(column: str) -> tuple[str, str]:
    """``(arrow, range)`` of a metric column: ``("↑", "[0, 1]")`` for ``distinct-n:n=2``.

    Unknown columns (precomputed scores) get ``("", "")``.

    Example:
        >>> metric_facts("self-bleu:n=3")
        ('↓', '[0, 1]')
    """
    from divmeter.core.errors import UnknownMetricError
    from divmeter.engine.registry import get_metric

    try:
        spec = get_metric(column.split(":", 1)[0])
    except UnknownMetricError:
        return "", ""
    return ("↑" if spec.higher_is_more_diverse else "↓"), range_text(spec.bounds)


def _facts(column: str, plans: Sequence[Any] | None) -> tuple[str, str]:
    """:func:`metric_facts` of a column, from the run's plans when it has them (the metric
    resolved once; names are never parsed back), else from the column's name (a file read
    after the run)."""
    for p in plans or ():
        if p.column == column:
            spec = p.metric
            return ("↑" if spec.higher_is_more_diverse else "↓"), range_text(spec.bounds)
    return metric_facts(column)


def format_score(v: Any) -> str:
    """A metric value to 4 decimals, ``null`` for None/NaN, other values as they are.

    Example:
        >>> format_score(0.123456), format_score(None), format_score(3)
        ('0.1235', 'null', '3')
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "null"
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


def null_reasons(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """``{"column: reason": count}`` over the records' ``reasons``."""
    out: dict[str, int] = {}
    for r in records:
        for c, why in (r.get("reasons") or {}).items():
            key = f"{c}: {why}"
            out[key] = out.get(key, 0) + 1
    return out


def _keys(records: Sequence[Mapping[str, Any]], columns: Sequence[str], has_label: bool,
          metadata: Sequence[str]) -> list[str]:
    return ["row", "set_id"] + (["label"] if has_label else []) + list(metadata)


def records_markdown(records: Sequence[Mapping[str, Any]], columns: Sequence[str], *,
                     has_label: bool, metadata: Sequence[str] = (),
                     summary: Mapping[str, Any] | None = None,
                     plans: Sequence[Any] | None = None,
                     signatures: Mapping[str, str] | None = None) -> str:
    """A Markdown table of score records, a line on direction/range, each metric's signature
    (``signatures``: ``{column: signature}``), null reasons, summary.

    Example:
        >>> recs = [{"set_id": "a", "row": 0, "ttr": 0.5, "reasons": {}}]
        >>> print(records_markdown(recs, ["ttr"], has_label=False).splitlines()[0])
        | row | set_id | ttr ↑ |
    """
    from divmeter.report.terminal import md_cell, printable

    keys = _keys(records, columns, has_label, metadata)
    head = keys + [f"{c} {_facts(c, plans)[0]}".rstrip() for c in columns]
    lines = ["| " + " | ".join(md_cell(h) for h in head) + " |",
             "|" + "|".join("---:" if h in ("row", "label") or i >= len(keys) else "---"
                            for i, h in enumerate(head)) + "|"]
    for r in records:
        cells = [format_score(r.get(k)) for k in keys] + [format_score(r.get(c)) for c in columns]
        lines.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    lines += ["", "↑: higher = more diverse; ↓: lower = more diverse. Ranges: "
              + "; ".join(f"{c} {_facts(c, plans)[1]}" for c in columns if _facts(c, plans)[1])
              + "."]
    if signatures:
        lines += ["", "Signatures:", ""] + [f"- `{c}`: `{signatures[c]}`" for c in columns
                                            if signatures.get(c)]
    reasons = null_reasons(records)
    if reasons:
        lines += ["", "null values:"] + [f"- {k} (x{n})" for k, n in reasons.items()]
    if summary:
        lines += ["", "| metric | mean | std | count | nulls |", "|---|---:|---:|---:|---:|"]
        for name, s in summary["metrics"].items():
            lines.append(f"| {md_cell(name)} | {format_score(s['mean'])} | "
                         f"{format_score(s['std'])} | {s['count']} | {s['nulls']} |")
        sigs = [(n, s.get("signature")) for n, s in summary["metrics"].items()
                if s.get("signature")]
        if sigs and not signatures:
            lines += [""] + [f"- `{n}`: `{sig}`" for n, sig in sigs]
    return printable("\n".join(lines), lines=True) + "\n"


def records_table(records: Sequence[Mapping[str, Any]], columns: Sequence[str], *,
                  has_label: bool, metadata: Sequence[str] = (), width: int = 80,
                  plans: Sequence[Any] | None = None,
                  signatures: Mapping[str, str] | None = None) -> list[Any]:
    """Rich renderables (the table, folded by whole columns where it does not fit ``width``,
    then its legend and each metric's signature, from ``signatures``). Set ids, values and
    signatures are never split across lines."""
    from rich.text import Text

    from divmeter.report.terminal import folded_tables, printable

    keys = _keys(records, columns, has_label, metadata)
    cells = [[str(r.get(k)) if k in ("row", "set_id") else format_score(r.get(k)) for k in keys]
             + [format_score(r.get(c)) for c in columns] for r in records]
    key_width = sum(max([len(k)] + [len(row[i]) for row in cells]) + 2
                    for i, k in enumerate(keys))
    full = [f"{c} {_facts(c, plans)[0]}".rstrip() for c in columns]
    numbered = key_width + sum(max(len(h), _VALUE_WIDTH) + 2 for h in full) > width
    heads = [f"[{i + 1}]" for i in range(len(columns))] if numbered else full
    header = keys + heads
    right = [k in ("row", "label") for k in keys] + [True] * len(columns)
    styles = ["dim" if k == "row" else None for k in keys] + [None] * len(columns)
    out: list[Any] = folded_tables(header, cells, keys=len(keys), width=width,
                                   title=f"{len(records)} sets", right=right, styles=styles)
    legend = []
    for i, c in enumerate(columns):
        arrow, rng = _facts(c, plans)
        name = f"[{i + 1}] {c}" if numbered else c
        legend.append(f"{name}: " + ("higher" if arrow == "↑" else "lower" if arrow == "↓"
                                      else "?") + f" = more diverse, range {rng or '?'}")
    out.append(Text(printable("\n".join(legend), lines=True), style="dim", no_wrap=True,
                    overflow="ignore"))
    sigs = [printable(f"{c}: {s}") for c in columns if (s := (signatures or {}).get(c))]
    if sigs:  # plain strings: printed whole, one per line (print_unbroken), never wrapped
        out += ["signatures:", *sigs]
    reasons = null_reasons(records)
    if reasons:
        out.append(Text(printable("null values:\n" + "\n".join(
            f"  {k} (x{n})" for k, n in reasons.items()), lines=True), style="dim"))
    return out


def summary_table(stats: Mapping[str, Any], plans: Sequence[Any] | None = None, *,
                  signatures: bool = True) -> list[Any]:
    """The ``--summary`` table (metric, mean, std, count, nulls) and the signatures below it
    (not with ``signatures=False``: the records' table above shows them)."""
    from rich.table import Table

    from divmeter.report.terminal import cell

    table = Table(title=f"summary over {stats['sets']} sets", title_justify="left", box=None,
                  pad_edge=False, header_style="bold")
    table.add_column("metric", no_wrap=True, overflow="ignore")
    for col in ("mean", "std", "count", "nulls"):
        table.add_column(col, justify="right", no_wrap=True)
    sigs = []
    for name, s in stats["metrics"].items():
        arrow = _facts(name, plans)[0]
        table.add_row(cell(f"{name} {arrow}".rstrip()), format_score(s["mean"]),
                      format_score(s["std"]), str(s["count"]), str(s["nulls"]))
        if s.get("signature"):
            sigs.append(f"{name}: {s['signature']}")
    out: list[Any] = [table]
    if sigs and signatures:  # plain strings: printed whole, one per line, never wrapped
        out += ["signatures:", *sigs]
    return out
