"""Progressive conditional surprise curves (a_k, bits/byte) side by side, Figure 2 style.

Khoriaty, Williams-King & Feng 2026 (arXiv:2606.01811), Figure 2: the mean a_k curve of each policy
(or set) over a prompt suite, faint per-prompt curves behind it, and next to it the distribution of
per-prompt D = C x a_n per policy. :func:`plot_decan_confound` draws the appendix-E confound check
(Figure 15's class distributions of a_1, and the class means per length bin of Table 8).
matplotlib is imported lazily with the Agg backend (``divmeter[plot]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.paths import write_whole, written

_HIGH, _LOW = "#1f77b4", "#ff7f0e"  # the class colours of divmeter.report.plots

__all__ = ["plot_decan_curves", "plot_decan_confound"]


def _curve_and_d(item: Any, where: str) -> tuple[np.ndarray, float | None]:
    """(per-byte curve, D) of a DecanSurprisal, a decan MetricResult, a dict or a bare curve."""
    if hasattr(item, "curve") and hasattr(item, "D"):
        return np.asarray(item.curve, dtype=float), float(item.D)
    details = getattr(item, "details", None)
    if isinstance(details, Mapping):
        if "curve" not in details:
            raise InvalidInputError(f"{where}: the result has no curve (undefined set?).")
        return np.asarray(details["curve"], dtype=float), details.get("D")
    if isinstance(item, Mapping) and "curve" in item:
        return np.asarray(item["curve"], dtype=float), item.get("D")
    arr = np.asarray(item, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidInputError(
            f"{where}: expected a Decan result or a 1-D curve; got shape {arr.shape}."
        )
    return arr, None


def _finish(fig: Any, title: str | None, path: str | Path | None, dpi: int) -> Any:
    """Title (when given), lay out and save (when ``path`` is given) a figure; returns it."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    if path is not None:
        fmt = Path(path).suffix.lstrip(".").lower() or "png"
        with written(path) as tmp:  # whole, and never over a file the command read
            fig.savefig(tmp, dpi=dpi, format=fmt)
    return fig


