"""Agreement and stability of collected HDS ratings.

* :func:`alpha`: Krippendorff's alpha at the ordinal level over the raw 1-5 ratings (computed by the
  ``krippendorff`` package; one value per rated aspect).
* :func:`stability`: Tevet & Berant (2021), section 6.4 "HDS Stability" and Figure 5: how the
  Spearman correlation between the per-set mean rating and the set's label changes with the number
  of ratings per set and with the number of sets, estimated by resampling the collected ratings.
* :func:`write_report`: both, as ``report.json``, ``report.md`` and ``stability.png``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.paths import write_whole, written

__all__ = ["StabilityResult", "alpha", "stability", "units", "write_report"]

SCALE_VALUES = [1, 2, 3, 4, 5]
# the aspect whose per-set mean is the HDS column of each kind (cs: the rating, not the rank)
MAIN_ASPECT = {"abs": "diversity", "asp": "content", "rnk": "ranking", "cs": "diversity",
               "sim": "similarity"}


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


def units(raw: Sequence[Mapping[str, Any]], aspect: str) -> dict[tuple[str, str], dict[int, int]]:
    """Ratings of one aspect by unit ``(item_id, set_id)`` and annotator."""
    out: dict[tuple[str, str], dict[int, int]] = {}
    for r in raw:
        if r["aspect"] == aspect:
            out.setdefault((r["item_id"], r["set_id"]), {})[int(r["annotator"])] = int(r["value"])
    return out


def alpha(raw: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Krippendorff's alpha (ordinal, value domain 1-5) per rated aspect.

    Units are (item, set) pairs, coders the annotators; ranks (``cs``) are not ratings and are
    left out. Units rated by one annotator carry no pairable value and do not count.

    Args:
        raw: Rows of :meth:`divmeter.apps.web.store.Store.raw`.

    Returns:
        ``{aspect: {"alpha": float | None, "units": pairable units, "ratings": n, "signature",
        "reason": ...}}``;
        ``alpha`` is ``None`` (with a reason) when fewer than 2 units have 2 ratings or all
        ratings are one value.

    Raises:
        MissingDependencyError: The ``krippendorff`` package (``divmeter[web]``) is missing.
    """
    kr = require("krippendorff", extra="web")
    out: dict[str, dict[str, Any]] = {}
    for aspect in sorted({r["aspect"] for r in raw} - {"rank"}):
        by_unit = units(raw, aspect)
        pairable = {u: v for u, v in by_unit.items() if len(v) >= 2}
        coders = sorted({a for v in pairable.values() for a in v})
        n = sum(len(v) for v in pairable.values())
        entry: dict[str, Any] = {
            "alpha": None, "units": len(pairable), "ratings": n, "level": "ordinal",
            "signature": f"krippendorff-alpha|aspect:{aspect}|level:ordinal|values:1-5|"
                         f"krippendorff:{_version('krippendorff')}"}
        values = {x for v in pairable.values() for x in v.values()}
        if len(pairable) < 2:
            entry["reason"] = "fewer than 2 units with 2 or more ratings"
        elif len(values) < 2:
            entry["reason"] = "every rating has the same value (no variation to agree on)"
        else:
            index = {a: i for i, a in enumerate(coders)}
            data = np.full((len(coders), len(pairable)), np.nan)
            for j, v in enumerate(pairable.values()):
                for a, x in v.items():
                    data[index[a], j] = x
            entry["alpha"] = float(kr.alpha(reliability_data=data, level_of_measurement="ordinal",
                                            value_domain=SCALE_VALUES))
        out[aspect] = entry
    return out


