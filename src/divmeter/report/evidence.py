"""The evidence table to people: a metric's numbers per benchmark and task (``divmeter list
NAME``), the metrics ranked per benchmark (``divmeter list --evidence``), and one line beside
each metric in the HTML reports."""

from __future__ import annotations

from typing import Any

from divmeter.studies.reproduce.evidence import BENCHMARKS, STAT_NAMES, TASKS, EvidenceTable

__all__ = ["metric_evidence", "ranking_tables", "ranking_markdown", "provenance",
           "column_evidence"]

_TASK = {"prompt_gen": "prompt", "resp_gen": "resp", "story_gen": "story"}


def _f(v: Any) -> str:
    return "–" if v is None else f"{v:.3f}"


def provenance(table: EvidenceTable) -> str:
    """Where the numbers come from, in one line.

    Example:
        >>> from divmeter.studies.reproduce.evidence import load_evidence
        >>> provenance(load_evidence()).startswith("computed by divmeter")
        True
    """
    return f"{_source(table)}; {table.signature}"


def _source(table: EvidenceTable) -> str:
    """:func:`provenance` without the table's signature (printed on a line of its own)."""
    return (f"computed by divmeter {table.doc.get('divmeter', '?')} on {table.date or '?'} "
            f"from Tevet & Berant's data (tevet@{table.commit[:12] or '?'}; divmeter data "
            f"fetch tevet), metrics at their defaults")


def metric_evidence(table: EvidenceTable, metric: str) -> list[Any]:
    """Renderables for ``divmeter list NAME``: per benchmark, one row per statistic with the
    three tasks, and the metric's rank; or the reason there is none."""
    from rich.table import Table
    from rich.text import Text

    why = table.why_not(metric)
    if why is not None:
        return [Text(f"not covered by any benchmark in divmeter's evidence table: {why}")]
    entry = table.entry(metric) or {}
    grid = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("benchmark", "statistic", *(_TASK[t] for t in TASKS), "mean", "rank"):
        grid.add_column(col, no_wrap=True, justify="left" if col in ("benchmark", "statistic")
                        else "right")
    for b, bench in BENCHMARKS.items():
        cells = (entry.get("cells") or {}).get(b) or {}
        for i, stat in enumerate(bench.statistics):
            per = [(cells.get(t) or {}).get(stat) for t in TASKS]
            mean = table.mean(metric, b, stat)
            rank = table.rank(metric, b) if stat == bench.headline else None
            grid.add_row(b if i == 0 else "", STAT_NAMES[stat], *(_f(v) for v in per),
                         _f(mean), f"{rank[0]} of {rank[1]}" if rank else "")
    notes = [f"not ranked on {b}: {why}" for b in BENCHMARKS
             if (why := table.coverage(metric, b)) is not None]
    out: list[Any] = [grid, *notes, Text(
        "ρ and AUC oriented: positive = agrees with the benchmark; OCA is direction-blind. "
        + "; ".join(f"{b}: {bench.what}" for b, bench in BENCHMARKS.items()), style="dim")]
    if entry.get("signature"):  # signatures are printed whole, on their own lines
        out += ["scored as:", entry["signature"]]
    out += [Text(_source(table) + ":", style="dim"), table.signature]
    return out


def _ranking_rows(table: EvidenceTable, benchmark: str, metrics: Any = None
                  ) -> list[list[str]]:
    bench = BENCHMARKS[benchmark]
    rows = []
    for i, (m, mean, per) in enumerate(table.ranking(benchmark, metrics)):
        extra = []
        if "spearman_hds" in bench.statistics:
            extra.append(_f(table.mean(m, benchmark, "spearman_hds")))
        rows.append([str(i + 1), m, _f(mean), *(_f(v) for v in per), *extra])
    return rows


def _ranking_head(benchmark: str) -> list[str]:
    bench = BENCHMARKS[benchmark]
    stat = STAT_NAMES[bench.headline]
    head = ["#", "metric", f"mean {stat}", *(f"{_TASK[t]}" for t in TASKS)]
    if "spearman_hds" in bench.statistics:
        head.append("mean ρ(HDS)")
    return head


def ranking_tables(table: EvidenceTable, *, benchmark: str | None = None,
                   metrics: Any = None, width: int = 100) -> list[Any]:
    """Terminal renderables: per benchmark, the metrics best first by the mean of its headline
    statistic over the three tasks; then the metrics no benchmark covers, with the reason."""
    from divmeter.report.terminal import folded_tables

    out: list[Any] = []
    for b in [benchmark] if benchmark else list(BENCHMARKS):
        bench = BENCHMARKS[b]
        out += ["", f"{b}: {bench.what}"]
        out += folded_tables(_ranking_head(b), _ranking_rows(table, b, metrics), keys=2,
                             width=width)
        out += [f"not ranked: {m} ({why})" for m, why in table.unranked(b, metrics)]
    not_covered = [(m, table.why_not(m)) for m in (metrics or table.metrics())
                   if table.why_not(m)]
    if not_covered:
        out += ["", "not covered:"] + [f"  {m}: {why}" for m, why in not_covered]
    out += ["", provenance(table)]
    return out


def ranking_markdown(table: EvidenceTable, *, benchmark: str | None = None,
                     metrics: Any = None) -> str:
    """The same ranking as Markdown tables."""
    lines = []
    for b in [benchmark] if benchmark else list(BENCHMARKS):
        head = _ranking_head(b)
        lines += [f"### {b}", "", BENCHMARKS[b].what, "", "| " + " | ".join(head) + " |",
                  "|" + "|".join("---" if i == 1 else "---:" for i in range(len(head))) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in _ranking_rows(table, b, metrics)]
        lines.append("")
        unranked = table.unranked(b, metrics)
        if unranked:
            lines += ["Not ranked: " + "; ".join(f"`{m}` ({why})" for m, why in unranked), ""]
    not_covered = [(m, table.why_not(m)) for m in (metrics or table.metrics())
                   if table.why_not(m)]
    if not_covered:
        lines += ["Not covered:", ""] + [f"- `{m}`: {why}" for m, why in not_covered] + [""]
    lines.append(provenance(table))
    return "\n".join(lines) + "\n"


def column_evidence(column: str, table: EvidenceTable | None = None) -> str:
    """One line on what the benchmarks say about the metric behind a score column
    (``self-bleu:n=3`` -> self-bleu at its defaults); empty for a column that is no registered
    metric (a precomputed ``metric_*``)."""
    from divmeter.core.errors import UnknownMetricError
    from divmeter.engine.registry import get_metric
    from divmeter.studies.reproduce.evidence import load_evidence

    name, _, params = column.partition(":")
    try:
        get_metric(name)
    except UnknownMetricError:
        return ""
    table = table or load_evidence()
    line = table.summary(name)
    return line + (" (at its defaults, not with these parameters)" if params and
                   not line.startswith("no benchmark") else "")
