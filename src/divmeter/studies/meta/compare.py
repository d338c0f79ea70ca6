"""System A vs B (vs C ...): did a model, a post-training stage or a decoding setting lose
diversity against a baseline on the same prompts?

:func:`compare` matches every system's items to the baseline's by a key (set id or prompt), then
reports per metric and system the paired contrast of :func:`divmeter.studies.meta.protocols.paired`:
the mean difference with a seeded paired-bootstrap confidence interval, the two-sided Wilcoxon
signed-rank p-value, Cohen's d (mean / sd of the differences) and the win rate (the share of
items on which the system is more diverse than the baseline). Every number is oriented by the
metric's direction: a positive difference always means *more diverse than the baseline*, also
for self-BLEU and homogenization, whose values fall as diversity rises. The p-values are
Holm-corrected over the whole family (every metric x every system compared).

Example:
    >>> r = compare({"base": {"m": [3, 4, 5, 6]}, "new": {"m": [1, 2, 6, 2]}},
    ...             {"base": ["a", "b", "c", "d"], "new": ["a", "b", "c", "d"]},
    ...             baseline="base", bootstrap=None)
    >>> v = r.results["m"].values
    >>> v["system"], v["mean_diff"], v["win_rate"]
    ('new', -1.75, 0.25)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetaResult, make_signature
from divmeter.studies.meta import stats as st
from divmeter.studies.meta.protocols import ProtocolResult, paired

__all__ = ["compare", "match_keys"]


def match_keys(base: Sequence[str], other: Sequence[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Row indices of the keys found exactly once in both, in the baseline's order.

    Returns:
        ``(rows in base, rows in other, unmatched)``, where ``unmatched`` counts the keys of
        either side left out (missing on the other side, or repeated).

    Example:
        >>> match_keys(["a", "b", "c"], ["c", "a", "a", "d"])
        (array([2]), array([0]), 3)
    """
    cb, co = Counter(base), Counter(other)
    once = {k for k in cb if cb[k] == 1 and co.get(k) == 1}
    where = {k: i for i, k in enumerate(other) if k in once}
    rows_b = np.array([i for i, k in enumerate(base) if k in once], dtype=int)
    rows_o = np.array([where[base[i]] for i in rows_b], dtype=int)
    unmatched = len(set(cb) | set(co)) - len(once)
    return rows_b, rows_o, unmatched


