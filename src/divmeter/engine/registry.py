"""The metric registry: every metric with the facts users need to choose and read it.

Metrics register themselves with :func:`register` in their family module. Family modules import
only numpy/scipy at module level (models are loaded inside the functions, from ``backends/``), so
``divmeter list`` never imports torch.
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import functools
import importlib
import importlib.util
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from divmeter.core.degenerate import degenerate_reason
from divmeter.core.errors import InvalidInputError, UnknownMetricError
from divmeter.core.params import UNSET, Param, parse_value, validate
from divmeter.core.result import MetricResult

__all__ = [
    "MetricSpec",
    "register",
    "register_batch",
    "get_metric",
    "list_metrics",
    "parse_metric_arg",
    "check_params",
    "column_name",
    "register_vectors",
    "vector_kernel",
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
    "divmeter.metrics.geometry",
    "divmeter.metrics.cdm",
    "divmeter.metrics.decan",
    "divmeter.metrics.judge",
    "divmeter.metrics.partition",
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
        fn: The metric's public function (so the name in ``target`` cannot fail to resolve):
            the registered function behind the one rule for degenerate sets
            (:mod:`divmeter.core.degenerate`), as its module exports it.
        batch_fn: The public batched function (the registered one behind the rule).
        merge: How the metric's value over a corpus split into shards is assembled
            (``divmeter score --corpus``, :mod:`divmeter.engine.corpus`): ``exact`` (per-shard
            statistics merged exactly), ``exact-two-pass`` (a second pass against merged
            statistics) or ``none`` (no exact merge: the corpus is scored on one worker). It
            is the ``kind`` of the declared ``corpus`` accumulator.
        corpus: The metric's corpus accumulator, declared in :func:`register` (a subclass of
            :class:`divmeter.engine.corpus.stats.Accumulator`, called as ``corpus(name, params)``),
            or ``None``: the corpus is gathered and scored once
            (:class:`divmeter.engine.corpus.stats.OneWorker`).
        order_invariant: Whether the value does not depend on the order of the responses
            (checked by :func:`divmeter.testing.check_metric`); ``False`` for metrics that
            read the responses in order (none of the built-in ones).
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
    corpus: Any = field(default=None, repr=False, compare=False)
    order_invariant: bool = True
    fn: Callable[..., Any] | None = field(default=None, repr=False, compare=False)
    batch_fn: Callable[..., Any] | None = field(default=None, repr=False, compare=False)

    def load(self) -> Callable[..., Any]:
        """The metric's public function (the rule for degenerate sets applied first)."""
        return self.fn if self.fn is not None else _resolve(self.target)

    def load_batch(self) -> Callable[..., Any] | None:
        """The public batched function, or ``None`` when there is none."""
        if self.batch_fn is not None:
            return self.batch_fn
        if self.batch is None:
            return None
        return _resolve(self.batch)

    def kernel(self) -> Callable[..., Any]:
        """The registered function without the rule for degenerate sets (its formula on any
        set; ``kernel().__wrapped__`` is the function itself): for a caller that has applied
        the rule already (:func:`divmeter.engine.batch.evaluate`, the corpus accumulators) or wants
        the formula on one text."""
        fn = self.load()
        return getattr(fn, KERNEL_ATTR, fn)  # type: ignore[no-any-return]

    def batch_kernel(self) -> Callable[..., Any] | None:
        """The registered batched function itself, without the rule (see :meth:`kernel`)."""
        fn = self.load_batch()
        return fn if fn is None else getattr(fn, KERNEL_ATTR, fn)

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

#: Where a public function keeps the registered function it wraps (see :func:`register`).
KERNEL_ATTR = "__divmeter_kernel__"
#: Set while a metric runs (the rule applied): the public functions it calls on the way
#: (``distinct_n`` calls ``distinct_n_many``; a metric answers an empty input for the rule's
#: signature) pass straight through to the registered functions.
_INSIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("divmeter_inside", default=False)


