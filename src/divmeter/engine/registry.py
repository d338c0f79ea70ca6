"""The metric registry: every metric with the facts users need to choose and read it.

Metrics register themselves with :func:`register` in their family module. Family modules import
only numpy/scipy at module level (models are loaded inside the functions, from ``backends/``), so
``divmeter list`` never imports torch.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from divmeter.core.errors import InvalidInputError, UnknownMetricError
from divmeter.core.params import Param, parse_value, validate
from divmeter.engine import definition
from divmeter.engine.definition import Family, Granularity, Metric, check_definition

__all__ = [
    "MetricSpec",
    "add_definition",
    "attach_public",
    "registered",
    "get_metric",
    "list_metrics",
    "parse_metric_arg",
    "check_params",
    "column_name",
]

#: Family modules, imported on first use of the registry. A module that does not exist (yet) is
#: skipped, so the list can name every family the package plans.
FAMILY_MODULES: tuple[str, ...] = (
    "divmeter.metrics.ngram",
    "divmeter.metrics.overlap",
    "divmeter.metrics.vendi",
    "divmeter.metrics.richness",
    "divmeter.metrics.embedding",
    "divmeter.metrics.geometry",
    "divmeter.metrics.cdm",
    "divmeter.metrics.decan",
    "divmeter.metrics.judge",
    "divmeter.metrics.partition",
)


@dataclass(frozen=True)
class MetricSpec:
    """What ``divmeter list`` shows of a registered metric, read from its definition.

    Attributes:
        name: Public name, e.g. ``"distinct-n"``.
        family: ``form`` (n-gram / lexical), ``content`` (embeddings), ``lm`` or ``judge``.
        granularity: ``set`` (one value per response set), ``response`` (one value per
            response, the set value is their mean), ``corpus`` or ``pair``.
        higher_is_more_diverse: Direction of the headline value.
        bounds: (low, high) of the headline value; ``None`` for unbounded.
        citation: The paper that defines the metric (as implemented here).
        params: The defaults of the declared parameters (``{name: default}``).
        schema: The declared parameters (``{name: Param}``).
        description: One line for ``divmeter list``.
        extra: The pip extra the metric needs, or ``None`` for the core.
        input: ``texts`` (a list of strings) or ``instantiations`` (CDM: lists of phrases).
        merge: How corpus shards combine: ``exact``, ``exact-two-pass`` or ``none`` (gathered
            and scored once).
        order_invariant: Whether the value does not depend on the order of the responses.
        definition: The metric's definition (a :class:`~divmeter.engine.definition.Metric`
            subclass): ``spec.definition(n=2)`` is the metric with its parameters resolved.
        fn: The metric's public function (one set through the engine), when its module made one.
    """

    name: str
    family: Family
    granularity: Granularity
    higher_is_more_diverse: bool
    bounds: tuple[float | None, float | None]
    citation: str
    params: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    extra: str | None = None
    input: str = "texts"
    schema: Mapping[str, Param] = field(default_factory=dict)
    merge: str = "none"
    order_invariant: bool = True
    definition: type[Metric] = field(default=Metric, repr=False, compare=False)
    fn: Callable[..., Any] | None = field(default=None, repr=False, compare=False)

    @property
    def target(self) -> str:
        """``module:Class`` of the definition."""
        return f"{self.definition.__module__}:{self.definition.__qualname__}"

    @property
    def takes_vectors(self) -> bool:
        """Whether the metric also scores precomputed vectors."""
        return self.definition.takes_vectors()

    def plan(self, params: Mapping[str, Any] | None = None) -> Metric:
        """The metric with ``params`` resolved and validated (an instance of its definition)."""
        return self.definition(dict(params or {}))

    def load(self) -> Callable[..., Any]:
        """The metric's public function (one set through the engine)."""
        if self.fn is None:
            raise ValueError(f"metric {self.name!r} has no public function (its module did not "
                             "export one with divmeter.engine.public.public_function)")
        return self.fn

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


_REGISTRY: dict[str, MetricSpec] = {}
_loaded = False


def _spec_of(cls: type[Metric], fn: Callable[..., Any] | None = None) -> MetricSpec:
    doc = (cls.__doc__ or "").strip().splitlines()
    return MetricSpec(
        name=cls.name,
        family=cls.family,
        granularity=cls.granularity,
        higher_is_more_diverse=cls.higher_is_more_diverse,
        bounds=cls.bounds,
        citation=cls.citation,
        params={k: p.default for k, p in cls.params.items()},
        description=cls.description or (doc[0] if doc else ""),
        extra=cls.extra,
        input=cls.input,
        schema=dict(cls.params),
        merge=cls.merge_kind(),
        order_invariant=cls.order_invariant,
        definition=cls,
        fn=fn,
    )


def add_definition(cls: type[Metric], *, replace_ok: bool = False) -> type[Metric]:
    """Register the definition ``cls`` under ``cls.name`` (see
    :func:`divmeter.engine.public.register`, the decorator metric modules use)."""
    check_definition(cls)
    old = _REGISTRY.get(cls.name)
    if old is not None and not replace_ok and old.definition.__qualname__ != cls.__qualname__:
        raise ValueError(f"metric {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = _spec_of(cls, old.fn if old is not None and
                                   old.definition is cls else None)
    return cls


def registered(name: str) -> MetricSpec | None:
    """The spec registered under ``name`` so far, or ``None`` (no family module is loaded)."""
    return _REGISTRY.get(name)


def attach_public(cls: type[Metric], fn: Callable[..., Any]) -> None:
    """Record ``fn`` as the public function of the registered definition ``cls``."""
    spec = _REGISTRY.get(cls.name)
    if spec is not None and spec.definition is cls:
        _REGISTRY[cls.name] = replace(spec, fn=fn)


def drop(name: str) -> None:
    """Remove metric ``name`` (tests and examples that register a metric for a moment)."""
    _REGISTRY.pop(name, None)


def _load_families() -> None:
    global _loaded
    if _loaded:
        return
    for mod in FAMILY_MODULES:
        if importlib.util.find_spec(mod) is not None:
            importlib.import_module(mod)
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
    type (:meth:`divmeter.core.params.Param.parse`) and checked. Values of a name that is not
    registered are read by :func:`divmeter.core.params.parse_value`.

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
    (:func:`divmeter.core.params.validate`): undeclared names, bad values, bad combinations.

    Example:
        >>> check_params(get_metric("distinct-n"), {"n": 0})
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: `n` of distinct-n must be an integer >= 1; got 0.
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
    from divmeter.core.redact import redact  # a column never shows a URL's user:password@

    return redact(str(v))


definition.REBUILD = lambda name, params: get_metric(name).plan(params)
