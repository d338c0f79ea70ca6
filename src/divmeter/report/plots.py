"""PNG plots of meta-evaluation results (matplotlib, Agg backend, imported only when plotting).

* :func:`class_histogram`: per-class histograms with the optimal OCA threshold marked by a
  downward triangle (Tevet & Berant, Fig. 4);
* :func:`parameter_scatter`: metric against the decoding parameter (Tevet & Berant, Fig. 3/6);
* :func:`kappa_heatmap`: Cohen's kappa between metrics and the annotator (Zhang et al., Fig. 3);
* :func:`paired_differences`: sorted paired differences with their mean, and the two conditions
  side by side (CDM / Decan contrasts);
* :func:`length_scatter`: response score against response length (PATTR paper).

Every function writes one PNG of ``size`` inches at ``dpi`` (default 640 x 400 pixels) and returns
its path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.core._optional import require

__all__ = [
    "class_histogram",
    "parameter_scatter",
    "kappa_heatmap",
    "paired_differences",
    "paired_words",
    "length_scatter",
    "slug",
    "SIZE",
    "DPI",
]

SIZE = (6.4, 4.0)
DPI = 100
_HIGH, _LOW = "#1f77b4", "#ff7f0e"


def slug(name: str) -> str:
    """A file-name-safe version of a metric name: ``self-bleu:n=3`` -> ``self-bleu_n-3``.

    Example:
        >>> slug("self-bleu:n=3")
        'self-bleu_n-3'
    """
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name.replace(":", "_")).strip("-") or "metric"


#: Font sizes that stay legible when a 640-pixel plot is shown at half width in a report.
FONTS = {"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12, "xtick.labelsize": 11,
         "ytick.labelsize": 11, "legend.fontsize": 10, "figure.titlesize": 13}


def _plt() -> Any:
    mpl = require("matplotlib", extra="plot")
    mpl.use("Agg", force=True)
    mpl.rcParams.update(FONTS)
    return require("matplotlib.pyplot", extra="plot", package="matplotlib")


def _finish(fig: Any, ax: Any, title: str, path: str | os.PathLike[str], dpi: int,
            labels: tuple[str, str] | None = None, legend: str | None = None,
            suptitle: bool = False) -> Path:
    """Label ``ax`` (``(xlabel, ylabel)``, a legend at ``legend``), title it (or the figure,
    with ``suptitle``), lay the figure out and save it."""
    if labels is not None:
        ax.set_xlabel(labels[0])
        ax.set_ylabel(labels[1])
    if legend is not None:
        ax.legend(loc=legend)
    if suptitle:
        fig.suptitle(title)
    else:
        ax.set_title(title)
    fig.tight_layout()
    return _save(fig, path, dpi)


def _save(fig: Any, path: str | os.PathLike[str], dpi: int) -> Path:
    from divmeter.inputs.data.paths import written

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with written(out) as tmp:  # whole, and never over a file the command read
            fig.savefig(tmp, dpi=dpi, format="png")
    finally:
        _plt().close(fig)
    return out


def class_histogram(
    scores: np.ndarray,
    labels: np.ndarray,
    threshold: float,
    path: str | os.PathLike[str],
    *,
    title: str = "",
    bins: int = 20,
    size: tuple[float, float] = SIZE,
    dpi: int = DPI,
) -> Path:
    """Histograms of the high (1) and low (0) class with the optimal threshold marked."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels)
    fig, ax = _plt().subplots(figsize=size)
    lo, hi = float(s.min()), float(s.max())
    rng = (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)
    h1, _, _ = ax.hist(s[y == 1], bins=bins, range=rng, alpha=0.5, color=_HIGH,
                       label=f"high content diversity ({int((y == 1).sum())})")
    h0, _, _ = ax.hist(s[y == 0], bins=bins, range=rng, alpha=0.5, color=_LOW,
                       label=f"low content diversity ({int((y == 0).sum())})")
    top = float(max(h1.max(initial=0), h0.max(initial=0)))
    ax.scatter([threshold], [top * 1.04 + 0.5], marker="v", s=90, color="black", zorder=3,
               label=f"optimal threshold {threshold:.3g}")
    ax.axvline(threshold, color="black", lw=0.8, ls=":")
    return _finish(fig, ax, title, path, dpi, ("metric value", "sets per bin"), "upper left")


