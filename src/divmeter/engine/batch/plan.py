"""Planning a scoring run: ``"name:k=v"`` strings or ``(name, params)`` pairs resolved into
:class:`MetricPlan` s, every parameter checked against the metric's declaration (and every model
resolved) before the first set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from divmeter.engine.batch.models import check_model
from divmeter.core.errors import InvalidInputError, UnknownMetricError
from divmeter.engine.definition import Metric
from divmeter.engine.registry import column_name, get_metric, parse_metric_arg

__all__ = ["MetricArg", "MetricPlan", "resolve_metrics"]

MetricArg = str | tuple[str, Mapping[str, Any]]


@dataclass(frozen=True)
class MetricPlan:
    """A metric resolved for a run: the metric with its parameters validated (``metric``, an
    instance of its definition), the parameters as requested and its output column. A run
    carries plans from the command line to the writer; nothing downstream parses names back.
    """

    metric: Metric
    column: str

    @property
    def name(self) -> str:
        return self.metric.name

    @property
    def params(self) -> Mapping[str, Any]:
        """The parameters as requested (defaults not filled in)."""
        return self.metric.given

    @property
    def granularity(self) -> str:
        return self.metric.granularity

    @property
    def family(self) -> str:
        return self.metric.family

    @property
    def input(self) -> str:
        return self.metric.input

    @property
    def signature(self) -> str:
        """The metric's signature with these parameters."""
        return self.metric._sig()

    @property
    def uses_prompt(self) -> bool:
        return "prompt" in self.metric.context and "prompt" not in self.metric.given

    @property
    def uses_fields(self) -> bool:
        return "fields" in self.metric.context and "fields" not in self.metric.given


def resolve_metrics(metrics: Sequence[MetricArg], *, named: bool = True) -> list[MetricPlan]:
    """Resolve ``"name:k=v"`` strings or ``(name, params)`` pairs into :class:`MetricPlan` s:
    each metric's parameters validated once, against its declarations (and its model resolved).

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
