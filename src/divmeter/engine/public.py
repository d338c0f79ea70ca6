"""Declaring metrics, and their public functions: one set through the engine.

:func:`register` is the decorator metric modules use: above a
:class:`~divmeter.engine.definition.Metric` subclass (the built-in metrics), or above a plain
function of one set (a quick metric: :class:`FunctionMetric` turns it into a definition).
:func:`public_function` makes a definition's plain function (``distinct_n(responses, n=2)``):
the engine on a batch of one set, so the function, :func:`divmeter.score`,
:func:`divmeter.score_many`, ``divmeter score`` and corpus mode are one path.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from divmeter.core.errors import InvalidInputError
from divmeter.core.params import UNSET, Param
from divmeter.core.result import MetricResult
from divmeter.engine import registry
from divmeter.engine.batch.evaluate import evaluate
from divmeter.engine.batch.plan import resolve_metrics
from divmeter.engine.definition import Family, Granularity, Metric, make_public

__all__ = ["register", "register_batch", "public_function", "FunctionMetric"]


def run_one(cls: type[Metric], responses: Any, params: Mapping[str, Any]) -> MetricResult:
    """Metric ``cls`` with ``params`` on one set, through the engine (the rule, the formula)."""
    (plan,) = resolve_metrics([(cls.name, dict(params))], named=False)
    res = evaluate([responses], [plan], names=[""])[0][0]
    if isinstance(res, InvalidInputError):
        raise res
    return res


def public_function(cls: type[Metric]) -> Callable[..., MetricResult]:
    """The plain function of the registered definition ``cls``: ``fn(responses, **params)``,
    its keyword defaults the declared ones, its docstring the definition's.

    Example:
        >>> from divmeter.metrics.ngram import distinct_n
        >>> distinct_n(["a b a b", "a b c"], n=2).value
        0.6
    """
    fn = make_public(cls, run_one)
    registry.attach_public(cls, fn)
    return fn


def register(
    name: Any,
    *,
    family: Family | None = None,
    granularity: Granularity | None = None,
    higher_is_more_diverse: bool | None = None,
    bounds: tuple[float | None, float | None] | None = None,
    citation: str | None = None,
    params: Mapping[str, Param | Any] | None = None,
    description: str = "",
    extra: str | None = None,
    input: str = "texts",
    corpus: Any = None,
    order_invariant: bool = True,
    signature: Callable[..., str] | None = None,
    cost: Callable[..., Any] | None = None,
) -> Any:
    """Register a metric.

    A built-in metric is a :class:`~divmeter.engine.definition.Metric` subclass: ``register``
    is its class decorator (``@register`` above ``class DistinctN(Metric)``) and returns it.

    A quick metric can be a plain function of one set: ``@register("my-metric", family=...,
    granularity=..., higher_is_more_diverse=..., bounds=..., citation=...)`` above
    ``def my_metric(responses, *, p=1.0)``, returning a float or a
    :class:`~divmeter.core.result.MetricResult`. ``params`` declares its keyword parameters,
    each a :class:`~divmeter.core.params.Param` (a bare value is an undeclared default); a
    ``Param`` whose default is left unset takes the function's; ``signature(**params)`` gives
    its signature (default: the name and every declared parameter that is not ``runtime``),
    ``cost(n, params, items)`` its cost (a :class:`~divmeter.core.memory.Cost` or ``None``),
    ``corpus`` its corpus accumulator. The decorator returns the metric's public function: the
    engine on one set (validation, the rule for degenerate sets, then the function).

    Example:
        >>> @register("demo-metric", family="form", granularity="set",
        ...           higher_is_more_diverse=True, bounds=(0, 1), citation="none")
        ... def demo(responses):
        ...     return len(set(responses)) / len(responses)
        >>> registry.get_metric("demo-metric").family, demo(["a", "a", "b", "c"]).value
        ('form', 0.75)
        >>> demo(["only one"]).reason
        'fewer than two non-blank responses (got 1)'
        >>> registry.drop("demo-metric")
    """
    if isinstance(name, type) and issubclass(name, Metric):
        return registry.add_definition(name)
    missing = [k for k, v in (("family", family), ("granularity", granularity),
                              ("higher_is_more_diverse", higher_is_more_diverse),
                              ("bounds", bounds), ("citation", citation)) if v is None]
    if missing:
        raise ValueError(f"register({name!r}): missing {', '.join(missing)}")

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        schema = _with_defaults(name, fn, {
            k: v if isinstance(v, Param) else Param(object, default=v)
            for k, v in (params or {}).items()
        })
        doc = (fn.__doc__ or "").strip().splitlines()
        attrs: dict[str, Any] = dict(
            name=name, family=family, granularity=granularity,
            higher_is_more_diverse=higher_is_more_diverse, bounds=bounds, citation=citation,
            description=description or (doc[0] if doc else ""), extra=extra, input=input,
            order_invariant=order_invariant, params=schema, statistics=corpus,
            __doc__=fn.__doc__, __module__=fn.__module__,
            fn=staticmethod(fn), signature_fn=staticmethod(signature) if signature else None,
            cost_fn=staticmethod(cost) if cost else None,
            context=tuple(k for k in ("prompt", "fields") if k in schema),
        )
        cls = type(_class_name(name), (FunctionMetric,), attrs)
        old = registry.registered(name)
        if old is not None and old.definition.__module__ != fn.__module__:
            raise ValueError(f"metric {name!r} is registered twice")
        registry.add_definition(cls, replace_ok=True)
        return public_function(cls)

    return deco


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("_", "-").split("-")) or "Metric"


class FunctionMetric(Metric):
    """The definition of a metric written as a plain function of one set (:func:`register`):
    ``fn(responses, **params)``, optionally with a batched ``many(sets, **params)``
    (:func:`register_batch`)."""

    fn: ClassVar[Callable[..., Any]]
    many: ClassVar[Callable[..., Any] | None] = None
    signature_fn: ClassVar[Callable[..., str] | None] = None
    cost_fn: ClassVar[Callable[..., Any] | None] = None
    batched: ClassVar[bool] = False

    def signature(self) -> str:
        if self.signature_fn is not None:
            return self.signature_fn(**self.p)
        return super().signature()

    def _kwargs(self, ctx: Mapping[str, Any] | None) -> dict[str, Any]:
        kwargs = dict(self.p)
        for key in self.context:
            if key not in self.given and ctx is not None and ctx.get(key) is not None:
                kwargs[key] = ctx[key]
        return kwargs

    def _wrap(self, out: Any) -> Any:
        if isinstance(out, (MetricResult, InvalidInputError)):  # a set's own error is its outcome
            return out
        value = None if out is None else float(out)
        return self.result(value, None if value is not None else "the metric returned None")

    def score(self, sets: Sequence[Any], context: Sequence[Mapping[str, Any]] | None = None
              ) -> list[MetricResult]:
        if self.many is not None and not self.context and len(sets) > 1:
            return [self._wrap(r) for r in self.many(list(sets), **self.p)]
        ctx = context or [None] * len(sets)  # type: ignore[list-item]
        return [self._wrap(self.fn(list(s), **self._kwargs(c)))
                for s, c in zip(sets, ctx, strict=True)]

    def cost(self, n: int, items: Sequence[Any] | None = None) -> Any:
        if self.cost_fn is not None:
            return self.cost_fn(n, self.p, items)
        return None


def _with_defaults(name: str, fn: Callable[..., Any], schema: dict[str, Param]
                   ) -> dict[str, Param]:
    """The declarations with every unset default taken from ``fn``'s signature, after checking
    that the defaults written in both places agree."""
    try:
        keywords = {k: p.default for k, p in inspect.signature(fn).parameters.items()
                    if p.kind is inspect.Parameter.KEYWORD_ONLY}
    except (TypeError, ValueError):  # a builtin or C function: no signature to read
        keywords = {}
    out: dict[str, Param] = {}
    for key, p in schema.items():
        written = keywords.get(key, inspect.Parameter.empty)
        if p.default is UNSET:
            if written is inspect.Parameter.empty:
                raise ValueError(f"metric {name!r}: parameter {key!r} has no default (neither "
                                 "declared nor in the function's signature)")
            p = replace(p, default=written)
        elif written is not inspect.Parameter.empty and not (
                written == p.default and type(written) is type(p.default)):
            raise ValueError(f"metric {name!r}: parameter {key!r} declares default "
                             f"{p.default!r} but the function's signature says {written!r}; "
                             "write it once (leave the Param's default unset)")
        out[key] = p
    return out


def _function_definition(name: str, what: str) -> type[FunctionMetric]:
    spec = registry.registered(name)
    if spec is None:
        raise ValueError(f"{what}: metric {name!r} is not registered (yet)")
    cls = spec.definition
    if not issubclass(cls, FunctionMetric):
        raise ValueError(f"{what}: metric {name!r} is a Metric class; define it there")
    return cls


def register_batch(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Attach a batched implementation ``many(sets, **params)`` to the function metric
    ``name``: one result per set, each as the function gives it on that set.

    Example:
        >>> @register("demo-metric", family="form", granularity="set",
        ...           higher_is_more_diverse=True, bounds=(0, None), citation="none")
        ... def demo(responses):
        ...     return float(len(responses))
        >>> @register_batch("demo-metric")
        ... def demo_many(sets):
        ...     return [float(len(s)) for s in sets]
        >>> registry.get_metric("demo-metric").definition.many is not None
        True
        >>> registry.drop("demo-metric")
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        cls = _function_definition(name, "register_batch")
        if not callable(fn):
            raise ValueError(f"register_batch: the batch target of {name!r} is not callable")
        cls.many = staticmethod(fn)  # type: ignore[assignment]
        cls.batched = True
        return fn

    return deco