@dataclass
class StabilityResult:
    """Figure 5 of Tevet & Berant: rho against ratings per set and against number of sets.

    Attributes:
        by_ratings: Rows ``{"k", "mean", "std", "n_sets", "reps_used"}``: ``k`` ratings drawn
            without replacement per set (sets with fewer are left out, ``n_sets`` say how many
            remain), Spearman rho of the label with the mean of the ``k`` ratings.
        by_sets: Rows ``{"n", "mean", "std", "reps_used"}``: ``n`` sets drawn without replacement,
            all their ratings, Spearman rho with the label.
        full: rho over every set with every rating.
        reps: Resamples per point; ``reps_used`` excludes draws where rho is undefined (a constant
            label or mean).
        seed: Seed of the draws.
        aspect: The rated aspect used.
    """

    by_ratings: list[dict[str, Any]]
    by_sets: list[dict[str, Any]]
    full: float | None
    reps: int
    seed: int
    aspect: str
    signature: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rho(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(spearmanr(x, y).statistic)


def _summary(values: list[float]) -> tuple[float | None, float | None, int]:
    ok = [v for v in values if not math.isnan(v)]
    if not ok:
        return None, None, 0
    arr = np.asarray(ok)
    return float(arr.mean()), float(arr.std(ddof=1)) if len(arr) > 1 else 0.0, len(ok)


def stability(
    ratings: Sequence[Sequence[float]],
    labels: Sequence[float],
    *,
    ks: Sequence[int] | None = None,
    ns: Sequence[int] | None = None,
    reps: int = 200,
    seed: int = 0,
    aspect: str = "diversity",
) -> StabilityResult:
    """Resample the ratings as in Tevet & Berant's Figure 5 (section 6.4, "HDS Stability").

    Args:
        ratings: Per set, its collected ratings.
        labels: Per set, its label (e.g. 0/1 content diversity, a temperature).
        ks: Ratings per set to try (default 1..the most any set has).
        ns: Numbers of sets to try (default 10%, 20%, ..., 100% of the sets, at least 2).
        reps: Resamples per point (>= 1).
        seed: Seed of :func:`numpy.random.default_rng`.
        aspect: Name recorded in the result.

    Returns:
        A :class:`StabilityResult`. At ``k`` = the most ratings every set has, and at ``n`` = all
        sets, every draw uses all the data, so the mean equals ``full`` and the std is 0.

    Raises:
        InvalidInputError: Different lengths, fewer than 2 rated sets, a bad ``ks``/``ns``/``reps``.

    Example:
        >>> r = stability([[1, 1], [2, 2], [4, 5], [5, 4]], [0, 0, 1, 1], reps=5)
        >>> round(r.full, 6), round(r.by_ratings[-1]["mean"], 6)  # 2 * sqrt(2) / 3
        (0.942809, 0.942809)
    """
    if len(ratings) != len(labels):
        raise InvalidInputError(f"stability needs one label per set; got {len(ratings)} sets and "
                                f"{len(labels)} labels.")
    keep = [i for i, r in enumerate(ratings)
            if len(r) > 0 and labels[i] is not None and not math.isnan(float(labels[i]))]
    if len(keep) < 2:
        raise InvalidInputError(f"stability needs at least 2 sets with ratings and a numeric "
                                f"label; got {len(keep)}.")
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise InvalidInputError(f"reps must be an integer >= 1; got {reps!r}.")
    vals = [np.asarray(ratings[i], dtype=float) for i in keep]
    lab = np.asarray([float(labels[i]) for i in keep])
    most = max(len(v) for v in vals)
    ks = list(ks) if ks is not None else list(range(1, most + 1))
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks):
        raise InvalidInputError(f"ks must be integers >= 1; got {ks!r}.")
    total = len(vals)
    if ns is None:
        ns = sorted({max(2, round(total * f / 10)) for f in range(1, 11)})
    ns = list(ns)
    if not ns or any(isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= total
                     for n in ns):
        raise InvalidInputError(f"ns must be integers from 2 to the number of sets ({total}); "
                                f"got {ns!r}.")
    rng = np.random.default_rng(seed)
    full = _rho(lab, np.asarray([v.mean() for v in vals]))
    by_ratings = []
    for k in ks:
        idx = [i for i, v in enumerate(vals) if len(v) >= k]
        draws = []
        for _ in range(reps):
            means = np.asarray([rng.choice(vals[i], size=k, replace=False).mean() for i in idx])
            draws.append(_rho(lab[idx], means))
        mean, std, used = _summary(draws)
        by_ratings.append({"k": k, "mean": mean, "std": std, "n_sets": len(idx),
                           "reps_used": used})
    all_means = np.asarray([v.mean() for v in vals])
    by_sets = []
    for n in ns:
        draws = []
        for _ in range(reps):
            pick = rng.choice(total, size=n, replace=False)
            draws.append(_rho(lab[pick], all_means[pick]))
        mean, std, used = _summary(draws)
        by_sets.append({"n": n, "mean": mean, "std": std, "reps_used": used})
    sig = f"hds-stability|aspect:{aspect}|reps:{reps}|seed:{seed}|corr:spearman"
    return StabilityResult(by_ratings, by_sets, None if math.isnan(full) else full, reps, seed,
                           aspect, sig)