@contextlib.contextmanager
def rule_applied() -> Iterator[None]:
    """Inside this block the public metric functions skip the rule for degenerate sets (their
    caller has applied it: :func:`divmeter.engine.batch.evaluate`, the corpus accumulators)."""
    token = _INSIDE.set(True)
    try:
        yield
    finally:
        _INSIDE.reset(token)


def _without_rule(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run inside :func:`rule_applied` (a metric's kernel, as :meth:`MetricSpec.kernel`
    gives it: the public functions it calls skip the rule too)."""

    @functools.wraps(fn)
    def kernel(*args: Any, **params: Any) -> Any:
        with rule_applied():
            return fn(*args, **params)

    return kernel


def _rule_signature(fn: Callable[..., Any], *args: Any, **params: Any) -> str:
    """The metric's signature, from the registered function's answer on an empty input."""
    with rule_applied():
        return str(fn([], *args, **params).signature)


def _rule_result(name: str, granularity: str, items: Any, why: str, signature: str
                 ) -> MetricResult:
    details = ({"per_response": [None] * len(items)} if granularity == "response" else {})
    return MetricResult(name, None, signature, reason=why, details=details)


def _public(fn: Callable[..., Any], name: str, granularity: str) -> Callable[..., Any]:
    """``fn`` behind the one rule for degenerate sets: a set the rule refuses gets its null
    result (with the metric's signature, from its answer on an empty input) without a call of
    ``fn`` on it."""

    @functools.wraps(fn)
    def public(responses: Any, *args: Any, **params: Any) -> Any:
        if _INSIDE.get():
            return fn(responses, *args, **params)
        if isinstance(responses, (list, tuple, str, bytes)):
            items = responses
        elif isinstance(getattr(responses, "responses", None), list):  # a ResponseSet
            items = responses.responses
        elif isinstance(responses, Iterable) and not isinstance(responses, Mapping):
            responses = items = list(responses)  # read a generator once
        else:
            items = responses  # the metric reports what it cannot take
        why = degenerate_reason(items, granularity)
        if why is None:
            with rule_applied():
                return fn(responses, *args, **params)
        return _rule_result(name, granularity, items, why, _rule_signature(fn, *args, **params))

    setattr(public, KERNEL_ATTR, _without_rule(fn))
    return public


def _public_many(fn: Callable[..., Any], name: str, granularity: str) -> Callable[..., Any]:
    """The batched ``fn`` behind the rule: the sets it refuses get their null results, the
    others go to ``fn`` in one call (the very same sequence when none is refused)."""

    @functools.wraps(fn)
    def public(sets: Any, *args: Any, **params: Any) -> Any:
        if _INSIDE.get():
            return fn(sets, *args, **params)
        items = sets if isinstance(sets, (list, tuple)) else list(sets)
        whys = [degenerate_reason(s, granularity) for s in items]
        if not any(whys):
            with rule_applied():
                return fn(items, *args, **params)
        live = [s for s, w in zip(items, whys, strict=True) if w is None]
        with rule_applied():
            done = iter(fn(live, *args, **params) if live else ())
        signature = _rule_signature(_REGISTRY[name].kernel(), *args, **params)
        return [next(done) if w is None else _rule_result(name, granularity, s, w, signature)
                for s, w in zip(items, whys, strict=True)]

    setattr(public, KERNEL_ATTR, _without_rule(fn))
    return public


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
    corpus: Any = None,
    order_invariant: bool = True,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering a metric function under ``name``.

    ``params`` declares the metric's keyword parameters, each a
    :class:`~divmeter.core.params.Param` (type, constraint, default, doc); a bare value is taken as an
    undeclared default (no check beyond the name). A ``Param`` whose default is left
    :data:`~divmeter.core.params.UNSET` takes the function's signature default (defaults are
    written once); one written in both places must agree, or registration fails.

    The decorator returns the metric's public function: the registered function behind the
    one rule for degenerate sets (:mod:`divmeter.core.degenerate`), so ``my_metric(["one text"])``
    gives ``None`` with the reason ``"fewer than two non-blank responses (got 1)"`` as
    :func:`divmeter.score` does (one non-blank response is enough for
    ``granularity="response"``), before any work and with the metric's signature (its answer
    on an empty input, which must come at once). :meth:`MetricSpec.kernel` is the function
    itself.

    ``corpus`` declares the metric's corpus accumulator (its sufficient statistics and their
    exact merge, as torchmetrics' ``add_state(..., dist_reduce_fx=...)``): a subclass of
    :class:`divmeter.engine.corpus.stats.Accumulator` defined in the metric's own module
    (``corpus=ResponseMean`` for a per-response metric). Without one, corpus mode gathers the
    texts and scores them once. ``order_invariant=False`` says the value depends on the order of
    the responses.

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
        public = _public(fn, name, granularity)
        schema = _with_defaults(name, fn, {
            k: v if isinstance(v, Param) else Param(object, default=v)
            for k, v in (params or {}).items()
        })
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
            merge=getattr(corpus, "kind", "none") if corpus is not None else "none",
            corpus=corpus,
            order_invariant=order_invariant,
            fn=public,
        )
        return public

    return deco


def _with_defaults(name: str, fn: Callable[..., Any], schema: dict[str, Param]
                   ) -> dict[str, Param]:
    """The declarations with every :data:`~divmeter.core.params.UNSET` default taken from ``fn``'s
    signature, after checking that the defaults written in both places agree."""
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


def register_batch(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator attaching a batched implementation to the registered metric ``name``.

    The decorated function takes a sequence of response sets, each already validated as a list
    (or tuple) of strings, and the metric's keyword parameters; it returns one
    :class:`~divmeter.core.result.MetricResult` per set, identical (value, reason, signature, details)
    to calling the metric on each set. Its parameters are already validated against the
    metric's declarations. :func:`divmeter.score_many` and ``divmeter score`` use it; metrics
    without one are scored set by set. The function itself is stored, so whatever name it is
    bound to in its module, the batch path resolves. As :func:`register`, the decorator returns
    the public function: the sets the rule for degenerate sets refuses get their null results,
    the others go to the registered function in one call.

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
        public = _public_many(fn, name, _REGISTRY[name].granularity)
        _REGISTRY[name] = replace(
            _REGISTRY[name], batch=f"{fn.__module__}:{fn.__qualname__}", batch_fn=public
        )
        return public

    return deco


#: Kernels of the metrics that also score precomputed vectors (``{name: fn}``): ``fn(arrays,
#: **params)`` takes one ``(n, d)`` float64 array per set (or ``(n, n)`` similarity matrices
#: with ``kernel="precomputed"``) and returns one result per set (see :mod:`divmeter.engine.precomputed`).
_VECTORS: dict[str, Callable[..., Any]] = {}


def register_vectors(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator attaching a precomputed-vector kernel to the registered metric ``name``.

    Example:
        >>> @register("demo-metric", family="content", granularity="set",
        ...           higher_is_more_diverse=True, bounds=(0, None), citation="none")
        ... def demo(responses): ...
        >>> @register_vectors("demo-metric")
        ... def demo_vectors(arrays): ...
        >>> vector_kernel("demo-metric") is demo_vectors
        True
        >>> _ = _REGISTRY.pop("demo-metric"), _VECTORS.pop("demo-metric")
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name not in _REGISTRY:
            raise ValueError(f"register_vectors: metric {name!r} is not registered (yet)")
        _VECTORS[name] = fn
        return fn

    return deco


def vector_kernel(name: str) -> Callable[..., Any] | None:
    """The precomputed-vector kernel of metric ``name``, or ``None`` when it scores texts only.

    Example:
        >>> vector_kernel("diameter") is not None, vector_kernel("distinct-n")
        (True, None)
    """
    _load_families()
    return _VECTORS.get(name)


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
