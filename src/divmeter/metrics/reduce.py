"""The similarity-to-diversity reduction (Tevet & Berant 2021, section 5).

Any pairwise similarity ``sim(r_i, r_j)`` becomes a set diversity by averaging it over the
unordered pairs of the set and flipping its sign. Two flips are found in the literature, and
they are named apart:

* ``neg-mean``: ``-mean_{i<j} sim(r_i, r_j)`` (Tevet & Berant's neural metrics and cos-sim);
* ``one-minus-mean``: ``1 - mean_{i<j} sim(r_i, r_j)`` (self-cosSim / 1 - self-BLEU of the
  commonsense meta-evaluation).

The functions here take a similarity matrix or the pairs' similarities themselves, so any metric
family (and the annotation app's simHDS) reuses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from divmeter.core.errors import InvalidInputError

__all__ = ["REDUCTIONS", "mean_pairwise", "diversity_from_similarity", "reduce_pairs"]

Reduction = Literal["neg-mean", "one-minus-mean"]
REDUCTIONS: tuple[str, ...] = ("neg-mean", "one-minus-mean")


def mean_pairwise(sim: np.ndarray) -> float:
    """Mean of the strict upper triangle of a square similarity matrix (unordered pairs i<j).

    Example:
        >>> mean_pairwise(np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 1.0], [0.0, 1.0, 1.0]]))
        0.5
    """
    s = np.asarray(sim, dtype=float)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise InvalidInputError(f"similarity matrix must be square; got shape {s.shape}.")
    n = s.shape[0]
    if n < 2:
        raise InvalidInputError(f"at least 2 items are needed for pairs; got {n}.")
    iu = np.triu_indices(n, k=1)
    return float(s[iu].mean())


def diversity_from_similarity(sim: np.ndarray, reduction: Reduction = "neg-mean") -> float:
    """Turn a pairwise similarity matrix into a set diversity.

    Args:
        sim: ``(n, n)`` similarity matrix (only the strict upper triangle is read).
        reduction: ``neg-mean`` (Tevet & Berant) or ``one-minus-mean`` (commonsense paper).

    Example:
        >>> S = np.array([[1.0, 0.2], [0.2, 1.0]])
        >>> diversity_from_similarity(S), diversity_from_similarity(S, "one-minus-mean")
        (-0.2, 0.8)
    """
    return _flip(mean_pairwise(sim), reduction)


def reduce_pairs(similarities: Sequence[float], reduction: Reduction = "neg-mean") -> float:
    """The reduction from the similarities of the pairs themselves (one per unordered pair),
    summed in the order given.

    Raises:
        InvalidInputError: No pair, or an unknown reduction.

    Example:
        >>> reduce_pairs([5.0, 3.0, 1.0]), reduce_pairs([0.2], "one-minus-mean")
        (-3.0, 0.8)
    """
    if len(similarities) == 0:
        raise InvalidInputError("at least one pair similarity is needed; got none.")
    return _flip(float(sum(similarities)) / len(similarities), reduction)


def _flip(mean: float, reduction: str) -> float:
    if reduction == "neg-mean":
        return -mean
    if reduction == "one-minus-mean":
        return 1.0 - mean
    raise InvalidInputError(
        f"`reduction` must be one of {', '.join(REDUCTIONS)}; got {reduction!r}."
    )

