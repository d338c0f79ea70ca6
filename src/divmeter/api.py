"""The top-level scoring entry point."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from divmeter.core.errors import InvalidInputError
from divmeter.core.memory import memory_limit
from divmeter.core.result import MetricResult
from divmeter.engine.batch import evaluate, resolve_metrics
from divmeter.engine.registry import parse_metric_arg

__all__ = ["score", "score_many"]

OnError = Literal["raise", "null"]


def score(responses: Any, metric: str, *, max_memory: int | str | None = None,
          **params: Any) -> MetricResult:
    """Score ``responses`` with a registered metric.

    Args:
        responses: A list of strings (a response set), or the metric's own input kind
            (CDM: a list of equal-length lists of phrases).
        metric: A registered name, optionally with parameters: ``"self-bleu"`` or
            ``"self-bleu:n=3,variant=sentence"``. Keyword parameters override those.
        max_memory: Memory limit of pairwise and kernel metrics (bytes, or ``"16G"``; default
            :data:`divmeter.core.memory.DEFAULT_MAX_MEMORY`, 4 GiB). Not a metric parameter: it
            never changes a value, only whether a too-large set is refused.
        **params: The metric's parameters (see ``divmeter list``).

    Returns:
        A :class:`~divmeter.core.result.MetricResult` with ``.value`` (``None`` when undefined,
        with ``.reason``) and ``.signature``.

    Raises:
        UnknownMetricError: If the metric is not registered.
        InvalidInputError: For malformed responses, or parameters the metric does not declare
            or whose value breaks its declaration (``"`n` of distinct-n must be an integer >=
            1; got 0."``).
        MemoryLimitError: If the metric's memory estimate for this set exceeds ``max_memory``.

    Example:
        >>> score(["a b c", "a b d"], "distinct-n", n=1).value
        0.6666666666666666
    """
    name, inline = parse_metric_arg(metric)
    (plan,) = resolve_metrics([(name, {**inline, **params})], named=False)
    with memory_limit(max_memory):
        # the engine applies the one rule for degenerate sets and the cost checks, for score
        # too (one set is a batch of one); names=[""]: a refusal names no set
        res = evaluate([responses], [plan], names=[""])[0][0]
    if isinstance(res, InvalidInputError):
        raise res
    return res


def score_many(
    sets: Iterable[Any], metric: str, *, on_error: OnError = "raise",
    max_memory: int | str | None = None, **params: Any
) -> list[MetricResult]:
    """Score many response sets with one metric: ``[score(s, metric, **params) for s in sets]``,
    faster.

    Metrics with a batched implementation (``divmeter.get_metric(name).batch`` is set, e.g.
    distinct-n, entropy-n, ead, ngram-diversity, self-repetition, ngram-cosine) score the whole
    list at once, which on many small sets is about twice as fast as one call per set; the
    others are scored one set at a time. Either way each result is identical to :func:`score`
    on that set (value, reason, signature, details). This is the same core that ``divmeter
    score`` runs (:func:`divmeter.engine.batch.evaluate`).

    Args:
        sets: Response sets: lists of strings or :class:`~divmeter.inputs.data.ResponseSet` s (or
            the metric's own input kind, for metrics that do not take texts).
        metric: A registered name, optionally with parameters, as in :func:`score`.
        on_error: ``"raise"``: a malformed set (or one the metric rejects) raises its
            :class:`~divmeter.core.errors.InvalidInputError`; ``"null"``: it gets a result with
            ``value=None``, an empty signature and the error message as ``reason``, and the
            other sets are scored (as ``divmeter score`` does). Bad parameters raise either way,
            before any set is scored.
        max_memory: Memory limit of pairwise and kernel metrics, as in :func:`score`; a set
            above it raises :class:`~divmeter.core.memory.MemoryLimitError` naming it
            (``sets[3]``), whatever ``on_error``.
        **params: The metric's parameters.

    Returns:
        One :class:`~divmeter.core.result.MetricResult` per set, in order.

    Raises:
        UnknownMetricError: If the metric is not registered.
        InvalidInputError: For unknown or bad parameters, a bad ``on_error``, or (with
            ``on_error="raise"``) a malformed set (the message names it:
            ``"`sets[3][1]` must be a string; got int."``).

    Example:
        >>> [r.value for r in score_many([["a b c", "a b d"], []], "distinct-n", n=1)]
        [0.6666666666666666, None]
        >>> score_many([["a b"], "oops"], "ttr", on_error="null")[1].reason
        "`sets[1]` must be a list of strings; got a single str. Wrap it in a list: ['oops']."
    """
    if on_error not in ("raise", "null"):
        raise InvalidInputError(f"`on_error` must be one of raise, null; got {on_error!r}.")
    name, inline = parse_metric_arg(metric)
    (plan,) = resolve_metrics([(name, {**inline, **params})], named=False)
    items = list(sets)
    out: list[MetricResult] = []
    with memory_limit(max_memory):
        outcomes = evaluate(items, [plan], what="sets")[0]
    for res in outcomes:
        if isinstance(res, InvalidInputError):
            if on_error == "raise":
                raise res
            res = MetricResult(plan.name, None, "", reason=str(res))
        out.append(res)
    return out
