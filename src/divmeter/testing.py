"""The contract every metric passes: :func:`check_metric` (scikit-learn's ``check_estimator``).

``check_metric("distinct-n")`` runs, for one registered metric, every check below on small sets
(the caller may give its own) and raises :class:`MetricCheckError` (an ``AssertionError``) at the
first failure, naming the metric, the check and what differed; it returns a
:class:`CheckReport` listing the checks that ran and those that could not run here (an optional
extra not installed, or something the call needs that is absent, such as a judge's server:
:class:`~divmeter.core.errors.UnavailableError`), with the reason. A third-party metric registered
with :func:`divmeter.engine.registry.register` is checked the same way::

    from divmeter.testing import check_metric

    report = check_metric("my-metric")
    assert not report.skipped, report.skipped

The checks:

1. **one value, three ways**: :func:`divmeter.score`, :func:`divmeter.score_many` (all the sets
   in one call of the metric's formula) and the public function (``spec.load()``) give the
   same result (value, reason, signature, details) on normal and degenerate sets;
2. **values**: a normal set gets a finite value within the declared bounds; every ``None`` has a
   reason; the signature reads ``name|key:value|...|v:VERSION``;
3. **the rule for degenerate sets**: a set with fewer than two non-blank responses (one for
   ``granularity="response"``) is ``None`` with the rule's reason
   (:func:`divmeter.core.degenerate.degenerate_reason`) and the metric's signature;
4. **corpus mode**: the metric's corpus accumulator (``register(..., corpus=...)``, or the
   one-worker fallback), fed the set as two shards and merged, gives :func:`divmeter.score` on
   the whole set: same signature and reason, the value within ``rel_tol`` (``exact`` merges) or
   bit for bit (``none``), degenerate sets included;
5. **parameters**: every declared parameter but the ``runtime`` ones, set to the alternative
   its :class:`~divmeter.core.params.Param` gives relative to the value in use
   (:func:`parameter_alternatives`, with the setting of another parameter it needs, e.g. ``k``
   needs ``approx=nystroem``), changes the value or the signature;
6. **bad values**: every value that breaks a parameter's declaration (:func:`bad_values`) is
   refused with :class:`~divmeter.core.errors.InvalidInputError` by ``score`` and ``score_many``
   before any set is scored; a bare string instead of a list is refused too;
7. **determinism** (two calls agree), **list/tuple** (same value), and **order invariance**
   (a permutation of the responses gives the same value within ``1e-9``) unless the metric is
   registered with ``order_invariant=False``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from divmeter.api import score, score_many
from divmeter.core.degenerate import degenerate_reason
from divmeter.core.errors import InvalidInputError, MissingDependencyError, UnavailableError
from divmeter.core.params import UNSET, Param, validate
from divmeter.core.result import MetricResult
from divmeter.engine.corpus.stats import make_accumulator
from divmeter.engine.registry import MetricSpec, check_params, get_metric

__all__ = [
    "formula",
    "check_metric",
    "CheckReport",
    "MetricCheckError",
    "Alternative",
    "parameter_alternatives",
    "bad_values",
    "NORMAL_SETS",
    "DEGENERATE_SETS",
    "INSTANTIATION_SETS",
    "DEGENERATE_INSTANTIATIONS",
]

_SHORT = [
    "The old man walked his dog along the quiet river at dawn.",
    "A young girl painted the red barn while her brother read aloud.",
    "The old man walked his cat along the busy road at night.",
    "Rain fell on the city; nobody noticed the parade had been cancelled.",
    "Engineers argued for hours about the bridge design, then ordered pizza.",
]
#: Normal response sets: five short responses, three of about 60 words (HD-D needs 42 tokens
#: per response, vocd-D samples of up to 50, MTLD a repeated word), and a pair.
NORMAL_SETS: list[list[str]] = [
    _SHORT,
    [" ".join([_SHORT[i], _SHORT[i], _SHORT[(i + 1) % 5], _SHORT[(i + 2) % 5],
               _SHORT[(i + 3) % 5]]) for i in range(3)],
    ["Stocks fell sharply today.", "Markets dropped this morning."],
]
#: Degenerate response sets, by name.
DEGENERATE_SETS: dict[str, list[str]] = {
    "empty set": [],
    "one blank response": [""],
    "one response": ["just one response here"],
    "one non-blank response": ["a few words", " \t"],
    "blank responses": ["", " ", "\n"],
}
#: Normal and degenerate sets of instantiations (metrics with ``input="instantiations"``: CDM).
INSTANTIATION_SETS: list[list[list[str]]] = [
    [["Armin", "fieldwork", "war zone"], ["Jessica", "market research", "economic hotspot"],
     ["Marcus", "surveys", "conflict zone"]],
]
DEGENERATE_INSTANTIATIONS: dict[str, list[list[str]]] = {
    "empty set": [],
    "one instantiation": [["Armin", "fieldwork", "war zone"]],
}
_SIG_RE = re.compile(r"^[a-z0-9-]+(\|[A-Za-z0-9_-]+:[^|]+)*\|v:\d+\.\d+\.\d+$")


def formula(metric: Any, items: Any, **params: Any) -> MetricResult:
    """The metric's formula on one set, without the rule for degenerate sets (what the engine
    calls on a set it lets through): to test a metric's own answer on a set the rule would
    refuse (one response, blank texts). ``metric`` is a name or a metric's public function.

    Example:
        >>> formula("distinct-n", ["a b a"], n=1).value
        0.6666666666666666
    """
    cls = getattr(metric, "__divmeter_metric__", None)
    spec = get_metric(cls.name if cls is not None else metric)
    texts = tuple(items) if spec.input == "texts" else items
    return spec.plan(params).score((texts,))[0]


class MetricCheckError(AssertionError):
    """A metric broke the contract: ``check_metric(NAME): CHECK: what differed``."""


@dataclass
class CheckReport:
    """What :func:`check_metric` ran.

    Attributes:
        metric: The metric.
        passed: The checks that ran and passed, in order.
        skipped: ``{check: why}`` for the checks that could not run here (an optional extra or
            model not installed, a parameter excluded by the caller).
    """

    metric: str
    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Alternative:
    """A parameter's alternative value for the parameter check.

    Attributes:
        name: The parameter.
        value: Its alternative (:data:`~divmeter.core.params.UNSET` when there is none).
        companions: Settings of other parameters the alternative needs (``{"approx":
            "nystroem"}`` for vendi-ngram's ``k``); the reference call has them too.
        problem: Why there is no usable alternative (``None`` when there is one).
    """

    name: str
    value: Any
    companions: Mapping[str, Any] = field(default_factory=dict)
    problem: str | None = None


def parameter_alternatives(spec: MetricSpec, params: Mapping[str, Any] | None = None
                           ) -> list[Alternative]:
    """The alternative of every declared parameter but the ``runtime`` ones, from its
    :class:`~divmeter.core.params.Param`, relative to the value in use (``params`` over the
    defaults): the declared ``alternative`` unless it is the value in use (then the default);
    without one, another choice, the other boolean or a neighbouring number of the value in
    use, else the default. A parameter that matters only with other settings
    (``Param(applies_with=...)``) gets them as companions; an alternative that a relation
    refuses alone gets the first setting of another parameter with choices that makes it valid.

    Example:
        >>> [(a.name, a.value, dict(a.companions))
        ...  for a in parameter_alternatives(get_metric("vendi-ngram"))][-2:]
        [('seed', 1, {'approx': 'nystroem'}), ('dtype', 'float32', {})]
    """
    given = dict(params or {})
    resolved = {**spec.params, **given}
    out: list[Alternative] = []
    for key, p in spec.schema.items():
        if p.runtime:
            continue
        alt = _alternative(p, resolved[key])
        if alt is UNSET:
            out.append(Alternative(key, UNSET, problem=f"no alternative value can be derived "
                                   f"for {key!r}: declare Param(..., alternative=...)"))
            continue
        with_ = {k: v for k, v in (p.applies_with or {}).items() if resolved.get(k) != v}
        try:
            validate(spec.name, spec.schema, {**given, **with_, key: alt})
            out.append(Alternative(key, alt, with_))
            continue
        except InvalidInputError as exc:
            refused = str(exc)
        companion = _companion(spec, given, key, alt)
        if companion is None:
            out.append(Alternative(key, alt, problem=f"{key}={alt!r} is refused: {refused}"))
        else:
            out.append(Alternative(key, alt, companion))
    return out


def _alternative(p: Param, current: Any) -> Any:
    """The value the parameter check sets ``p`` to when ``current`` is in use."""
    near = replace(p, default=current, alternative=UNSET).alternative_value()
    candidates = [p.alternative, p.default, near] if p.alternative is not UNSET else [
        near, p.default]
    return next((c for c in candidates if c is not UNSET and c != current), UNSET)


def _companion(spec: MetricSpec, given: Mapping[str, Any], key: str, alt: Any
               ) -> dict[str, Any] | None:
    """The first setting of another parameter with choices under which ``key=alt`` is valid."""
    for other, q in spec.schema.items():
        if other == key or q.choices is None:
            continue
        for choice in q.choices:
            try:
                validate(spec.name, spec.schema, {**given, other: choice})
                validate(spec.name, spec.schema, {**given, other: choice, key: alt})
            except InvalidInputError:
                continue
            return {other: choice}
    return None


def bad_values(param: Param) -> list[Any]:
    """Values that break a declaration, one per constraint (a wrong type, each bound crossed,
    an unknown choice).

    Example:
        >>> bad_values(Param(int, ge=1, default=2))
        ['x', True, 2.0, 0]
    """
    if param.type is object:
        return []
    if param.choices is not None:
        return ["no-such-choice", 3]
    if param.predicate is not None:
        return [0, "x"]
    if param.type is bool:
        return ["maybe", 1]
    if param.type is str:
        return [3]
    bad: list[Any] = ["x", True]
    if param.type is int:
        bad.append(2.0)
    for bound, delta in ((param.ge, -1), (param.gt, 0), (param.le, 1), (param.lt, 0)):
        if bound is not None:
            bad.append(int(bound) + delta if param.type is int else bound + delta)
    return bad


# --------------------------------------------------------------------------------------------
# the contract


class _Checker:
    def __init__(self, spec: MetricSpec, params: Mapping[str, Any], rel_tol: float) -> None:
        self.spec = spec
        self.params = dict(params)
        self.rel_tol = rel_tol
        self.report = CheckReport(spec.name)

    def fail(self, check: str, detail: str) -> None:
        raise MetricCheckError(f"check_metric({self.spec.name!r}): {check}: {detail}")

    def expect(self, ok: bool, check: str, detail: str) -> None:
        if not ok:
            self.fail(check, detail)

    def same(self, a: MetricResult, b: MetricResult, check: str, where: str,
             details: bool = True) -> None:
        self.expect(a.metric == b.metric == self.spec.name, check,
                    f"{where}: metric {a.metric!r} vs {b.metric!r}")
        self.expect(_same(a.value, b.value), check, f"{where}: value {a.value!r} vs {b.value!r}")
        self.expect(a.reason == b.reason, check, f"{where}: reason {a.reason!r} vs {b.reason!r}")
        self.expect(a.signature == b.signature, check,
                    f"{where}: signature {a.signature!r} vs {b.signature!r}")
        if details:
            self.expect(_same(dict(a.details), dict(b.details)), check,
                        f"{where}: details differ ({sorted(a.details)} vs {sorted(b.details)})")

    def score(self, items: Any, **extra: Any) -> MetricResult:
        return score(items, self.spec.name, **{**self.params, **extra})


def check_metric(
    name: str,
    *,
    sets: Sequence[Any] | None = None,
    degenerate: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    exclude: Mapping[str, str] | None = None,
    corpus: bool = True,
    rel_tol: float = 1e-12,
) -> CheckReport:
    """Check that the registered metric ``name`` keeps divmeter's contract (see the module
    docstring for the checks).

    Args:
        name: A registered metric (``divmeter list``).
        sets: Normal sets to check on (default :data:`NORMAL_SETS`, or
            :data:`INSTANTIATION_SETS` for ``input="instantiations"``).
        degenerate: Named degenerate sets (default :data:`DEGENERATE_SETS` /
            :data:`DEGENERATE_INSTANTIATIONS`).
        params: Parameters of every call (e.g. a small ``permutations``, a model, a server's
            ``base_url``); the parameter check starts from them.
        exclude: ``{parameter: why}`` left out of the parameter check (reported as skipped).
        corpus: Check corpus mode (metrics of texts only).
        rel_tol: Relative tolerance of the corpus merge's floats.

    Returns:
        A :class:`CheckReport`.

    Raises:
        MetricCheckError: At the first broken check.
        UnknownMetricError, InvalidInputError: For an unknown metric or bad ``params``.

    Example:
        >>> report = check_metric("distinct-n")
        >>> "the rule for degenerate sets" in report.passed, report.skipped
        (True, {})
    """
    spec = get_metric(name)
    base = dict(params or {})
    check_params(spec, base)
    c = _Checker(spec, base, rel_tol)
    texts = spec.input == "texts"
    normal = list(sets) if sets is not None else (
        NORMAL_SETS if texts else INSTANTIATION_SETS)
    degen = dict(degenerate) if degenerate is not None else (
        DEGENERATE_SETS if texts else DEGENERATE_INSTANTIATIONS)
    try:
        spec.plan(base)
    except UnavailableError as exc:  # e.g. a judge with no server: nothing can be scored here
        return _check_unavailable(c, normal[0], texts, str(exc))
    _check_agreement(c, normal, degen)
    _check_values(c, normal)
    _check_rule(c, degen)
    if corpus and texts:
        _check_corpus(c, normal, degen)
    _check_parameters(c, normal[0], dict(exclude or {}))
    _check_paths(c, normal[0], dict(exclude or {}), corpus=corpus and texts)
    _check_bad_values(c, normal[0], texts)
    _check_stability(c, normal)
    return c.report


#: The checks that score sets (skipped, with the reason, when the metric needs something absent).
_SCORING_CHECKS = ("score == score_many == the public function", "values, bounds and signature",
                   "the rule for degenerate sets", "corpus merge",
                   "every parameter changes the value or the signature",
                   "every path gives the one-set value at every parameter alternative",
                   "determinism", "list/tuple", "order invariance")


def _check_unavailable(c: _Checker, items: Any, texts: bool, why: str) -> CheckReport:
    """The contract of a metric whose parameters in use need something absent (a server, a
    model nobody gave: :class:`~divmeter.core.errors.UnavailableError`): every check that
    scores a set is skipped with ``why``; bad values must still be refused for themselves, by
    the declarations, before the metric looks for what it needs."""
    _check_bad_values(c, items, texts, unavailable=True)
    for check in _SCORING_CHECKS:
        c.report.skipped[check] = why
    return c.report


def _check_agreement(c: _Checker, normal: list[Any], degen: dict[str, Any]) -> None:
    check = "score == score_many == the public function"
    items = normal + list(degen.values())
    names = [f"set {i}" for i in range(len(normal))] + list(degen)
    fn = c.spec.load()
    one = [c.score(s) for s in items]
    many = score_many(items, c.spec.name, **c.params)
    for where, a, b in zip(names, one, many, strict=True):
        c.same(a, b, check, f"score vs score_many, {where}")
    for where, s, a in zip(names, items, one, strict=True):
        c.same(a, fn(s, **c.params), check, f"score vs {fn.__name__}, {where}")
    c.report.passed.append(check)


def _check_values(c: _Checker, normal: list[Any]) -> None:
    check = "values, bounds and signature"
    lo, hi = c.spec.bounds
    values = []
    for i, s in enumerate(normal):
        r = c.score(s)
        c.expect(bool(_SIG_RE.match(r.signature)) and r.signature.startswith(c.spec.name + "|"),
                 check, f"set {i}: signature {r.signature!r} is not 'name|key:value|...|v:X'")
        if r.value is None:
            c.expect(bool(r.reason), check, f"set {i}: None without a reason")
            continue
        v = float(r.value)
        c.expect(math.isfinite(v), check, f"set {i}: value {v!r} is not finite")
        c.expect((lo is None or v >= lo - 1e-9) and (hi is None or v <= hi + 1e-9), check,
                 f"set {i}: value {v!r} outside the declared bounds {c.spec.bounds}")
        values.append(v)
    c.expect(bool(values), check, "no normal set got a value")
    c.report.passed.append(check)


def _check_rule(c: _Checker, degen: dict[str, Any]) -> None:
    check = "the rule for degenerate sets"
    signature = c.spec.plan(c.params).signature()
    for where, s in degen.items():
        why = degenerate_reason(s, c.spec.granularity)
        r = c.score(s)
        if why is None:
            c.expect(r.value is not None or bool(r.reason), check,
                     f"{where}: None without a reason")
            continue
        c.expect((r.value, r.reason, r.signature) == (None, why, signature), check,
                 f"{where}: expected None, {why!r}, {signature!r}; got {r.value!r}, "
                 f"{r.reason!r}, {r.signature!r}")
    c.report.passed.append(check)


def _check_corpus(c: _Checker, normal: list[Any], degen: dict[str, Any]) -> None:
    check = f"corpus merge ({c.spec.merge})"
    for where, s in [(f"set {i}", s) for i, s in enumerate(normal)] + list(degen.items()):
        try:
            got = _corpus_value(c.spec.name, c.params, list(s))
        except MissingDependencyError as exc:
            c.report.skipped[check] = str(exc)
            return
        want = c.score(s)
        c.expect(got.signature == want.signature, check,
                 f"{where}: signature {got.signature!r} vs score's {want.signature!r}")
        c.expect(got.reason == want.reason, check,
                 f"{where}: reason {got.reason!r} vs score's {want.reason!r}")
        if want.value is None or got.value is None:
            c.expect(got.value is None and want.value is None, check,
                     f"{where}: value {got.value!r} vs score's {want.value!r}")
        elif c.spec.merge == "none":
            c.expect(got.value == want.value, check,
                     f"{where}: value {got.value!r} vs score's {want.value!r}")
        else:
            c.expect(math.isclose(got.value, want.value, rel_tol=c.rel_tol, abs_tol=1e-300),
                     check, f"{where}: value {got.value!r} vs score's {want.value!r}")
    c.report.passed.append(check)


def _corpus_value(name: str, params: Mapping[str, Any], texts: list[str]) -> MetricResult:
    """The metric on ``texts`` as corpus mode computes it: two shards (named in the order of
    the texts, the order one-worker metrics gather them in), merged in reverse."""
    acc = make_accumulator(name, params)
    half = len(texts) // 2
    shards = [("a", texts[:half]), ("b", texts[half:])]
    for _ in range(acc.passes):
        parts = []
        for key, part in shards:
            one = acc.spawn()
            one.key = key
            if part:
                one.add(part)
            parts.append(one)
        for one in reversed(parts):
            acc.merge(one)
        if acc.pass_ + 1 < acc.passes:
            acc.next_pass()
    return acc.finish()


def _check_parameters(c: _Checker, items: Any, exclude: dict[str, str]) -> None:
    check = "every parameter changes the value or the signature"
    for alt in parameter_alternatives(c.spec, c.params):
        label = f"parameter {alt.name}"
        if alt.name in exclude:
            c.report.skipped[label] = exclude[alt.name]
            continue
        if alt.problem is not None:
            c.fail(check, alt.problem)
        try:
            ref = c.score(items, **alt.companions)
            other = c.score(items, **{**alt.companions, alt.name: alt.value})
        except (MissingDependencyError, UnavailableError) as exc:
            c.report.skipped[label] = str(exc)
            continue
        setting = ", ".join(f"{k}={v!r}" for k, v in {**alt.companions,
                                                      alt.name: alt.value}.items())
        c.expect(not (_same(other.value, ref.value) and other.signature == ref.signature),
                 check, f"{setting} leaves value {ref.value!r} and signature "
                 f"{ref.signature!r} unchanged")
    c.report.passed.append(check)


def _check_paths(c: _Checker, items: Any, exclude: dict[str, str], *, corpus: bool) -> None:
    """At the parameters in use and at every parameter's alternative: corpus mode (two shards,
    merged) and the precomputed-vector path (the metric's own vectors of the set, through its
    vector formula) give the one-set result: the same value (bit for bit for ``none`` merges,
    within ``rel_tol`` otherwise) and reason; corpus mode the same signature."""
    check = "every path gives the one-set value at every parameter alternative"
    vectors = c.spec.takes_vectors and c.spec.definition.encode is not None
    if not corpus and not c.spec.takes_vectors:
        return
    settings: list[tuple[str, dict[str, Any]]] = [("parameters in use", {})]
    for alt in parameter_alternatives(c.spec, c.params):
        if (alt.name in exclude or alt.problem is not None
                or f"parameter {alt.name}" in c.report.skipped):  # it needs something absent
            continue
        settings.append((f"{alt.name}={alt.value!r}", {**alt.companions, alt.name: alt.value}))
    for label, extra in settings:
        params = {**c.params, **extra}
        try:
            want = c.score(items, **extra)
            if corpus:
                got = _corpus_value(c.spec.name, params, list(items))
                c.expect(got.signature == want.signature, check,
                         f"{label}: corpus signature {got.signature!r} vs {want.signature!r}")
                _same_value(c, check, f"{label}: corpus", got, want, c.spec.merge == "none")
            if vectors and c.spec.takes_vectors:
                metric = c.spec.plan(params)
                try:
                    arrays = metric.encode([tuple(items)])
                except NotImplementedError:
                    vectors = False
                    continue
                got = metric.vectors(arrays)[0]
                _same_value(c, check, f"{label}: precomputed vectors", got, want, False)
        except (MissingDependencyError, UnavailableError) as exc:
            c.report.skipped[f"{check}: {label}"] = str(exc)
    c.report.passed.append(check)


def _same_value(c: _Checker, check: str, where: str, got: MetricResult, want: MetricResult,
                exact: bool) -> None:
    c.expect(got.reason == want.reason, check,
             f"{where}: reason {got.reason!r} vs score's {want.reason!r}")
    if want.value is None or got.value is None:
        c.expect(got.value is None and want.value is None, check,
                 f"{where}: value {got.value!r} vs score's {want.value!r}")
    elif exact:
        c.expect(got.value == want.value, check,
                 f"{where}: value {got.value!r} vs score's {want.value!r}")
    else:
        c.expect(math.isclose(got.value, want.value, rel_tol=c.rel_tol, abs_tol=1e-300),
                 check, f"{where}: value {got.value!r} vs score's {want.value!r}")


def _check_bad_values(c: _Checker, items: Any, texts: bool, *, unavailable: bool = False
                      ) -> None:
    check = "bad values refused at the boundary"
    for key, p in c.spec.schema.items():
        for bad in bad_values(p):
            for call in (lambda b=bad, k=key: c.score(items, **{k: b}),
                         lambda b=bad, k=key: score_many([items], c.spec.name,
                                                         **{**c.params, k: b})):
                try:
                    call()
                except UnavailableError:  # refused for what it lacks, not for the bad value
                    if not unavailable:
                        raise
                except InvalidInputError:
                    continue
                c.fail(check, f"{key}={bad!r} was not refused")
    if texts and not unavailable:
        try:
            c.score("a single text")
        except InvalidInputError as exc:
            c.expect("single str" in str(exc), check, f"a bare string: {exc}")
        else:
            c.fail(check, "a bare string was scored as a list of characters")
    c.report.passed.append(check)


def _check_stability(c: _Checker, normal: list[Any]) -> None:
    items = normal[0]
    base = c.score(items)
    again = c.score(items)
    c.same(base, again, "determinism", "two calls")
    c.report.passed.append("determinism")
    c.same(base, c.score(tuple(items)), "list/tuple", "tuple vs list", details=False)
    c.report.passed.append("list/tuple")
    if not c.spec.order_invariant or len(items) < 2:
        return
    check = "order invariance"
    moved = list(items[1:]) + list(items[:1])
    other = c.score(moved)
    ok = (other.value is None and base.value is None) or (
        other.value is not None and base.value is not None
        and math.isclose(other.value, base.value, rel_tol=1e-9, abs_tol=1e-9))
    c.expect(ok and other.signature == base.signature, check,
             f"value {base.value!r} became {other.value!r} when the responses were rotated")
    c.report.passed.append(check)


def _same(a: Any, b: Any) -> bool:
    """Exact equality, numpy arrays, nested containers and NaN included."""
    import numpy as np

    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b
