"""Tables of meta-evaluation results: Markdown (like the papers' tables) and terminal (rich)."""

from __future__ import annotations

import math
from typing import Any

from divmeter.studies.meta.protocols import ProtocolResult

__all__ = ["COLUMNS", "GLOSSARY", "columns_for", "markdown_table", "rich_table", "format_value",
           "notes", "small_sample_note", "SMALL_SAMPLE", "metric_signatures"]

#: Columns shown per protocol: (value key, header). Keys absent from every row are skipped.
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "contest": [("spearman", "ρ"), ("spearman_ci", "ρ 95% CI"), ("oca", "OCA"),
                ("oca_ci", "OCA 95% CI"), ("oca_directional", "OCA (dir.)"), ("auc", "AUC"),
                ("auc_ci", "AUC 95% CI"), ("n", "n"), ("n_excluded", "excl.")],
    "dectest": [("spearman", "ρ"), ("spearman_ci", "ρ 95% CI"), ("spearman_mean", "ρ mean"),
                ("spearman_std", "ρ std"), ("pearson", "r"), ("pearson_mean", "r mean"),
                ("pearson_std", "r std"), ("pair_accuracy", "pair acc"), ("n", "n"),
                ("n_excluded", "excl.")],
    "paired": [("n", "n"), ("mean_diff", "mean Δ"), ("mean_diff_ci", "mean Δ 95% CI"),
               ("sum_diff", "sum Δ"), ("cohen_d", "d"), ("cohen_d_ci", "d 95% CI"),
               ("sign_accuracy", "acc"), ("p_two_sided", "p (W2)"), ("p_greater", "p (W1)"),
               ("p_greater_adj", "p (W1, adj.)")],
    "compare": [("system", "system"), ("n", "n"), ("mean_diff", "mean Δ"),
                ("mean_diff_ci", "mean Δ 95% CI"), ("cohen_d", "d"), ("win_rate", "win"),
                ("p_two_sided", "p (W2)"), ("p_holm", "p (Holm)"), ("direction", "dir.")],
    "stages": [("delta", "Δ"), ("d_z", "d_z"), ("alternative", "H1"), ("p", "p"),
               ("p_adj", "p (adj.)"), ("sign_accuracy", "acc"), ("n", "n")],
    "pairwise": [("accuracy", "accuracy"), ("ci_low", "CI low"), ("ci_high", "CI high"),
                 ("cp_low", "CP low"), ("cp_high", "CP high"), ("n", "n"),
                 ("n_metric_ties", "metric ties")],
    "length-bias": [("short_win_rate", "short win rate"), ("win_ci_low", "CI low"),
                    ("win_ci_high", "CI high"), ("spearman_raw", "ρ(score, length)"),
                    ("spearman_p", "p(ρ)"), ("spearman_length", "ρ(diversity, length)"),
                    ("n_in_range", "in range"), ("n_pools", "pools")],
    "pattr-sensitivity": [("target_length", "L_T"), ("window", "W"),
                          ("pattr_mean_length", "PATTR len"), ("mattr_mean_length", "MATTR len"),
                          ("length_diff", "Δ length"), ("t_rouge1", "R1 t"), ("p_rouge1", "R1 p"),
                          ("t_rouge2", "R2 t"), ("p_rouge2", "R2 p"), ("t_rougeL", "RL t"),
                          ("p_rougeL", "RL p"), ("t_bleu-hf", "B t"), ("p_bleu-hf", "B p"),
                          ("t_bleu", "B t"), ("p_bleu", "B p")],
}


#: What the less obvious column headers mean, printed under a table that shows them (the
#: documentation's glossary holds the same words).
GLOSSARY: dict[str, str] = {
    "OCA": "optimal classification accuracy (Tevet & Berant): the best accuracy of one "
    "threshold on the metric at telling label 1 from label 0, whichever side of it counts as "
    "label 1 (direction-blind, 'oca:blind' in the signature); 0.5 is chance",
    "OCA (dir.)": "the same with the side fixed: label 1 predicted above the threshold, so a "
    "metric that ranks the classes backwards (or a lower-is-more-diverse one such as "
    "self-BLEU) scores below 0.5",
    "AUC": "ROC AUC of the metric for label 1 (Mann-Whitney); 0.5 is chance",
    "excl.": "rows left out (null metric or label)",
    "mean Δ": "mean paired difference, oriented so that + means more diverse than the other "
    "condition (self-BLEU and homogenization turned around)",
    "d": "Cohen's d of the paired differences (mean / sd)",
    "win": "share of items on which the system is more diverse than the baseline",
    "acc": "share of items whose difference has the expected sign",
    "p (W2)": "two-sided Wilcoxon signed-rank p",
    "p (W1)": "one-sided Wilcoxon signed-rank p (the expected direction)",
    "p (Holm)": "p (W2) after Holm's correction over every metric and system",
    "dir.": "the metric's direction: higher or lower = more diverse",
    "pair acc": "share of same-context pairs ordered as their parameter values",
}
#: Below this many paired items a note says that the interval and the test are weak.
SMALL_SAMPLE = 10