def parameter_scatter(
    scores: np.ndarray,
    values: np.ndarray,
    path: str | os.PathLike[str],
    *,
    title: str = "",
    xlabel: str = "parameter",
    size: tuple[float, float] = SIZE,
    dpi: int = DPI,
) -> Path:
    """Metric value of every set against the diversity parameter, with a binned mean line."""
    s = np.asarray(scores, dtype=float)
    v = np.asarray(values, dtype=float)
    fig, ax = _plt().subplots(figsize=size)
    ax.scatter(v, s, s=8, alpha=0.4, color=_HIGH, label="one set")
    if len(np.unique(v)) > 10:
        edges = np.quantile(v, np.linspace(0, 1, 11))
        which = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, 9)
        mids = [v[which == b].mean() for b in range(10) if (which == b).any()]
        means = [s[which == b].mean() for b in range(10) if (which == b).any()]
        ax.plot(mids, means, color="black", lw=1.5, label="binned mean")
    return _finish(fig, ax, title, path, dpi, (xlabel, "metric value"), "best")


def kappa_heatmap(
    names: Sequence[str],
    matrix: Sequence[Sequence[float]],
    path: str | os.PathLike[str],
    *,
    title: str = "Cohen's kappa",
    size: tuple[float, float] | None = None,
    dpi: int = DPI,
) -> Path:
    """Heat map of a kappa matrix, values written in the cells."""
    m = np.asarray(matrix, dtype=float)
    k = len(names)
    fig, ax = _plt().subplots(figsize=size or (max(4.0, 1.0 + 0.8 * k), max(3.2, 0.7 + 0.7 * k)))
    im = ax.imshow(m, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(k), labels=list(names), rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(k), labels=list(names), fontsize=8)
    for i in range(k):
        for j in range(k):
            val = m[i, j]
            ax.text(j, i, "–" if np.isnan(val) else f"{val:.2f}", ha="center", va="center",
                    fontsize=8, color="white" if abs(val) > 0.6 else "black")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return _finish(fig, ax, title, path, dpi)


def paired_words(a: np.ndarray, b: np.ndarray, *, labels: tuple[str, str],
                 direction: str = "higher", reference: str | None = None, title: str = ""
                 ) -> dict[str, Any]:
    """What the paired plot says in words, from the oriented values ``a`` and ``b`` (a
    lower-is-diverse metric negated): which condition is drawn on the left (``ticks``, the
    ``reference`` first), the axis labels, the legend and the title. A bar above zero always
    means ``labels[0]`` is more diverse, and the label says so.

    Example:
        >>> w = paired_words(np.array([-0.1, -0.2, -0.1, -0.3]), np.array([-0.5, -0.6, -0.1,
        ...                  -0.2]), labels=("1", "0.3"), direction="lower", reference="0.3")
        >>> w["ticks"], w["ylabel"]
        (['0.3', '1'], '+ = 1 more diverse\\n(value of 0.3 \u2212 1)')
        >>> w["mean"]
        'mean difference +0.175: 1 more diverse than 0.3 on 50% of the items'
    """
    from divmeter.report.tables import SMALL_SAMPLE

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    name_a, name_b = labels
    lower = direction == "lower"
    share = 100 * float((d > 0).mean()) if len(d) else float("nan")
    raw = f"{name_b} \u2212 {name_a}" if lower else f"{name_a} \u2212 {name_b}"
    if len(d) < SMALL_SAMPLE:
        warn = f"only {len(d)} items: the interval and the test are weak"
        title = f"{title}\n{warn}" if title else warn
    return {
        "ticks": [name_b, name_a] if reference is not None and reference == name_b
        else [name_a, name_b],
        "values": "value (" + ("lower" if lower else "higher") + " = more diverse)",
        "ylabel": f"+ = {name_a} more diverse\n(value of {raw})",
        "xlabel": "items, sorted by difference",
        "mean": f"mean difference {d.mean():+.3g}: {name_a} more diverse than {name_b} on "
        f"{share:.0f}% of the items",
        "colors": (f"{name_a} more diverse", f"{name_b} more diverse"),
        "title": title,
    }


