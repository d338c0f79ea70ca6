"""How much a pairwise judge's ratings depend on which set it is shown first.

The commonsense meta-evaluation paper (section 4.1) found its judge choosing the second set
87% of the time when asked to pick one; divmeter asks for a rating per set in both presentation
orders and reports what bias remains (:class:`PositionBias`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PositionBias", "position_bias"]


@dataclass(frozen=True)
class PositionBias:
    """How much the judge's ratings depend on which set is shown first.

    Attributes:
        first_minus_second: Mean over valid samples of (rating of the set shown first - rating of
            the set shown second); 0 for a judge without position bias when both orders are
            asked (content differences cancel between A/B and B/A).
        first_preferred: Among valid samples that are not ties, the share that rates the first
            shown set higher (0.5 = no bias; the paper's direct-choice judge: 0.13).
        order_consistency: Among pairs with valid samples in both orders, the share whose label
            from the A/B answers equals the label from the B/A answers.
        n_samples: Valid samples behind the first two numbers.
        n_pairs: Pairs behind ``order_consistency``.
    """

    first_minus_second: float | None
    first_preferred: float | None
    order_consistency: float | None
    n_samples: int
    n_pairs: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def position_bias(pairs: Sequence[Any]) -> PositionBias:
    """The :class:`PositionBias` of judged pairs
    (:class:`~divmeter.backends.judge.results.JudgedPair`).

    Example:
        >>> from divmeter.backends.judge.results import JudgedPair, Sample
        >>> s = [Sample(0, "ab", (4, 2), None), Sample(0, "ba", (3, 3), None)]
        >>> p = JudgedPair(3.5, 2.5, 0, None, tuple(s), {"ab": {"label": 0}, "ba": {"label": 2}})
        >>> b = position_bias([p])
        >>> b.first_minus_second, b.first_preferred, b.order_consistency
        (1.0, 1.0, 0.0)
    """
    diffs: list[float] = []
    for p in pairs:
        for s in p.samples:
            if s.scores is None:
                continue
            a, b = s.scores
            diffs.append(a - b if s.order == "ab" else b - a)
    strict = [d for d in diffs if d != 0]
    both = [p for p in pairs if all(p.by_order.get(o, {}).get("label") is not None
                                    for o in ("ab", "ba"))]
    return PositionBias(
        float(sum(diffs) / len(diffs)) if diffs else None,
        (sum(d > 0 for d in strict) / len(strict)) if strict else None,
        (sum(p.by_order["ab"]["label"] == p.by_order["ba"]["label"] for p in both) / len(both))
        if both else None, len(diffs), len(both))