def _fmt(x: Any) -> str:
    return "" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def report_files(out_dir: str | os.PathLike[str], *, plot: bool = True) -> list[Path]:
    """Every file :func:`write_report` may write (checked before anything is written)."""
    out = Path(out_dir)
    return [out / "report.json", out / "report.md", *([out / "stability.png"] if plot else [])]


def write_report(
    out_dir: str | os.PathLike[str],
    *,
    study: Mapping[str, Any],
    alphas: Mapping[str, Mapping[str, Any]],
    stab: StabilityResult | None,
    plot: bool = True,
) -> list[Path]:
    """Write ``report.json``, ``report.md`` and (with matplotlib) ``stability.png``.

    Returns:
        The files written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"study": dict(study), "krippendorff_alpha": {k: dict(v) for k, v in alphas.items()},
           "stability": stab.to_dict() if stab else None}
    files = [out / "report.json", out / "report.md"]
    write_whole(files[0], json.dumps(doc, indent=2) + "\n")
    lines = [f"# HDS study `{study['name']}` ({study['kind']})", "",
             "## Agreement: Krippendorff's alpha (ordinal, 1-5)", "",
             "| aspect | alpha | pairable units | ratings | note |", "|---|---|---|---|---|"]
    for aspect, a in alphas.items():
        lines.append(f"| {aspect} | {_fmt(a['alpha'])} | {a['units']} | {a['ratings']} | "
                     f"{a.get('reason', '')} |")
    if stab:
        lines += ["", "## Stability (Tevet & Berant 2021, Figure 5)", "",
                  f"`{stab.signature}`; rho over all sets and ratings: {_fmt(stab.full)}", "",
                  "| ratings per set | mean rho | std | sets | draws |", "|---|---|---|---|---|"]
        lines += [f"| {r['k']} | {_fmt(r['mean'])} | {_fmt(r['std'])} | {r['n_sets']} | "
                  f"{r['reps_used']} |" for r in stab.by_ratings]
        lines += ["", "| sets | mean rho | std | draws |", "|---|---|---|---|"]
        lines += [f"| {r['n']} | {_fmt(r['mean'])} | {_fmt(r['std'])} | {r['reps_used']} |"
                  for r in stab.by_sets]
        if plot:
            files.append(_plot(stab, out / "stability.png"))
    write_whole(files[1], "\n".join(lines) + "\n")
    return files


def _plot(stab: StabilityResult, path: Path) -> Path:
    mpl = require("matplotlib", extra="plot")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, rows, key, xlabel in ((axes[0], stab.by_ratings, "k", "ratings per set"),
                                  (axes[1], stab.by_sets, "n", "number of sets")):
        pts = [r for r in rows if r["mean"] is not None]
        x = [r[key] for r in pts]
        y = np.asarray([r["mean"] for r in pts])
        s = np.asarray([r["std"] for r in pts])
        ax.plot(x, y, marker="o")
        ax.fill_between(x, y - s, y + s, alpha=0.25)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Spearman rho with label")
    fig.suptitle(f"HDS stability ({stab.aspect}, {stab.reps} resamples)")
    fig.tight_layout()
    with written(path) as tmp:  # whole, and never over a file the command read
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return path
