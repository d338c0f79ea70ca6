"""The PATTR paper's corpus-filtering protocol (Deshpande et al. 2025, Sections 4.3 and 4.4).

* :func:`top_k_indices`: rank responses by a response-level diversity score and keep the top
  ``k``, after a length-range pre-filter (Section 4.3: "we first exclude video scripts that fall
  outside predefined length (# words) ranges, 0-2K, 200-600, 300-500, and 350-450, before
  applying MATTR or CR-based ranking"; Figure 3 reads "200-600: 200 <= word count <= 600", so
  both bounds are inclusive). Length is the number of whitespace-separated words (Section 3.2).
* :func:`sensitivity_table`: the L_T x W sensitivity analysis (Section 4.4, Table 4 and
  Appendix Table F.1). For every target length ``L_T`` of PATTR and window ``W`` of MATTR, the
  top-``k`` (10) responses of each metric are selected, the pairwise similarities of all
  ``k(k-1)/2`` (45) unique pairs inside each selection are computed (ROUGE-1/2/L F1, BLEU), and an
  independent two-sample t-test (``scipy.stats.ttest_ind``, Student's, equal variances) compares
  the PATTR pairs with the MATTR pairs: a negative t means PATTR's selection is less homogeneous
  (more diverse). ``length_diff`` is the mean word count of PATTR's selection minus MATTR's
  ("a positive difference in average length suggests that PATTR selects longer responses").

* :func:`length_bias` (Tables 1-2 and Figure 3): short-response win rate, correlation with
  length, top-k filtering evaluated with ROUGE-1/2/L and BLEU homogenisation.

All work on score arrays, so any metric (CR, TTR, a column from elsewhere) can stand in for
PATTR or MATTR; :func:`pattr_sensitivity` computes the two registry metrics first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetaResult, make_signature
from divmeter.studies.meta import stats as st
from divmeter.studies.meta.protocols import ProtocolResult

__all__ = [
    "check_length_range",
    "parse_length_range",
    "word_counts",
    "top_k_indices",
    "sensitivity_table",
    "pattr_sensitivity",
    "length_bias",
]

PATTR_PAPER = (
    "Deshpande et al. 2025, A Penalty Goes a Long Way: Measuring Lexical Diversity in Synthetic "
    "Texts Under Prompt-Influenced Length Variations"
)


def check_length_range(length_range: Any) -> tuple[float, float]:
    """Validate an inclusive ``(low, high)`` word-count range.

    Example:
        >>> check_length_range((200, 600))
        (200.0, 600.0)
    """
    try:
        lo, hi = (float(x) for x in length_range)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"length range must be two numbers (low, high); got {length_range!r}."
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo < 0 or lo > hi:
        raise InvalidInputError(
            f"length range must satisfy 0 <= low <= high (words); got {lo:g}-{hi:g}."
        )
    return lo, hi


def parse_length_range(text: str) -> tuple[float, float]:
    """Parse ``"LOW-HIGH"`` (e.g. ``"200-600"``, the notation of PATTR's Figure 3).

    Example:
        >>> parse_length_range("350-450")
        (350.0, 450.0)
    """
    parts = str(text).split("-")
    if len(parts) != 2:
        raise InvalidInputError(
            f"length range must look like LOW-HIGH, e.g. 200-600; got {text!r}."
        )
    return check_length_range(parts)


def word_counts(texts: Sequence[str]) -> np.ndarray:
    """Whitespace-separated word counts (PATTR Section 3.2's L)."""
    return np.array([len(t.split()) for t in texts], dtype=float)


def top_k_indices(
    scores: Sequence[float] | np.ndarray,
    k: int,
    *,
    lengths: Sequence[float] | np.ndarray | None = None,
    length_range: tuple[float, float] | None = None,
    higher_is_more_diverse: bool = True,
) -> np.ndarray:
    """Indices of the ``k`` most diverse responses, after the length pre-filter (PATTR 4.3).

    Responses outside ``length_range`` (inclusive bounds, word counts ``lengths``) and
    responses with a NaN score are excluded first; the rest are ranked by score (descending,
    or ascending when ``higher_is_more_diverse=False``, e.g. compression ratio), ties keeping
    input order, and the first ``k`` are returned in rank order.

    Args:
        scores: One diversity score per response.
        k: How many to keep (10, 100, 1000 in the paper).
        lengths: Word counts per response (required with ``length_range``).
        length_range: Inclusive ``(low, high)`` word-count range, or ``None``.
        higher_is_more_diverse: Direction of ``scores``.

    Returns:
        Integer indices into ``scores``.

    Raises:
        InvalidInputError: For a bad range, mismatched lengths, or fewer than ``k`` eligible
            responses.

    Example:
        >>> top_k_indices([0.9, 0.5, 0.7, 0.8], 2, lengths=[1, 5, 6, 9], length_range=(5, 8))
        array([2, 1])
    """
    s = np.asarray(scores, dtype=float)
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise InvalidInputError(f"`k` must be an integer >= 1; got {k!r}.")
    ok = ~np.isnan(s)
    if length_range is not None:
        lo, hi = check_length_range(length_range)
        if lengths is None:
            raise InvalidInputError("a length range needs the word counts (`lengths`); got None.")
        ln = np.asarray(lengths, dtype=float)
        if ln.shape != s.shape:
            raise InvalidInputError(
                f"`lengths` must have one entry per score ({s.size}); got {ln.size}."
            )
        ok &= (ln >= lo) & (ln <= hi)
    eligible = np.flatnonzero(ok)
    if k > eligible.size:
        where = f" within {lo:g}-{hi:g} words" if length_range is not None else ""
        raise InvalidInputError(
            f"top-{k} needs at least {k} scored responses{where}; got {eligible.size}."
        )
    key = -s[eligible] if higher_is_more_diverse else s[eligible]
    return eligible[np.argsort(key, kind="stable")[:k]]


def _nanmean(a: np.ndarray) -> float:
    return float(np.nanmean(a)) if (~np.isnan(a)).any() else math.nan


def _ttest(a: np.ndarray, b: np.ndarray, equal_var: bool
           ) -> tuple[float, float, str | None]:
    """The independent t-test of two samples of pair similarities: ``(t, p, None)``, or NaN
    with the reason it is undefined (fewer than two values, or no variance in either)."""
    import warnings

    from scipy import stats as ss

    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if a.size < 2 or b.size < 2:
        return math.nan, math.nan, ("a selection has fewer than 2 pair similarities (fewer "
                                    "than 3 responses): the t-test is undefined")
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return math.nan, math.nan, ("the pair similarities of both selections are constant "
                                    "(no variance): the t-test is undefined")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = ss.ttest_ind(a, b, equal_var=equal_var)
    t, p = float(res.statistic), float(res.pvalue)
    if not (math.isfinite(t) and math.isfinite(p)):  # e.g. Welch with one constant sample
        return math.nan, math.nan, "the t statistic is not finite: the t-test is undefined"
    return t, p, None


def sensitivity_table(
    texts: Sequence[str],
    pattr: Mapping[Any, Sequence[float] | np.ndarray],
    mattr: Mapping[Any, Sequence[float] | np.ndarray],
    *,
    k: int = 10,
    length_range: tuple[float, float] | None = None,
    bleu: str = "hf",
    n_pairs: int = 1000,
    seed: int = 0,
    equal_var: bool = True,
) -> ProtocolResult:
    """PATTR's L_T x W sensitivity table (Section 4.4, Table 4; Appendix F, Table F.1).

    For every ``L_T`` in ``pattr`` and every ``W`` in ``mattr`` (rows in that nested order, as
    in the paper's tables): the top-``k`` responses under each score (after the optional
    ``length_range`` pre-filter, Table F.1's "Length Filter" column), their mean word counts,
    and per similarity measure the independent t-test of PATTR's pair similarities against
    MATTR's (``scipy.stats.ttest_ind``; NaN pairs dropped).

    Args:
        texts: The corpus (e.g. all responses of one model).
        pattr: ``L_T`` -> PATTR score per text (higher = more diverse).
        mattr: ``W`` -> MATTR score per text (higher = more diverse).
        k: Selection size (10 in the paper: 45 pairs per selection).
        length_range: Inclusive word-count pre-filter applied to both selections.
        bleu: BLEU of the pair similarities: ``"hf"`` (the paper's Hugging Face BLEU, the
            default here) or ``"bleu"`` (divmeter's, both directions).
        n_pairs: Pair budget per selection (all pairs when ``k(k-1)/2 <= n_pairs``).
        seed: Seed of the pair draw beyond the budget.
        equal_var: ``True`` for Student's t-test (scipy's default), ``False`` for Welch's.

    Returns:
        ProtocolResult ``"pattr-sensitivity"`` with one row per ``(L_T, W)``, keyed
        ``"LT=<L_T>,W=<W>"``: ``target_length``, ``window``, ``pattr_mean_length``,
        ``mattr_mean_length``, ``length_diff``, and per measure ``t_<m>``, ``p_<m>``,
        ``pattr_<m>``, ``mattr_<m>`` (the mean similarities).

    Raises:
        InvalidInputError: For scores not aligned with ``texts`` or too few eligible responses.

    Example:
        >>> texts = ["a b c d", "a b c e", "w x y z", "p q r s", "a b c d"]
        >>> r = sensitivity_table(texts, {4: [0.9, 0.8, 0.7, 0.6, 0.1]},
        ...                       {2: [0.1, 0.2, 0.9, 0.95, 0.8]}, k=3)
        >>> row = r.results["LT=4,W=2"].values
        >>> round(row["t_rouge1"], 4), round(row["p_rouge1"], 4)
        (1.0, 0.3739)
    """
    from divmeter.studies.meta.homogenization import pair_similarities

    texts = list(texts)
    lengths = word_counts(texts)
    if length_range is not None:
        length_range = check_length_range(length_range)

    def selection(label: str, scores: Any) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        s = np.asarray(scores, dtype=float)
        if s.shape != (len(texts),):
            raise InvalidInputError(
                f"scores of {label} must have one value per text ({len(texts)}); got shape "
                f"{s.shape}."
            )
        top = top_k_indices(s, k, lengths=lengths, length_range=length_range)
        sims = pair_similarities([texts[i] for i in top], n_pairs=n_pairs, seed=seed, bleu=bleu)
        return top, sims

    chosen_p = {lt: selection(f"PATTR L_T={lt}", v) for lt, v in pattr.items()}
    chosen_m = {w: selection(f"MATTR W={w}", v) for w, v in mattr.items()}
    out: dict[str, MetaResult] = {}
    sig = make_signature(
        "pattr-sensitivity", k=k,
        range=None if length_range is None else f"{length_range[0]:g}-{length_range[1]:g}",
        bleu=bleu, pairs=n_pairs, test="student" if equal_var else "welch",
        length="whitespace-words", seed=seed,
    )
    for lt, (top_p, sims_p) in chosen_p.items():
        for w, (top_m, sims_m) in chosen_m.items():
            lp, lm = float(lengths[top_p].mean()), float(lengths[top_m].mean())
            vals: dict[str, Any] = {
                "target_length": lt, "window": w, "pattr_mean_length": lp,
                "mattr_mean_length": lm, "length_diff": lp - lm,
            }
            reasons: dict[str, str] = {}
            for measure, a in sims_p.items():
                b = sims_m[measure]
                t, p, why = _ttest(a, b, equal_var)
                vals[f"t_{measure}"] = t
                vals[f"p_{measure}"] = p
                vals[f"pattr_{measure}"] = _nanmean(a)
                vals[f"mattr_{measure}"] = _nanmean(b)
                if why:
                    reasons[f"t_{measure}"] = why
            out[f"LT={lt},W={w}"] = MetaResult("pattr-sensitivity", vals, sig,
                                               {"reasons": reasons} if reasons else {})
    settings: dict[str, Any] = {"k": k, "bleu": bleu, "seed": seed,
                                "test": "student" if equal_var else "welch"}
    if length_range is not None:
        settings["length_range"] = list(length_range)
    return ProtocolResult("pattr-sensitivity", out, settings)


def pattr_sensitivity(
    texts: Sequence[str],
    *,
    target_lengths: Sequence[int] = (100, 275, 400),
    windows: Sequence[int] = (32, 128, 512),
    **kwargs: Any,
) -> ProtocolResult:
    """:func:`sensitivity_table` with the registry's ``pattr`` and ``mattr`` computed first.

    Defaults are the paper's grid (Table 4: ``L_T`` in 100, 275, 400; ``W`` in 32, 128, 512).
    Whitespace words, case kept (the registry defaults, as in the paper's Section 3.2).

    Example:
        >>> texts = ["a b c d", "a b c e", "w x y z", "p q r s", "a b c d"]
        >>> r = pattr_sensitivity(texts, target_lengths=[4], windows=[2], k=3)
        >>> sorted(r.results)
        ['LT=4,W=2']
    """
    from divmeter.studies.meta.loaders import metric_results

    def per_response(metric: str, **params: Any) -> np.ndarray:
        (res,) = metric_results([texts], metric, **params)
        per = res.details.get("per_response", [])
        return np.array([math.nan if v is None else v for v in per], dtype=float)

    pattr = {lt: per_response("pattr", target_length=lt) for lt in target_lengths}
    mattr = {w: per_response("mattr", window=w) for w in windows}
    return sensitivity_table(texts, pattr, mattr, **kwargs)


# --------------------------------------------------------------------------------------------
# length bias (PATTR paper)


def _length_bias_reasons(counted: int, flat_pools: int, tied_pools: int, scores: np.ndarray,
                         lengths: np.ndarray) -> dict[str, str]:
    """Why the win rate or the Spearman correlations of :func:`length_bias` are null."""
    reasons: dict[str, str] = {}
    if not counted:
        reasons["short_win_rate"] = ("no pool holds two scored responses (pools of one "
                                     "response): the short-response win rate is undefined")
    elif flat_pools == counted:
        reasons["short_win_rate"] = ("the responses of every pool have one length: none is "
                                     "shorter than another, so the win rate is undefined")
    elif tied_pools == counted:
        reasons["short_win_rate"] = ("the metric ties within every pool: no response is "
                                     "top-scored, so the win rate is undefined")
    why = ("the metric is constant over the responses" if np.ptp(scores) == 0
           else "every response has the same length" if np.ptp(lengths) == 0 else None)
    if why:
        reasons["spearman"] = f"{why}: the Spearman correlation with length is undefined"
    return reasons


def length_bias(
    pools: Sequence[Sequence[str]],
    response_scores: Mapping[str, Sequence[Any]],
    *,
    quantile: float = 25.0,
    top_k: Sequence[int] = (),
    n_pairs: int = 1000,
    seed: int = 0,
    homogenization: Callable[..., dict[str, float]] | None = None,
    directions: Mapping[str, str] | None = None,
    length_range: tuple[float, float] | None = None,
    bleu: str = "bleu",
) -> ProtocolResult:
    """Length bias of response-level diversity metrics (PATTR paper, Tables 1-2 and Figure 3).

    "Top-scored" and "highest-scored" mean most diverse: a metric listed as ``"lower"`` in
    ``directions`` is negated first (each row echoes its ``direction``).

    * ``short_win_rate``: share of pools whose top-scored response (first one among equal top
      scores) has a word count at or below the pool's ``quantile``-th percentile of word counts
      (numpy's linear interpolation), with a Clopper-Pearson 95% interval;
    * ``spearman_raw``: Spearman rho of the metric's own score with the word count over all
      responses, the sign of the PATTR paper's Table 1 ("correlation between PATTR and
      response length"), with its two-sided ``spearman_p``;
    * ``spearman_length``: the same for the oriented score (diversity, higher = more diverse),
      i.e. ``spearman_raw`` with its sign flipped for a ``"lower"`` metric;
    * for every k in ``top_k``: the k highest-scored responses of the whole corpus and their
      homogenisation (mean pairwise ROUGE-1/2/L F1 and BLEU over up to ``n_pairs`` seeded pairs;
      lower = more diverse), beside the same for k random responses (``random_*``). With
      ``length_range=(lo, hi)`` both are drawn only from the responses with
      ``lo <= words <= hi`` (PATTR Section 4.3: "we first exclude video scripts that fall
      outside predefined length ranges ... before applying MATTR or CR-based ranking";
      ``n_in_range`` counts them).

    Args:
        pools: Responses grouped by prompt (the pool within which the win is decided).
        response_scores: Metric name -> per-pool lists of per-response scores.
        quantile: The length percentile (25 in the paper).
        top_k: Corpus sizes for the filtering evaluation (10, 100, 1000 in the paper).
        n_pairs: Pair budget for the pairwise homogenisation scores.
        seed: Seed for pair sampling and the random baseline.
        homogenization: ``f(texts, n_pairs=, seed=) -> dict`` (default: ROUGE/BLEU of
            :mod:`divmeter.studies.meta.homogenization`; it also receives ``bleu=`` when that is not
            the default).
        directions: Metric name -> ``"higher"`` / ``"lower"`` (= more diverse).
        length_range: Inclusive word-count range applied before the top-k selection.
        bleu: BLEU of the homogenisation: ``"bleu"`` (divmeter's, both directions) or
            ``"hf"`` (the PATTR paper's Hugging Face BLEU; keys ``top{k}_bleu-hf``).

    Raises:
        InvalidInputError: For a bad quantile, direction, range, top-k or score shape.

    Example:
        >>> pools = [["a b", "a b c d e f", "a b c d"], ["x", "x y z w", "x y"]]
        >>> r = length_bias(pools, {"m": [[0.9, 0.1, 0.2], [0.1, 0.9, 0.3]]})
        >>> r.results["m"].values["short_win_rate"]
        0.5
    """
    if not (0 < quantile < 100):
        raise InvalidInputError(f"`quantile` must be in (0, 100); got {quantile!r}.")
    if length_range is not None:
        length_range = check_length_range(length_range)
    if bleu not in ("bleu", "hf"):
        raise InvalidInputError(f"`bleu` must be 'bleu' or 'hf'; got {bleu!r}.")
    h_kwargs: dict[str, Any] = {} if bleu == "bleu" else {"bleu": bleu}
    if homogenization is None:
        from divmeter.studies.meta.homogenization import mean_similarities

        homogenization = mean_similarities
    if sum(len(pool) for pool in pools) < 2:
        raise InvalidInputError(
            "length bias needs at least 2 responses; got "
            f"{sum(len(pool) for pool in pools)}.")
    lengths = [np.array([len(t.split()) for t in pool], dtype=float) for pool in pools]
    flat_texts = [t for pool in pools for t in pool]
    flat_len = np.concatenate(lengths) if lengths else np.array([])
    out: dict[str, MetaResult] = {}
    arrays: dict[str, Any] = {}
    dirs = {name: (directions or {}).get(name, "higher") for name in response_scores}
    for name, per_pool in response_scores.items():
        if dirs[name] not in ("higher", "lower"):
            raise InvalidInputError(
                f"direction of {name!r} must be 'higher' or 'lower' (= more diverse); "
                f"got {dirs[name]!r}."
            )
        sign = -1.0 if dirs[name] == "lower" else 1.0
        if len(per_pool) != len(pools):
            raise InvalidInputError(
                f"scores of {name!r} cover {len(per_pool)} pools; expected {len(pools)}."
            )
        wins = 0
        counted = 0
        flat_pools = 0  # pools whose responses all have one length (every one is "short")
        tied_pools = 0  # pools whose scores are all equal (none is top-scored)
        for p, (sc, ln) in enumerate(zip(per_pool, lengths, strict=True)):
            s = sign * st._vector(sc, f"{name}[{p}]")
            if len(s) != len(ln):
                raise InvalidInputError(
                    f"pool {p}: {len(s)} scores of {name!r} for {len(ln)} responses."
                )
            ok = ~np.isnan(s)
            if ok.sum() < 2:
                continue
            counted += 1
            flat_pools += int(np.ptp(ln) == 0)
            tied_pools += int(np.ptp(s[ok]) == 0)
            best = int(np.flatnonzero(ok)[np.argmax(s[ok])])
            wins += int(ln[best] <= np.percentile(ln, quantile))
        flat = (sign * np.concatenate([st._vector(x, name) for x in per_pool]) if per_pool
                else np.array([]))
        okf = ~np.isnan(flat)
        if okf.sum() < 2:  # nothing to measure: a refusal, as for a metric null on every set
            raise InvalidInputError(
                f"length bias: {name} has a value on {int(okf.sum())} of {len(flat)} responses "
                "(it is null on blank ones); at least 2 are needed.")
        raw = st.spearman(sign * flat[okf], flat_len[okf])
        rho_raw, p_raw = raw.rho, raw.values["p"]
        rho = st.spearman(flat[okf], flat_len[okf]).rho
        reasons = _length_bias_reasons(counted, flat_pools, tied_pools, flat[okf],
                                       flat_len[okf])
        vals: dict[str, Any] = {
            "short_win_rate": (wins / counted if counted and "short_win_rate" not in reasons
                               else math.nan),
            "n_pools": counted,
            "spearman_raw": rho_raw,
            "spearman_p": p_raw,
            "spearman_length": rho,
            "n_responses": int(okf.sum()),
            "direction": dirs[name],
        }
        if counted and "short_win_rate" not in reasons:
            lo, hi = st._clopper_pearson(wins, counted, 0.95)
            vals.update({"win_ci_low": lo, "win_ci_high": hi})
        rng = np.random.default_rng(seed)
        valid = np.flatnonzero(okf)
        what = "scored responses"
        if length_range is not None:
            lo, hi = length_range
            valid = valid[(flat_len[valid] >= lo) & (flat_len[valid] <= hi)]
            vals["n_in_range"] = int(valid.size)
            what = f"scored responses of {lo:g}-{hi:g} words"
        for k in top_k:
            if k < 2 or k > len(valid):
                raise InvalidInputError(
                    f"top-k must be between 2 and the number of {what} "
                    f"({len(valid)}); got {k}."
                )
            top = valid[np.argsort(-flat[valid], kind="stable")[:k]]
            h = homogenization([flat_texts[i] for i in top], n_pairs=n_pairs, seed=seed,
                               **h_kwargs)
            rnd = rng.choice(valid, k, replace=False)
            hr = homogenization([flat_texts[i] for i in rnd], n_pairs=n_pairs, seed=seed,
                                **h_kwargs)
            for key, v in h.items():
                vals[f"top{k}_{key}"] = v
            for key, v in hr.items():
                vals[f"random{k}_{key}"] = v
            vals[f"top{k}_mean_length"] = float(flat_len[top].mean())
        out[name] = MetaResult(
            "length-bias", vals,
            make_signature("length-bias", quantile=float(quantile), length="whitespace-words",
                           top_k=list(top_k) or None, pairs=n_pairs if top_k else None,
                           range=(f"{length_range[0]:g}-{length_range[1]:g}"
                                  if length_range is not None and top_k else None),
                           bleu=bleu if bleu != "bleu" and top_k else None,
                           seed=seed),
            {"reasons": reasons} if reasons else {},
        )
        arrays[name] = {"scores": flat, "lengths": flat_len}
    settings: dict[str, Any] = {"quantile": quantile, "top_k": list(top_k), "seed": seed}
    if length_range is not None:
        settings["length_range"] = list(length_range)
    if bleu != "bleu":
        settings["bleu"] = bleu
    return ProtocolResult("length-bias", out, settings, arrays)
