"""The metric registry: every metric with the facts users need to choose and read it.

Metrics register themselves with :func:`register` in their family module. Family modules import
only numpy/scipy at module level (models are loaded inside the functions, from ``backends/``), so
``divmeter list`` never imports torch.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from divmeter.errors import InvalidInputError, UnknownMetricError
from divmeter.params import Param, parse_value, validate

__all__ = [
    "MetricSpec",
    "register",
    "register_batch",
    "get_metric",
    "list_metrics",
    "parse_metric_arg",
    "check_params",
    "column_name",
]

Family = Literal["form", "content", "lm", "judge"]
Granularity = Literal["set", "response", "corpus", "pair"]

#: Family modules, imported on first use of the registry. A module that does not exist (yet) is
#: skipped, so the list can name every family the package plans.
FAMILY_MODULES: tuple[str, ...] = (
    "divmeter.metrics.ngram",
    "divmeter.metrics.overlap",
    "divmeter.metrics.vendi",
    "divmeter.metrics.richness",
    "divmeter.metrics.embedding",
    "divmeter.metrics.cdm",
    "divmeter.metrics.decan",
    "divmeter.metrics.judge",
)


@dataclass(frozen=True)
class MetricSpec:
    """Metadata of a registered metric.

    Attributes:
        name: Public name, e.g. ``"distinct-n"``.
        family: ``form`` (n-gram / lexical), ``content`` (embeddings), ``lm`` or ``judge``.
        granularity: ``set`` (one value per response set), ``response`` (one value per response,
            the set value is their mean), ``corpus`` (the set is treated as one corpus) or ``pair``.
        higher_is_more_diverse: Direction of the headline value.
        bounds: (low, high) of the headline value; ``None`` for unbounded.
        citation: The paper that defines the metric (as implemented here).
        target: ``"module:function"`` implementing it.
        params: Documented parameters with their defaults (``{name: default}``).
        schema: The declared parameters (``{name: Param}``): type, constraint, default, doc;
            :func:`check_params` validates a call against them.
        description: One line for ``divmeter list``.
        extra: The pip extra the metric needs, or ``None`` for the core.
        input: ``texts`` (a list of strings) or ``instantiations`` (CDM: lists of phrases).
        batch: ``"module:function"`` of an optional batched implementation (see
            :func:`register_batch`), or ``None``: then many sets are scored one by one.
        fn: The registered function itself (so the name in ``target`` cannot fail to resolve).
        batch_fn: The registered batched function itself.
        merge: How the metric's value over a corpus split into shards is assembled
            (``divmeter score --corpus``, :mod:`divmeter.corpus`): ``exact`` (per-shard
            statistics merged exactly), ``exact-two-pass`` (a second pass against merged
            statistics) or ``none`` (no exact merge: the corpus is scored on one worker).
    """

    name: str
    family: Family
    granularity: Granularity
    higher_is_more_diverse: bool
    bounds: tuple[float | None, float | None]
    citation: str
    target: str
    params: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    extra: str | None = None
    input: str = "texts"
    batch: str | None = None
    schema: Mapping[str, Param] = field(default_factory=dict)
    merge: str = "none"
    fn: Callable[..., Any] | None = field(default=None, repr=False, compare=False)
    batch_fn: Callable[..., Any] | None = field(default=None, repr=False, compare=False)

    def load(self) -> Callable[..., Any]:
        """The function implementing the metric."""
        return self.fn if self.fn is not None else _resolve(self.target)

    def load_batch(self) -> Callable[..., Any] | None:
        """The batched implementation, or ``None`` when there is none."""
        if self.batch_fn is not None:
            return self.batch_fn
        if self.batch is None:
            return None
        return _resolve(self.batch)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "granularity": self.granularity,
            "direction": "higher" if self.higher_is_more_diverse else "lower",
            "bounds": list(self.bounds),
            "params": {k: _jsonable_default(v) for k, v in self.params.items()},
            "parameters": {k: p.to_dict() for k, p in self.schema.items()},
            "extra": self.extra,
            "input": self.input,
            "merge": self.merge,
            "description": self.description,
            "citation": self.citation,
        }


def _jsonable_default(v: Any) -> Any:
    if isinstance(v, float) and v == float("inf"):
        return "inf"
    return v


@functools.cache
def _resolve(target: str) -> Callable[..., Any]:
    """``"module:function"`` -> the function (imported once, then cached)."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