def small_sample_note(n: int) -> str | None:
    """What a reader must know about a paired comparison on fewer than :data:`SMALL_SAMPLE`
    items (``None`` from there on): the Wilcoxon test cannot reach p < 0.05 below 6 items, and
    a percentile bootstrap interval of so few values is too narrow to be a test.

    Example:
        >>> small_sample_note(4)  # doctest: +ELLIPSIS
        'only 4 items: the smallest two-sided Wilcoxon p with 4 items is 0.125 (p < 0.05 needs ...'
        >>> small_sample_note(30) is None
        True
    """
    if n >= SMALL_SAMPLE or n < 1:
        return None
    return (f"only {n} items: the smallest two-sided Wilcoxon p with {n} items is "
            f"{2 / 2 ** n:.3g} (p < 0.05 needs 6 or more), and a bootstrap interval that "
            f"resamples {n} values is too narrow to trust: read the interval and d as "
            "descriptive, p (Holm) as the test")


def notes(result: ProtocolResult) -> list[str]:
    """The lines printed under a result's table: a note for paired comparisons on few items
    (:func:`small_sample_note`), then what the table's less obvious columns mean
    (:data:`GLOSSARY`).

    Example:
        >>> from divmeter.studies.meta.protocols import contest
        >>> notes(contest({"m": [0.1, 0.5, 0.2, 0.9]}, [0, 1, 0, 1]))[0][:60]
        'OCA: optimal classification accuracy (Tevet & Berant): the b'
    """
    out: list[str] = []
    if result.protocol in ("compare", "paired", "stages"):
        sizes = sorted({int(r.values["n"]) for r in result.results.values()
                        if isinstance(r.values.get("n"), int)})
        out += [n for n in (small_sample_note(k) for k in sizes) if n]
    headers = [h for _, h in columns_for(result)]
    out += [f"{h}: {GLOSSARY[h]}" for h in headers if h in GLOSSARY]
    return out


def format_value(v: Any) -> str:
    """Numbers to 3 decimals (p-values in scientific notation when small), lists as [a, b]."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != 0 and abs(v) < 1e-3:
            return f"{v:.1e}"
        return f"{v:.3f}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    return str(v)


def columns_for(result: ProtocolResult) -> list[tuple[str, str]]:
    """The protocol's columns that at least one row has (plus top-k keys for length bias)."""
    cols = list(COLUMNS.get(result.protocol, []))
    present = [c for c in cols if any(c[0] in r.values for r in result.results.values())]
    if result.protocol == "length-bias":
        extra: list[str] = []
        for r in result.results.values():
            extra += [k for k in r.values if k.startswith(("top", "random")) and k not in extra]
        present += [(k, k) for k in extra]
    return present


def _rows(result: ProtocolResult) -> tuple[list[str], list[list[str]]]:
    cols = columns_for(result)
    first = {"stages": "contrast", "pattr-sensitivity": "setting"}.get(result.protocol, "metric")
    header = [first] + [h for _, h in cols]
    rows = [[name] + [format_value(res.values.get(k)) for k, _ in cols]
            for name, res in result.results.items()]
    return header, rows


