"""One definition per metric: the facts, the declared parameters and every path, in one class.

A metric is a subclass of :class:`Metric` registered with :func:`divmeter.engine.registry.register`.
It says, in one place:

* **the facts** users read (``name``, ``family``, ``granularity``, direction, ``bounds``,
  ``citation``, ``description``, ``extra``) and the **input** it takes (``texts``, or
  ``instantiations`` for CDM);
* **its parameters**, each a :class:`~divmeter.core.params.Param` with its default written once
  (``params``); an instance is the metric with its parameters resolved and validated once
  (``DistinctN(n=2)``), and :meth:`Metric.setup` derives what every path needs from them
  (tokenizer, orders, the model's name);
* **its signature** (:meth:`Metric.signature`), from the resolved parameters alone: the engine
  gives null results that signature without ever calling the metric;
* **the formula** on many sets at once (:meth:`Metric.score`; one set is a batch of one);
* **its precomputed-vector path** (:meth:`Metric.vectors`), where it takes vectors;
* **its corpus statistics** (``statistics``: an accumulator class whose statistics merge exactly,
  or ``None`` when there is no exact merge and the corpus is gathered and scored once), built from
  the same resolved instance, so corpus mode cannot read a parameter differently;
* **its cost** for a set of ``n`` responses (:meth:`Metric.cost`), announced before the work and
  checked against the memory limit.

Everything generic (validation, the rule for degenerate sets, null results, batching, corpus
shards, workers, vectors) is applied once by the engine (:func:`divmeter.engine.batch.evaluate`,
:mod:`divmeter.engine.corpus`), never by the metric. Users still call plain functions: the
module exports ``distinct_n = public_function(DistinctN)``, whose keyword defaults are the
declared ones.

Example:
    >>> from divmeter.core.params import Param
    >>> class FirstLength(Metric):
    ...     '''Length in characters of the longest response.'''
    ...     name, family, granularity = "demo-longest", "form", "set"
    ...     higher_is_more_diverse, bounds, citation = True, (0, None), "none"
    ...     params = {"scale": Param(float, gt=0, default=1.0, doc="multiplier")}
    ...     def score(self, sets):
    ...         return [self.result(max(map(len, s)) * self.p["scale"]) for s in sets]
    >>> m = FirstLength(scale=2.0)
    >>> m.signature(), [r.value for r in m.score([("ab", "abc")])]
    ('demo-longest|scale:2|v:0.1.0', [6.0])
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from divmeter.core.errors import InvalidInputError
from divmeter.core.params import Param, validate
from divmeter.core.result import MetricResult, make_signature

__all__ = ["Metric", "Family", "Granularity", "SetContext"]

Family = Literal["form", "content", "lm", "judge"]
Granularity = Literal["set", "response", "corpus", "pair"]

#: What the engine knows of each set beside its items, for metrics that read it (Decan's prompt,
#: the partition metrics' fields): ``{"prompt": ..., "fields": {...}}``, one mapping per set.
SetContext = Mapping[str, Any]


class Metric:
    """A metric's one definition (see the module docstring); subclass it, then register it.

    Attributes:
        given: The parameters as requested (no defaults filled in): output columns name them.
        p: Every declared parameter, defaults filled in and validated.
    """

    # ---------------------------------------------------------------- facts (class attributes)
    name: ClassVar[str]
    family: ClassVar[Family]
    granularity: ClassVar[Granularity]
    higher_is_more_diverse: ClassVar[bool]
    bounds: ClassVar[tuple[float | None, float | None]]
    citation: ClassVar[str]
    description: ClassVar[str] = ""
    extra: ClassVar[str | None] = None
    input: ClassVar[str] = "texts"
    order_invariant: ClassVar[bool] = True
    #: The declared parameters: ``{name: Param}``; each default written here, once.
    params: ClassVar[Mapping[str, Param]] = {}
    #: The corpus accumulator (:class:`divmeter.engine.corpus.stats.Accumulator` subclass) whose
    #: statistics merge exactly, or ``None``: no exact merge, the corpus is gathered and scored
    #: once (:class:`~divmeter.engine.corpus.stats.OneWorker`).
    statistics: ClassVar[Any] = None
    #: Per-set context keys the metric reads when the run does not fix them (``prompt``,
    #: ``fields``): each must be a declared parameter.
    context: ClassVar[tuple[str, ...]] = ()
    #: Whether :meth:`score` works on many sets at once (``False``: the engine calls it set by
    #: set, each named in the metric's cost notes and progress).
    batched: ClassVar[bool] = True

    def __init__(self, params: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        given = {**dict(params or {}), **kwargs}
        validate(self.name, self.params, given)
        self.given: dict[str, Any] = given
        self.p: dict[str, Any] = {**{k: d.default for k, d in self.params.items()}, **given}
        self.setup()

    # ---------------------------------------------------------------- the definition's parts

    def setup(self) -> None:
        """Derive, once, what every path needs from :attr:`p` (tokenizer, orders, model)."""

    def signature(self) -> str:
        """The settings that can change the number, in a stable order: by default the name and
        every declared parameter that is not ``runtime``, in declared order."""
        return make_signature(self.name, **{
            k: _sig_value(self.p[k]) for k, d in self.params.items() if not d.runtime})

    def score(self, sets: Sequence[Any], context: Sequence[SetContext] | None = None
              ) -> list[MetricResult]:
        """The formula: one result per set of ``sets`` (validated tuples of strings, or the
        metric's own input kind), each of which the rule for degenerate sets has let through.
        ``context`` holds each set's context (:attr:`context`) when the metric reads one."""
        raise NotImplementedError(f"metric {self.name!r} defines no score()")

    def vector_signature(self) -> str:
        """The signature of results computed from precomputed vectors (no encoder made them:
        metrics on vectors say ``emb:precomputed`` in place of the model)."""
        return self._sig()

    def vectors(self, arrays: Sequence[Any]) -> list[MetricResult]:
        """The formula on precomputed vectors: one result per ``(n, d)`` float64 array (the
        engine checks shapes and applies the rule). Only metrics that take vectors define it."""
        raise NotImplementedError(f"{self.name} scores texts, not precomputed vectors")

    #: ``encode(self, sets) -> list[array]``: the vectors the metric's text path computes for
    #: each set (an encoder's embeddings), for metrics whose formula is on vectors; then
    #: precomputed vectors are literally the same input (``None``: the metric does not embed).
    encode: ClassVar[Callable[..., Any] | None] = None
    #: The parameters only :attr:`encode` reads (which encoder, where it runs): beside
    #: precomputed vectors, which are already encoded, the engine refuses them when they are
    #: set to another value than their default (:meth:`encoder_conflict`).
    encoder_params: ClassVar[tuple[str, ...]] = ()

    def encoder_conflict(self) -> InvalidInputError | None:
        """The error of a call that gives precomputed vectors and sets a parameter of
        :attr:`encoder_params` (it would be ignored), or ``None``."""
        for key in self.encoder_params:
            if key in self.given and self.given[key] != self.params[key].default:
                return InvalidInputError(
                    f"`{key}` of {self.name} picks the encoder; it does not apply to "
                    f"precomputed vectors (they are already embedded); got {self.given[key]!r}."
                )
        return None

    def cost(self, n: int, items: Sequence[Any] | None = None) -> Any:
        """What scoring one set of ``n`` responses costs (a :class:`divmeter.core.memory.Cost`),
        or ``None`` for a metric linear in its input. ``items`` are the set's texts when known
        (token counts refine some estimates)."""
        return None

    # ---------------------------------------------------------------- helpers for subclasses

    @classmethod
    def takes_vectors(cls) -> bool:
        """Whether the metric scores precomputed vectors (it defines :meth:`vectors`)."""
        return cls.vectors is not Metric.vectors

    @classmethod
    def merge_kind(cls) -> str:
        """``exact``, ``exact-two-pass`` or ``none``: how corpus shards combine."""
        return "none" if cls.statistics is None else str(cls.statistics.kind)

    @property
    def pauses_collector(self) -> bool:
        """Whether the engine pauses Python's cyclic collector while this metric scores
        (:func:`divmeter.core.memory.collector_paused`): form metrics, which count in memory;
        never a metric with a model or an HTTP client, whose objects may hold cycles for as
        long as a run takes."""
        return self.family == "form"

    def result(self, value: float | None, reason: str | None = None,
               details: Mapping[str, Any] | None = None) -> MetricResult:
        """A result of this metric with its signature."""
        return MetricResult(self.name, value, self._sig(), reason=reason,
                            details=dict(details or {}))

    def null(self, reason: str, n_items: int = 0, *, vectors: bool = False) -> MetricResult:
        """The null result of a set the rule refuses (response-level metrics list a ``None``
        per response); ``vectors``: a set given as precomputed vectors."""
        details = {"per_response": [None] * n_items} if self.granularity == "response" else {}
        sig = self.vector_signature() if vectors else self._sig()
        return MetricResult(self.name, None, sig, reason=reason, details=details)

    def _sig(self) -> str:
        sig = self.__dict__.get("_signature")
        if sig is None:
            sig = self.__dict__["_signature"] = self.signature()
        return sig  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.given.items())
        return f"{type(self).__name__}({inner})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its name and parameters (workers and Ray rebuild it from their registry,
        so a definition made at run time travels too)."""
        return (rebuild, (self.name, self.given))


#: ``(name, params) -> Metric``: set by the registry (a hook, so this module imports nothing
#: above it).
REBUILD: Callable[[str, Mapping[str, Any]], Metric] | None = None


def rebuild(name: str, params: Mapping[str, Any]) -> Metric:
    """The metric ``name`` with ``params``, from the registry (unpickling)."""
    if REBUILD is None:
        raise RuntimeError("the metric registry is not loaded")
    return REBUILD(name, params)


def _sig_value(v: Any) -> Any:
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return v


def function_signature(cls: type[Metric]) -> inspect.Signature:
    """``(responses, *, p1=default1, ...)``: the public function's signature, from the
    declarations (defaults written once)."""
    first = inspect.Parameter("responses", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    rest = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=d.default)
            for k, d in cls.params.items()]
    return inspect.Signature([first, *rest], return_annotation=MetricResult)


def check_definition(cls: type[Metric]) -> None:
    """Refuse a definition that cannot work, at registration: a missing fact, a context key
    that is not a declared parameter, a parameter declared without a default.

    Raises:
        ValueError: naming the metric and what is missing.
    """
    for attr in ("name", "family", "granularity", "higher_is_more_diverse", "bounds",
                 "citation"):
        if not hasattr(cls, attr):
            raise ValueError(f"metric {cls.__name__}: the definition has no {attr!r}")
    if cls.score is Metric.score:
        raise ValueError(f"metric {cls.name!r}: the definition has no score()")
    for key in cls.context:
        if key not in cls.params:
            raise ValueError(f"metric {cls.name!r}: context key {key!r} is not a parameter")
    from divmeter.core.params import UNSET

    for key, d in cls.params.items():
        if d.default is UNSET:
            raise ValueError(f"metric {cls.name!r}: parameter {key!r} has no default")


def make_public(cls: type[Metric], run: Callable[[type[Metric], Any, dict[str, Any]], Any]
                ) -> Callable[..., MetricResult]:
    """The metric's public function: ``fn(responses, **params)`` scores one set through the
    engine's ``run`` (validation, the rule, the formula), with the declared defaults in its
    signature and the definition's docstring."""

    def public(responses: Any, **params: Any) -> MetricResult:
        return run(cls, responses, params)  # type: ignore[no-any-return]

    public.__name__ = public.__qualname__ = cls.name.replace("-", "_")
    public.__doc__ = cls.__doc__
    public.__module__ = cls.__module__
    public.__signature__ = function_signature(cls)  # type: ignore[attr-defined]
    public.__divmeter_metric__ = cls  # type: ignore[attr-defined]
    return public

