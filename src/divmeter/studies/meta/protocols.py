"""Meta-evaluation protocols of the five papers, on score arrays (any metric, any column).

* :func:`contest` (Tevet & Berant conTest): binary label -> Spearman rho, OCA, ROC AUC.
* :func:`dectest` (Tevet & Berant decTest): continuous parameter -> Spearman / Pearson, the
  repeated sub-sampling of section 6.3 (2 sets per temperature, or k uniform rows, 100 times)
  with mean and std, pairwise sign accuracy, and the ranking test of appendix C.1 / Table 5
  over pairs of sets of the same context.
* :func:`nuggets_resample` (Tevet & Berant Appendix C.2): a form-neutralised subset.
* :func:`paired` (CDM P1 vs P2) and :func:`stages` (Decan pipeline stages) with Wilcoxon tests,
  d_z, sign accuracy and Bonferroni/Holm correction over the pre-registered contrasts
  (exploratory ones reported uncorrected); both orient lower-is-more-diverse metrics first.
  :func:`paired_matched` / :func:`paired_stages` match the rows of one table by a key
  (:func:`match_conditions`) before calling them.
* :func:`pairwise` (Zhang et al. 2025): preference accuracy with CIs and the kappa matrix.

The PATTR paper's length-bias protocol lives beside PATTR's other code
(:func:`divmeter.studies.meta.pattr.length_bias`) and returns a :class:`ProtocolResult` too.

Each protocol returns a :class:`ProtocolResult`: one :class:`~divmeter.core.result.MetaResult` per
metric (keyed by metric/column name), the settings, and the arrays the plots need.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetaResult, jsonable, make_signature
from divmeter.studies.meta import stats as st

__all__ = [
    "ProtocolResult",
    "contest",
    "dectest",
    "nuggets_resample",
    "paired",
    "paired_matched",
    "paired_stages",
    "match_conditions",
    "stages",
    "parse_contrast",
    "pairwise",
]


@dataclass
class ProtocolResult:
    """The outcome of a protocol over several metrics.

    Attributes:
        protocol: ``contest``, ``dectest``, ``paired``, ``stages``, ``pairwise``, ``length-bias``.
        results: Metric/column name -> MetaResult (its ``values`` are the table row).
        settings: Resolved settings echoed in every output (NaN and empty-set policies, seed, ...).
        arrays: Per-metric arrays for plots (scores, labels, differences ...), not serialised.
        extra: Protocol-level results (kappa matrix, ...).
    """

    protocol: str
    results: dict[str, MetaResult]
    settings: dict[str, Any]
    arrays: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{name: {values..., signature, settings...}}`` (keyed by metric)."""
        out: dict[str, Any] = {}
        for name, res in self.results.items():
            row = jsonable(dict(res.values))
            row.update(jsonable(self.settings))
            row["signature"] = res.signature
            if res.details:
                row["details"] = jsonable(dict(res.details))
            out[name] = row
        return out


def metric_signature_of(res: MetaResult) -> str | None:
    """The signature of the metric whose scores a protocol row is about (``None``: a
    precomputed column that carries none, such as Tevet's ``metric_*``)."""
    sig = (res.details or {}).get("metric_signature")
    return sig if isinstance(sig, str) else None


def attach_metric_signatures(result: ProtocolResult, signatures: Mapping[str, str]
                             ) -> ProtocolResult:
    """``result`` with each row's ``details["metric_signature"]``: the signature of the metric
    (or ``divmeter score`` column) its numbers come from, which every table, JSON and HTML
    report shows beside the protocol's own signature (issue 31).

    Rows are named by their metric (contest, dectest, paired, pairwise, length bias),
    ``"<metric> <contrast>"`` or, with one metric, the contrast alone (stages). A row whose
    metric has no signature (a precomputed column) is left as it is.

    Example:
        >>> r = contest({"m": [0.1, 0.5, 0.2, 0.9]}, [0, 1, 0, 1])
        >>> attach_metric_signatures(r, {"m": "m|n:1|v:1"}).results["m"].details
        {'metric_signature': 'm|n:1|v:1'}
    """
    if not signatures:
        return result
    longest = sorted(signatures, key=len, reverse=True)
    for row, res in list(result.results.items()):
        metric = row if row in signatures else next(
            (m for m in longest if row.startswith((f"{m} ", f"{m}: "))), None)
        if metric is None and len(signatures) == 1 and result.protocol == "stages":
            metric = longest[0]
        if metric is None:
            continue
        details = {**dict(res.details or {}), "metric_signature": signatures[metric]}
        result.results[row] = MetaResult(res.name, res.values, res.signature, details)
    return result


def _data_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The data-preparation settings that change numbers (empty-set policy, rounding)."""
    s = settings or {}
    return {k: s[k] for k in ("empty", "round") if k in s}


def _orient(
    scores: Mapping[str, Any], directions: Mapping[str, str] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Scores turned so that higher = more diverse, and each metric's direction.

    Metrics whose headline value falls as diversity rises (self-BLEU, homogenization) are
    negated; unknown names count as ``higher``.
    """
    dirs = {name: (directions or {}).get(name, "higher") for name in scores}
    for name, d in dirs.items():
        if d not in ("higher", "lower"):
            raise InvalidInputError(
                f"direction of {name!r} must be 'higher' or 'lower' (= more diverse); got {d!r}."
            )
    oriented = {
        name: (-np.asarray(st._vector(v, name)) if dirs[name] == "lower" else v)
        for name, v in scores.items()
    }
    return oriented, dirs


