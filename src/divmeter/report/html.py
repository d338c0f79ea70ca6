"""One self-contained HTML page: `divmeter report`, `score --html`, `meta ... --html`.

The page holds everything it shows (no request leaves it): CSS and a few lines of JavaScript
inline, plots as inline SVG (score reports: drawn here, no matplotlib) or base64 PNG (the
meta-evaluation plots of :func:`divmeter.report.write_report`). Sections:

* the run: sources, divmeter version, each metric's signature;
* the summary table: per metric its direction (↑ higher = more diverse), range, mean, std,
  median, min, max, count and nulls;
* with a numeric label (a decoding sweep): each metric's mean against the label with a
  bootstrap interval and Spearman's rho (:mod:`divmeter.report.panels`);
* per-metric distributions (strips per label side by side; a histogram without labels);
* the metric-metric Spearman heatmap over sets, oriented by each metric's direction;
* the texts: every set opens to its responses, sortable by a metric;
* for meta-evaluations: the protocol's table, settings, signatures and plots;
* the records themselves (sortable by clicking a header).

The layout is responsive: one column on a phone, tables scroll sideways inside their box.
"""

from __future__ import annotations

import base64
import html
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.lines import display_name, loads, read_text
from divmeter.inputs.data.paths import write_whole
from divmeter.report.panels import (
    TEXTS_JS,
    numeric_levels,
    strip_svg,
    texts_section,
    trend_note,
    trend_points,
    trend_svg,
)

__all__ = ["score_report", "meta_report", "report_from_files", "check_destination",
           "histogram_svg", "heatmap_svg", "spearman_matrix"]

_CSS = """
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d232a;
background:#f6f7f9}
header{background:#1f3b57;color:#fff;padding:16px 20px}
header h1{font-size:1.3em;margin:0 0 4px;overflow-wrap:anywhere}
header p{margin:0;opacity:.85;font-size:.9em;word-break:break-all}
main{max-width:1100px;margin:0 auto;padding:12px}
section{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:12px 14px;margin:12px 0}
h2{font-size:1.1em;margin:0 0 8px}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;font-size:.9em;min-width:100%}
th,td{padding:4px 8px;border-bottom:1px solid #eceff2;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
td.text,th.text{text-align:left}
th{background:#f0f2f5;position:sticky;top:0;cursor:pointer}
td.null{color:#9aa3ad}
code,.sig{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;word-break:break-all}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:12px}
.grid.wide{grid-template-columns:repeat(auto-fill,minmax(min(100%,440px),1fr))}
figure{margin:0}
figcaption{font-size:.85em;color:#4a5561;margin-top:2px}
svg,img{width:100%;height:auto;display:block}
.note{color:#4a5561;font-size:.88em;overflow-wrap:anywhere}
details.set{border-bottom:1px solid #eceff2;padding:4px 0}
details.set summary{cursor:pointer}
details.set .vals{color:#4a5561;font-size:.88em}
li.similar{background:#fff3cd}
@media (max-width:600px){body{font-size:14px}main{padding:6px}section{padding:10px}
header{padding:12px}}
"""

_JS = """
document.querySelectorAll('table.sortable th').forEach(function(th, i){
  th.addEventListener('click', function(){
    var body = th.closest('table').tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var up = th.dataset.dir !== 'up'; th.dataset.dir = up ? 'up' : 'down';
    rows.sort(function(a, b){
      var x = a.cells[i].dataset.v || a.cells[i].textContent;
      var y = b.cells[i].dataset.v || b.cells[i].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
      return up ? c : -c;
    });
    rows.forEach(function(r){ body.appendChild(r); });
  });
});
"""

_BLUE, _ORANGE = "#1f77b4", "#ff7f0e"


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def check_destination(path: str | os.PathLike[str]) -> None:
    """Fail before any work when the report cannot be written where asked."""
    p = Path(path)
    if p.suffix.lower() not in (".html", ".htm"):
        raise InvalidInputError(f"--html/-o must name an .html file; got {str(path)!r}.")
    if not p.parent.is_dir():
        raise InvalidInputError(f"report folder {str(p.parent)!r} does not exist.")


