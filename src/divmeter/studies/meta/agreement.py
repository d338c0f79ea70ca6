"""Agreement between raters: accuracy and Cohen's kappa against a reference, Fleiss' kappa,
Krippendorff's alpha and mean pairwise agreement.

The commonsense meta-evaluation paper (section 4.3) validates its LLM annotator this way: the
mean, over five human annotators, of each annotator's pairwise accuracy against the LLM's
decisions (80.6%), and Fleiss' kappa among the humans (0.45). :func:`agreement` computes those
numbers for any table of labels (one column per rater), and more:

* per rater against the reference: accuracy with its Clopper-Pearson interval, and Cohen's
  kappa ``(p_o - p_e) / (1 - p_e)`` with the large-sample normal interval of Cohen (1960),
  ``kappa +- z * sqrt(p_o (1 - p_o) / (n (1 - p_e)^2))``, on the items both rated;
* among the raters (the reference excluded): Fleiss' kappa (Fleiss 1971) on the items every rater
  rated, Krippendorff's alpha, nominal and ordinal (the ``krippendorff`` package; missing ratings
  allowed), and the mean over rater pairs of the share of items on which the two agree.

Labels may be numbers or strings; missing ratings are ``None``, NaN or empty strings. Numbers are
compared by value (``2`` and ``2.0`` agree). Ordinal alpha needs numeric labels (their order is
the numeric order); with string labels it is ``None`` with a reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetaResult, make_signature

__all__ = ["agreement", "fleiss_kappa", "has_label", "krippendorff_alpha", "kappa_with_ci",
           "pairwise_agreement"]

KAPPA_CI = "cohen1960-normal"
ACCURACY_CI = "clopper-pearson"


def _missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return isinstance(v, str) and not v.strip()


def has_label(v: Any) -> bool:
    """Whether a cell holds a label (not ``None``, NaN or a blank string)."""
    return not _missing(v)


def _value(v: Any) -> Any:
    """A label as a comparable value: numbers (also numeric strings) as float, else the string."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float, np.integer, np.floating)):
        return float(v)
    s = str(v).strip()
    try:
        return float(s)
    except ValueError:
        return s


def _encode(columns: Sequence[Sequence[Any]]) -> tuple[np.ndarray, list[Any], bool]:
    """Columns of labels -> an (raters x items) float array of category codes (NaN = missing),
    the categories, and whether every label is numeric (codes then follow numeric order)."""
    values = [[None if _missing(v) else _value(v) for v in col] for col in columns]
    present = {v for col in values for v in col if v is not None}
    numeric = all(isinstance(v, float) for v in present)
    cats = sorted(present) if numeric else sorted(present, key=str)
    code = {c: i for i, c in enumerate(cats)}
    arr = np.array([[np.nan if v is None else code[v] for v in col] for col in values],
                   dtype=np.float64).reshape(len(columns), -1)
    return arr, cats, numeric


def _kappa_parts(x: np.ndarray, y: np.ndarray, k: int) -> tuple[float, float]:
    """Observed and chance agreement (p_o, p_e) of two complete code vectors."""
    xi, yi = x.astype(int), y.astype(int)
    cm = np.bincount(xi * k + yi, minlength=k * k).reshape(k, k).astype(float)
    n = cm.sum()
    return float(np.trace(cm) / n), float((cm.sum(axis=1) * cm.sum(axis=0)).sum() / (n * n))


def kappa_with_ci(a: Sequence[Any], b: Sequence[Any], *, confidence: float = 0.95
                  ) -> dict[str, Any]:
    """Cohen's kappa of two raters with the normal interval of Cohen (1960).

    Items where either rating is missing are left out. When chance agreement is 1 (both raters
    use one and the same category throughout) kappa is 1.0 with a zero-width interval, the
    convention of :func:`divmeter.studies.meta.stats.cohen_kappa`. The normal interval is cut to
    kappa's range [-1, 1].

    Args:
        a: Ratings of the first rater.
        b: Ratings of the second rater (same items, same order).
        confidence: Level of the interval.

    Returns:
        ``{"kappa", "kappa_ci": [low, high], "accuracy", "accuracy_ci": [low, high], "n"}``;
        ``None`` values when no item has both ratings.

    Raises:
        InvalidInputError: If the lengths differ or ``confidence`` is not in (0, 1).

    Example:
        >>> r = kappa_with_ci([1, 1, 2, 2], [1, 2, 2, 2])
        >>> r["kappa"], r["accuracy"], r["n"]
        (0.5, 0.75, 4)
    """
    if len(a) != len(b):
        raise InvalidInputError(
            f"the two raters must rate the same items; got {len(a)} and {len(b)} ratings.")
    _check_confidence(confidence)
    arr, cats, _ = _encode([a, b])
    ok = ~np.isnan(arr).any(axis=0)
    n = int(ok.sum())
    if n == 0:
        return {"kappa": None, "kappa_ci": [None, None], "accuracy": None,
                "accuracy_ci": [None, None], "n": 0}
    from scipy import stats as ss

    x, y = arr[0, ok], arr[1, ok]
    po, pe = _kappa_parts(x, y, len(cats))
    agree = int((x == y).sum())
    ci = ss.binomtest(agree, n).proportion_ci(confidence_level=confidence, method="exact")
    if pe >= 1.0:
        kappa, lo, hi = 1.0, 1.0, 1.0
    else:
        kappa = (po - pe) / (1.0 - pe)
        z = float(ss.norm.ppf(0.5 + confidence / 2.0))
        se = math.sqrt(po * (1.0 - po) / (n * (1.0 - pe) ** 2))
        lo, hi = max(-1.0, kappa - z * se), min(1.0, kappa + z * se)
    return {"kappa": float(kappa), "kappa_ci": [float(lo), float(hi)], "accuracy": agree / n,
            "accuracy_ci": [float(ci.low), float(ci.high)], "n": n}