def _check_scores(scores: Mapping[str, Any]) -> None:
    if not isinstance(scores, Mapping) or not scores:
        raise InvalidInputError(
            "`scores` must be a non-empty mapping of metric name -> one score per set."
        )


# --------------------------------------------------------------------------------------------
# conTest


def _boot_cis(
    stats: Mapping[str, Callable[..., Any]],
    data: list[np.ndarray],
    n_resamples: int,
    method: str,
    confidence: float,
    seed: int,
) -> dict[str, list[float]]:
    out = {}
    for key, fn in stats.items():
        r = st.bootstrap_ci(fn, data, n_resamples=n_resamples, method=method,
                            confidence=confidence, seed=seed, batch=1000, name=key)
        out[f"{key}_ci"] = [r.low, r.high]
    return out


def contest(
    scores: Mapping[str, Any],
    labels: Any,
    *,
    nan: str = "error",
    tol: float = st.OCA_TOL,
    bootstrap: int | None = None, ci_method: str = "percentile", confidence: float = 0.95,
    seed: int = 0,
    metric_signatures: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> ProtocolResult:
    """Tevet & Berant's conTest: how well each metric separates high from low content diversity.

    For every metric: Spearman rho with the 0/1 label (and its p-value), the direction-blind OCA
    and its threshold, the directional OCA (``oca_directional``: high when score > t) and ROC AUC.

    Args:
        scores: Metric name -> one score per set.
        labels: 1 = high, 0 = low content diversity, per set.
        nan: ``error`` or ``omit`` (per metric; ``n_excluded`` says how many rows).
        tol: OCA threshold tolerance (1e-5 as in the paper's code).
        bootstrap: Number of bootstrap resamples for CIs of Spearman, OCA and AUC
            (``spearman_ci``, ``oca_ci``, ``auc_ci`` as [low, high]); ``None``: no CIs.
        ci_method: ``percentile`` or ``bca``.
        confidence: Confidence level of the CIs.
        seed: Seed of the bootstrap (numpy Generator).
        metric_signatures: Metric name -> signature of the metric that produced the scores.
        settings: Extra settings to echo (e.g. the empty-set policy).

    Example:
        >>> r = contest({"m": [0.1, 0.5, 0.2, 0.9]}, [0, 1, 0, 1])
        >>> {k: round(v, 3) for k, v in r.results["m"].values.items() if k in ("spearman", "oca")}
        {'spearman': 0.894, 'oca': 1.0}
    """
    _check_scores(scores)
    out: dict[str, MetaResult] = {}
    arrays: dict[str, Any] = {}
    sigs = metric_signatures or {}
    for name, sc in scores.items():
        (s, y_raw), n_bad = st._aligned([(sc, name), (labels, "labels")], nan, min_n=2)
        if st.one_class(y_raw) is not None:
            # a constant label: a documented null (exit code 0), not a refusal
            out[name], arrays[name] = _contest_one_class(name, s, y_raw, n_bad, sigs, nan,
                                                         tol, settings, bootstrap is not None)
            continue
        y = st._binary(y_raw)
        rho = st.spearman(s, y)
        o = st.oca(s, y, tol=tol)
        od = st.oca(s, y, tol=tol, direction="higher")
        values = {
            "spearman": rho.rho,
            "spearman_p": rho.p,
            "oca": o.oca,
            "oca_threshold": o.threshold,
            "oca_directional": od.oca,
            "auc": st._auc_arrays(s, y),
            "n": len(s),
            "n_high": o.n_high,
            "n_low": o.n_low,
            "n_excluded": n_bad,
        }
        if bootstrap is not None:
            values.update(_boot_cis(
                {"spearman": st.spearman_stat, "oca": st.oca_stat, "auc": st.auc_stat},
                [s, y], bootstrap, ci_method, confidence, seed,
            ))
        details = {"metric_signature": sigs[name]} if name in sigs else {}
        if rho.rho != rho.rho:
            details["reason"] = ("the metric is constant: Spearman is undefined (OCA and AUC of "
                                 "a constant score are chance level, 0.5)")
        out[name] = MetaResult(
            "contest", values,
            make_signature("contest", oca="blind", tol=float(tol), auc="mann-whitney",
                           ci=ci_method if bootstrap else None, level=confidence if bootstrap
                           else None, resamples=bootstrap, seed=seed if bootstrap else None,
                           nan=nan, **_data_settings(settings)),
            details,
        )
        arrays[name] = {"scores": s, "labels": y, "threshold": o.threshold}
    return ProtocolResult("contest", out, {"nan": nan, **dict(settings or {})}, arrays)


def _contest_one_class(name: str, s: np.ndarray, y_raw: np.ndarray, n_bad: int,
                       sigs: Mapping[str, str], nan: str, tol: float,
                       settings: Mapping[str, Any] | None, cis: bool
                       ) -> tuple[MetaResult, dict[str, Any]]:
    """conTest's row when every set has the same class: every statistic null, with why."""
    cls = int(y_raw[0])
    nan_ = math.nan  # null in JSON, "–" in the tables
    values: dict[str, Any] = {
        "spearman": nan_, "spearman_p": nan_, "oca": nan_, "oca_threshold": nan_,
        "oca_directional": nan_, "auc": nan_, "n": len(s), "n_high": int(cls == 1) * len(s),
        "n_low": int(cls == 0) * len(s), "n_excluded": n_bad}
    if cis:
        values.update({f"{k}_ci": [nan_, nan_] for k in ("spearman", "oca", "auc")})
    details: dict[str, Any] = {"metric_signature": sigs[name]} if name in sigs else {}
    details["reason"] = (f"the label is constant (only class {cls}, {len(s)} rows): conTest "
                         "compares the two classes, so no statistic is defined")
    sig = make_signature("contest", oca="blind", tol=float(tol), auc="mann-whitney", nan=nan,
                         **_data_settings(settings))
    return (MetaResult("contest", values, sig, details),
            {"scores": s, "labels": y_raw.astype(np.int8), "threshold": math.nan})


# --------------------------------------------------------------------------------------------
# decTest


def _pair_accuracy(s: np.ndarray, v: np.ndarray, chunk: int = 512) -> tuple[float, int]:
    """Share of pairs with different parameter values where the metric orders them the same way.

    Ties in the metric count as misses (Tevet & Berant, footnote 7). O(n^2) in row blocks.
    """
    n = len(s)
    hits = 0
    total = 0
    for start in range(0, n, chunk):
        i = np.arange(start, min(n, start + chunk))
        dv = v[i, None] - v[None, :]
        ds = s[i, None] - s[None, :]
        upper = np.arange(n)[None, :] > i[:, None]
        valid = upper & (dv != 0)
        total += int(valid.sum())
        hits += int((valid & (np.sign(dv) == np.sign(ds))).sum())
    return (hits / total if total else math.nan), total


SAMPLES = ("uniform", "per-temperature")


def _check_positive_int(value: Any, what: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInputError(f"`{what}` must be an integer >= {minimum}; got {value!r}.")
    if value > st.MAX_RESAMPLES:
        raise InvalidInputError(f"`{what}` must be at most {st.MAX_RESAMPLES:,}; got {value:,}.")


def _subsample_rows(
    s: np.ndarray, v: np.ndarray, sample: str | None, subsample: int | None, per_value: int,
    repeats: int, seed: int,
) -> dict[str, Any]:
    """Mean and std (ddof=0) of Spearman / Pearson over the repeated sub-samples."""
    st.check_resample_memory(repeats, len(s), "--repeats", copies=6)
    if sample == "per-temperature":
        idx = st.per_value_indices(v, per_value, repeats, seed)
        info: dict[str, Any] = {"sample": sample, "per_value": per_value,
                                "subsample_n": int(idx.shape[1]), "repeats": repeats}
    else:
        assert subsample is not None  # checked by dectest
        if subsample > len(s):
            raise InvalidInputError(
                f"`subsample` ({subsample}) is larger than the number of rows ({len(s)})."
            )
        rng = np.random.default_rng(seed)
        idx = np.argsort(rng.random((repeats, len(s))), axis=1)[:, :subsample]
        info = {"subsample": subsample, "repeats": repeats}
    rs = st.spearman_stat(s[idx], v[idx])
    rp = st._pearson_stat(s[idx], v[idx])
    import warnings

    with warnings.catch_warnings():  # every sub-sample constant: NaN (null), said in details
        warnings.simplefilter("ignore", RuntimeWarning)
        return {
            "spearman_mean": float(np.nanmean(rs)), "spearman_std": float(np.nanstd(rs)),
            "pearson_mean": float(np.nanmean(rp)), "pearson_std": float(np.nanstd(rp)), **info,
        }


def dectest(
    scores: Mapping[str, Any],
    values: Any,
    *,
    subsample: int | None = None,
    repeats: int = 100,
    seed: int = 0,
    sample: str | None = None,
    per_value: int = 2,
    pair_accuracy: bool = False,
    contexts: Any = None,
    ranking_order: str = "ascending",
    bootstrap: int | None = None, ci_method: str = "percentile", confidence: float = 0.95,
    nan: str = "error",
    metric_signatures: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> ProtocolResult:
    """Tevet & Berant's decTest: correlation of each metric with a decoding parameter.

    Spearman and Pearson (with p-values) on all rows, and optionally:

    * repeated sub-sampling (section 6.3: "evaluated 200 (2 random sets per temperature). For
      automatic metrics, we repeat this 100 times ... to present the mean and standard
      deviation"), giving ``spearman_mean``/``spearman_std`` and ``pearson_mean``/
      ``pearson_std`` (std with ddof=0) over ``repeats`` seeded sub-samples:
      ``sample="per-temperature"`` draws ``per_value`` sets of every distinct parameter value
      without replacement (the paper: 2 per temperature, 100 repeats;
      :func:`divmeter.studies.meta.stats.per_value_indices`); ``sample="uniform"`` (or just
      ``subsample=k``) draws k rows without replacement, whatever their value;
    * ``pair_accuracy``: sign agreement over all pairs of rows with different values (metric
      ties are misses);
    * ``contexts``: the ranking test of appendix C.1 / Table 5 over pairs of sets of the same
      context (``rank_spearman``, ``rank_accuracy``, ``n_rank_pairs``; see
      :func:`divmeter.studies.meta.stats.ranking_test`, ``ranking_order`` orients the pairs);
    * ``bootstrap=B``: seeded CIs ``spearman_ci`` and ``pearson_ci``.

    No sub-sampling is the default: the full-data Spearman is what the published figures
    (Tevet Table 2's means agree with it to their two decimals; Decan Table 3) need, and the
    sub-sampling only adds the spread.

    Raises:
        InvalidInputError: Bad ``sample``/``subsample``/``per_value``/``repeats``, a
            ``subsample`` larger than the data, ``contexts`` of the wrong length.

    Example:
        >>> r = dectest({"m": [0.1, 0.3, 0.2, 0.9]}, [0.2, 0.5, 0.8, 1.1])
        >>> round(r.results["m"].values["spearman"], 3)
        0.8
    """
    _check_scores(scores)
    if sample is not None and sample not in SAMPLES:
        raise InvalidInputError(
            f"`sample` must be one of {', '.join(SAMPLES)}; got {sample!r}."
        )
    if sample == "uniform" and subsample is None:
        raise InvalidInputError("`sample='uniform'` needs `subsample` (rows per repetition).")
    if sample == "per-temperature" and subsample is not None:
        raise InvalidInputError(
            "`subsample` is for sample='uniform'; with 'per-temperature' give `per_value`."
        )
    if subsample is not None:
        _check_positive_int(subsample, "subsample", 3)
    if sample == "per-temperature":
        _check_positive_int(per_value, "per_value", 1)
    resampled = sample == "per-temperature" or subsample is not None
    if resampled:
        _check_positive_int(repeats, "repeats", 1)
    if contexts is not None and ranking_order not in st.RANK_ORDERS:
        raise InvalidInputError(
            f"`ranking_order` must be one of {', '.join(st.RANK_ORDERS)}; got {ranking_order!r}."
        )
    out: dict[str, MetaResult] = {}
    arrays: dict[str, Any] = {}
    sigs = metric_signatures or {}
    for name, sc in scores.items():
        (s, v), n_bad = st._aligned([(sc, name), (values, "values")], nan, min_n=2)
        sp = st.spearman(s, v)
        pe = st.pearson(s, v)
        row: dict[str, Any] = {
            "spearman": sp.rho, "spearman_p": sp.p, "pearson": pe.r, "pearson_p": pe.p,
            "n": len(s), "n_excluded": n_bad,
        }
        if resampled:
            row.update(_subsample_rows(s, v, sample, subsample, per_value, repeats, seed))
        if pair_accuracy:
            acc, npairs = _pair_accuracy(s, v)
            row.update({"pair_accuracy": acc, "n_pairs": npairs})
        details: dict[str, Any] = {"metric_signature": sigs[name]} if name in sigs else {}
        if sp.rho is None or pe.r is None or sp.rho != sp.rho or pe.r != pe.r:
            # a documented null (exit code 0), not a refusal: say why
            details["reason"] = ("the parameter (label) is constant: no correlation is defined"
                                 if len(v) and np.all(v == v[0]) else
                                 "the metric is constant: no correlation is defined"
                                 if len(s) and np.all(s == s[0]) else
                                 (sp.details or {}).get("reason")
                                 or "no correlation is defined on these values")
        if contexts is not None:
            rk = st.ranking_test(sc, values, contexts, order=ranking_order, nan=nan)
            row.update({k: rk.values[k] for k in
                        ("rank_spearman", "rank_spearman_p", "rank_accuracy", "n_rank_pairs")})
            if "reason" in rk.details:
                details["ranking_reason"] = rk.details["reason"]
        if bootstrap is not None:
            row.update(_boot_cis({"spearman": st.spearman_stat, "pearson": st._pearson_stat},
                                 [s, v], bootstrap, ci_method, confidence, seed))
        per_t = sample == "per-temperature"
        sig = make_signature(
            "dectest", sample="per-temperature" if per_t else None,
            per_value=per_value if per_t else None, subsample=subsample,
            repeats=repeats if resampled else None,
            pairs="ties-miss" if pair_accuracy else None,
            ranking=f"same-context/{ranking_order}" if contexts is not None else None,
            ci=ci_method if bootstrap else None, level=confidence if bootstrap else None,
            resamples=bootstrap, seed=seed if (resampled or bootstrap) else None, nan=nan,
            **_data_settings(settings),
        )
        out[name] = MetaResult("dectest", row, sig, details)
        arrays[name] = {"scores": s, "values": v}
    return ProtocolResult("dectest", out, {"nan": nan, **dict(settings or {})}, arrays)


# --------------------------------------------------------------------------------------------
# McDiv_nuggets re-sampling


def nuggets_resample(
    scores: Any,
    labels: Any,
    *,
    group_size: int = 40,
    seed: int = 0,
) -> MetaResult:
    """Re-sample a labelled collection so a form metric no longer separates the classes.

    Tevet & Berant, Appendix C.2 (how McDiv_nuggets was built from McDiv): sort all sets by the
    metric (stable, so ties keep file order), cut the sorted list into consecutive groups of
    ``group_size`` (40 in the paper; the last group may be smaller), and from each group draw
    (seeded, without replacement) the same number of sets of each class, as many as the smaller
    class has there.

    Args:
        scores: The form metric (e.g. distinct-n) per set; NaN not allowed.
        labels: 1 = high, 0 = low content diversity.
        group_size: Sets per group.
        seed: Seed of the numpy Generator.

    Returns:
        MetaResult with ``n_selected``, ``n_groups``, ``spearman_before``, ``spearman_after``;
        ``details["indices"]`` holds the selected row indices (sorted).

    Example:
        >>> r = nuggets_resample([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0, 0, 1, 0, 1, 1], group_size=2)
        >>> r.n_selected, r.details["indices"].tolist()
        (2, [2, 3])
    """
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise InvalidInputError(f"`group_size` must be an integer >= 2; got {group_size!r}.")
    (s, lab), _ = st._aligned([(scores, "scores"), (labels, "labels")], "error", min_n=2)
    y = st._binary(lab)
    rng = np.random.default_rng(seed)
    order = np.argsort(s, kind="stable")
    chosen: list[np.ndarray] = []
    n_groups = 0
    for start in range(0, len(order), group_size):
        g = order[start:start + group_size]
        n_groups += 1
        hi, lo = g[y[g] == 1], g[y[g] == 0]
        k = min(len(hi), len(lo))
        if k:
            chosen.append(rng.choice(hi, k, replace=False))
            chosen.append(rng.choice(lo, k, replace=False))
    idx = np.sort(np.concatenate(chosen)) if chosen else np.array([], dtype=int)
    before = st.spearman(s, y).rho
    after = st.spearman(s[idx], y[idx]).rho if len(idx) >= 2 else math.nan
    details: dict[str, Any] = {"indices": idx}
    if np.ptp(s) == 0:
        details["reason"] = "the metric is constant: Spearman is undefined before and after"
    elif after != after:
        details["reason"] = (
            "the selection holds fewer than 2 sets: Spearman after is undefined"
            if len(idx) < 2 else "the selected sets' scores are constant: Spearman after is "
            "undefined")
    return MetaResult(
        "nuggets-resample",
        {"n_selected": int(len(idx)), "n_input": int(len(s)), "n_groups": n_groups,
         "spearman_before": before, "spearman_after": after},
        make_signature("nuggets-resample", group=group_size, seed=seed),
        details,
    )


# --------------------------------------------------------------------------------------------
# paired contrasts and stages


def paired(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    *,
    correction: str = "bonferroni",
    zero_method: str = "wilcox",
    nan: str = "error",
    bootstrap: int | None = None, ci_method: str = "percentile", confidence: float = 0.95,
    seed: int = 0,
    settings: Mapping[str, Any] | None = None,
    directions: Mapping[str, str] | None = None,
) -> ProtocolResult:
    """CDM-style P1 vs P2: per metric, the paired contrast of matched high (a) and low (b) items.

    The one-sided and two-sided Wilcoxon p-values are also corrected over the family of metrics
    (``p_greater_adj``, ``p_two_sided_adj``; ``bonferroni``, ``holm`` or ``none``). With
    ``bootstrap=B``, seeded pair-bootstrap CIs ``mean_diff_ci``, ``cohen_d_ci`` and
    ``sign_accuracy_ci``.

    The CDM paper (section 6.4) turns every baseline into a dissimilarity before asking whether
    M(P1) > M(P2): a metric listed as ``"lower"`` in ``directions`` (self-BLEU, homogenization:
    lower = more diverse) is negated first, so differences, sign accuracy and the one-sided test
    all read "a more diverse than b". Negation keeps the paper's Table 2/4 numbers for
    1 - self-BLEU: the differences are the same. Every row echoes its ``direction``.

    Example:
        >>> r = paired({"m": [3, 4, 5, 6]}, {"m": [1, 2, 6, 2]})
        >>> r.results["m"].values["sign_accuracy"], r.results["m"].values["sum_diff"]
        (0.75, 7.0)
    """
    _check_scores(a)
    if set(a) != set(b):
        raise InvalidInputError("`a` and `b` must name the same metrics.")
    a, dirs = _orient(a, directions)
    b, _ = _orient(b, directions)
    res = {k: st.paired_contrast(a[k], b[k], zero_method=zero_method, nan=nan) for k in a}
    names = list(res)
    adj_g = st.adjust_pvalues([res[k].values["p_greater"] for k in names], correction)
    adj_2 = st.adjust_pvalues([res[k].values["p_two_sided"] for k in names], correction)
    out: dict[str, MetaResult] = {}
    arrays: dict[str, Any] = {}
    for i, k in enumerate(names):
        vals = dict(res[k].values)
        vals["direction"] = dirs[k]
        vals["p_greater_adj"] = float(adj_g[i])
        vals["p_two_sided_adj"] = float(adj_2[i])
        x, _ = st._aligned([(a[k], "a"), (b[k], "b")], nan)
        if bootstrap is not None and len(x[0]) >= 2:
            vals.update(_boot_cis(
                {"mean_diff": _mean_diff_stat, "cohen_d": _cohen_d_stat,
                 "sign_accuracy": _sign_acc_stat},
                [x[0], x[1]], bootstrap, ci_method, confidence, seed,
            ))
        sig = make_signature(
            "paired", correction=correction, family=len(names), test="wilcoxon",
            zeros=zero_method, d="mean/sd", ci=ci_method if bootstrap else None,
            level=confidence if bootstrap else None, resamples=bootstrap,
            seed=seed if bootstrap else None, nan=nan, **_data_settings(settings),
        )
        out[k] = MetaResult("paired", vals, sig, res[k].details)
        arrays[k] = {"a": x[0], "b": x[1]}
    return ProtocolResult(
        "paired", out, {"nan": nan, "correction": correction, **dict(settings or {})}, arrays
    )


def _mean_diff_stat(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a - b, axis=axis)


def _cohen_d_stat(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    d = a - b
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.mean(d, axis=axis) / np.std(d, axis=axis, ddof=1)


def _sign_acc_stat(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a > b, axis=axis)


def parse_contrast(text: str) -> tuple[str, str, str]:
    """Parse ``"base>sft"`` (one-sided: base more diverse) or ``"dpo!=instruct"`` (two-sided).

    Example:
        >>> parse_contrast("base>sft"), parse_contrast("dpo!=rlvr")
        (('base', 'sft', 'greater'), ('dpo', 'rlvr', 'two-sided'))
    """
    for op, alt in (("!=", "two-sided"), (">", "greater"), ("<", "less")):
        if op in text:
            left, _, right = text.partition(op)
            if left.strip() and right.strip():
                return left.strip(), right.strip(), alt
    raise InvalidInputError(
        f"contrast must look like 'A>B' (A more diverse, one-sided), 'A<B' or 'A!=B' "
        f"(two-sided); got {text!r}."
    )


def _parse_contrasts(contrasts: Sequence[str | tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    out = []
    for c in contrasts:
        left, right, alt = parse_contrast(c) if isinstance(c, str) else tuple(c)
        if alt == "less":
            left, right, alt = right, left, "greater"
        out.append((left, right, alt))
    return out


def _contrast_key(left: str, right: str, alt: str) -> str:
    return f"{left}>{right}" if alt == "greater" else f"{left}!={right}"


def stages(
    scores: Mapping[str, Any],
    contrasts: Sequence[str | tuple[str, str, str]],
    *,
    exploratory: Sequence[str | tuple[str, str, str]] = (),
    correction: str = "bonferroni",
    zero_method: str = "wilcox",
    nan: str = "error",
    metric: str = "metric",
    direction: str = "higher",
) -> ProtocolResult:
    """Decan-style stage contrasts: one metric scored per prompt at several pipeline stages.

    Decan paper, section 6 and Table 4: three *pre-registered* one-sided paired Wilcoxon tests
    (H1a base>SFT, H1b SFT>DPO, H1c base>RLVR) Bonferroni-corrected as a family of three
    (p x 3), and one *exploratory* two-sided contrast (DPO != RLVR) reported uncorrected. So
    ``contrasts`` form the corrected family and ``exploratory`` ones are tested but never join
    it: their ``p_adj`` equals ``p``, ``exploratory`` is ``True`` and their signature says
    ``correction:none|role:exploratory``.

    Args:
        scores: Stage name -> per-prompt scores (aligned: row i is the same prompt everywhere).
        contrasts: Pre-registered contrasts: ``"base>sft"`` (one-sided Wilcoxon, H1: base more
            diverse), ``"a<b"`` or ``"dpo!=instruct"`` (two-sided), or ``(a, b, alternative)``.
        exploratory: Contrasts reported without correction (same syntax).
        correction: Family-wise correction over the pre-registered contrasts (``bonferroni``,
            ``holm``, ``none``).
        zero_method: Wilcoxon zero handling.
        nan: ``error`` or ``omit`` (per contrast).
        metric: Name of the metric, recorded in the settings.
        direction: ``"lower"`` when a lower value means more diverse (self-BLEU): the scores
            are negated first, so ``delta`` > 0 always means the left stage is more diverse.

    Returns:
        ProtocolResult keyed by contrast text, each with ``delta`` (mean difference), ``d_z``,
        ``p`` (the contrast's alternative), ``p_adj``, ``exploratory``, ``sign_accuracy``,
        ``n``, ``direction``; ``extra`` holds per-stage ``mean``/``std``/``n`` of the raw
        scores.

    Raises:
        InvalidInputError: No contrast, an unknown stage, a contrast given twice.

    Example:
        >>> r = stages({"base": [5, 6, 7, 8], "sft": [4, 4, 6, 5]}, ["base>sft"])
        >>> r.results["base>sft"].values["delta"], r.results["base>sft"].values["p"]
        (1.75, 0.0625)
    """
    _check_scores(scores)
    pre = _parse_contrasts(contrasts)
    exp = _parse_contrasts(exploratory)
    if not pre and not exp:
        raise InvalidInputError("give at least one contrast, e.g. 'base>sft'.")
    keys = [_contrast_key(*c) for c in pre + exp]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise InvalidInputError(
            f"each contrast may be given once (pre-registered or exploratory); got "
            f"{', '.join(twice)} twice."
        )
    oriented, _ = _orient(scores, {s: direction for s in scores})
    rows: dict[str, dict[str, Any]] = {}
    arrays: dict[str, Any] = {}
    details: dict[str, Any] = {}
    for i, (left, right, alt) in enumerate(pre + exp):
        for s_name in (left, right):
            if s_name not in scores:
                raise InvalidInputError(
                    f"stage {s_name!r} not found; stages: {', '.join(scores)}."
                )
        key = keys[i]
        pc = st.paired_contrast(oriented[left], oriented[right], zero_method=zero_method,
                                nan=nan)
        v = pc.values
        rows[key] = {
            "delta": v["mean_diff"], "d_z": v["cohen_d"],
            "p": v["p_greater"] if alt == "greater" else v["p_two_sided"],
            "alternative": alt, "sign_accuracy": v["sign_accuracy"], "n": v["n"],
            "n_excluded": v["n_excluded"],
        }
        (x, z), _ = st._aligned([(oriented[left], "a"), (oriented[right], "b")], nan)
        arrays[key] = {"a": x, "b": z}
        details[key] = pc.details
    adj = st.adjust_pvalues([rows[k]["p"] for k in keys[:len(pre)]], correction)
    out = {}
    for i, key in enumerate(keys):
        vals = rows[key]
        is_exp = i >= len(pre)
        vals["p_adj"] = float(vals["p"] if is_exp else adj[i])
        vals["exploratory"] = is_exp
        vals["direction"] = direction
        sig = make_signature(
            "stages", test="wilcoxon", zeros=zero_method,
            correction="none" if is_exp else correction,
            family=None if is_exp else len(pre), role="exploratory" if is_exp else None,
            direction=None if direction == "higher" else direction, nan=nan,
        )
        out[key] = MetaResult("stages", vals, sig, details[key])
    per_stage = {}
    for name, sc in scores.items():
        arr = st._vector(sc, name)
        arr = arr[~np.isnan(arr)]
        per_stage[name] = {"mean": float(arr.mean()) if len(arr) else math.nan,
                           "std": float(arr.std(ddof=1)) if len(arr) > 1 else math.nan,
                           "n": int(len(arr))}
    return ProtocolResult(
        "stages", out, {"nan": nan, "correction": correction, "metric": metric}, arrays,
        {"stages": per_stage},
    )


def match_conditions(
    keys: Sequence[str],
    conditions: Sequence[str],
    wanted: Sequence[str],
    *,
    key_name: str = "key",
    by_name: str = "condition",
) -> tuple[dict[str, np.ndarray], int]:
    """Row indices that match items across conditions (CDM P1/P2 pairs, Decan stages).

    An item (a ``key``: set id, prompt, ...) is kept when it has exactly one row in each
    condition of ``wanted``; the others are skipped and counted. Items keep first-seen order.

    Args:
        keys: Per row, what matches items across conditions.
        conditions: Per row, its condition (label, stage, ...).
        wanted: The conditions to align.
        key_name: Name of the key field, for the error message.
        by_name: Name of the condition field, for the error message.

    Returns:
        (condition -> row indices, aligned so position i is the same item everywhere;
        number of items skipped).

    Raises:
        InvalidInputError: Fewer than two items have one row in every wanted condition.

    Example:
        >>> rows, skipped = match_conditions(["a", "a", "b", "c", "c"], ["1", "0", "1", "0", "1"],
        ...                                  ["1", "0"])
        >>> rows["1"].tolist(), rows["0"].tolist(), skipped
        ([0, 4], [1, 3], 1)
    """
    if len(keys) != len(conditions):
        raise InvalidInputError(
            f"keys and conditions must have one entry per row; got {len(keys)} and "
            f"{len(conditions)}."
        )
    want = list(dict.fromkeys(wanted))
    pos: dict[str, dict[str, list[int]]] = {}
    for j, (k, c) in enumerate(zip(keys, conditions, strict=True)):
        if c in want:
            pos.setdefault(k, {}).setdefault(c, []).append(j)
    full = [g for g in pos.values() if all(len(g.get(c, [])) == 1 for c in want)]
    if len(full) < 2:  # one matched item measures nothing (a Wilcoxon p of 1 item)
        raise InvalidInputError(
            f"{'no item' if not full else 'only one item'} matched by {key_name!r} has exactly "
            f"one row in each of {by_name}={', '.join(want)}"
            + ("; a paired contrast needs at least 2" if full else "") + "; conditions found: "
            f"{', '.join(sorted(set(conditions))) or 'none'}."
        )
    rows = {c: np.asarray([g[c][0] for g in full], dtype=int) for c in want}
    return rows, len(pos) - len(full)


def paired_matched(
    scores: Mapping[str, Any],
    conditions: Sequence[str],
    keys: Sequence[str],
    *,
    high: str = "1", low: str = "0", by: str = "label", key: str = "set_id",
    directions: Mapping[str, str] | None = None, settings: Mapping[str, Any] | None = None,
    **options: Any,
) -> ProtocolResult:
    """CDM P1 vs P2 from one table: match rows by ``keys``, then :func:`paired` per metric.

    Args:
        scores: Metric/column name -> one score per row.
        conditions: Per row, its condition (e.g. the label ``"1"``/``"0"``).
        keys: Per row, the item it belongs to (e.g. the scenario / sample id).
        high: Condition expected more diverse (P1).
        low: Its matched counterpart (P2).
        by: Name of the condition field (echoed in the settings).
        key: Name of the key field (echoed in the settings).
        directions: Metric -> ``"higher"``/``"lower"`` (= more diverse), as in :func:`paired`.
        settings: Extra settings to echo.
        **options: Passed on to :func:`paired` (correction, zero_method, nan, bootstrap, ...).

    Returns:
        :func:`paired`'s result; settings add ``by``, ``key``, ``high``, ``low``,
        ``n_unmatched`` (items without exactly one row in each condition).

    Example:
        >>> r = paired_matched({"m": [3, 1, 4, 2, 5, 1]}, ["1", "0"] * 3, ["a", "a", "b", "b",
        ...                    "c", "c"])
        >>> r.results["m"].values["sign_accuracy"], r.settings["n_unmatched"]
        (1.0, 0)
    """
    _check_scores(scores)
    rows, skipped = match_conditions(keys, conditions, [high, low], key_name=key, by_name=by)
    info = {**dict(settings or {}), "by": by, "key": key, "high": high, "low": low,
            "n_unmatched": skipped}
    return paired({k: st._vector(v, k)[rows[high]] for k, v in scores.items()},
                  {k: st._vector(v, k)[rows[low]] for k, v in scores.items()},
                  directions=directions, settings=info, **options)


def paired_stages(
    scores: Mapping[str, Any],
    conditions: Sequence[str],
    keys: Sequence[str],
    contrasts: Sequence[str],
    *,
    exploratory: Sequence[str] = (), by: str = "stage", key: str = "set_id",
    correction: str = "bonferroni", zero_method: str = "wilcox", nan: str = "error",
    directions: Mapping[str, str] | None = None, settings: Mapping[str, Any] | None = None,
) -> ProtocolResult:
    """Decan stage contrasts from one table: align stages by ``keys``, then :func:`stages`.

    Every stage named in any contrast (pre-registered or exploratory) is aligned on the items
    that have exactly one row in each of them (Decan's length-matched subset is the same
    prompts at every stage); the rest are counted in ``n_unmatched``. With several metrics,
    results are keyed ``"<metric> <contrast>"``.

    Args:
        scores: Metric/column name -> one score per row.
        conditions: Per row, its stage.
        keys: Per row, the prompt / item id that matches rows across stages.
        contrasts: Pre-registered contrasts (``"base>sft"``, ``"dpo!=rlvr"``): one
            correction family.
        exploratory: Contrasts reported uncorrected (Decan Table 4's DPO != RLVR row).
        by: Name of the stage field (echoed).
        key: Name of the key field (echoed).
        correction: ``bonferroni`` (the paper), ``holm`` or ``none``.
        zero_method: Wilcoxon zero handling.
        nan: ``error`` or ``omit``.
        directions: Metric -> ``"higher"``/``"lower"`` (= more diverse).
        settings: Extra settings to echo.

    Returns:
        ProtocolResult of protocol ``stages`` (see :func:`stages`).

    Example:
        >>> r = paired_stages({"m": [5, 6, 7, 4, 4, 6]}, ["base"] * 3 + ["sft"] * 3,
        ...                   ["p0", "p1", "p2"] * 2, ["base>sft"])
        >>> r.results["base>sft"].values["delta"], r.results["base>sft"].values["p"]
        (1.3333333333333333, 0.125)
    """
    _check_scores(scores)
    parsed = _parse_contrasts(list(contrasts) + list(exploratory))
    names = list(dict.fromkeys(s for c in parsed for s in c[:2]))
    rows, skipped = match_conditions(keys, conditions, names, key_name=key, by_name=by)
    merged: dict[str, MetaResult] = {}
    arrays: dict[str, Any] = {}
    per_stage: dict[str, Any] = {}
    for mname, sc in scores.items():
        vec = st._vector(sc, mname)
        r = stages({s: vec[rows[s]] for s in names}, contrasts, exploratory=exploratory,
                   correction=correction, zero_method=zero_method, nan=nan, metric=mname,
                   direction=(directions or {}).get(mname, "higher"))
        prefix = "" if len(scores) == 1 else f"{mname} "
        merged.update({prefix + k: v for k, v in r.results.items()})
        arrays.update({prefix + k: v for k, v in r.arrays.items()})
        per_stage.update({prefix + s: v for s, v in r.extra["stages"].items()})
    info = {**dict(settings or {}), "n_unmatched": skipped, "by": by, "key": key,
            "correction": correction, "nan": nan}
    return ProtocolResult("stages", merged, info, arrays, {"stages": per_stage})


# --------------------------------------------------------------------------------------------
# pairwise preference


def pairwise(
    score1: Mapping[str, Any],
    score2: Mapping[str, Any],
    labels: Any,
    *,
    metric_ties: str = "miss",
    label_ties: str = "drop",
    rating1: Any = None,
    rating2: Any = None,
    min_rating_diff: float | None = None,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    nan: str = "error",
    directions: Mapping[str, str] | None = None,
) -> ProtocolResult:
    """Pairwise preference meta-evaluation: accuracy with CIs per metric, and a kappa matrix.

    ``extra["kappa"]`` is Cohen's kappa between every two metrics' decisions and the annotator
    (``"annotator"``), over the pairs kept by the filters (rating difference, annotator ties).
    ``directions`` maps a metric to ``"lower"`` when a lower value means more diverse
    (self-BLEU, homogenization): its scores are negated before deciding which set it prefers.
    Every row echoes its ``direction``.

    Example:
        >>> r = pairwise({"m": [3, 1, 2]}, {"m": [1, 2, 0]}, [0, 1, 1], n_resamples=100)
        >>> round(r.results["m"].values["accuracy"], 3)
        0.667
    """
    _check_scores(score1)
    score1, dirs = _orient(score1, directions)
    score2, _ = _orient(score2, directions)
    out: dict[str, MetaResult] = {}
    lab = st._vector(labels, "labels")
    keep = np.ones(len(lab), dtype=bool)
    if min_rating_diff is not None and rating1 is not None and rating2 is not None:
        keep &= np.abs(st._vector(rating1, "rating1") - st._vector(rating2, "rating2")) >= float(
            min_rating_diff
        )
    if label_ties == "drop":
        keep &= lab != 2
    decisions: dict[str, np.ndarray] = {}
    for name in score1:
        res = st.preference_accuracy(
            score1[name], score2[name], labels, metric_ties=metric_ties, label_ties=label_ties,
            rating1=rating1, rating2=rating2, min_rating_diff=min_rating_diff,
            confidence=confidence, n_resamples=n_resamples, seed=seed, nan=nan,
        )
        out[name] = replace(res, values={**res.values, "direction": dirs[name]})
        decisions[name] = st.preferences(score1[name], score2[name])[keep]
    decisions["annotator"] = lab[keep].astype(np.int8)
    kappa = st.kappa_matrix(decisions)
    settings = {
        "metric_ties": metric_ties, "label_ties": label_ties, "min_rating_diff": min_rating_diff,
        "tie_policy": f"metric:{metric_ties},label:{label_ties}", "confidence": confidence,
        "n_resamples": n_resamples, "seed": seed, "nan": nan,
    }
    return ProtocolResult("pairwise", out, settings, {"decisions": decisions},
                          {"kappa": kappa.to_dict()})