def _num(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "null"
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


# ------------------------------------------------------------------------------------ SVG


def histogram_svg(values: Sequence[float] | np.ndarray, *, groups: Sequence[Any] | None = None,
                  bins: int = 20, title: str = "") -> str:
    """An inline SVG histogram of ``values`` (NaN left out); by group when ``groups`` has two.

    Example:
        >>> svg = histogram_svg([0.1, 0.2, 0.2, 0.9], bins=4)
        >>> svg.count("<rect")  # bins [0.1, 0.3) and [0.7, 0.9] hold values
        2
    """
    v = np.asarray(values, dtype=float)
    keep = ~np.isnan(v)
    v = v[keep]
    w, h, pad, bottom = 320, 170, 30, 24
    if v.size == 0:
        return (f'<svg viewBox="0 0 {w} {h}" role="img" aria-label="{_e(title)}: no values">'
                f'<text x="{w / 2}" y="{h / 2}" text-anchor="middle" fill="#777">no values'
                "</text></svg>")
    lo, hi = float(v.min()), float(v.max())
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, bins + 1)
    sets: list[tuple[str, np.ndarray, str]] = []
    g = None if groups is None else np.asarray([str(x) for x in groups], dtype=object)[keep]
    kinds = sorted(set(g)) if g is not None else []
    if g is not None and 2 <= len(kinds) <= 3:
        colors = [_BLUE, _ORANGE, "#2ca02c"]
        sets = [(k, v[g == k], colors[i]) for i, k in enumerate(kinds)]
    else:
        sets = [("all", v, _BLUE)]
    counts = [np.histogram(x, bins=edges)[0] for _, x, _ in sets]
    top = max(1, max(int(c.max()) for c in counts))
    plot_w, plot_h = w - 2 * pad, h - pad - bottom
    bw = plot_w / bins
    parts = [f'<svg viewBox="0 0 {w} {h}" role="img" aria-label="{_e(title)} histogram">',
             f'<line x1="{pad}" y1="{h - bottom}" x2="{w - pad}" y2="{h - bottom}" '
             'stroke="#888"/>']
    for (_, _, color), c in zip(sets, counts, strict=True):
        for i, n in enumerate(c):
            if n == 0:
                continue
            bh = plot_h * n / top
            parts.append(f'<rect x="{pad + i * bw:.1f}" y="{h - bottom - bh:.1f}" '
                         f'width="{max(bw - 1, 1):.1f}" height="{bh:.1f}" fill="{color}" '
                         f'fill-opacity="{0.55 if len(sets) > 1 else 0.85}"><title>'
                         f'{edges[i]:.4g}..{edges[i + 1]:.4g}: {n}</title></rect>')
    parts.append(f'<text x="{pad}" y="{h - 6}" font-size="11" fill="#444">{lo:.4g}</text>')
    parts.append(f'<text x="{w - pad}" y="{h - 6}" font-size="11" fill="#444" '
                 f'text-anchor="end">{hi:.4g}</text>')
    parts.append(f'<text x="{pad}" y="16" font-size="11" fill="#444">max count {top}</text>')
    if len(sets) > 1:
        x = w - pad
        for k, _, color in reversed(sets):
            parts.append(f'<text x="{x}" y="16" font-size="11" fill="{color}" '
                         f'text-anchor="end">label {_e(k)}</text>')
            x -= 70
    parts.append("</svg>")
    return "".join(parts)


def spearman_matrix(columns: Mapping[str, Sequence[float] | np.ndarray]) -> np.ndarray:
    """Spearman's ρ between every two columns over the rows where both have a value.

    NaN where fewer than 3 such rows or a column is constant there.

    Example:
        >>> spearman_matrix({"a": [1, 2, 3, 4], "b": [2, 4, 6, 9], "c": [4, 3, 2, 1]}).round(3)
        array([[ 1.,  1., -1.],
               [ 1.,  1., -1.],
               [-1., -1.,  1.]])
    """
    from scipy.stats import rankdata

    names = list(columns)
    arrs = [np.asarray(columns[n], dtype=float) for n in names]
    m = np.full((len(names), len(names)), np.nan)
    for i in range(len(names)):
        for j in range(i, len(names)):
            ok = ~np.isnan(arrs[i]) & ~np.isnan(arrs[j])
            if ok.sum() < 3:
                continue
            a, b = rankdata(arrs[i][ok]), rankdata(arrs[j][ok])
            if a.std() == 0 or b.std() == 0:
                continue
            m[i, j] = m[j, i] = float(np.corrcoef(a, b)[0, 1])
    return m


