"""Planning a scoring run: ``"name:k=v"`` strings or ``(name, params)`` pairs resolved into
:class:`MetricPlan` s, every parameter checked against the metric's declaration (and every model
resolved) before the first set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from divmeter.core.errors import InvalidInputError, UnknownMetricError
from divmeter.engine.batch.models import check_model
from divmeter.engine.definition import Metric
from divmeter.engine.registry import column_name, get_metric, parse_metric_arg

__all__ = ["MetricArg", "MetricPlan", "resolve_metrics"]


@dataclass(frozen=True)
class MetricPlan:
    """A metric resolved for a run: the metric with its parameters validated (``metric``, an
    instance of its definition) and its output column; the rest is read from the metric once.
    A run carries plans from the command line to the writer; nothing downstream parses names
    back.

    Attributes:
        metric: The metric, parameters validated and resolved.
        column: Its output column (:func:`~divmeter.engine.registry.column_name`).
        name, granularity, family, input: The metric's.
        params: The parameters as requested (defaults not filled in).
        signature: The metric's signature with these parameters.
        uses_prompt, uses_fields: Whether it reads each set's prompt / fields (a context key
            the run does not fix).
    """

    metric: Metric
    column: str
    name: str = field(init=False)
    params: Mapping[str, Any] = field(init=False)
    granularity: str = field(init=False)
    family: str = field(init=False)
    input: str = field(init=False)
    uses_prompt: bool = field(init=False)
    uses_fields: bool = field(init=False)

    def __post_init__(self) -> None:
        m = self.metric
        derived = {"name": m.name, "params": m.given, "granularity": m.granularity,
                   "family": m.family, "input": m.input,
                   "uses_prompt": "prompt" in m.context and "prompt" not in m.given,
                   "uses_fields": "fields" in m.context and "fields" not in m.given}
        for key, value in derived.items():
            object.__setattr__(self, key, value)

    @property
    def signature(self) -> str:
        return self.metric._sig()


#: What a run's metric can be given as: ``"name:k=v"``, ``(name, params)`` or a resolved plan.
MetricArg = str | tuple[str, Mapping[str, Any]] | MetricPlan


def resolve_metrics(metrics: Sequence[MetricArg], *, named: bool = True) -> list[MetricPlan]:
    """Resolve ``"name:k=v"`` strings or ``(name, params)`` pairs into :class:`MetricPlan` s:
    each metric's parameters validated once, against its declarations (and its model resolved).
    Plans given already are kept as they are.

    ``named=False`` leaves errors as the metric words them, without the ``metric '...': ``
    prefix: for one metric named by the call itself (:func:`divmeter.score`, a metric's public
    function), where the prefix would only repeat it.

    ``named=False`` leaves errors as the metric words them, without the ``metric '...': ``
    prefix: for one metric named by the call itself (:func:`divmeter.score`, a metric's public
    function), where the prefix would only repeat it.

    Raises:
        UnknownMetricError: For an unregistered name (with suggestions).
        InvalidInputError: For undeclared or bad parameters (``"metric 'distinct-n:n=0': `n` of
            distinct-n must be an integer >= 1; got 0."``), no metrics, or two requests that give
            the same column.

    Example:
        >>> [p.column for p in resolve_metrics(["distinct-n", ("distinct-n", {"n": 2})])]
        ['distinct-n', 'distinct-n:n=2']
    """
    if not metrics:
        raise InvalidInputError("no metric requested; give at least one, e.g. -m distinct-n.")
    plans: list[MetricPlan] = []
    seen: set[str] = set()
    for m in metrics:
        if isinstance(m, MetricPlan):  # resolved already (a run carries its plans)
            if m.column in seen:
                raise InvalidInputError(f"metric column {m.column!r} is requested twice.")
            seen.add(m.column)
            plans.append(m)
            continue
        label = m.strip() if isinstance(m, str) else None
        try:
            if isinstance(m, str):
                name, params = parse_metric_arg(m)
            else:
                name, params = m[0], dict(m[1])
            spec = get_metric(name)
            label = label or column_name(name, params)
            metric = spec.plan(params)
        except UnknownMetricError:
            raise
        except InvalidInputError as exc:
            if str(exc).startswith("metric ") or label is None or not named:
                raise
            raise InvalidInputError(f"metric {label!r}: {exc}") from None
        if "model" in spec.params and spec.family in {"content", "lm"}:
            try:
                check_model(spec.family, metric.p["model"])
            except InvalidInputError as exc:
                if not named:
                    raise
                raise InvalidInputError(f"metric {label!r}: {exc}") from None
        col = column_name(name, params)
        if col in seen:
            raise InvalidInputError(f"metric column {col!r} is requested twice.")
        seen.add(col)
        plans.append(MetricPlan(metric, col))
    return plans