def metric_signatures(result: ProtocolResult) -> list[tuple[str, str]]:
    """``(row, text)`` per row whose numbers come from a metric with a signature: the metric's
    own signature (``details["metric_signature"]``), and for ``compare`` the baseline's where
    it differs (the two were scored with different settings).

    Example:
        >>> from divmeter.studies.meta.protocols import attach_metric_signatures, contest
        >>> r = contest({"m": [0.1, 0.5, 0.2, 0.9]}, [0, 1, 0, 1])
        >>> metric_signatures(attach_metric_signatures(r, {"m": "m|n:1|v:1"}))
        [('m', 'm|n:1|v:1')]
    """
    out = []
    for name, res in result.results.items():
        details = res.details or {}
        sig = details.get("metric_signature")
        base = details.get("baseline_metric_signature")
        if isinstance(sig, str):
            text = sig if not isinstance(base, str) else (
                f"{sig} (DIFFERS from the baseline's {base})")
            out.append((name, text))
        elif isinstance(base, str):
            out.append((name, f"none stored (the baseline's: {base})"))
    return out


def undefined_reasons(result: ProtocolResult) -> list[str]:
    """``"name: reason"`` for every null statistic of the result that says why (the
    ``details`` keys ``reason``, ``reason_*``, ``*_reason`` and the ``reasons`` mapping)."""
    out = []
    for name, res in result.results.items():
        details = res.details or {}
        for key, why in details.items():
            if key == "reasons" and isinstance(why, dict):
                out += [f"{name} ({k}): {v}" for k, v in why.items()]
            elif isinstance(why, str) and (key == "reason" or key.startswith("reason_")
                                           or key.endswith("_reason")):
                out.append(f"{name}: {why}")
    return out


def markdown_table(result: ProtocolResult, *, title: str | None = None) -> str:
    """A Markdown table (one row per metric), followed by the settings and signatures.

    Example:
        >>> from divmeter.studies.meta.protocols import contest
        >>> r = contest({"m": [0.1, 0.5, 0.2, 0.9]}, [0, 1, 0, 1])
        >>> print(markdown_table(r).splitlines()[2])
        | m | 0.894 | 1.000 | 1.000 | 1.000 | 4 | 0 |
    """
    from divmeter.report.terminal import md_cell, printable

    header, rows = _rows(result)
    lines = []
    if title:
        lines += [f"### {printable(title)}", ""]
    lines.append("| " + " | ".join(md_cell(h) for h in header) + " |")
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    settings = ", ".join(f"{k}: {format_value(v)}" for k, v in result.settings.items())
    lines += ["", f"Settings: {settings}", ""]
    lines += [f"- `{name}`: `{res.signature}`" for name, res in result.results.items()]
    metric_sigs = metric_signatures(result)
    if metric_sigs:
        lines += ["", "Metric signatures:", ""] + [f"- `{n}`: `{s}`" for n, s in metric_sigs]
    reasons = undefined_reasons(result)
    if reasons:
        lines += ["", "Undefined (null):", ""] + [f"- {r}" for r in reasons]
    said = notes(result)
    if said:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in said]
    if result.protocol == "stages" and "stages" in result.extra:
        lines += ["", "| stage | mean | std | n |", "|---|---|---|---|"]
        for s, v in result.extra["stages"].items():
            lines.append(f"| {md_cell(s)} | {format_value(v['mean'])} | "
                         f"{format_value(v['std'])} | {v['n']} |")
    return printable("\n".join(lines), lines=True) + "\n"


def rich_table(result: ProtocolResult, *, title: str | None = None, width: int = 80
               ) -> list[Any]:
    """Terminal renderables of the same rows: the table folded by whole columns to fit
    ``width`` (metric names and numbers never split), its settings, then one signature per
    line, whole (print them with :func:`divmeter.report.terminal.print_unbroken`)."""
    from divmeter.report.terminal import folded_tables

    header, rows = _rows(result)
    settings = ", ".join(f"{k}={format_value(v)}" for k, v in result.settings.items())
    out: list[Any] = folded_tables(header, rows, keys=1, width=width,
                                   title=title or result.protocol)
    out += [f"settings: {settings}", "signatures:"]
    out += [f"{name}: {res.signature}" for name, res in result.results.items()]
    metric_sigs = metric_signatures(result)
    if metric_sigs:
        out += ["metric signatures:"] + [f"{n}: {s}" for n, s in metric_sigs]
    reasons = undefined_reasons(result)
    if reasons:
        out += ["undefined (null):"] + [f"  {r}" for r in reasons]
    said = notes(result)
    if said:  # prose: wrapped at the terminal's width (the lines above are printed whole)
        from rich.text import Text

        out += ["notes:"] + [Text(f"  {n}") for n in said]
    return out
