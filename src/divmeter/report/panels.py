"""Panels of the score report that a reader acts on: the trend of each metric against a numeric
label (a decoding sweep), per-label distributions side by side, and the texts themselves.

Each function returns inline SVG or HTML (no request leaves the page); the numbers come from
numpy and scipy, seeded, so a report is reproducible.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

__all__ = ["numeric_levels", "trend_note", "trend_points", "trend_svg", "strip_svg",
           "most_similar_pair", "texts_section", "TREND_RESAMPLES"]

#: Bootstrap resamples of each label's mean in the trend panel (percentile 95% interval).
TREND_RESAMPLES = 2000
_BLUE, _ORANGE, _GREY = "#1f77b4", "#ff7f0e", "#6b7580"
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def numeric_levels(labels: Sequence[Any]) -> np.ndarray | None:
    """The labels as floats when every present label is a number and there are at least three
    distinct ones (a sweep: temperature, top-p, stage index); else ``None``.

    Example:
        >>> numeric_levels([0.2, 0.7, 1.2, 0.2]).tolist()
        [0.2, 0.7, 1.2, 0.2]
        >>> numeric_levels([0, 1, 0]) is None
        True
    """
    vals = []
    for x in labels:
        if x is None:
            vals.append(math.nan)
        elif isinstance(x, bool) or not isinstance(x, (int, float)):
            return None
        else:
            vals.append(float(x))
    arr = np.asarray(vals, dtype=float)
    return arr if len(np.unique(arr[~np.isnan(arr)])) >= 3 else None


def trend_note(labels: Sequence[Any]) -> str | None:
    """Why a report has no trend panel, when its labels are numbers with fewer than three
    distinct values (a two-temperature sweep): said instead of leaving the panel out without a
    word; ``None`` otherwise (no label, text labels, or a trend drawn).

    Example:
        >>> trend_note([0.3, 1.0, 0.3, 1.0])  # doctest: +ELLIPSIS
        'No trend panel: the label takes 2 values (0.3, 1); a trend needs 3 or more ...'
        >>> trend_note([0.2, 0.7, 1.2]) is None
        True
    """
    present = [x for x in labels if x is not None]
    if not present or any(isinstance(x, bool) or not isinstance(x, (int, float))
                          for x in present):
        return None
    values = sorted({float(x) for x in present if not math.isnan(float(x))})
    if len(values) >= 3:
        return None
    shown = ", ".join(_fmt(v) for v in values)
    what = f"{len(values)} value{'s' if len(values) != 1 else ''}"
    return (f"No trend panel: the label takes {what} ({shown}); a trend needs 3 or more "
            "(e.g. three temperatures). The distributions below show each label side by side; "
            "`divmeter compare SCORES --by label --key prompt` tests the difference on the same "
            "prompts.")


def trend_points(values: np.ndarray, levels: np.ndarray, *, resamples: int = TREND_RESAMPLES,
                 seed: int = 0) -> dict[str, Any]:
    """Per label level: the mean of the metric, a percentile bootstrap 95% interval of that mean
    (``resamples`` draws, seeded) and the count; Spearman's rho of metric and label over sets.

    Example:
        >>> t = trend_points(np.array([1., 2, 2, 3, 4, 4]), np.array([0., 0, 1, 1, 2, 2]))
        >>> t["levels"], t["means"], round(t["rho"], 3)
        ([0.0, 1.0, 2.0], [1.5, 2.5, 4.0], 0.923)
    """
    from scipy.stats import spearmanr

    ok = ~np.isnan(values) & ~np.isnan(levels)
    v, lv = values[ok], levels[ok]
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"levels": [], "means": [], "low": [], "high": [], "n": []}
    for level in np.unique(lv):
        x = v[lv == level]
        out["levels"].append(float(level))
        out["means"].append(float(x.mean()))
        out["n"].append(int(x.size))
        if x.size >= 2:
            draws = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
            lo, hi = np.percentile(draws, [2.5, 97.5])
        else:
            lo = hi = float(x.mean())
        out["low"].append(float(lo))
        out["high"].append(float(hi))
    rho = float("nan")
    if v.size >= 3 and np.ptp(v) > 0 and np.ptp(lv) > 0:
        rho = float(spearmanr(v, lv).statistic)
    out["rho"] = rho
    return out


def trend_svg(points: Mapping[str, Any], *, title: str, xlabel: str = "label",
              arrow: str = "") -> str:
    """Mean +- 95% bootstrap interval per label level, joined by a line; rho in the title."""
    w, h, left, right, top, bottom = 360, 220, 58, 12, 40, 34
    xs, ms = np.asarray(points["levels"]), np.asarray(points["means"])
    lo, hi = np.asarray(points["low"]), np.asarray(points["high"])
    if xs.size == 0:
        return ""
    x0, x1 = float(xs.min()), float(xs.max())
    y0, y1 = float(lo.min()), float(hi.max())
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    pad = (y1 - y0) * 0.08
    y0, y1 = y0 - pad, y1 + pad

    def sx(x: float) -> float:
        return left + (w - left - right) * ((x - x0) / (x1 - x0) if x1 > x0 else 0.5)

    def sy(y: float) -> float:
        return top + (h - top - bottom) * (1 - (y - y0) / (y1 - y0))

    rho = points["rho"]
    name = f"{title} {arrow}".strip()
    stat = f"Spearman ρ = {rho:.3f}" if not math.isnan(rho) else "Spearman ρ undefined"
    parts = [f'<svg viewBox="0 0 {w} {h}" role="img" class="trend" '
             f'aria-label="{_e(name)}: {_e(stat)}">',
             f'<text x="4" y="15" font-size="13" font-weight="600">{_e(name)}</text>',
             f'<text x="4" y="31" font-size="12" fill="#333" class="rho">{_e(stat)}</text>',
             f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" '
             'stroke="#888"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#888"/>']
    for y in (y0 + pad, (y0 + y1) / 2, y1 - pad):
        parts.append(f'<text x="{left - 4}" y="{sy(y) + 4:.1f}" font-size="12" '
                     f'text-anchor="end" fill="#333">{_fmt(y)}</text>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(m):.1f}"
                    for i, (x, m) in enumerate(zip(xs, ms, strict=True)))
    parts.append(f'<path d="{path}" fill="none" stroke="{_BLUE}" stroke-width="2"/>')
    for x, m, a, b, n in zip(xs, ms, lo, hi, points["n"], strict=True):
        parts.append(f'<line x1="{sx(x):.1f}" y1="{sy(a):.1f}" x2="{sx(x):.1f}" '
                     f'y2="{sy(b):.1f}" stroke="{_BLUE}" stroke-width="1.5"/>')
        parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(m):.1f}" r="4" fill="{_BLUE}">'
                     f"<title>{_e(xlabel)} {_fmt(x)}: mean {_fmt(m)} "
                     f"[{_fmt(a)}, {_fmt(b)}], n={n}</title></circle>")
        parts.append(f'<text x="{sx(x):.1f}" y="{h - bottom + 15}" font-size="12" '
                     f'text-anchor="middle" fill="#333">{_fmt(x)}</text>')
    parts.append(f'<text x="{(left + w - right) / 2}" y="{h - 4}" font-size="12" '
                 f'text-anchor="middle" fill="#333">{_e(xlabel)}</text></svg>')
    return "".join(parts)


def strip_svg(values: np.ndarray, groups: Sequence[Any] | None, *, title: str) -> str:
    """Each group's values as a column of dots side by side (never overlaid), its median as a
    bar and its count under it; one column when there are no groups."""
    v = np.asarray(values, dtype=float)
    g = ["all"] * len(v) if groups is None else ["–" if x is None else str(x) for x in groups]
    keep = ~np.isnan(v)
    names = sorted({g[i] for i in range(len(v)) if keep[i]}, key=_natural)
    w, h, left, top, bottom = 360, 190, 48, 10, 40
    if not names:
        return (f'<svg viewBox="0 0 {w} {h}" role="img" aria-label="{_e(title)}: no values">'
                f'<text x="{w / 2}" y="{h / 2}" text-anchor="middle" fill="#777">no values'
                "</text></svg>")
    lo, hi = float(v[keep].min()), float(v[keep].max())
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    span = (w - left - 8) / len(names)

    def sy(y: float) -> float:
        return top + (h - top - bottom) * (1 - (y - lo) / (hi - lo))

    rng = np.random.default_rng(0)  # a fixed jitter: the same page for the same data
    parts = [f'<svg viewBox="0 0 {w} {h}" role="img" class="strip" '
             f'aria-label="{_e(title)} by label">',
             f'<text x="{left - 4}" y="{sy(hi) + 4:.1f}" font-size="12" text-anchor="end">'
             f"{_fmt(hi)}</text>",
             f'<text x="{left - 4}" y="{sy(lo) + 4:.1f}" font-size="12" text-anchor="end">'
             f"{_fmt(lo)}</text>",
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#888"/>']
    for k, name in enumerate(names):
        x = v[keep & np.array([gi == name for gi in g])]
        cx = left + span * (k + 0.5)
        color = _PALETTE[k % len(_PALETTE)]
        jitter = rng.uniform(-span * 0.28, span * 0.28, size=x.size)
        for xv, dx in zip(x, jitter, strict=True):
            parts.append(f'<circle cx="{cx + dx:.1f}" cy="{sy(xv):.1f}" r="3" fill="{color}" '
                         f'fill-opacity="0.6"><title>{_e(name)}: {_fmt(xv)}</title></circle>')
        med = float(np.median(x))
        parts.append(f'<line x1="{cx - span * 0.36:.1f}" x2="{cx + span * 0.36:.1f}" '
                     f'y1="{sy(med):.1f}" y2="{sy(med):.1f}" stroke="#222" stroke-width="2">'
                     f"<title>median {_fmt(med)}</title></line>")
        label = name if groups is not None else ""
        parts.append(f'<text x="{cx:.1f}" y="{h - bottom + 15}" font-size="12" '
                     f'text-anchor="middle">{_e(label)}</text>')
        parts.append(f'<text x="{cx:.1f}" y="{h - bottom + 30}" font-size="11" fill="{_GREY}" '
                     f'text-anchor="middle" class="count">n={x.size}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _natural(text: str) -> tuple[int, float, str]:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def most_similar_pair(responses: Sequence[str]) -> tuple[int, int, float] | None:
    """The two responses whose word sets overlap most (Jaccard of lowercased whitespace words),
    and that overlap; ``None`` with fewer than two non-blank responses.

    Example:
        >>> most_similar_pair(["a b c", "x y", "a b d"])
        (0, 2, 0.5)
    """
    words = [set(r.lower().split()) for r in responses]
    best: tuple[int, int, float] | None = None
    for i, j in combinations(range(len(words)), 2):
        if not words[i] or not words[j]:
            continue
        jac = len(words[i] & words[j]) / len(words[i] | words[j])
        if best is None or jac > best[2]:
            best = (i, j, jac)
    return best


def texts_section(records: Sequence[Mapping[str, Any]], texts: Mapping[str, Sequence[str]],
                  columns: Sequence[str], *, limit: int = 500) -> str:
    """Every set expandable to its responses, sortable by any metric, with the most similar
    pair (word overlap) highlighted."""
    if not texts:
        return ""
    opts = "".join(f'<option value="{i}">{_e(c)}</option>' for i, c in enumerate(columns))
    out = ['<section id="texts"><h2>Texts</h2>',
           '<p class="note">Each set opens to its responses; the most similar pair by word '
           'overlap (Jaccard of lowercased words) is marked ◆. Sort by '
           f'<select id="text-sort"><option value="">file order</option>{opts}</select> '
           '<button type="button" id="text-dir" data-dir="down">highest first</button></p>',
           '<div id="text-list">']
    for pos, r in enumerate(records[:limit]):
        sid = str(r.get("set_id"))
        responses = list(texts.get(sid, ()))
        pair = most_similar_pair(responses)
        vals = [r.get(c) for c in columns]
        data = " ".join(f'data-m{i}="{"" if v is None else float(v)}"'
                        for i, v in enumerate(vals))
        shown = ", ".join(f"{c} {'null' if v is None else f'{float(v):.4f}'}"
                          for c, v in zip(columns, vals, strict=True))
        label = f" · label {_e(r.get('label'))}" if r.get("label") is not None else ""
        out.append(f'<details class="set" data-pos="{pos}" {data}><summary><b>{_e(sid)}</b>'
                   f'{label} · <span class="vals">{_e(shown)}</span></summary><ol>')
        for i, text in enumerate(responses):
            mark = pair is not None and i in pair[:2]
            cls = ' class="similar"' if mark else ""
            out.append(f"<li{cls}>{'◆ ' if mark else ''}{_e(text) or '<i>(blank)</i>'}</li>")
        out.append("</ol>")
        if pair is not None:
            out.append(f'<p class="note">most similar pair: responses {pair[0] + 1} and '
                       f"{pair[1] + 1} (word overlap {pair[2]:.2f})</p>")
        out.append("</details>")
    out.append("</div>")
    if len(records) > limit:
        out.append(f'<p class="note">first {limit} of {len(records)} sets.</p>')
    out.append("</section>")
    return "".join(out)


#: Sorting the text viewer by a metric (a small script of its own, inlined in the page).
TEXTS_JS = """
(function(){
  var sel = document.getElementById('text-sort'), btn = document.getElementById('text-dir');
  if (!sel) return;
  function sort(){
    var list = document.getElementById('text-list');
    var items = Array.prototype.slice.call(list.children);
    var k = sel.value, down = btn.dataset.dir === 'down';
    items.sort(function(a, b){
      if (k === '') return a.dataset.pos - b.dataset.pos;
      var x = parseFloat(a.dataset['m' + k]), y = parseFloat(b.dataset['m' + k]);
      if (isNaN(x)) return 1; if (isNaN(y)) return -1;
      return down ? y - x : x - y;
    });
    items.forEach(function(it){ list.appendChild(it); });
  }
  sel.addEventListener('change', sort);
  btn.addEventListener('click', function(){
    btn.dataset.dir = btn.dataset.dir === 'down' ? 'up' : 'down';
    btn.textContent = btn.dataset.dir === 'down' ? 'highest first' : 'lowest first';
    sort();
  });
})();
"""
