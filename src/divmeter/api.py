"""The top-level scoring entry point."""

from __future__ import annotations

from typing import Any

from divmeter.registry import check_params, get_metric, parse_metric_arg
from divmeter.result import MetricResult

__all__ = ["score"]


def score(responses: Any, metric: str, **params: Any) -> MetricResult:
    """Score ``responses`` with a registered metric.

    Args:
        responses: A list of strings (a response set), or the metric's own input kind
            (CDM: a list of equal-length lists of phrases).
        metric: A registered name, optionally with parameters: ``"self-bleu"`` or
            ``"self-bleu:n=3,variant=sentence"``. Keyword parameters override those.
        **params: The metric's parameters (see ``divmeter list``).

    Returns:
        A :class:`~divmeter.result.MetricResult` with ``.value`` (``None`` when undefined,
        with ``.reason``) and ``.signature``.

    Raises:
        UnknownMetricError: If the metric is not registered.
        InvalidInputError: For malformed responses or unknown parameters.

    Example:
        >>> score(["a b c", "a b d"], "distinct-n", n=1).value
        0.6666666666666666
    """
    name, inline = parse_metric_arg(metric)
    spec = get_metric(name)
    merged = {**inline, **params}
    check_params(spec, merged)
    return spec.load()(responses, **merged)  # type: ignore[no-any-return]