def paired_differences(
    a: np.ndarray,
    b: np.ndarray,
    path: str | os.PathLike[str],
    *,
    title: str = "",
    labels: tuple[str, str] = ("high (P1)", "low (P2)"),
    direction: str = "higher",
    reference: str | None = None,
    size: tuple[float, float] = SIZE,
    dpi: int = DPI,
) -> Path:
    """Left: each item as a line between its two values, on the metric's own scale. Right: the
    sorted differences, oriented so that a bar above zero always means ``labels[0]`` is more
    diverse than ``labels[1]``, whatever the metric's direction; the axis, the colours and the
    legend say so in words (:func:`paired_words`), and the raw subtraction is named under it.

    ``a`` and ``b`` arrive oriented (a lower-is-diverse metric negated, as the paired protocols
    hold them); with ``direction="lower"`` the left panel turns them back to raw values.
    ``reference``: the condition the other is compared with (``divmeter compare``'s baseline),
    drawn on the left of the left panel. Fewer than
    :data:`divmeter.report.tables.SMALL_SAMPLE` items add a warning under the title."""
    x = np.asarray(a, dtype=float)
    z = np.asarray(b, dtype=float)
    d = np.sort(x - z)
    words = paired_words(x, z, labels=labels, direction=direction, reference=reference,
                         title=title)
    raw_x, raw_z = (-x, -z) if direction == "lower" else (x, z)
    pos_a, pos_b = (words["ticks"].index(labels[0]), words["ticks"].index(labels[1]))
    plt = _plt()
    # room under the axes for the legend, which must not hide a bar
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(size[0], size[1] * 1.25),
                                   gridspec_kw={"width_ratios": [1, 2]})
    show = np.arange(len(x)) if len(x) <= 300 else np.linspace(0, len(x) - 1, 300).astype(int)
    for i in show:
        color = _HIGH if x[i] > z[i] else _LOW if x[i] < z[i] else "grey"
        ax1.plot([pos_a, pos_b], [raw_x[i], raw_z[i]], color=color, alpha=0.35, lw=0.8)
    ax1.set_xticks([0, 1], labels=words["ticks"])
    ax1.set_xlim(-0.3, 1.3)
    ax1.set_ylabel(words["values"])
    colors = np.where(d > 0, _HIGH, np.where(d < 0, _LOW, "grey"))
    ax2.bar(np.arange(len(d)), d, color=colors, width=1.0)
    ax2.axhline(0, color="black", lw=0.8)
    ax2.axhline(float(d.mean()), color="black", lw=1.2, ls="--", label=words["mean"])
    patches = _plt_patches()
    handles = [*ax2.get_legend_handles_labels()[0],
               patches.Patch(color=_HIGH, label=words["colors"][0]),
               patches.Patch(color=_LOW, label=words["colors"][1])]
    fig.legend(handles=handles, loc="lower center", ncol=1, fontsize=9, frameon=False)
    ax2.set_xlabel(words["xlabel"])
    ax2.set_ylabel(words["ylabel"])
    fig.suptitle(words["title"])
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    return _save(fig, path, dpi)


def _plt_patches() -> Any:
    return require("matplotlib.patches", extra="plot", package="matplotlib")


def length_scatter(
    scores: np.ndarray,
    lengths: np.ndarray,
    path: str | os.PathLike[str],
    *,
    title: str = "",
    size: tuple[float, float] = SIZE,
    dpi: int = DPI,
) -> Path:
    """Score of each response against its length in words."""
    return parameter_scatter(scores, lengths, path, title=title, xlabel="length (words)",
                             size=size, dpi=dpi)
