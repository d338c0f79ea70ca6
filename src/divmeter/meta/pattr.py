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

Both work on score arrays, so any metric (CR, TTR, a column from elsewhere) can stand in for
PATTR or MATTR; :func:`pattr_sensitivity` computes the two registry metrics first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from divmeter.errors import InvalidInputError
from divmeter.meta.protocols import ProtocolResult
from divmeter.result import MetaResult, make_signature

__all__ = [
    "check_length_range",
    "parse_length_range",
    "word_counts",
    "top_k_indices",
    "sensitivity_table",
    "pattr_sensitivity",
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


def _ttest(a: np.ndarray, b: np.ndarray, equal_var: bool) -> tuple[float, float]:
    from scipy import stats as ss

    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if a.size < 2 or b.size < 2:
        return math.nan, math.nan
    res = ss.ttest_ind(a, b, equal_var=equal_var)
    return float(res.statistic), float(res.pvalue)


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
    from divmeter.meta.homogenization import pair_similarities

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
            for measure, a in sims_p.items():
                b = sims_m[measure]
                t, p = _ttest(a, b, equal_var)
                vals[f"t_{measure}"] = t
                vals[f"p_{measure}"] = p
                vals[f"pattr_{measure}"] = _nanmean(a)
                vals[f"mattr_{measure}"] = _nanmean(b)
            out[f"LT={lt},W={w}"] = MetaResult("pattr-sensitivity", vals, sig)
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
    from divmeter.api import score

    def per_response(metric: str, **params: Any) -> np.ndarray:
        res = score(list(texts), metric, **params)
        per = res.details.get("per_response", [])
        return np.array([math.nan if v is None else v for v in per], dtype=float)

    pattr = {lt: per_response("pattr", target_length=lt) for lt in target_lengths}
    mattr = {w: per_response("mattr", window=w) for w in windows}
    return sensitivity_table(texts, pattr, mattr, **kwargs)