def fleiss_kappa(ratings: Sequence[Sequence[Any]]) -> tuple[float | None, int]:
    """Fleiss' kappa (Fleiss 1971) among raters, on the items every rater rated.

    With m raters, N items and n_ij the number of raters who put item i in category j:
    P_i = (sum_j n_ij^2 - m) / (m (m - 1)), P_bar = mean_i P_i, p_j = sum_i n_ij / (N m),
    P_e = sum_j p_j^2 and kappa = (P_bar - P_e) / (1 - P_e) (1.0 when P_e = 1).

    Args:
        ratings: One sequence of labels per rater (same items, same order).

    Returns:
        ``(kappa, items used)``; kappa is ``None`` when fewer than two raters or no complete
        item.

    Example:
        >>> k, used = fleiss_kappa([[1, 1, 2], [1, 2, 2], [1, 1, 2]])
        >>> round(k, 12), used
        (0.55, 3)
    """
    arr, cats, _ = _encode(ratings)
    m = arr.shape[0]
    full = arr[:, ~np.isnan(arr).any(axis=0)] if arr.size else arr
    n_items = int(full.shape[1]) if m else 0
    if m < 2 or n_items == 0:
        return None, n_items
    k = len(cats)
    counts = np.stack([(full == j).sum(axis=0) for j in range(k)], axis=1).astype(float)
    p_i = ((counts ** 2).sum(axis=1) - m) / (m * (m - 1))
    p_bar = float(p_i.mean())
    p_j = counts.sum(axis=0) / (n_items * m)
    p_e = float((p_j ** 2).sum())
    if p_e >= 1.0:
        return 1.0, n_items
    return (p_bar - p_e) / (1.0 - p_e), n_items


def krippendorff_alpha(ratings: Sequence[Sequence[Any]], level: str = "nominal"
                       ) -> tuple[float | None, str | None]:
    """Krippendorff's alpha among raters (missing ratings allowed), by the ``krippendorff``
    package.

    Args:
        ratings: One sequence of labels per rater (same items, same order).
        level: ``nominal`` or ``ordinal`` (ordinal needs numeric labels).

    Returns:
        ``(alpha, None)`` or ``(None, reason)`` when alpha is undefined here (fewer than two
        raters, a single value overall, no item rated twice, ordinal on string labels).

    Raises:
        InvalidInputError: For an unknown ``level``.
        MissingDependencyError: Without ``krippendorff`` (``pip install 'divmeter[judge]'``).
    """
    if level not in ("nominal", "ordinal"):
        raise InvalidInputError(f"`level` must be nominal or ordinal; got {level!r}.")
    arr, cats, numeric = _encode(ratings)
    if arr.shape[0] < 2:
        return None, "needs at least two raters"
    if level == "ordinal" and not numeric:
        return None, "ordinal alpha needs numeric labels"
    if len(cats) < 2:
        return None, "every rating has the same value"
    if not ((~np.isnan(arr)).sum(axis=0) >= 2).any():
        return None, "no item is rated by two raters"
    from divmeter.core._optional import require

    kd = require("krippendorff", extra="judge")
    data = arr if not numeric else np.where(np.isnan(arr), np.nan,
                                            np.take(np.array(cats, dtype=float),
                                                    np.nan_to_num(arr).astype(int)))
    domain = list(range(len(cats))) if not numeric else [float(c) for c in cats]
    return float(kd.alpha(reliability_data=data, value_domain=domain,
                          level_of_measurement=level)), None