def plot_decan_curves(
    groups: Mapping[str, Any],
    *,
    path: str | Path | None = None,
    title: str | None = None,
    show_individual: bool = True,
    show_scores: bool = True,
) -> Any:
    """Plot mean a_k curves of several policies/sets, with per-prompt D next to them.

    Args:
        groups: Label -> one result or a list of results (one per prompt). A result is a
            :class:`~divmeter.metrics.decan.DecanSurprisal`, a ``decan``
            :class:`~divmeter.core.result.MetricResult`, a dict with ``curve`` (and ``D``), or a
            bare per-byte curve. Curves of one group must have the same length n.
        path: Save the figure there (PNG/PDF/SVG by suffix) when given.
        title: Figure title.
        show_individual: Draw each prompt's curve faintly behind the group mean.
        show_scores: Add a panel with the per-prompt D of each group (when D is known).

    Returns:
        The matplotlib ``Figure``.

    Raises:
        InvalidInputError: Empty ``groups`` or curves of different lengths within a group.

    Example:
        >>> fig = plot_decan_curves({"base": [[1.2, 1.0, 0.9], [1.3, 1.1, 1.0]],
        ...                          "tuned": [[1.1, 0.6, 0.4]]}, show_scores=False)
        >>> len(fig.axes)
        1
    """
    if not groups:
        raise InvalidInputError("`groups` must name at least one policy or set; got none.")
    mpl = require("matplotlib", extra="plot")
    mpl.use("Agg", force=False)
    plt = require("matplotlib.pyplot", extra="plot")
    parsed: dict[str, tuple[np.ndarray, list[float]]] = {}
    for label, items in groups.items():
        seq: Sequence[Any]
        if isinstance(items, (list, tuple)) and items and not np.isscalar(items[0]):
            seq = items
        else:
            seq = [items]
        cl: list[np.ndarray] = []
        ds: list[float] = []
        for j, it in enumerate(seq):
            c, d = _curve_and_d(it, f"groups[{label!r}][{j}]")
            cl.append(c)
            if d is not None:
                ds.append(float(d))
        if len({c.shape for c in cl}) != 1:
            raise InvalidInputError(
                f"groups[{label!r}]: curves must all have the same length n; got lengths "
                f"{sorted({c.size for c in cl})}."
            )
        parsed[str(label)] = (np.stack(cl), ds)
    with_scores = show_scores and all(len(ds) for _, ds in parsed.values())
    fig, axes = plt.subplots(
        1, 2 if with_scores else 1, figsize=(10 if with_scores else 6, 4), squeeze=False,
        gridspec_kw={"width_ratios": [3, 2]} if with_scores else None,
    )
    ax = axes[0, 0]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, (group_curves, _)) in enumerate(parsed.items()):
        color = colors[i % len(colors)]
        curves = np.asarray(group_curves)
        k = np.arange(1, curves.shape[1] + 1)
        if show_individual and curves.shape[0] > 1:
            for c in curves:
                ax.plot(k, c, color=color, alpha=0.15, linewidth=0.8)
        ax.plot(k, curves.mean(axis=0), color=color, linewidth=2.2, marker="o", markersize=3,
                label=f"{label} ({curves.shape[0]} sets)" if curves.shape[0] > 1 else label)
    n_max = max(c.shape[1] for c, _ in parsed.values())
    ax.set_xticks(range(1, n_max + 1) if n_max <= 20 else ax.get_xticks())
    ax.set_xlabel("k (position; k - 1 responses in context)")
    ax.set_ylabel(r"$\bar a_k$ (bits/byte)")
    ax.set_title("Progressive conditional surprise")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    if with_scores:
        ax2 = axes[0, 1]
        labels = list(parsed)
        data = [parsed[lb][1] for lb in labels]
        ax2.boxplot(data, showfliers=False)
        rng = np.random.default_rng(0)
        for i, ds in enumerate(data):
            jitter = rng.uniform(-0.12, 0.12, len(ds))
            ax2.scatter(np.full(len(ds), i + 1) + jitter, ds, s=10, alpha=0.6,
                        color=colors[i % len(colors)])
        ax2.set_xticks(range(1, len(labels) + 1), labels, rotation=20)
        ax2.set_ylabel(r"$D = C \times a_n$ (bits/byte)")
        ax2.set_title("Per-prompt D")
        ax2.grid(alpha=0.3, axis="y")
    return _finish(fig, title, path, 150)