def compare(
    systems: Mapping[str, Mapping[str, Any]],
    keys: Mapping[str, Sequence[str]],
    *,
    baseline: str | None = None,
    directions: Mapping[str, str] | None = None,
    bootstrap: int | None = 10_000,
    ci_method: str = "percentile",
    confidence: float = 0.95,
    seed: int = 0,
    zero_method: str = "wilcox",
    nan: str = "omit",
    key: str = "set_id",
    settings: Mapping[str, Any] | None = None,
    metric_signatures: Mapping[str, Mapping[str, str]] | None = None,
) -> ProtocolResult:
    """Each system against the baseline, per metric, on items matched by key.

    Args:
        systems: System name -> {metric -> one score per item}. Every system names the same
            metrics.
        keys: System name -> the key of each item (set id or prompt), aligned with its scores.
        baseline: The system every other one is compared with (default: the first).
        directions: Metric -> ``"higher"``/``"lower"`` (= more diverse); unknown names count as
            ``"higher"``. Lower-is-diverse metrics are negated before differencing.
        bootstrap: Paired-bootstrap resamples of the items for the confidence intervals of the
            mean difference, d and the win rate (``None``: no intervals).
        ci_method: ``percentile`` or ``bca``.
        confidence: Interval level.
        seed: Seed of the bootstrap draws.
        zero_method: Wilcoxon's treatment of zero differences (``wilcox``, ``pratt``, ``zsplit``).
        nan: ``omit`` drops items whose score is missing on either side (counted in
            ``n_excluded``); ``error`` refuses them.
        key: Name of the matching key (echoed in the settings and the signature).
        settings: Extra settings to echo.
        metric_signatures: System name -> {metric -> the signature of the metric that made
            its scores} (read from each system's score file). Each row keeps its system's in
            ``details["metric_signature"]`` and, where it differs, the baseline's in
            ``details["baseline_metric_signature"]``: numbers made with different settings
            are not comparable, and the tables say so.

    Returns:
        A :class:`ProtocolResult` named ``compare``; one row per (metric, system), keyed by the
        metric name when one system is compared and ``"metric: system"`` otherwise. Values:
        ``system``, ``baseline``, ``n``, ``n_unmatched``, ``mean_diff`` (+ ``mean_diff_ci``),
        ``cohen_d`` (+ ``cohen_d_ci``), ``win_rate`` (+ ``win_rate_ci``), ``ties``,
        ``p_two_sided`` (Wilcoxon), ``p_holm`` and ``direction``; ``arrays`` hold the matched,
        oriented scores for the paired plots.

    Raises:
        InvalidInputError: Fewer than two systems, an unknown baseline, systems that name
            different metrics, keys not aligned with the scores.
    """
    names = list(systems)
    if len(names) < 2:
        raise InvalidInputError(f"compare needs at least two systems; got {len(names)}.")
    base = names[0] if baseline is None else baseline
    if base not in systems:
        raise InvalidInputError(f"baseline {base!r} is not one of the systems: "
                                f"{', '.join(names)}.")
    metrics = list(systems[base])
    for s in names:
        if set(systems[s]) != set(metrics):
            raise InvalidInputError(
                f"system {s!r} names the metrics {sorted(systems[s])}, the baseline "
                f"{base!r} names {sorted(metrics)}: every system must have the same metrics."
            )
        for m, v in systems[s].items():
            if len(v) != len(keys[s]):
                raise InvalidInputError(f"system {s!r}: {len(v)} scores of {m!r} for "
                                        f"{len(keys[s])} keys.")
    others = [s for s in names if s != base]
    rows: dict[str, MetaResult] = {}
    arrays: dict[str, Any] = {}
    for s in others:
        rb, ro, unmatched = match_keys(list(keys[base]), list(keys[s]))
        if len(rb) == 0:
            raise InvalidInputError(
                f"no {key} of system {s!r} matches one of the baseline {base!r}: compare "
                f"matches items by --key (set_id or prompt)."
            )
        a = {m: np.asarray(systems[s][m], dtype=float)[ro] for m in metrics}
        b = {m: np.asarray(systems[base][m], dtype=float)[rb] for m in metrics}
        for m in metrics:
            _check_range(m, s, base, a[m], b[m])
        with np.errstate(invalid="ignore", divide="ignore"):  # d of a constant resample
            res = paired(a, b, correction="none", zero_method=zero_method, nan=nan,
                         bootstrap=bootstrap, ci_method=ci_method, confidence=confidence,
                         seed=seed, directions=directions)
        for m in metrics:
            v = res.results[m].values
            diffs = np.asarray(res.arrays[m]["a"]) - np.asarray(res.arrays[m]["b"])
            row = {"system": s, "baseline": base, "n": v["n"], "n_unmatched": unmatched,
                   "n_excluded": v.get("n_excluded", 0),
                   "mean_diff": v["mean_diff"], "mean_diff_ci": v.get("mean_diff_ci"),
                   "cohen_d": v["cohen_d"], "cohen_d_ci": v.get("cohen_d_ci"),
                   "win_rate": v["sign_accuracy"], "win_rate_ci": v.get("sign_accuracy_ci"),
                   "ties": float(np.mean(diffs == 0)) if len(diffs) else float("nan"),
                   "p_two_sided": v["p_two_sided"], "direction": v["direction"]}
            name = m if len(others) == 1 else f"{m}: {s}"
            details = dict(res.results[m].details or {})
            undefined = _ci_reasons(row, bootstrap)
            if undefined:
                details["reasons"] = {**details.get("reasons", {}), **undefined}
            sig = (metric_signatures or {}).get(s, {}).get(m)
            base_sig = (metric_signatures or {}).get(base, {}).get(m)
            if sig is not None:
                details["metric_signature"] = sig
            if base_sig is not None and base_sig != sig:
                details["baseline_metric_signature"] = base_sig
            rows[name] = MetaResult("compare", row, "", details)
            arrays[name] = {"a": res.arrays[m]["a"], "b": res.arrays[m]["b"],
                            "labels": (s, base)}
    family = list(rows)
    adjusted = st.adjust_pvalues(
        [np.nan if rows[n].values["p_two_sided"] is None else rows[n].values["p_two_sided"]
         for n in family], "holm")
    sig = make_signature("compare", key=key, test="wilcoxon", zeros=zero_method, d="mean/sd",
                         correction="holm", family=len(family),
                         ci=ci_method if bootstrap else None,
                         level=confidence if bootstrap else None, resamples=bootstrap,
                         seed=seed if bootstrap else None, nan=nan)
    for i, n in enumerate(family):
        values = dict(rows[n].values)
        values["p_holm"] = float(adjusted[i])
        rows[n] = MetaResult("compare", values, sig, rows[n].details)
    echo = {"baseline": base, "systems": names, "key": key, "correction": "holm",
            **dict(settings or {})}
    return ProtocolResult("compare", rows, echo, arrays)


#: The largest score difference compare accepts: its square (Cohen's d, the Wilcoxon ranks'
#: ties) must stay within float64.
MAX_DIFFERENCE = 1e150


def _check_range(metric: str, system: str, base: str, a: np.ndarray, b: np.ndarray) -> None:
    """Refuse scores whose differences (or their squares) leave float64, in one line: a mean
    difference of 1e308 - (-1e308) is no number (issue 34)."""
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.abs(a - b)
    bad = np.isfinite(a) & np.isfinite(b) & ~(d <= MAX_DIFFERENCE)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidInputError(
            f"{metric!r}: on matched item {i + 1} system {system!r} scores {float(a[i]):.3g} "
            f"and the baseline {base!r} {float(b[i]):.3g}, a difference beyond what the "
            f"statistics can square in float64 (|difference| <= {MAX_DIFFERENCE:g}); rescale "
            "the scores.")


def _ci_reasons(row: dict[str, Any], bootstrap: int | None) -> dict[str, str]:
    """Why an interval of a row has a null end (``cohen_d_ci``: some resamples have no spread),
    in the row's ``reasons`` (printed under the table)."""
    out: dict[str, str] = {}
    n = row["n"]
    for field in ("mean_diff_ci", "cohen_d_ci", "win_rate_ci"):
        ci = row.get(field)
        if not bootstrap or ci is None:
            continue
        ends = [c for c in ci if c is not None and np.isfinite(c)]
        if len(ends) == len(ci):
            continue
        if field == "cohen_d_ci":
            out[field] = (f"undefined end(s) with {n} matched items: resamples whose "
                          "differences are all equal have no standard deviation, so d is "
                          "undefined in them and the percentile falls there; more items give "
                          "the interval")
        else:
            out[field] = f"undefined with {n} matched items (the interval needs 2 or more)"
    return out

