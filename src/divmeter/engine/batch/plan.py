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
from divmeter.engine.registry import check_params, column_name, get_metric, parse_metric_arg

__all__ = ["MetricArg", "MetricPlan", "resolve_metrics"]

MetricArg = str | tuple[str, Mapping[str, Any]]


@dataclass(frozen=True)
class MetricPlan:
    """A metric resolved for a batch run: name, parameters, output column and granularity."""

    name: str
    params: Mapping[str, Any]
    column: str
    granularity: str
    family: str
    input: str = "texts"
    uses_prompt: bool = False
    uses_fields: bool = False


def resolve_metrics(metrics: Sequence[MetricArg]) -> list[MetricPlan]:
    """Resolve ``"name:k=v"`` strings or ``(name, params)`` pairs into :class:`MetricPlan` s,
    checking every parameter against the metric's declaration.

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
            check_params(spec, params)
        except UnknownMetricError:
            raise
        except InvalidInputError as exc:
            if str(exc).startswith("metric ") or label is None:
                raise
            raise InvalidInputError(f"metric {label!r}: {exc}") from None
        if "model" in spec.params and spec.family in {"content", "lm"}:
            try:
                check_model(spec.family, params.get("model", spec.params["model"]))
            except InvalidInputError as exc:
                raise InvalidInputError(f"metric {label!r}: {exc}") from None
        col = column_name(name, params)
        if col in seen:
            raise InvalidInputError(f"metric column {col!r} is requested twice.")
        seen.add(col)
        plans.append(
            MetricPlan(
                name,
                dict(params),
                col,
                spec.granularity,
                spec.family,
                spec.input,
                uses_prompt="prompt" in spec.params and "prompt" not in params,
                uses_fields="fields" in spec.params and "fields" not in params,
            )
        )
    return plans
