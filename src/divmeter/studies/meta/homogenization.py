"""Homogenisation of a selected corpus: mean pairwise ROUGE-1/2/L F1 and BLEU (PATTR, Sec. 3).

Two BLEU settings, named: ``bleu="bleu"`` (the default, divmeter's: the registry measure
``bleu``, rouge-score tokens lowercased, both directions of a pair averaged) and ``bleu="hf"``
(the PATTR paper's: Hugging Face ``evaluate``'s BLEU with its defaults, i.e. 13a tokens, case
kept, one direction per unordered pair; the registry measure ``bleu-hf``), reported under the
key ``bleu-hf``. :func:`pair_similarities` gives the per-pair values the PATTR paper's t-tests
(Section 4.4, Table 4 / F.1) compare.

Used by the length-bias protocol (the top-k responses a diversity metric selects should be *less*
homogeneous). The pair similarities are the registry metric ``homogenization``
(:func:`divmeter.metrics.overlap.homogenization`: rouge-score's F-measures, sentence BLEU-4
without smoothing averaged over both directions); this module only chooses the pairs as the PATTR
paper does: all unordered pairs when there are at most ``n_pairs``, else ``n_pairs`` distinct pairs
drawn with a seeded numpy Generator, each scored as a two-response set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from divmeter.core.errors import InvalidInputError

__all__ = ["mean_similarities", "pair_similarities", "MEASURES", "BLEU_SETTINGS"]

MEASURES = ("rouge1", "rouge2", "rougeL", "bleu")
#: ``bleu`` setting -> registry measure of ``homogenization``.
BLEU_SETTINGS = {"bleu": "bleu", "hf": "bleu-hf"}


def _measures(bleu: str) -> tuple[str, ...]:
    if bleu not in BLEU_SETTINGS:
        raise InvalidInputError(
            f"`bleu` of the homogenisation must be one of {', '.join(BLEU_SETTINGS)}; "
            f"got {bleu!r}."
        )
    return MEASURES[:3] + (BLEU_SETTINGS[bleu],)


def _pairs(n: int, n_pairs: int, seed: int) -> list[tuple[int, int]]:
    if n_pairs < 1:
        raise InvalidInputError(f"the pair budget (--pairs) must be an integer >= 1; got "
                                f"{n_pairs!r}.")
    total = n * (n - 1) // 2
    if total <= n_pairs:
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    rng = np.random.default_rng(seed)
    flat = rng.choice(total, n_pairs, replace=False)
    # unrank flat index -> (i, j) with i < j in row-major upper-triangle order
    out = []
    for f in np.sort(flat):
        f = int(f)
        i = int(n - 2 - math.floor(math.sqrt(-8 * f + 4 * n * (n - 1) - 7) / 2.0 - 0.5))
        j = int(f + i + 1 - n * (n - 1) // 2 + (n - i) * ((n - i) - 1) // 2)
        out.append((i, j))
    return out


def _values(sets: Sequence[Sequence[str]], measure: str) -> list[float | None]:
    """The registry metric ``homogenization`` with ``measure`` on each set."""
    from divmeter.studies.meta.loaders import metric_results

    return [None if r.value is None else float(r.value)
            for r in metric_results(sets, "homogenization", measure=measure)]


def mean_similarities(
    texts: Sequence[str], *, n_pairs: int = 1000, seed: int = 0, bleu: str = "bleu"
) -> dict[str, float]:
    """Mean pairwise ROUGE-1, ROUGE-2, ROUGE-L F1 and BLEU of a corpus (higher = more homogeneous).

    Pairs on which a measure is undefined (no token) are left out of its mean.

    Args:
        texts: The corpus (e.g. a top-k selection).
        n_pairs: Pair budget: all unordered pairs when there are at most this many, else this
            many distinct pairs drawn with ``seed``.
        seed: Seed of the pair draw.
        bleu: ``"bleu"`` (divmeter's, key ``bleu``) or ``"hf"`` (the PATTR paper's Hugging Face
            BLEU, one direction per pair ``(i, j)``, ``i < j``: ``texts[i]`` is the
            prediction; key ``bleu-hf``).

    Returns:
        ``{measure: mean, ..., "n_pairs": number of pairs}``.

    Raises:
        InvalidInputError: For an unknown ``bleu`` setting.

    Example:
        >>> h = mean_similarities(["a b c", "a b d", "x y z"])
        >>> round(h["rouge1"], 4), h["n_pairs"]
        (0.2222, 3)
    """
    measures = _measures(bleu)
    texts = list(texts)
    n = len(texts)
    out: dict[str, float] = {}
    if n * (n - 1) // 2 <= n_pairs:
        m = n * (n - 1) // 2
        for measure in measures:
            v = _values([texts], measure)[0] if m else None
            out[measure] = math.nan if v is None else float(v)
    else:
        pairs = _pairs(n, n_pairs, seed)
        m = len(pairs)
        for measure in measures:
            vals = _values([[texts[i], texts[j]] for i, j in pairs], measure)
            arr = np.array([math.nan if v is None else v for v in vals], dtype=float)
            out[measure] = float(np.nanmean(arr)) if (~np.isnan(arr)).any() else math.nan
    out["n_pairs"] = m
    return out


def pair_similarities(
    texts: Sequence[str], *, n_pairs: int = 1000, seed: int = 0, bleu: str = "hf"
) -> dict[str, np.ndarray]:
    """Per-pair ROUGE-1/2/L F1 and BLEU of a corpus: the samples of the PATTR t-tests.

    The PATTR paper (Section 4.4) measures a top-10 selection by its "45 inter-sample pairwise
    similarity scores from all unique response pairs" and compares two selections with an
    independent t-test on those samples. Pairs are chosen as in :func:`mean_similarities` (all
    unordered pairs ``i < j`` within the budget, else a seeded draw); a pair on which a
    measure is undefined (no token in either text) gives NaN.

    Args:
        texts: The corpus.
        n_pairs: Pair budget.
        seed: Seed of the pair draw beyond the budget.
        bleu: ``"hf"`` (default here: the paper's Hugging Face BLEU, key ``bleu-hf``) or
            ``"bleu"``.

    Returns:
        ``{measure: array of pair similarities}``, pairs in the same order for every measure.

    Example:
        >>> p = pair_similarities(["a b c", "a b d", "x y z"])
        >>> [round(float(v), 4) for v in p["rouge1"]]
        [0.6667, 0.0, 0.0]
    """
    measures = _measures(bleu)
    texts = list(texts)
    pairs = _pairs(len(texts), n_pairs, seed)
    out: dict[str, np.ndarray] = {}
    for measure in measures:
        vals = _values([[texts[i], texts[j]] for i, j in pairs], measure)
        out[measure] = np.array([math.nan if v is None else v for v in vals], dtype=float)
    return out
