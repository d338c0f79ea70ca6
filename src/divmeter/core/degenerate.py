"""The one rule for degenerate sets, for every metric and every way of scoring.

A set with fewer than two non-blank responses (a response is blank when it is empty or
whitespace only) has no diversity to measure: its value is ``None`` with the reason
``"fewer than two non-blank responses (got k)"`` (``"empty set"`` for a set with no response at
all). Metrics of a granularity in :data:`ONE_TEXT_GRANULARITIES` (``response``: TTR, MATTR,
MTLD, HD-D, PATTR, length, response compression) are defined on one text, so for them the rule
asks for one non-blank response (``"no non-blank response"``).

The rule is applied before a metric's kernel runs, wherever a metric is scored:

* :func:`divmeter.score`, :func:`divmeter.score_many`, ``divmeter score`` and its workers
  (:func:`divmeter.engine.batch.evaluate`);
* the public functions of the metrics (``distinct_n(["a b c"])``) and their batched kernels
  (:func:`divmeter.engine.registry.register` wraps them);
* corpus mode (:mod:`divmeter.engine.corpus.stats`: the counts of the whole corpus).

A metric never sees such a set: no model load, no server request. The null result carries the
metric's own signature (``Metric.signature``, from its resolved parameters).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

__all__ = [
    "ONE_TEXT_GRANULARITIES",
    "non_blank",
    "count_non_blank",
    "degenerate_reason",
    "reason_from_counts",
    "reasons_of_sets",
]

#: Granularities whose metrics are defined on a single text (a per-response value averaged over
#: the set): the rule asks them for one non-blank response instead of two.
ONE_TEXT_GRANULARITIES = frozenset({"response"})


def non_blank(item: Any) -> bool | None:
    """Whether a response (a string, or a CDM instantiation: a list of phrases) holds any
    non-whitespace character; ``None`` for something else (the metric reports it).

    Example:
        >>> non_blank("a"), non_blank(" \\t"), non_blank(["", "x"]), non_blank(3)
        (True, False, True, None)
    """
    if isinstance(item, str):
        return bool(item) and not item.isspace()
    if isinstance(item, (list, tuple)) and all(isinstance(x, str) for x in item):
        return any(x and not x.isspace() for x in item)
    return None


def count_non_blank(texts: Iterable[str]) -> int:
    """The number of non-blank strings among ``texts``.

    Example:
        >>> count_non_blank(["a", "", " ", "b c"])
        2
    """
    texts = texts if isinstance(texts, (list, tuple)) else list(texts)
    return len(texts) - texts.count("") - sum(map(str.isspace, texts))


def reason_from_counts(n: int, k: int, granularity: str = "set") -> str | None:
    """The rule on a set (or corpus) of ``n`` responses of which ``k`` are non-blank.

    Example:
        >>> reason_from_counts(0, 0), reason_from_counts(3, 1), reason_from_counts(2, 2)
        ('empty set', 'fewer than two non-blank responses (got 1)', None)
        >>> reason_from_counts(2, 1, "response"), reason_from_counts(2, 0, "response")
        (None, 'no non-blank response')
    """
    if n == 0:
        return "empty set"
    if granularity in ONE_TEXT_GRANULARITIES:
        return None if k else "no non-blank response"
    return None if k >= 2 else f"fewer than two non-blank responses (got {k})"


def reasons_of_sets(sets: Sequence[Sequence[str] | None], granularity: str = "set"
                    ) -> list[str | None]:
    """:func:`reason_from_counts` of each set of texts (``None`` for a ``None`` set): one pass
    over every text finds whether any is blank; where none is (the usual batch), a set's count
    of non-blank responses is its size, and each size's verdict is worked out once.

    Example:
        >>> reasons_of_sets([["a", "b"], ["a"], None, ["a", " "]])
        [None, 'fewer than two non-blank responses (got 1)', None, \
'fewer than two non-blank responses (got 1)']
    """
    texts = list(chain.from_iterable(s for s in sets if s is not None))
    if not all(texts) or any(map(str.isspace, texts)):
        return [None if s is None else reason_from_counts(len(s), count_non_blank(s),
                                                         granularity) for s in sets]
    by_size: dict[int, str | None] = {}
    out: list[str | None] = []
    for s in sets:
        if s is None:
            out.append(None)
            continue
        n = len(s)
        if n not in by_size:
            by_size[n] = reason_from_counts(n, n, granularity)
        out.append(by_size[n])
    return out


def degenerate_reason(items: Any, granularity: str = "set") -> str | None:
    """Why the one rule makes a set null, or ``None`` when the metric is to score it.

    A set needs at least two non-blank responses (one for metrics of a granularity in
    :data:`ONE_TEXT_GRANULARITIES`). Input the rule cannot read (not a list of strings or of
    phrase lists) is left to the metric, which reports it.

    Example:
        >>> [degenerate_reason(s) for s in ([], [""], ["x"], ["x", " \\t"], ["x", "y"])]
        ['empty set', 'fewer than two non-blank responses (got 0)', \
'fewer than two non-blank responses (got 1)', 'fewer than two non-blank responses (got 1)', None]
        >>> degenerate_reason(["x"], "response"), degenerate_reason(["", " "], "response")
        (None, 'no non-blank response')
    """
    if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple)):
        return None
    flags = [non_blank(x) for x in items]
    if any(f is None for f in flags):
        return None
    return reason_from_counts(len(flags), sum(1 for f in flags if f), granularity)