_REGISTRY: dict[str, MetricSpec] = {}
_loaded = False


def register(
    name: str,
    *,
    family: Family,
    granularity: Granularity,
    higher_is_more_diverse: bool,
    bounds: tuple[float | None, float | None],
    citation: str,
    params: Mapping[str, Param | Any] | None = None,
    description: str = "",
    extra: str | None = None,
    input: str = "texts",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering a metric function under ``name``.

    ``params`` declares the metric's keyword parameters, each a
    :class:`~divmeter.params.Param` (type, constraint, default, doc); a bare value is taken as an
    undeclared default (no check beyond the name).

    Example:
        >>> @register("demo-metric", family="form", granularity="set",
        ...           higher_is_more_diverse=True, bounds=(0, 1), citation="none")
        ... def demo(responses): ...
        >>> get_metric("demo-metric").family
        'form'
        >>> _ = _REGISTRY.pop("demo-metric")
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in _REGISTRY and _REGISTRY[name].target != f"{fn.__module__}:{fn.__name__}":
            raise ValueError(f"metric {name!r} is registered twice")
        schema = {
            k: v if isinstance(v, Param) else Param(object, default=v)
            for k, v in (params or {}).items()
        }
        _REGISTRY[name] = MetricSpec(
            name=name,
            family=family,
            granularity=granularity,
            higher_is_more_diverse=higher_is_more_diverse,
            bounds=bounds,
            citation=citation,
            target=f"{fn.__module__}:{fn.__name__}",
            params={k: p.default for k, p in schema.items()},
            description=description or ((fn.__doc__ or "").strip().splitlines() or [""])[0],
            extra=extra,
            input=input,
            schema=schema,
            fn=fn,
        )
        return fn

    return deco


def register_batch(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator attaching a batched implementation to the registered metric ``name``.

    The decorated function takes a sequence of response sets, each already validated as a list
    (or tuple) of strings, and the metric's keyword parameters; it returns one
    :class:`~divmeter.result.MetricResult` per set, identical (value, reason, signature, details)
    to calling the metric on each set. Its parameters are already validated against the
    metric's declarations. :func:`divmeter.score_many` and ``divmeter score`` use it; metrics
    without one are scored set by set. The function itself is stored, so whatever name it is
    bound to in its module, the batch path resolves.

    Example:
        >>> @register("demo-metric", family="form", granularity="set",
        ...           higher_is_more_diverse=True, bounds=(0, 1), citation="none")
        ... def demo(responses): ...
        >>> @register_batch("demo-metric")
        ... def demo_many(sets): ...
        >>> get_metric("demo-metric").batch.endswith(":demo_many")
        True
        >>> _ = _REGISTRY.pop("demo-metric")
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name not in _REGISTRY:
            raise ValueError(f"register_batch: metric {name!r} is not registered (yet)")
        if not callable(fn):
            raise ValueError(f"register_batch: the batch target of {name!r} is not callable")
        _REGISTRY[name] = replace(
            _REGISTRY[name], batch=f"{fn.__module__}:{fn.__qualname__}", batch_fn=fn
        )
        return fn

    return deco


def _load_families() -> None:
    global _loaded
    if _loaded:
        return
    for mod in FAMILY_MODULES:
        if importlib.util.find_spec(mod) is not None:
            importlib.import_module(mod)
    from divmeter.corpus.stats import MERGE_KINDS

    for name, how in MERGE_KINDS.items():
        if name in _REGISTRY:
            _REGISTRY[name] = replace(_REGISTRY[name], merge=how)
    _loaded = True


def list_metrics(family: str | None = None) -> list[MetricSpec]:
    """All registered metrics (optionally of one family), sorted by family then name.

    Example:
        >>> "distinct-n" in [s.name for s in list_metrics()]
        True
    """
    _load_families()
    order = {"form": 0, "content": 1, "lm": 2, "judge": 3}
    specs = [s for s in _REGISTRY.values() if family is None or s.family == family]
    return sorted(specs, key=lambda s: (order.get(s.family, 9), s.name))


def get_metric(name: str) -> MetricSpec:
    """The spec of metric ``name``.

    Raises:
        UnknownMetricError: With close matches, if the name is not registered.
    """
    _load_families()
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(_REGISTRY), n=3, cutoff=0.5)
        prefix = [m for m in _REGISTRY if m.startswith(name) and m not in close]
        hints = close + prefix[: 3 - len(close)]
        hint = f" Did you mean {' or '.join(repr(h) for h in hints)}?" if hints else ""
        raise UnknownMetricError(
            f"Unknown metric {name!r}.{hint} See `divmeter list` for all metrics."
        ) from None


def parse_metric_arg(arg: str) -> tuple[str, dict[str, Any]]:
    """Parse ``NAME[:k=v,k=v]`` as used on the command line, each value read as its declared
    type (:meth:`divmeter.params.Param.parse`) and checked. Values of a name that is not
    registered are read by :func:`divmeter.params.parse_value`.

    Raises:
        InvalidInputError: For malformed ``k=v`` items, undeclared parameters or bad values
            (``lowercase=maybe``).

    Example:
        >>> parse_metric_arg("self-bleu:variant=corpus,n=4")
        ('self-bleu', {'variant': 'corpus', 'n': 4})
    """
    name, _, rest = arg.partition(":")
    name = name.strip()
    raw: dict[str, str] = {}
    if rest:
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise InvalidInputError(
                    f"metric argument {arg!r}: parameters must be written k=v separated by "
                    f"commas, e.g. 'self-bleu:n=3,variant=corpus'; got {item!r}."
                )
            raw[key.strip()] = value.strip()
    _load_families()
    spec = _REGISTRY.get(name)
    if spec is None:  # callers report the unknown name (with suggestions)
        return name, {k: parse_value(v) for k, v in raw.items()}
    validate(spec.name, spec.schema, {k: None for k in raw if k not in spec.schema})
    params = {k: spec.schema[k].parse(v, k, spec.name) for k, v in raw.items()}
    return name, params


def check_params(spec: MetricSpec, params: Mapping[str, Any]) -> None:
    """Validate a call's parameters against the metric's declarations
    (:func:`divmeter.params.validate`): undeclared names, bad values, bad combinations.

    Example:
        >>> check_params(get_metric("distinct-n"), {"n": 0})
        Traceback (most recent call last):
        ...
        divmeter.errors.InvalidInputError: `n` of distinct-n must be an integer >= 1; got 0.
    """
    validate(spec.name, spec.schema, params)


def column_name(name: str, params: Mapping[str, Any]) -> str:
    """Output column for a metric: its name, then its non-default parameters in the metric's
    declared order (whatever order they were written in, so ``--resume`` finds the column).

    Example:
        >>> column_name("self-bleu", {"n": 3, "variant": "corpus"})
        'self-bleu:n=3'
        >>> column_name("self-bleu", {"variant": "sentence", "n": 3})
        'self-bleu:n=3,variant=sentence'
    """
    spec = get_metric(name)
    declared = list(spec.params)
    keys = sorted(params, key=lambda k: (declared.index(k) if k in declared else len(declared), k))
    extra = [
        f"{k}={_fmt_param(params[k])}"
        for k in keys
        if k not in spec.params or spec.params[k] != params[k]
    ]
    return name + (":" + ",".join(extra) if extra else "")


def _fmt_param(v: Any) -> str:
    if isinstance(v, float) and v == float("inf"):
        return "inf"
    from divmeter.redact import redact  # a column never shows a URL's user:password@

    return redact(str(v))