def pairwise_agreement(ratings: Sequence[Sequence[Any]]) -> float | None:
    """Mean over rater pairs of the share of items (rated by both) on which they agree.

    Example:
        >>> pairwise_agreement([[1, 1, 2], [1, 2, 2], [1, 1, 2]])
        0.7777777777777777
    """
    arr, _, _ = _encode(ratings)
    shares = []
    for i, j in combinations(range(arr.shape[0]), 2):
        ok = ~np.isnan(arr[i]) & ~np.isnan(arr[j])
        if ok.any():
            shares.append(float((arr[i, ok] == arr[j, ok]).mean()))
    return float(np.mean(shares)) if shares else None


def _check_confidence(confidence: float) -> None:
    if isinstance(confidence, bool) or not isinstance(confidence, float) or not (
            0.0 < confidence < 1.0):
        raise InvalidInputError(f"`confidence` must be a number in (0, 1); got {confidence!r}.")


def agreement(
    ratings: Mapping[str, Sequence[Any]],
    reference: Sequence[Any] | None = None,
    *,
    confidence: float = 0.95,
) -> MetaResult:
    """Agreement of raters with a reference and among themselves.

    Args:
        ratings: Rater name -> one label per item (``None`` / NaN / ``""`` = missing).
        reference: Reference labels per item (e.g. the LLM judge's decisions, as in the paper's
            section 4.3, or gold labels), or ``None`` for agreement among raters only.
        confidence: Level of the accuracy and kappa intervals.

    Returns:
        A :class:`~divmeter.core.result.MetaResult` named ``agreement`` with values ``per_rater``
        (name -> ``accuracy``, ``accuracy_ci``, ``kappa``, ``kappa_ci``, ``n``; empty without a
        reference), ``mean_accuracy`` (mean of the raters' accuracies, the paper's 80.6%
        statistic), ``fleiss_kappa`` (with ``fleiss_items``), ``krippendorff_alpha`` (nominal),
        ``krippendorff_alpha_ordinal``, ``mean_pairwise_agreement``, ``n_items``, ``n_raters``;
        undefined statistics are ``None`` and their reasons are in ``details["reasons"]``.

    Raises:
        InvalidInputError: No rater, columns of different lengths, a bad ``confidence``.

    Example:
        >>> r = agreement({"a": [0, 1, 1, 0], "b": [0, 1, 0, 0]}, reference=[0, 1, 1, 1])
        >>> r.per_rater["a"]["accuracy"], r.mean_accuracy
        (0.75, 0.625)
    """
    if not ratings:
        raise InvalidInputError("give at least one rater column.")
    names = list(ratings)
    cols = [list(ratings[k]) for k in names]
    n = len(cols[0])
    for k, c in zip(names, cols, strict=True):
        if len(c) != n:
            raise InvalidInputError(
                f"every rater must rate the same items; {names[0]!r} has {n} ratings, {k!r} has "
                f"{len(c)}.")
    if reference is not None and len(reference) != n:
        raise InvalidInputError(
            f"the reference must label the same items as the raters ({n}); got {len(reference)}.")
    _check_confidence(confidence)
    reasons: dict[str, str] = {}
    per: dict[str, dict[str, Any]] = {}
    if reference is not None:
        for k, c in zip(names, cols, strict=True):
            per[k] = kappa_with_ci(c, list(reference), confidence=confidence)
            if per[k]["n"] == 0:
                reasons[f"per_rater.{k}"] = "no item has both this rating and a reference label"
    accs = [v["accuracy"] for v in per.values() if v["accuracy"] is not None]
    fk, fleiss_items = fleiss_kappa(cols)
    if fk is None:
        reasons["fleiss_kappa"] = ("needs at least two raters" if len(cols) < 2
                                   else "no item is rated by every rater")
    alpha, why = krippendorff_alpha(cols, "nominal")
    if why:
        reasons["krippendorff_alpha"] = why
    alpha_o, why_o = krippendorff_alpha(cols, "ordinal")
    if why_o:
        reasons["krippendorff_alpha_ordinal"] = why_o
    mpa = pairwise_agreement(cols)
    if mpa is None:
        reasons["mean_pairwise_agreement"] = ("needs at least two raters" if len(cols) < 2
                                              else "no item is rated by two raters")
    values = {
        "per_rater": per,
        "mean_accuracy": float(np.mean(accs)) if accs else None,
        "fleiss_kappa": fk,
        "fleiss_items": fleiss_items,
        "krippendorff_alpha": alpha,
        "krippendorff_alpha_ordinal": alpha_o,
        "mean_pairwise_agreement": mpa,
        "n_items": n,
        "n_raters": len(cols),
    }
    sig = make_signature("agreement", accuracy_ci=ACCURACY_CI, kappa_ci=KAPPA_CI,
                         level=confidence, fleiss="complete-items", alpha="krippendorff")
    return MetaResult("agreement", values, sig, {"reasons": reasons})
