"""Statistics of meta-evaluation: how well a diversity metric tracks a known aspect of diversity.

Every function validates its inputs once, uses scipy where scipy has the statistic, and returns a
:class:`~divmeter.core.result.MetaResult` whose signature records the settings (NaN policy,
tolerance, tie policies, number of resamples, seed) that can change the number.

NaN scores are never dropped silently: ``nan="error"`` (default) raises, ``nan="omit"`` excludes
the rows where any input is NaN and reports how many were excluded (``n_excluded``).

References:
    Tevet & Berant (2021), *Evaluating the Evaluation of Diversity in Natural Language
    Generation*, EACL (Spearman rho, optimal classification accuracy, Appendix C.2).
    CDM paper: Wilcoxon signed-rank two/one-sided, paired Cohen's d, sign accuracy, sum of
    differences. Decan paper: stage contrasts with Bonferroni correction, d_z.
    Zhang et al. (2025): pairwise preference accuracy against an annotator, 95% bootstrap and
    Clopper-Pearson intervals, Cohen's kappa between metrics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats as ss

from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetaResult, make_signature

__all__ = [
    "spearman",
    "pearson",
    "kendall",
    "oca",
    "roc_auc",
    "paired_contrast",
    "adjust_pvalues",
    "preference_accuracy",
    "preferences",
    "cohen_kappa",
    "kappa_matrix",
    "bootstrap_ci",
    "per_value_indices",
    "context_pairs",
    "ranking_test",
    "NAN_POLICIES",
]

NAN_POLICIES = ("error", "omit")
OCA_TOL = 1e-5

ArrayLike = Any


# --------------------------------------------------------------------------------------------
# input handling


def _vector(x: ArrayLike, what: str) -> np.ndarray:
    if isinstance(x, (str, bytes)):
        raise InvalidInputError(f"`{what}` must be a sequence of numbers; got a single str.")
    try:
        arr = np.asarray(
            [np.nan if v is None else v for v in x] if not isinstance(x, np.ndarray) else x,
            dtype=float,
        )
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"`{what}` must be a sequence of numbers; got {exc}.") from None
    if arr.ndim != 1:
        raise InvalidInputError(f"`{what}` must be one-dimensional; got shape {arr.shape}.")
    return arr


def _check_nan_policy(nan: str) -> None:
    if nan not in NAN_POLICIES:
        raise InvalidInputError(f"`nan` must be one of {', '.join(NAN_POLICIES)}; got {nan!r}.")


def _aligned(
    arrays: Sequence[tuple[ArrayLike, str]], nan: str, *, min_n: int = 1
) -> tuple[list[np.ndarray], int]:
    """Validate equal-length numeric vectors and apply the NaN policy.

    Returns the (possibly filtered) arrays and the number of excluded rows.
    """
    _check_nan_policy(nan)
    vecs = [_vector(x, what) for x, what in arrays]
    n = len(vecs[0])
    for v, (_, what) in zip(vecs[1:], arrays[1:], strict=True):
        if len(v) != n:
            raise InvalidInputError(
                f"`{what}` must have the same length as `{arrays[0][1]}` ({n}); got {len(v)}."
            )
    for v, (_, what) in zip(vecs, arrays, strict=True):
        inf = np.isinf(v)
        if inf.any():  # no statistic here is defined on an infinite score
            raise InvalidInputError(
                f"`{what}` holds {int(inf.sum())} infinite value(s) (first at index "
                f"{int(np.flatnonzero(inf)[0])}: {v[inf][0]}); expected finite numbers.")
    bad = np.zeros(n, dtype=bool)
    for v in vecs:
        bad |= np.isnan(v)
    n_bad = int(bad.sum())
    if n_bad:
        if nan == "error":
            names = [what for v, (_, what) in zip(vecs, arrays, strict=True) if np.isnan(v).any()]
            first = int(np.flatnonzero(bad)[0])
            raise InvalidInputError(
                f"`{names[0]}` holds {n_bad} NaN/missing value(s) (first at index {first}); "
                "expected finite numbers. Pass nan='omit' (CLI: --nan omit) to exclude those "
                "rows and report how many were excluded."
            )
        vecs = [v[~bad] for v in vecs]
    if len(vecs[0]) < min_n:
        raise InvalidInputError(
            f"need at least {min_n} complete row(s); got {len(vecs[0])}"
            + (f" after excluding {n_bad} NaN row(s)." if n_bad else ".")
        )
    return vecs, n_bad


def _shown(v: float) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)


def one_class(labels: np.ndarray) -> int | None:
    """The single class of 0/1 ``labels`` that hold only one (``None`` otherwise, or when a
    label is not 0/1: :func:`_binary` refuses those)."""
    if len(labels) and ((labels == 0) | (labels == 1)).all() and labels.min() == labels.max():
        return int(labels[0])
    return None


def _binary(labels: np.ndarray, what: str = "labels") -> np.ndarray:
    ok = (labels == 0) | (labels == 1)
    if not ok.all():
        bad = labels[~ok][0]
        raise InvalidInputError(f"`{what}` must be 0 (low) or 1 (high); got {_shown(bad)}.")
    y = labels.astype(np.int8)
    if y.min() == y.max():
        raise InvalidInputError(
            f"`{what}` must contain both classes (0 = low, 1 = high diversity); "
            f"got only class {int(y[0])} ({len(y)} rows)."
        )
    return y


# --------------------------------------------------------------------------------------------
# correlations


def _correlation(
    kind: str, fn: Callable[..., Any], scores: ArrayLike, values: ArrayLike, nan: str
) -> MetaResult:
    (s, v), n_bad = _aligned([(scores, "scores"), (values, "values")], nan, min_n=2)
    sig = make_signature(kind, nan=nan)
    details: dict[str, Any] = {}
    if np.ptp(s) == 0 or np.ptp(v) == 0:
        which = "scores" if np.ptp(s) == 0 else "values"
        details["reason"] = f"`{which}` are constant: the correlation is undefined"
        stat, p = math.nan, math.nan
    else:
        res = fn(s, v)
        stat, p = float(res.statistic), float(res.pvalue)
    key = {"spearman": "rho", "pearson": "r", "kendall": "tau"}[kind]
    return MetaResult(kind, {key: stat, "p": p, "n": len(s), "n_excluded": n_bad}, sig, details)


def spearman(scores: ArrayLike, values: ArrayLike, *, nan: str = "error") -> MetaResult:
    """Spearman rank correlation of metric scores with a label or parameter (scipy underneath).

    Ties get average ranks. Constant input gives ``rho = nan`` with a reason in ``details``.

    Args:
        scores: One metric value per set.
        values: The label (0/1) or diversity parameter (temperature, ...) per set.
        nan: ``"error"`` (default) or ``"omit"`` (exclude rows with NaN, counted in
            ``n_excluded``).

    Returns:
        MetaResult with ``rho``, ``p`` (two-sided), ``n``, ``n_excluded``.

    Example:
        >>> r = spearman([0.1, 0.4, 0.3, 0.9], [0, 1, 0, 1])
        >>> round(r.rho, 4), r.n, r.signature
        (0.8944, 4, 'spearman|nan:error|v:0.1.0')
    """
    return _correlation("spearman", ss.spearmanr, scores, values, nan)


def pearson(scores: ArrayLike, values: ArrayLike, *, nan: str = "error") -> MetaResult:
    """Pearson correlation of metric scores with a label or parameter (``r``, ``p``, ``n``).

    Example:
        >>> round(pearson([1, 2, 3, 5], [2, 4, 6, 10]).r, 6)
        1.0
    """
    return _correlation("pearson", ss.pearsonr, scores, values, nan)


def kendall(scores: ArrayLike, values: ArrayLike, *, nan: str = "error") -> MetaResult:
    """Kendall's tau-b of metric scores with a label or parameter (``tau``, ``p``, ``n``).

    Example:
        >>> round(kendall([1, 2, 3], [1, 3, 2]).tau, 4)
        0.3333
    """
    return _correlation("kendall", ss.kendalltau, scores, values, nan)


# --------------------------------------------------------------------------------------------
# optimal classification accuracy and ROC AUC


def _oca_arrays(
    s: np.ndarray, y: np.ndarray, tol: float, direction: str
) -> tuple[float, float]:
    """OCA and its threshold for one score vector (exact Tevet semantics, vectorised)."""
    order = np.argsort(s, kind="stable")
    ss_ = s[order]
    high_sorted = y[order].astype(np.int64)
    cum_high = np.concatenate([[0], np.cumsum(high_sorted)])
    n = len(s)
    n_low = n - int(cum_high[-1])
    thresholds = np.unique(s)
    # number of values <= t + tol, for every candidate threshold t
    k = np.searchsorted(ss_, thresholds + tol, side="right")
    high_le = cum_high[k]
    low_gt = n_low - (k - high_le)
    acc = (high_le + low_gt) / n  # "high at or below the threshold" classifier
    if direction == "blind":
        acc = np.maximum(acc, 1.0 - acc)
    else:  # higher scores = more diverse: predict high when s > t + tol
        acc = 1.0 - acc
    best = int(np.argmax(acc))  # first (smallest) threshold among the maxima
    return float(acc[best]), float(thresholds[best])


def oca(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    direction: str = "blind",
    tol: float = OCA_TOL,
    nan: str = "error",
) -> MetaResult:
    """Optimal single-threshold classification accuracy (OCA), exactly as Tevet & Berant define it.

    Every observed score is tried as a threshold ``t``; with ``tol = 1e-5``, the accuracy of
    "label high when the score is at or below ``t + tol``" is
    ``(#high <= t + tol + #low > t + tol) / N``; the direction-blind OCA (the paper's) takes
    ``max(acc, 1 - acc)`` and maximises over thresholds. ``direction="higher"`` is the
    directional variant: only "high when score > t + tol" counts, so a metric that ranks the
    classes backwards scores below 0.5 instead of being rewarded.

    Args:
        scores: One metric value per set.
        labels: 1 = high, 0 = low content diversity.
        direction: ``"blind"`` (Tevet's OCA) or ``"higher"`` (directional).
        tol: Threshold tolerance (Tevet: 1e-5).
        nan: ``"error"`` or ``"omit"``.

    Returns:
        MetaResult with ``oca``, ``threshold`` (the smallest optimal one), ``n``, ``n_high``,
        ``n_low``, ``n_excluded``.

    Raises:
        InvalidInputError: Labels not 0/1, only one class present, NaN with ``nan="error"``.

    Example:
        >>> r = oca([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
        >>> r.oca, r.threshold, r.signature
        (1.0, 0.2, 'oca|direction:blind|tol:1e-05|nan:error|v:0.1.0')
        >>> oca([0.1, 0.2, 0.3, 0.4], [1, 1, 0, 0], direction="higher").oca
        0.5
    """
    if direction not in ("blind", "higher"):
        raise InvalidInputError(f"`direction` must be 'blind' or 'higher'; got {direction!r}.")
    if not (isinstance(tol, (int, float)) and tol >= 0):
        raise InvalidInputError(f"`tol` must be a number >= 0; got {tol!r}.")
    (s, lab), n_bad = _aligned([(scores, "scores"), (labels, "labels")], nan, min_n=2)
    y = _binary(lab)
    value, thr = _oca_arrays(s, y, float(tol), direction)
    n_high = int(y.sum())
    return MetaResult(
        "oca",
        {"oca": value, "threshold": thr, "n": len(s), "n_high": n_high,
         "n_low": len(s) - n_high, "n_excluded": n_bad},
        make_signature("oca", direction=direction, tol=float(tol), nan=nan),
    )


def _auc_arrays(s: np.ndarray, y: np.ndarray) -> float:
    ranks = ss.rankdata(s)
    n1 = int(y.sum())
    n0 = len(y) - n1
    return float((ranks[y == 1].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def roc_auc(scores: ArrayLike, labels: ArrayLike, *, nan: str = "error") -> MetaResult:
    """ROC AUC of the scores for the high class (Mann-Whitney U / (n1 n0); ties count 0.5).

    Directional: 1.0 = every high-diversity set scores above every low one, 0.5 = chance.

    Example:
        >>> roc_auc([0.1, 0.2, 0.2, 0.4], [0, 0, 1, 1]).auc
        0.875
    """
    (s, lab), n_bad = _aligned([(scores, "scores"), (labels, "labels")], nan, min_n=2)
    y = _binary(lab)
    return MetaResult(
        "roc-auc",
        {"auc": _auc_arrays(s, y), "n": len(s), "n_excluded": n_bad},
        make_signature("roc-auc", ties="half", nan=nan),
    )


# --------------------------------------------------------------------------------------------
# paired contrasts


def paired_contrast(
    a: ArrayLike,
    b: ArrayLike,
    *,
    zero_method: str = "wilcox",
    nan: str = "error",
) -> MetaResult:
    """Paired contrast of a metric on matched high (``a``) and low (``b``) diversity items.

    The statistics of the CDM paper (P1 vs P2) and the Decan paper (pipeline stages): with
    differences ``d = a - b``,

    - ``p_two_sided``: Wilcoxon signed-rank, H1: median(d) != 0 (scipy, exact or normal
      approximation as scipy chooses, ``zero_method`` for zero differences);
    - ``p_greater``: one-sided Wilcoxon, H1: median(d) > 0 (``a`` more diverse);
    - ``cohen_d``: paired Cohen's d = mean(d) / sd(d) (sd with ddof=1), i.e. d_z;
      ``d_av`` = mean(d) / ((sd(a) + sd(b)) / 2) is given beside it;
    - ``sign_accuracy``: share of pairs with a > b (ties are misses), ``n_ties``;
    - ``mean_diff``, ``sum_diff``, ``sd_diff``, ``n``.

    Args:
        a: Scores of the items expected to be more diverse.
        b: Scores of their matched, less diverse counterparts.
        zero_method: scipy's handling of zero differences: ``wilcox`` (drop them, default),
            ``pratt`` or ``zsplit``.
        nan: ``"error"`` or ``"omit"`` (drops incomplete pairs, counted in ``n_excluded``).

    Example:
        >>> r = paired_contrast([0.9, 0.8, 0.7, 0.6], [0.5, 0.6, 0.4, 0.7])
        >>> r.sign_accuracy, round(r.mean_diff, 3), round(r.cohen_d, 3), r.p_greater
        (0.75, 0.2, 0.926, 0.125)
    """
    if zero_method not in ("wilcox", "pratt", "zsplit"):
        raise InvalidInputError(
            f"`zero_method` must be one of wilcox, pratt, zsplit; got {zero_method!r}."
        )
    (x, z), n_bad = _aligned([(a, "a"), (b, "b")], nan, min_n=1)
    d = x - z
    n = len(d)
    details: dict[str, Any] = {}
    sd = float(np.std(d, ddof=1)) if n > 1 else math.nan
    mean = float(d.mean())
    if n > 1 and sd > 0:
        cohen = mean / sd
    else:
        cohen = math.nan
        details["reason_d"] = "fewer than 2 pairs or all differences equal: d is undefined"
    sd_av = (float(np.std(x, ddof=1)) + float(np.std(z, ddof=1))) / 2 if n > 1 else math.nan
    d_av = mean / sd_av if n > 1 and sd_av > 0 else math.nan
    nonzero = d != 0
    if zero_method == "wilcox" and not nonzero.any() or n < 1:
        p2 = p1 = stat = math.nan
        details["reason_p"] = "every difference is zero: the Wilcoxon test is undefined"
    else:
        try:
            w2 = ss.wilcoxon(x, z, zero_method=zero_method, alternative="two-sided")
            w1 = ss.wilcoxon(x, z, zero_method=zero_method, alternative="greater")
            stat, p2, p1 = float(w2.statistic), float(w2.pvalue), float(w1.pvalue)
        except ValueError as exc:
            p2 = p1 = stat = math.nan
            details["reason_p"] = str(exc)
    values = {
        "n": n,
        "mean_diff": mean,
        "sum_diff": float(d.sum()),
        "sd_diff": sd,
        "cohen_d": cohen,
        "d_av": d_av,
        "sign_accuracy": float((d > 0).mean()),
        "n_ties": int((~nonzero).sum()),
        "wilcoxon_w": stat,
        "p_two_sided": p2,
        "p_greater": p1,
        "n_excluded": n_bad,
    }
    return MetaResult(
        "paired-contrast", values,
        make_signature("paired-contrast", test="wilcoxon", zeros=zero_method, d="mean/sd",
                       nan=nan),
        details,
    )


def adjust_pvalues(pvalues: ArrayLike, method: str = "bonferroni") -> np.ndarray:
    """Family-wise correction of p-values: ``bonferroni`` (p * m) or ``holm`` (step-down).

    NaN p-values stay NaN and do not count in the family size. Results are capped at 1.

    Example:
        >>> adjust_pvalues([0.01, 0.04, 0.03], "bonferroni").tolist()
        [0.03, 0.12, 0.09]
        >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").tolist()
        [0.03, 0.06, 0.06]
    """
    if method not in ("bonferroni", "holm", "none"):
        raise InvalidInputError(
            f"`method` must be one of bonferroni, holm, none; got {method!r}."
        )
    p = _vector(pvalues, "pvalues")
    out = p.copy()
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if method == "none" or m == 0:
        return out
    if method == "bonferroni":
        out[ok] = np.minimum(p[ok] * m, 1.0)
        return out
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(p[idx], kind="stable")]
    adj = p[order] * (m - np.arange(m))
    adj = np.minimum(np.maximum.accumulate(adj), 1.0)
    out[order] = adj
    return out


# --------------------------------------------------------------------------------------------
# decTest sub-sampling and ranking (Tevet & Berant section 6.3, appendix C.1)

RANK_ORDERS = ("ascending", "row")
#: Decimals kept in the ranking test's pair differences (float noise must not break ties).
DIFF_DECIMALS = 12


def per_value_indices(
    values: ArrayLike, per_value: int, repeats: int, seed: int
) -> np.ndarray:
    """Row indices of ``repeats`` stratified sub-samples: ``per_value`` rows of each value.

    Tevet & Berant section 6.3: of 1K sets (10 per temperature, 100 temperatures) they
    "evaluated 200 (2 random sets per temperature)" and repeated this 100 times. Each
    repetition draws, for every distinct value, ``per_value`` of its rows without replacement
    (all of them when the value has fewer rows); repetitions are independent. One seeded
    ``numpy.random.default_rng(seed)`` draws a ``(repeats, n)`` matrix of uniform keys; within a
    value the rows with the smallest keys are taken.

    Args:
        values: The parameter per row (temperature, ...), without NaN.
        per_value: Rows drawn per distinct value (2 in the paper).
        repeats: Number of sub-samples (100 in the paper).
        seed: Seed of the numpy Generator.

    Returns:
        Integer array of shape ``(repeats, m)``, ``m = sum(min(per_value, count(value)))``;
        each row lists its indices grouped by value (ascending), in random order within a value.

    Example:
        >>> idx = per_value_indices([0.2, 0.2, 0.2, 0.7, 0.7, 1.2], 2, 3, seed=0)
        >>> idx.shape, sorted(np.asarray([0.2, 0.2, 0.2, 0.7, 0.7, 1.2])[idx[0]].tolist())
        ((3, 5), [0.2, 0.2, 0.7, 0.7, 1.2])
    """
    v = _vector(values, "values")
    codes = np.unique(v, return_inverse=True)[1].ravel()
    counts = np.bincount(codes)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rand = np.random.default_rng(seed).random((repeats, len(v)))
    order = np.lexsort((rand, np.broadcast_to(codes, rand.shape)), axis=-1)
    sorted_codes = np.sort(codes, kind="stable")
    keep = (np.arange(len(v)) - starts[sorted_codes]) < per_value
    return order[:, keep]


def context_pairs(
    scores: np.ndarray, values: np.ndarray, contexts: Sequence[Any], order: str = "ascending"
) -> tuple[np.ndarray, np.ndarray]:
    """Score and parameter differences over the pairs of rows that share a context.

    Only pairs with different parameter values count. ``order="ascending"`` takes every pair
    as (higher-parameter row) - (lower-parameter row), so the parameter difference is > 0;
    ``order="row"`` takes (later row) - (earlier row) in input order, as the pair would be
    shown (set 2 minus set 1). Pairs come in row order of their first member. Differences are
    rounded to 12 decimals (``DIFF_DECIMALS``) so that equal differences of decimal inputs tie
    for Spearman's average ranks (in floats, 0.6 - 0.2 != 1.0 - 0.6).
    """
    groups: dict[Any, list[int]] = {}
    for row, c in enumerate(contexts):
        groups.setdefault(c, []).append(row)
    first: list[int] = []
    second: list[int] = []
    for rows in groups.values():
        for a in range(len(rows)):
            for b in range(a + 1, len(rows)):
                first.append(rows[a])
                second.append(rows[b])
    perm = np.lexsort((np.asarray(second, dtype=int), np.asarray(first, dtype=int)))
    i = np.asarray(first, dtype=int)[perm]
    j = np.asarray(second, dtype=int)[perm]
    dv = np.round(values[j] - values[i], DIFF_DECIMALS)
    ds = np.round(scores[j] - scores[i], DIFF_DECIMALS)
    if order == "ascending":
        flip = np.where(dv < 0, -1.0, 1.0)
        dv, ds = dv * flip, ds * flip
    keep = dv != 0
    return ds[keep], dv[keep]


def ranking_test(
    scores: ArrayLike,
    values: ArrayLike,
    contexts: Sequence[Any],
    *,
    order: str = "ascending",
    nan: str = "error",
) -> MetaResult:
    """The ranking version of decTest (Tevet & Berant, appendix C.1 and Table 5).

    "Each context is given along with two sets ... produced with different temperature
    values"; "the automatic metrics are the difference between the scores each of the two sets
    got". Over every pair of sets of the same context with different parameter values:

    - ``rank_spearman``: Spearman rho between the metric difference and the parameter
      difference (with ``rank_spearman_p``);
    - ``rank_accuracy``: share of pairs where the sign of the metric difference agrees with
      the sign of the parameter difference; a metric tie is a miss (footnote 7).

    Args:
        scores: One metric value per set.
        values: The decoding parameter per set.
        contexts: The context (prompt) of each set; pairs never cross contexts.
        order: How a pair is oriented (changes the Spearman value, not the accuracy):
            ``ascending`` (higher minus lower parameter) or ``row`` (later minus earlier row).
        nan: ``error`` or ``omit``.

    Returns:
        MetaResult with ``rank_spearman``, ``rank_spearman_p``, ``rank_accuracy``,
        ``n_rank_pairs``, ``n_excluded``; NaN statistics (with ``details["reason"]``) when
        fewer than 2 pairs exist.

    Raises:
        InvalidInputError: Bad ``order``, or ``contexts`` of another length.

    Example:
        >>> r = ranking_test([0.1, 0.5, 0.2, 0.3], [0.2, 1.0, 0.4, 0.9], ["a", "a", "b", "b"])
        >>> r.rank_accuracy, r.n_rank_pairs, round(r.rank_spearman, 3)
        (1.0, 2, 1.0)
    """
    if order not in RANK_ORDERS:
        raise InvalidInputError(
            f"`order` of the ranking test must be one of {', '.join(RANK_ORDERS)}; got {order!r}."
        )
    if isinstance(contexts, (str, bytes)):
        raise InvalidInputError("`contexts` must be a sequence (one context per set); got str.")
    ctx = list(contexts)
    n_rows = len(_vector(scores, "scores"))
    if len(ctx) != n_rows:
        raise InvalidInputError(
            f"`contexts` must have one entry per set ({n_rows}); got {len(ctx)}."
        )
    (s, v, rows), n_bad = _aligned(
        [(scores, "scores"), (values, "values"), (np.arange(n_rows), "rows")], nan, min_n=1
    )
    ds, dv = context_pairs(s, v, [ctx[int(r)] for r in rows], order)
    details: dict[str, Any] = {}
    if len(ds) >= 2 and np.ptp(ds) > 0 and np.ptp(dv) > 0:
        res = ss.spearmanr(ds, dv)
        rho, p = float(res.statistic), float(res.pvalue)
    else:
        rho = p = math.nan
        details["reason"] = (
            "fewer than 2 same-context pairs with different parameter values"
            if len(ds) < 2 else "the differences are constant: Spearman is undefined"
        )
    values_out = {
        "rank_spearman": rho,
        "rank_spearman_p": p,
        "rank_accuracy": float((np.sign(ds) == np.sign(dv)).mean()) if len(ds) else math.nan,
        "n_rank_pairs": int(len(ds)),
        "n_excluded": n_bad,
    }
    return MetaResult(
        "ranking-test", values_out,
        make_signature("ranking-test", pairs="same-context", order=order, ties="miss", nan=nan),
        details,
    )


# --------------------------------------------------------------------------------------------
# pairwise preference accuracy and kappa

METRIC_TIE_POLICIES = ("miss", "half", "drop", "match")
LABEL_TIE_POLICIES = ("drop", "keep")


def preferences(score1: ArrayLike, score2: ArrayLike, *, tol: float = 0.0) -> np.ndarray:
    """A metric's pairwise decisions: 0 = set1 more diverse, 1 = set2, 2 = tie (|diff| <= tol).

    NaN in either score gives -1 (no decision).

    Example:
        >>> preferences([0.5, 0.2, 0.3], [0.1, 0.4, 0.3]).tolist()
        [0, 1, 2]
    """
    a = _vector(score1, "score1")
    b = _vector(score2, "score2")
    if len(a) != len(b):
        raise InvalidInputError(
            f"`score2` must have the same length as `score1` ({len(a)}); got {len(b)}."
        )
    d = a - b
    out = np.where(d > tol, 0, np.where(d < -tol, 1, 2)).astype(np.int8)
    out[np.isnan(d)] = -1
    return out


def _clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    ci = ss.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def preference_accuracy(
    score1: ArrayLike,
    score2: ArrayLike,
    labels: ArrayLike,
    *,
    metric_ties: str = "miss",
    label_ties: str = "drop",
    rating1: ArrayLike | None = None,
    rating2: ArrayLike | None = None,
    min_rating_diff: float | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    nan: str = "error",
) -> MetaResult:
    """Share of pairs where a metric prefers the same set as the annotator, with 95% CIs.

    The accuracy of Zhang et al. (2025): a pair (set1, set2) counts as correct when the metric
    and the annotator consider the same set more diverse. Ties are explicit policies:

    - ``metric_ties`` (metric scores equal): ``miss`` (wrong; Tevet's decTest rule), ``half``
      (half a point), ``drop`` (pair excluded), ``match`` (correct only if the label is a tie).
    - ``label_ties`` (annotator label 2): ``drop`` (excluded) or ``keep`` (correct only when the
      metric ties too).
    - ``min_rating_diff``: with annotator ratings ``rating1``/``rating2``, drop pairs whose
      ratings differ by less than this (the paper uses 0.5).

    Args:
        score1: Metric score of set1 per pair.
        score2: Metric score of set2 per pair.
        labels: Annotator decision: 0 = set1 more diverse, 1 = set2, 2 = tie.
        metric_ties: See above.
        label_ties: See above.
        rating1: Annotator rating of set1 (optional, for ``min_rating_diff``).
        rating2: Annotator rating of set2.
        min_rating_diff: Filter threshold on ``|rating1 - rating2|``.
        confidence: Confidence level of the intervals.
        n_resamples: Bootstrap resamples (percentile interval, one seeded index matrix).
        seed: Seed of the numpy Generator.
        nan: ``"error"`` or ``"omit"``.

    Returns:
        MetaResult with ``accuracy``, ``ci_low``/``ci_high`` (bootstrap percentile) and
        ``ci_half_width`` (what Zhang et al. print as subscripts),
        ``cp_low``/``cp_high`` (Clopper-Pearson; for ``half`` credit the number of correct pairs
        is rounded down), ``n``, ``n_correct``, ``n_metric_ties``, ``n_filtered``,
        ``n_label_ties_dropped``, ``n_metric_ties_dropped``, ``n_excluded``.

    Example:
        >>> r = preference_accuracy([3, 1, 2, 5], [1, 2, 2, 4], [0, 1, 0, 1], n_resamples=200)
        >>> r.accuracy, r.n, r.signature
        (0.5, 4, 'preference-accuracy|metric-ties:miss|label-ties:drop|ci:percentile,clopper-pearson|level:0.95|resamples:200|seed:0|nan:error|v:0.1.0')
    """  # noqa: E501
    if metric_ties not in METRIC_TIE_POLICIES:
        raise InvalidInputError(
            f"`metric_ties` must be one of {', '.join(METRIC_TIE_POLICIES)}; got {metric_ties!r}."
        )
    if label_ties not in LABEL_TIE_POLICIES:
        raise InvalidInputError(
            f"`label_ties` must be one of {', '.join(LABEL_TIE_POLICIES)}; got {label_ties!r}."
        )
    _check_level(confidence)
    _check_resamples(n_resamples)
    cols: list[tuple[ArrayLike, str]] = [(score1, "score1"), (score2, "score2"),
                                         (labels, "labels")]
    use_ratings = min_rating_diff is not None
    if use_ratings:
        if rating1 is None or rating2 is None:
            raise InvalidInputError(
                "`min_rating_diff` needs the annotator ratings `rating1` and `rating2`."
            )
        cols += [(rating1, "rating1"), (rating2, "rating2")]
    vecs, n_bad = _aligned(cols, nan, min_n=1)
    a, b, lab = vecs[:3]
    if not np.isin(lab, (0, 1, 2)).all():
        bad = lab[~np.isin(lab, (0, 1, 2))][0]
        raise InvalidInputError(
            f"`labels` must be 0 (set1 more diverse), 1 (set2) or 2 (tie); got {_shown(bad)}."
        )
    keep = np.ones(len(a), dtype=bool)
    n_filtered = 0
    if use_ratings:
        diff_ok = np.abs(vecs[3] - vecs[4]) >= float(min_rating_diff)  # type: ignore[arg-type]
        n_filtered = int((~diff_ok).sum())
        keep &= diff_ok
    label_tie = lab == 2
    n_label_ties_dropped = 0
    if label_ties == "drop":
        n_label_ties_dropped = int((label_tie & keep).sum())
        keep &= ~label_tie
    pred = preferences(a, b)
    metric_tie = pred == 2
    n_metric_ties_dropped = 0
    if metric_ties == "drop":
        n_metric_ties_dropped = int((metric_tie & keep).sum())
        keep &= ~metric_tie
    pred, lab, metric_tie = pred[keep], lab[keep].astype(np.int8), metric_tie[keep]
    n = len(pred)
    if n < 2:  # one pair measures nothing (its bootstrap interval is the pair itself)
        raise InvalidInputError(
            ("no pairs left" if n == 0 else "one pair left")
            + (f" after filtering ({n_filtered} below min_rating_diff, {n_label_ties_dropped} "
               f"annotator ties, {n_metric_ties_dropped} metric ties dropped)" if len(a) > n
               else "") + "; preference accuracy needs at least 2 pairs."
        )
    credit = (pred == lab).astype(float)
    if metric_ties == "half":
        credit[metric_tie & (lab != 2)] = 0.5
    elif metric_ties == "miss":
        credit[metric_tie] = 0.0
    acc = float(credit.mean())
    check_resample_memory(n_resamples, n, "bootstrap resamples", copies=2)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    boot = credit[idx].mean(axis=1)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    k = int(math.floor(credit.sum() + 1e-9))
    cp_lo, cp_hi = _clopper_pearson(k, n, confidence)
    values = {
        "accuracy": acc,
        "ci_low": float(lo),
        "ci_high": float(hi),
        "ci_half_width": float(hi - lo) / 2.0,
        "cp_low": cp_lo,
        "cp_high": cp_hi,
        "n": n,
        "n_correct": float(credit.sum()),
        "n_metric_ties": int(metric_tie.sum()),
        "n_filtered": n_filtered,
        "n_label_ties_dropped": n_label_ties_dropped,
        "n_metric_ties_dropped": n_metric_ties_dropped,
        "n_excluded": n_bad,
    }
    sig = make_signature(
        "preference-accuracy", **{"metric-ties": metric_ties, "label-ties": label_ties},
        **{"min-rating-diff": min_rating_diff},
        ci="percentile,clopper-pearson", level=confidence, resamples=n_resamples, seed=seed,
        nan=nan,
    )
    return MetaResult("preference-accuracy", values, sig, {"boot_se": float(boot.std(ddof=1))})


def cohen_kappa(a: ArrayLike, b: ArrayLike) -> float:
    """Cohen's kappa between two raters' categorical decisions (e.g. 0/1/2 preferences).

    ``(p_o - p_e) / (1 - p_e)``; when both raters always give the same single category
    (``p_e = 1``), kappa is defined here as 1.0 if they agree everywhere (and NaN otherwise).

    Example:
        >>> round(cohen_kappa([0, 1, 0, 1, 2], [0, 1, 1, 1, 2]), 4)
        0.6875
    """
    x = _vector(a, "a")
    y = _vector(b, "b")
    if len(x) != len(y) or len(x) == 0:
        raise InvalidInputError(
            f"`a` and `b` must be non-empty and of equal length; got {len(x)} and {len(y)}."
        )
    cats, inv = np.unique(np.concatenate([x, y]), return_inverse=True)
    k = len(cats)
    xi, yi = inv[: len(x)], inv[len(x):]
    cm = np.bincount(xi * k + yi, minlength=k * k).reshape(k, k).astype(float)
    n = cm.sum()
    po = np.trace(cm) / n
    pe = float((cm.sum(axis=1) * cm.sum(axis=0)).sum() / (n * n))
    if pe >= 1.0:
        return 1.0 if po >= 1.0 else math.nan
    return float((po - pe) / (1.0 - pe))


def kappa_matrix(decisions: Mapping[str, ArrayLike]) -> MetaResult:
    """Cohen's kappa between every two raters (metrics and, if given, the annotator).

    Args:
        decisions: Name -> decisions per pair (same length for all), e.g. from
            :func:`preferences`, plus the annotator labels.

    Returns:
        MetaResult with ``names`` and ``matrix`` (list of rows, diagonal 1.0).

    Example:
        >>> kappa_matrix({"a": [0, 1, 1], "b": [0, 1, 0]}).matrix
        [[1.0, 0.4], [0.4, 1.0]]
    """
    names = list(decisions)
    if len(names) < 1:
        raise InvalidInputError("`decisions` must name at least one rater.")
    arrs = [_vector(decisions[k], k) for k in names]
    m = len(names)
    mat = np.eye(m)
    for i in range(m):
        for j in range(i + 1, m):
            ok = (arrs[i] >= 0) & (arrs[j] >= 0) & ~np.isnan(arrs[i]) & ~np.isnan(arrs[j])
            mat[i, j] = mat[j, i] = cohen_kappa(arrs[i][ok], arrs[j][ok])
    return MetaResult(
        "kappa-matrix",
        {"names": names, "matrix": [[round(float(v), 12) for v in row] for row in mat]},
        make_signature("kappa-matrix", kappa="cohen"),
    )


# --------------------------------------------------------------------------------------------
# bootstrap


def _check_level(confidence: float) -> None:
    if not (isinstance(confidence, float) and 0.0 < confidence < 1.0):
        raise InvalidInputError(f"`confidence` must be a float in (0, 1); got {confidence!r}.")


def _check_resamples(n_resamples: int) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 2:
        raise InvalidInputError(f"`n_resamples` must be an integer >= 2; got {n_resamples!r}.")
    if n_resamples > MAX_RESAMPLES:
        raise InvalidInputError(f"`n_resamples` must be at most {MAX_RESAMPLES:,}; got "
                                f"{n_resamples:,}.")


#: The most resamples or repetitions any meta protocol draws (bootstrap, sub-sampling).
MAX_RESAMPLES = 10_000_000


def check_resample_memory(rows: int, n: int, what: str, copies: int = 4) -> None:
    """Refuse, before anything is allocated, a resampling of ``rows`` draws of ``n`` items
    whose index and value matrices (``copies`` of ``rows x n`` 8-byte numbers) exceed the
    memory limit (``--max-memory`` / ``$DIVMETER_MAX_MEMORY``, default 4G).

    Example:
        >>> check_resample_memory(10**9, 1000, "--bootstrap")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: --bootstrap 1000000000 over 1000 items needs ...
    """
    from divmeter.core.memory import current_limit, format_bytes

    need = int(rows) * max(int(n), 1) * 8 * copies
    limit = current_limit()
    if need > limit:
        raise InvalidInputError(
            f"{what} {rows} over {n} items needs about {format_bytes(need)} of memory, more than "
            f"the limit {format_bytes(limit)}; use fewer, or raise the limit with the "
            "environment variable DIVMETER_MAX_MEMORY (e.g. DIVMETER_MAX_MEMORY=16G).")


def bootstrap_ci(
    statistic: Callable[..., np.ndarray],
    data: Sequence[ArrayLike],
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    method: str = "percentile",
    seed: int = 0,
    batch: int | None = None,
    name: str = "statistic",
) -> MetaResult:
    """Vectorised paired bootstrap confidence interval (percentile or BCa), seeded.

    Rows of ``data`` are resampled together (paired): one ``(n_resamples, n)`` index matrix is
    drawn from ``numpy.random.default_rng(seed)`` (the same draws as
    ``scipy.stats.bootstrap(..., paired=True, vectorized=True, random_state=seed)``), and
    ``statistic`` is called on 2-D arrays with ``axis=-1``, so 10,000 resamples cost a handful
    of numpy calls. ``batch`` bounds memory by evaluating the statistic on row blocks.

    For :func:`spearman_stat`, :func:`auc_stat` and :func:`oca_stat` no resample is sorted: a
    resample only holds values of the original data, so each value is replaced once by its
    index among the distinct original values, and ranks / class counts per resample come from
    counting those indices (``bincount`` + ``cumsum``), O(B n) instead of O(B n log n). The
    numbers are those of the plain statistic on the resampled arrays.

    Args:
        statistic: ``f(*arrays, axis=-1) -> array``; must work on 1-D and 2-D input.
        data: Equal-length 1-D arrays (NaN not allowed: clean them first).
        n_resamples: Number of bootstrap resamples.
        confidence: Confidence level.
        method: ``percentile`` or ``bca`` (bias-corrected and accelerated, jackknife).
        seed: Seed of the numpy Generator.
        batch: Resamples per statistic call (``None``: all at once).
        name: Recorded in the signature.

    Returns:
        MetaResult with ``estimate``, ``low``, ``high``, ``se``, ``n``.

    Example:
        >>> r = bootstrap_ci(np.mean, [np.arange(10.0)], n_resamples=1000, seed=1)
        >>> round(r.estimate, 2), r.low < 4.5 < r.high
        (4.5, True)
    """
    if method not in ("percentile", "bca"):
        raise InvalidInputError(f"`method` must be percentile or bca; got {method!r}.")
    _check_level(confidence)
    _check_resamples(n_resamples)
    arrays, _ = _aligned([(d, f"data[{i}]") for i, d in enumerate(data)], "error", min_n=2)
    n = len(arrays[0])
    check_resample_memory(n_resamples, n, "bootstrap resamples", copies=2 + len(arrays))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    step = n_resamples if batch is None else max(1, int(batch))
    fast = _BY_COUNTING.get(statistic)
    prep = fast[0](arrays) if fast is not None else None
    parts = []
    for start in range(0, n_resamples, step):
        block = idx[start:start + step]
        if fast is not None:
            parts.append(fast[1](prep, block))
        else:
            parts.append(np.asarray(statistic(*[a[block] for a in arrays], axis=-1), dtype=float))
    theta_b = np.concatenate(parts)
    theta = float(statistic(*arrays, axis=-1))
    alpha = 1.0 - confidence
    if method == "percentile":
        lo, hi = np.quantile(theta_b, [alpha / 2, 1 - alpha / 2])
    else:
        lo, hi = _bca(statistic, arrays, theta, theta_b, alpha)
    return MetaResult(
        "bootstrap",
        {"estimate": theta, "low": float(lo), "high": float(hi),
         "se": float(np.std(theta_b, ddof=1)), "n": n},
        make_signature("bootstrap", statistic=name, method=method, level=confidence,
                       resamples=n_resamples, seed=seed),
    )


def _bca(
    statistic: Callable[..., np.ndarray],
    arrays: list[np.ndarray],
    theta: float,
    theta_b: np.ndarray,
    alpha: float,
) -> tuple[float, float]:
    """BCa interval (Efron & Tibshirani 1993, ch. 14); jackknife as one (n, n-1) matrix."""
    n = len(arrays[0])
    prop = (np.sum(theta_b < theta) + 0.5 * np.sum(theta_b == theta)) / len(theta_b)
    z0 = ss.norm.ppf(prop)
    jk_idx = np.array([np.delete(np.arange(n), i) for i in range(n)])
    theta_j = np.asarray(statistic(*[a[jk_idx] for a in arrays], axis=-1), dtype=float)
    diff = theta_j.mean() - theta_j
    denom = 6.0 * (np.sum(diff**2) ** 1.5)
    acc = float(np.sum(diff**3) / denom) if denom > 0 else 0.0
    z = ss.norm.ppf([alpha / 2, 1 - alpha / 2])
    adj = ss.norm.cdf(z0 + (z0 + z) / (1 - acc * (z0 + z)))
    if np.isnan(adj).any():
        return math.nan, math.nan
    lo, hi = np.quantile(theta_b, adj)
    return float(lo), float(hi)


# vectorised statistics usable by bootstrap_ci -------------------------------------------------


def spearman_stat(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman rho along ``axis`` (average ranks), for 1-D or 2-D input; NaN where constant."""
    rx = ss.rankdata(x, axis=axis)
    ry = ss.rankdata(y, axis=axis)
    return _pearson_stat(rx, ry, axis)


def _pearson_stat(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    xm = x - x.mean(axis=axis, keepdims=True)
    ym = y - y.mean(axis=axis, keepdims=True)
    num = (xm * ym).sum(axis=axis)
    den = np.sqrt((xm * xm).sum(axis=axis) * (ym * ym).sum(axis=axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def auc_stat(scores: np.ndarray, labels: np.ndarray, axis: int = -1) -> np.ndarray:
    """ROC AUC along ``axis`` for 1-D or 2-D input (NaN when a resample has one class)."""
    ranks = ss.rankdata(scores, axis=axis)
    y = labels.astype(float)
    n1 = y.sum(axis=axis)
    n0 = y.shape[axis] - n1
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((ranks * y).sum(axis=axis) - n1 * (n1 + 1) / 2.0) / (n1 * n0)


def oca_stat(
    scores: np.ndarray, labels: np.ndarray, axis: int = -1, *, tol: float = OCA_TOL
) -> np.ndarray:
    """Direction-blind OCA along the last axis for 1-D or 2-D input (Tevet semantics).

    Vectorised over rows: each row is sorted once, and the count of values <= t + tol for every
    candidate threshold t (the row's own values) comes from one searchsorted on row-offset keys.
    """
    s = np.atleast_2d(np.asarray(scores, dtype=float))
    y = np.atleast_2d(np.asarray(labels)).astype(np.int64)
    b, n = s.shape
    order = np.argsort(s, axis=1, kind="stable")
    s_sorted = np.take_along_axis(s, order, axis=1)
    y_sorted = np.take_along_axis(y, order, axis=1)
    cum_high = np.concatenate([np.zeros((b, 1), dtype=np.int64), np.cumsum(y_sorted, 1)], 1)
    n_low = n - cum_high[:, -1:]
    # row-offset keys keep rows apart inside one flat searchsorted
    lo = s_sorted.min()
    span = float(s_sorted.max() - lo) + 4.0 * tol + 1.0
    offs = (np.arange(b) * span)[:, None]
    keys = (s_sorted - lo + offs).ravel()
    k = np.searchsorted(keys, (s_sorted - lo + tol + offs).ravel(), side="right")
    k = k.reshape(b, n) - (np.arange(b) * n)[:, None]
    high_le = np.take_along_axis(cum_high, k, axis=1)
    low_gt = n_low - (k - high_le)
    acc = (high_le + low_gt) / n
    best = np.maximum(acc, 1.0 - acc).max(axis=1)
    return best if np.ndim(scores) > 1 else best[0]


# resampling statistics by counting ---------------------------------------------------------


def _groups(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct sorted values of ``x`` and each element's index among them."""
    u, inv = np.unique(x, return_inverse=True)
    return u, inv.astype(np.int64)


def _row_counts(g: np.ndarray, n_groups: int) -> np.ndarray:
    """(B, n) group indices -> (B, n_groups) counts per row."""
    b = g.shape[0]
    flat = (g + (np.arange(b, dtype=np.int64) * n_groups)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n_groups).reshape(b, n_groups)


def _avg_ranks(g: np.ndarray, n_groups: int) -> np.ndarray:
    """Average ranks (1-based, ties averaged) of every element of each row of group indices."""
    counts = _row_counts(g, n_groups)
    before = np.cumsum(counts, axis=1) - counts
    rank_of_group = before + (counts + 1) / 2.0
    return np.take_along_axis(rank_of_group, g, axis=1)


def _spearman_prep(arrays: list[np.ndarray]) -> Any:
    return _groups(arrays[0]), _groups(arrays[1])


def _spearman_resampled(prep: Any, idx: np.ndarray) -> np.ndarray:
    (ux, gx), (uy, gy) = prep
    rx = _avg_ranks(gx[idx], len(ux))
    ry = _avg_ranks(gy[idx], len(uy))
    return _pearson_stat(rx, ry, -1)


def _class_prep(arrays: list[np.ndarray]) -> Any:
    u, g = _groups(arrays[0])
    return u, g, np.asarray(arrays[1]).astype(np.int64)


def _class_counts(prep: Any, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u, g, y = prep
    k = len(u)
    hi = _row_counts(np.where(y[idx] == 1, g[idx], k), k + 1)[:, :k]
    lo = _row_counts(np.where(y[idx] == 0, g[idx], k), k + 1)[:, :k]
    return hi, lo


def _auc_resampled(prep: Any, idx: np.ndarray) -> np.ndarray:
    hi, lo = _class_counts(prep, idx)
    lo_below = np.cumsum(lo, axis=1) - lo
    n1, n0 = hi.sum(axis=1), lo.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (hi * (lo_below + 0.5 * lo)).sum(axis=1) / (n1 * n0)


def _oca_resampled(prep: Any, idx: np.ndarray, tol: float = OCA_TOL) -> np.ndarray:
    u = prep[0]
    hi, lo = _class_counts(prep, idx)
    n = idx.shape[1]
    # values <= u_g + tol are the groups before position c_g
    c = np.searchsorted(u, u + tol, side="right")
    cum_hi = np.concatenate([np.zeros((len(idx), 1)), np.cumsum(hi, axis=1)], axis=1)
    cum_lo = np.concatenate([np.zeros((len(idx), 1)), np.cumsum(lo, axis=1)], axis=1)
    n_lo = cum_lo[:, -1:]
    acc = (cum_hi[:, c] + n_lo - cum_lo[:, c]) / n
    acc = np.maximum(acc, 1.0 - acc)
    acc[(hi + lo) == 0] = -np.inf  # thresholds are the values present in the resample
    return acc.max(axis=1)


_BY_COUNTING: dict[Any, tuple[Callable[..., Any], Callable[..., np.ndarray]]] = {
    spearman_stat: (_spearman_prep, _spearman_resampled),
    auc_stat: (_class_prep, _auc_resampled),
    oca_stat: (_class_prep, _oca_resampled),
}