def plot_decan_confound(
    result: Any,
    *,
    path: str | Path | None = None,
    title: str | None = None,
    bins: int = 20,
) -> Any:
    """Appendix E confound check: per column, class histograms and class means per length bin.

    One row per column of a :class:`~divmeter.studies.meta.confound.ConfoundResult`: on the left the
    distributions of the high- and low-diversity sets with dashed lines at the class means (Figure
    15 of Khoriaty et al. 2026, for a_1), on the right the class means within each length bin
    (Table 8), with the set counts under the bins.

    Args:
        result: From :func:`divmeter.studies.meta.confound.decan_confound`.
        path: Save the figure there (PNG/PDF/SVG by suffix) when given.
        title: Figure title.
        bins: Histogram bins.

    Returns:
        The matplotlib ``Figure``.

    Raises:
        InvalidInputError: A result without the per-set arrays.

    Example:
        >>> from divmeter.studies.meta.confound import decan_confound
        >>> r = decan_confound({"a_1": [1.0, 1.2, 0.9, 1.5]}, [1, 0, 1, 0], [30, 30, 50, 50])
        >>> len(plot_decan_confound(r).axes)
        2
    """
    arrays = getattr(result, "arrays", None)
    if not arrays:
        raise InvalidInputError(
            "plot_decan_confound needs the result of decan_confound (with its per-set arrays)."
        )
    mpl = require("matplotlib", extra="plot")
    mpl.use("Agg", force=False)
    plt = require("matplotlib.pyplot", extra="plot")
    names = list(arrays)
    hi_lab, lo_lab = result.settings["high_label"], result.settings["low_label"]
    fig, axes = plt.subplots(len(names), 2, figsize=(11, 3.6 * len(names)), squeeze=False)
    for row, name in enumerate(names):
        v, high = arrays[name]["values"], arrays[name]["high"]
        ok = ~np.isnan(v)
        h_vals, l_vals = v[ok & high], v[ok & ~high]
        ax = axes[row, 0]
        both = np.concatenate([h_vals, l_vals])
        rng = (float(both.min()), float(both.max())) if both.size else (0.0, 1.0)
        if rng[0] == rng[1]:
            rng = (rng[0] - 0.5, rng[1] + 0.5)
        for vals, color, lab in ((h_vals, _HIGH, f"high (label {hi_lab:g})"),
                                 (l_vals, _LOW, f"low (label {lo_lab:g})")):
            if vals.size:
                ax.hist(vals, bins=bins, range=rng, alpha=0.5, color=color,
                        label=f"{lab}, n={vals.size}")
                ax.axvline(float(vals.mean()), color=color, linestyle="--", linewidth=2)
        st = result.overall[name]
        gap = "n/a" if st["gap"] is None else f"{st['gap']:+.3f}"
        ax.set_title(f"{name}: gap (low - high) {gap}")
        ax.set_xlabel(name)
        ax.set_ylabel("sets")
        ax.legend(fontsize=8)
        ax = axes[row, 1]
        rows = result.by_bin[name]
        x = np.arange(len(rows))
        for key, color, dx, lab in (("high_mean", _HIGH, -0.1, "high"),
                                    ("low_mean", _LOW, 0.1, "low")):
            y = np.array([np.nan if r[key] is None else r[key] for r in rows], dtype=float)
            ax.plot(x + dx, y, marker="o", linestyle="-", color=color, label=f"{lab} mean")
        ax.set_xticks(x, [f"{r['bin']}\n{r['n_high']}/{r['n_low']}" for r in rows], fontsize=8)
        ax.set_xlabel(f"{result.settings['length']} bin (n high / n low)")
        ax.set_ylabel(f"mean {name}")
        ax.set_title(f"{name} by length bin")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    return _finish(fig, title, path, 100)


def confound_report_files(out_dir: str | Path, *, plots: bool = True) -> list[Path]:
    """The files :func:`write_confound_report` writes (checked before anything is written)."""
    out = Path(out_dir)
    return [out / "report.json", out / "report.md", *([out / "confound.png"] if plots else [])]


def write_confound_report(result: Any, out_dir: str | Path, *, info: Mapping[str, Any],
                          title: str, plots: bool = True) -> list[Path]:
    """Write the appendix-E confound report: ``report.json`` (settings, results, input),
    ``report.md`` and, with ``plots``, ``confound.png``; returns the files written.

    Args:
        result: A :class:`~divmeter.studies.meta.confound.ConfoundResult`.
        out_dir: The report folder (created when missing).
        info: What was read (``source``, ``length`` ...), from ``load_confound_inputs``.
        title: Title of the Markdown report and the plot.
        plots: Whether to draw ``confound.png``.
    """
    import json

    from divmeter.core._version import __version__

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"protocol": result.protocol, "source": info["source"],
           "divmeter_version": __version__, "settings": result.settings,
           "results": {**result.to_dict(), "input": dict(info)}, "extra": {}}
    files = [out / "report.json", out / "report.md"]
    write_whole(files[0], json.dumps(doc, indent=2, allow_nan=False) + "\n")
    write_whole(files[1], result.markdown(title=title))
    if plots:
        fig = plot_decan_confound(result, path=out / "confound.png", title=title)
        files.append(out / "confound.png")
        require("matplotlib.pyplot", extra="plot").close(fig)
    return files
