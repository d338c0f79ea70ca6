"""Homogenisation of a selected corpus: mean pairwise ROUGE-1/2/L F1 and BLEU (PATTR, Sec. 3).

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

__all__ = ["homogenization", "MEASURES"]

MEASURES = ("rouge1", "rouge2", "rougeL", "bleu")


def _pairs(n: int, n_pairs: int, seed: int) -> list[tuple[int, int]]:
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


def homogenization(texts: Sequence[str], *, n_pairs: int = 1000, seed: int = 0) -> dict[str, float]:
    """Mean pairwise ROUGE-1, ROUGE-2, ROUGE-L F1 and BLEU of a corpus (higher = more homogeneous).

    Pairs on which a measure is undefined (no token) are left out of its mean.

    Example:
        >>> h = homogenization(["a b c", "a b d", "x y z"])
        >>> round(h["rouge1"], 4), h["n_pairs"]
        (0.2222, 3)
    """
    from divmeter.api import score

    texts = list(texts)
    n = len(texts)
    out: dict[str, float] = {}
    if n * (n - 1) // 2 <= n_pairs:
        m = n * (n - 1) // 2
        for measure in MEASURES:
            v = score(texts, "homogenization", measure=measure).value if m else None
            out[measure] = math.nan if v is None else float(v)
    else:
        pairs = _pairs(n, n_pairs, seed)
        m = len(pairs)
        for measure in MEASURES:
            vals = [score([texts[i], texts[j]], "homogenization", measure=measure).value
                    for i, j in pairs]
            arr = np.array([math.nan if v is None else v for v in vals], dtype=float)
            out[measure] = float(np.nanmean(arr)) if (~np.isnan(arr)).any() else math.nan
    out["n_pairs"] = m
    return out