def heatmap_svg(names: Sequence[str], matrix: np.ndarray,
                signs: Sequence[int] | None = None) -> str:
    """An inline SVG heatmap of a correlation matrix in [-1, 1] with the value in each cell.

    With ``signs`` (+1 for a metric whose higher value means more diverse, -1 for lower), each
    cell shows the *agreement* ρ · s_i · s_j: blue where two metrics agree on which sets are
    more diverse, whatever their directions; the raw ρ is in the cell's tooltip. Names are
    shown whole.
    """
    n = len(names)
    s = np.ones(n) if signs is None else np.asarray(signs, dtype=float)
    shown = matrix * np.outer(s, s)
    longest = max([len(x) for x in names] + [4])
    cell, left = 46, round(longest * 6.6 + 10)
    top = round(longest * 6.6 * 0.71 + 12)  # the column labels are turned 45 degrees
    w, h = left + n * cell + top + 8, top + n * cell + 4  # room for the last turned label
    what = "agreement (ρ oriented by direction)" if signs is not None else "Spearman ρ"
    parts = [f'<svg viewBox="0 0 {w} {h}" role="img" aria-label="{what} heatmap" '
             f'class="heatmap" style="max-width:{w}px">']
    for i, name in enumerate(names):
        y = top + i * cell + cell / 2 + 4
        parts.append(f'<text x="{left - 6}" y="{y:.1f}" font-size="11" text-anchor="end">'
                     f"{_e(name)}</text>")
        x = left + i * cell + cell / 2
        parts.append(f'<text x="{x:.1f}" y="{top - 6}" font-size="11" '
                     f'transform="rotate(-45 {x:.1f} {top - 6})">{_e(name)}</text>')
        for j in range(n):
            r, a = matrix[i, j], shown[i, j]
            if np.isnan(r):
                fill, txt, tip = "#eee", "–", "undefined"
            else:
                t = abs(float(a))
                base = (31, 119, 180) if a >= 0 else (214, 39, 40)
                rgb = tuple(round(255 - (255 - c) * t) for c in base)
                fill, txt = f"rgb{rgb}", f"{a:.2f}"
                tip = f"raw Spearman ρ {r:.3f}" + (f", agreement {a:.3f}" if signs is not None
                                                    else "")
            parts.append(f'<rect x="{left + j * cell}" y="{top + i * cell}" width="{cell - 2}" '
                         f'height="{cell - 2}" fill="{fill}"><title>{_e(names[i])} vs '
                         f'{_e(names[j])}: {tip}</title></rect>')
            color = "#fff" if not np.isnan(r) and abs(a) > 0.6 else "#222"
            parts.append(f'<text x="{left + j * cell + cell / 2 - 1}" '
                         f'y="{top + i * cell + cell / 2 + 3}" font-size="11" '
                         f'text-anchor="middle" fill="{color}">{txt}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------------------------ page


def _page(title: str, subtitle: str, sections: Sequence[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
            f"<header><h1>{_e(title)}</h1><p>{subtitle}</p></header><main>"
            + "".join(sections) + f"</main><script>{_JS}{TEXTS_JS}</script></body></html>\n")


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, text_cols: int = 1,
           sortable: bool = False, cls: str = "") -> str:
    klass = " ".join(x for x in ("sortable" if sortable else "", cls) if x)
    out = ['<div class="scroll"><table' + (f' class="{klass}"' if klass else "") + "><thead><tr>"]
    out += [("<th class=\"text\">" if i < text_cols else "<th>") + f"{_e(h)}</th>"
            for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>")
        for i, c in enumerate(r):
            shown = _num(c)
            attrs = ' class="text"' if i < text_cols else (' class="null"' if shown == "null"
                                                           else "")
            out.append(f"<td{attrs}>{_e(shown)}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _metric_columns(records: Sequence[Mapping[str, Any]]) -> list[str]:
    from divmeter.engine.batch import RECORD_KEYS

    keys: list[str] = []
    for r in records:
        for k, v in r.items():
            if k in RECORD_KEYS or k in keys:
                continue
            if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)):
                keys.append(k)
    # a key with a non-number anywhere is metadata, not a metric; so is a number whose name is
    # neither a registered metric's column (``self-bleu:n=3``) nor a precomputed ``metric_*``
    from divmeter.engine.registry import list_metrics

    names = {s.name for s in list_metrics()}
    return [k for k in keys
            if (k.split(":", 1)[0] in names or k.startswith("metric_"))
            and all(r.get(k) is None or (isinstance(r.get(k), (int, float))
                                         and not isinstance(r.get(k), bool)) for r in records)]


def _score_sections(records: Sequence[Mapping[str, Any]], columns: Sequence[str],
                    signatures: Mapping[str, str],
                    texts: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    from divmeter.report.scores import metric_facts, null_reasons

    data = {c: np.asarray([np.nan if r.get(c) is None else float(r[c]) for r in records])
            for c in columns}
    labels = [r.get("label") for r in records]
    has_label = any(x is not None for x in labels)
    rows = []
    for c in columns:
        v = data[c][~np.isnan(data[c])]
        arrow, rng = metric_facts(c)
        direction = {"↑": "↑ higher", "↓": "↓ lower"}.get(arrow, "?")
        stats = ([float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else None,
                  float(np.median(v)), float(v.min()), float(v.max())] if v.size
                 else [None] * 5)
        rows.append([c, direction, rng or "?", *stats, int(v.size), int(len(records) - v.size)])
    out = ['<section id="summary"><h2>Summary</h2>',
           _table(["metric", "more diverse", "range", "mean", "std", "median", "min", "max",
                   "count", "nulls"], rows, text_cols=3, cls="summary"),
           f'<p class="note">{len(records)} sets. ↑: a higher value means more diverse; ↓: a '
           "lower one does.</p>"]
    reasons = null_reasons(records)
    if reasons:
        out.append('<p class="note">null values: ' + "; ".join(
            _e(f"{k} (x{n})") for k, n in reasons.items()) + "</p>")
    out.append("</section>")
    out.append('<section id="signatures"><h2>Signatures</h2><ul>')
    for c in columns:
        sig = signatures.get(c)
        out.append(f"<li><b>{_e(c)}</b>: <span class=\"sig\">"
                   + (_e(sig) if sig else "not stored in the file (scored with --no-signatures?)")
                   + "</span></li>")
    out.append("</ul></section>")
    out.append(evidence_section(columns))
    levels = numeric_levels(labels) if has_label else None
    xlabel = next((str(r["label_name"]) for r in records if r.get("label_name")), "label")
    if levels is not None:
        out.append('<section id="trend"><h2>Trend against the label</h2><p class="note">Each '
                   "metric's mean per label value with a 95% bootstrap interval of the mean "
                   "(seeded); Spearman's ρ of metric and label over sets in each title.</p>"
                   '<div class="grid">')
        for c in columns:
            pts = trend_points(data[c], levels)
            svg = trend_svg(pts, title=c, arrow=metric_facts(c)[0], xlabel=xlabel)
            out.append(f"<figure>{svg}</figure>")
        out.append("</div></section>")
    elif has_label and trend_note(labels):
        out.append(f'<section id="trend"><p class="note">{_e(trend_note(labels) or "")}</p>'
                   "</section>")
    out.append('<section id="distributions"><h2>Distributions</h2>'
               + ('<p class="note">By label, side by side: one dot per set, the bar is the '
                  "median, n under each column counts the sets.</p>" if has_label else "")
               + '<div class="grid">')
    for c in columns:
        svg = (strip_svg(data[c], labels, title=c) if has_label
               else histogram_svg(data[c], title=c))
        out.append(f"<figure>{svg}<figcaption>{_e(c)}</figcaption></figure>")
    out.append("</div></section>")
    if len(columns) >= 2:
        m = spearman_matrix(data)
        signs = [-1 if metric_facts(c)[0] == "↓" else 1 for c in columns]
        out.append('<section id="correlations"><h2>Do the metrics agree? (Spearman ρ over '
                   "sets, oriented so that + means both call the same sets more diverse)</h2>"
                   f"{heatmap_svg(list(columns), m, signs)}<p class=\"note\">Hover a cell for "
                   "the raw ρ: a lower-is-diverse metric (↓) correlates negatively with the "
                   "others when they agree.</p></section>")
    out.append(texts_section(records, texts or {}, columns))
    keys = ["row", "set_id"] + (["label"] if has_label else [])
    meta = [k for k in (records[0] if records else {}) if k not in keys and k not in columns
            and k not in ("reasons", "per_response", "signatures")]
    head = keys + meta + list(columns)
    shown = records[:500]
    body = [[r.get(k) for k in head] for r in shown]
    more = (f'<p class="note">first 500 of {len(records)} sets.</p>'
            if len(records) > 500 else "")
    out.append('<section id="records"><h2>Sets</h2>'
               + _table(head, body, text_cols=2, sortable=True, cls="records") + more
               + "</section>")
    return out


def evidence_section(columns: Sequence[str]) -> str:
    """What the benchmarks say about the metric behind each column (divmeter's evidence
    table: conTest, decTest, McDiv_nuggets), one line per metric; empty when no column is a
    registered metric."""
    from divmeter.report.evidence import column_evidence, provenance
    from divmeter.studies.reproduce.evidence import load_evidence

    lines = [(c, column_evidence(c)) for c in columns]
    lines = [(c, s) for c, s in lines if s]
    if not lines:
        return ""
    return ('<section id="evidence"><h2>What the benchmarks say</h2><ul>'
            + "".join(f"<li><b>{_e(c)}</b>: {_e(s)}</li>" for c, s in lines)
            + '</ul><p class="note">conTest OCA, decTest ρ with temperature and '
            "McDiv_nuggets OCA on prompt/resp/story, with the metric's rank by their mean; "
            "details: divmeter list NAME; ranking: divmeter list --evidence. "
            f"{_e(provenance(load_evidence()))}</p></section>")


def _subtitle(sources: Sequence[str]) -> str:
    from divmeter.core._version import __version__

    return _e(f"divmeter {__version__} · " + ", ".join(sources))


def score_report(results: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *,
                 records: Sequence[Mapping[str, Any]] | None = None,
                 columns: Sequence[str] | None = None,
                 signatures: Mapping[str, str] | None = None,
                 title: str = "divmeter report",
                 texts: Mapping[str, Sequence[str]] | None = None) -> Path:
    """Write the HTML report of ``divmeter score`` results.

    Args:
        results: Score outputs (JSONL, JSON, CSV, Parquet); their records are concatenated.
            Ignored when ``records`` is given (then they only name the source).
        out: The ``.html`` file to write.
        records: Records already in memory (``divmeter score --html`` without ``-o``).
        columns: The metric columns (default: every numeric field but ``row`` and ``label``).
        signatures: ``{column: signature}`` (default: from the records' ``signatures`` or a
            JSON output's ``summary``).
        title: The page title.
        texts: ``{set_id: responses}`` for the text viewer (none: no viewer).

    Returns:
        The written path.
    """
    check_destination(out)
    sigs = dict(signatures or {})
    if records is None:
        from divmeter.inputs.data import read_records
        from divmeter.inputs.data.signatures import read_signatures

        recs: list[dict[str, Any]] = []
        for src in results:
            got = list(read_records(src))
            recs.extend(got)
            for c, s in read_signatures(src, got).items():  # the file's own
                sigs.setdefault(c, s)
        records = recs
    for r in records:
        for c, s in (r.get("signatures") or {}).items():
            sigs.setdefault(c, s)
    if not records:
        raise InvalidInputError("no records to report: the results are empty.")
    cols = list(columns) if columns is not None else _metric_columns(records)
    page = _page(title, _subtitle([os.fspath(s) for s in results]),
                 _score_sections(records, cols, sigs, texts))
    p = Path(out)
    write_whole(p, page)  # whole, and never over a file the command read
    return p


def _png(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{_e(path.stem)}" src="data:image/png;base64,{data}">'


def meta_sections(result: Any, *, source: str, xlabel: str = "parameter",
                  plots: bool = True) -> list[str]:
    """The sections of a meta-evaluation: its table, settings, signatures and plots."""
    from divmeter.report.tables import _rows, notes
    from divmeter.report.writer import write_report

    header, rows = _rows(result)
    out = [f'<section id="meta"><h2>{_e(result.protocol)}: {_e(source)}</h2>',
           _table(header, rows, text_cols=1, cls="meta"),
           '<p class="note">settings: ' + _e(", ".join(f"{k}={v}" for k, v in
                                                       result.settings.items())) + "</p>",
           "<ul>"]
    out += _signature_items((n, r.signature) for n, r in result.results.items())
    out.append("</ul>")
    out += [f'<p class="note">{_e(n)}</p>' for n in notes(result)]
    from divmeter.report.tables import metric_signatures

    out += _metric_signatures_end(metric_signatures(result))
    names = []  # the metric behind each row (compare: "<metric>: <system>" with several)
    for n, r in result.results.items():
        system = f": {r.values.get('system')}" if result.protocol == "compare" else ""
        names.append(n.removesuffix(system) if system and n.endswith(system) else n)
    out.append(evidence_section(list(dict.fromkeys(names))))
    if plots:
        with tempfile.TemporaryDirectory() as tmp:
            files = [f for f in write_report(result, tmp, source=source, plot=True,
                                             xlabel=xlabel) if f.suffix == ".png"]
            if files:
                out.append('<section id="plots"><h2>Plots</h2><div class="grid wide">')
                out += [f"<figure>{_png(f)}<figcaption>{_e(f.stem)}</figcaption></figure>"
                        for f in files]
                out.append("</div></section>")
    return out


def meta_report(result: Any, out: str | os.PathLike[str], *, source: str,
                xlabel: str = "parameter", plots: bool = True) -> Path:
    """Write the HTML report of a meta-evaluation (``divmeter meta ... --html``).

    Plots are the PNGs ``--report`` writes, embedded as base64 (needs matplotlib; without it
    the page has the tables only).
    """
    check_destination(out)
    from divmeter.core.errors import MissingDependencyError

    try:
        sections = meta_sections(result, source=source, xlabel=xlabel, plots=plots)
    except MissingDependencyError:
        sections = meta_sections(result, source=source, xlabel=xlabel, plots=False)
    command = "compare" if result.protocol == "compare" else f"meta {result.protocol}"
    page = _page(f"divmeter {command}", _subtitle([source]), sections)
    p = Path(out)
    write_whole(p, page)  # whole, and never over a file the command read
    return p


def report_from_files(results: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str],
                      *, title: str = "divmeter report") -> Path:
    """``divmeter report``: score outputs and meta ``report.json`` files in one page.

    A ``report.json`` (written by ``meta ... --report``) adds its table and signatures; every
    other file is read as score records.
    """

    check_destination(out)
    score_files: list[str] = []
    meta_parts: list[str] = []
    for src in results:
        path = os.fspath(src)
        if not os.path.exists(path):
            raise FileNotFoundError(2, "No such file or directory", path)
        if path.endswith(".json"):
            try:
                doc = loads(read_text(path, "a JSON file"), display_name(path))
            except ValueError:
                doc = None
            if isinstance(doc, dict) and "protocol" in doc and "results" in doc:
                meta_parts += _meta_json_section(doc, path)
                continue
        score_files.append(path)
    sections: list[str] = []
    sigs: dict[str, str] = {}
    if score_files:
        from divmeter.inputs.data import read_records
        from divmeter.inputs.data.signatures import read_signatures

        records: list[dict[str, Any]] = []
        for f in score_files:
            got = list(read_records(f))
            records.extend(got)
            for c, s in read_signatures(f, got).items():  # the file's own, never recomputed
                sigs.setdefault(c, s)
        if records:
            sections += _score_sections(records, _metric_columns(records), sigs)
    sections += meta_parts
    if not sections:
        raise InvalidInputError("no records to report: the results are empty.")
    page = _page(title, _subtitle([os.fspath(s) for s in results]), sections)
    p = Path(out)
    write_whole(p, page)  # whole, and never over a file the command read
    return p


def _meta_json_section(doc: Mapping[str, Any], path: str) -> list[str]:
    results = doc["results"]
    keys: list[str] = []
    settings = set(doc.get("settings") or {})
    for row in results.values():
        for k, v in row.items():
            if k in ("signature", "details") or k in settings or k in keys:
                continue
            if v is None or isinstance(v, (int, float, list)):
                keys.append(k)
    rows = [[name] + [row.get(k) for k in keys] for name, row in results.items()]
    out = [f'<section class="meta"><h2>{_e(doc["protocol"])}: {_e(path)}</h2>',
           _table(["metric"] + keys, [[_num_or_list(c) for c in r] for r in rows]),
           '<p class="note">settings: ' + _e(", ".join(
               f"{k}={v}" for k, v in (doc.get("settings") or {}).items())) + "</p><ul>"]
    out += _signature_items((n, r.get("signature", "")) for n, r in results.items())
    metric_sigs = [(n, (r.get("details") or {}).get("metric_signature")) for n, r in
                   results.items() if isinstance(r, Mapping)]
    out.append("</ul>")
    return out + _metric_signatures_end([(n, s) for n, s in metric_sigs if isinstance(s, str)])


def _signature_items(signatures: Iterable[tuple[str, str]]) -> list[str]:
    """One ``<li>`` per (name, signature)."""
    return [f"<li><b>{_e(n)}</b>: <span class=\"sig\">{_e(s)}</span></li>" for n, s in signatures]


def _metric_signatures_end(metric_sigs: Sequence[tuple[str, str]]) -> list[str]:
    """The end of a meta-evaluation's section: the signatures of the metrics it scored (none,
    no list)."""
    out = []
    if metric_sigs:
        out.append('<h3>Metric signatures</h3><ul class="metric-signatures">')
        out += _signature_items(metric_sigs)
        out.append("</ul>")
    out.append("</section>")
    return out


def _num_or_list(v: Any) -> Any:
    if isinstance(v, list):
        return "[" + ", ".join(_num(x) for x in v) + "]"
    return v


def markdown_html(text: str) -> str:
    """The Markdown this package writes (``#`` headings, ``|`` tables, ``-`` items, paragraphs)
    as HTML; enough for its own reports, not a general Markdown renderer.

    Example:
        >>> markdown_html("### T\\n\\n| a | b |\\n|---|---|\\n| 1 | 2 |\\n")
        '<h3>T</h3><div class="scroll"><table><thead><tr><th class="text">a</th><th>b</th></tr></thead><tbody><tr><td class="text">1</td><td>2</td></tr></tbody></table></div>'
    """  # noqa: E501
    out: list[str] = []
    table: list[list[str]] = []
    items: list[str] = []

    def flush() -> None:
        if table:
            rows = [r for r in table if not all(set(c) <= set("-: ") for c in r)]
            out.append(_table(rows[0], rows[1:]))
            table.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in text.splitlines():
        s = line.strip()
        if s.startswith("|"):
            if items:
                flush()
            table.append([c.strip() for c in s.strip("|").split("|")])
            continue
        if s.startswith("- "):
            if table:
                flush()
            items.append(s[2:].replace("`", ""))
            continue
        flush()
        if s.startswith("#"):
            level = min(len(s) - len(s.lstrip("#")), 4)
            out.append(f"<h{level}>{_e(s.lstrip('#').strip())}</h{level}>")
        elif s:
            out.append(f"<p>{_e(s.replace('`', ''))}</p>")
    flush()
    return "".join(out)


def text_report(markdown: str, out: str | os.PathLike[str], *, title: str, source: str) -> Path:
    """Write a Markdown report (e.g. ``meta decan-confound``'s tables) as one HTML page."""
    check_destination(out)
    page = _page(title, _subtitle([source]), [f"<section>{markdown_html(markdown)}</section>"])
    p = Path(out)
    write_whole(p, page)  # whole, and never over a file the command read
    return p
