"""The core: a chunk of sets x the metrics, with the one rule for degenerate sets applied first
(:mod:`divmeter.core.degenerate`), metrics with a batched implementation scoring all the chunk's
sets in one call. It runs in the main process or in workers, and is what
:func:`divmeter.score` and :func:`divmeter.score_many` are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from divmeter.core import memory
from divmeter.engine.batch.plan import MetricPlan
from divmeter.inputs.data.model import as_texts
from divmeter.core.degenerate import (
    ONE_TEXT_GRANULARITIES,
    count_non_blank,
    degenerate_reason,
    reason_from_counts,
)
from divmeter.core.errors import InvalidInputError
from divmeter.engine.precomputed import vector_inputs, vector_outcomes
from divmeter.engine.registry import get_metric, rule_applied
from divmeter.core.result import MetricResult

__all__ = ["Outcome", "evaluate"]


def _rule_signature(fn: Callable[..., Any], kwargs: Mapping[str, Any]
                    ) -> str | InvalidInputError:
    """The metric's signature for the null results of the rule: from its answer on an empty
    input, which every registered metric gives at once, before any model or kernel (a
    registry-wide test checks); the metric's error if it refuses the parameters."""
    try:
        return str(fn([], **kwargs).signature)
    except InvalidInputError as exc:
        return exc


Outcome = MetricResult | InvalidInputError


def batch_fn(p: MetricPlan) -> Callable[..., Any] | None:
    """The batched implementation of a plan's metric, when it has one and it applies."""
    if p.input != "texts" or p.uses_prompt or p.uses_fields:
        return None
    return get_metric(p.name).batch_kernel()


def evaluate(
    inputs: Sequence[Any],
    plans: Sequence[MetricPlan],
    *,
    prompts: Sequence[str | None] | None = None,
    fields: Sequence[Mapping[str, Any] | None] | None = None,
    instantiations: Sequence[Any] | None = None,
    what: str | None = None,
    min_batch: int = 2,
    names: Sequence[str] | None = None,
    vectors: Sequence[Any] | None = None,
) -> list[list[Outcome]]:
    """Score a chunk of sets with every plan: ``out[plan][set]`` is the
    :class:`~divmeter.core.result.MetricResult`, or the :class:`~divmeter.core.errors.InvalidInputError`
    that set raised (a malformed set, or a set the metric cannot take).

    Parameters are taken as already checked (:func:`resolve_metrics`). Sets of texts are
    validated once for every plan; plans with a batched implementation score all valid sets in
    one call (on one immutable tuple of tuples, so metrics may share work on it, e.g. tokenize it
    once per tokenizer) when there are at least ``min_batch`` of them; the others call the metric
    once per set. Each result is identical to :func:`divmeter.score` on that set (which is this
    function on one set). A set the one rule for degenerate sets refuses
    (:func:`degenerate_reason`) gets its null result here, without any call of the metric on it.

    Args:
        inputs: What each set is passed to the metric as (a list of strings, or the metric's
            own input kind).
        plans: The metrics.
        prompts: Each set's prompt, for metrics that take the set's prompt.
        fields: Each set's other fields (its metadata), for metrics that take them
            (a ``fields`` parameter the run does not fix).
        instantiations: Each set's instantiations (``None`` for a set of plain texts), passed
            to metrics that take them (``input="instantiations"``, CDM) instead of ``inputs``.
        what: How a malformed set is named in its error: ``"sets"`` gives ``sets[3][1]``; by
            default the metric's own wording (``responses[1]``).
        min_batch: The fewest sets worth a batched call.
        vectors: Each set's precomputed embeddings (``(n, d)`` arrays, or ``None``), used by
            metrics that take vectors instead of embedding the texts; sets given as arrays in
            ``inputs`` are read as vectors too (:mod:`divmeter.engine.precomputed`).
        names: How each set is named in a :class:`~divmeter.core.memory.MemoryLimitError` and in
            the cost notes of :func:`divmeter.core.memory.reporting` (default
            ``sets[i]``): pairwise and kernel metrics check their memory estimate against
            :func:`divmeter.core.memory.current_limit` before the work, and a set above it stops the
            run (it is not a null: the limit is the user's to raise).

    Example:
        >>> from divmeter.engine.batch.plan import resolve_metrics
        >>> [[r.value for r in per_plan]
        ...  for per_plan in evaluate([["a b", "a c"], []], resolve_metrics(["distinct-n:n=1"]))]
        [[0.75, None]]
    """
    memory.current_limit()  # a bad $DIVMETER_MAX_MEMORY stops the run, not each set
    texts: tuple[tuple[str, ...], ...] | None = None
    errors: list[InvalidInputError | None] = []
    text_of: list[tuple[str, ...] | None] = []

    def validated() -> tuple[tuple[str, ...], ...]:
        nonlocal texts
        if texts is None:
            valid: list[tuple[str, ...]] = []
            for i, s in enumerate(inputs):
                if (type(s) is list or type(s) is tuple) and all(type(t) is str for t in s):
                    valid.append(tuple(s))  # what as_texts gives a list of str, without its calls
                    errors.append(None)
                    text_of.append(valid[-1])
                    continue
                try:
                    label = {} if what is None else {"what": f"{what}[{i}]"}
                    valid.append(tuple(as_texts(s, **label)))
                    errors.append(None)
                    text_of.append(valid[-1])
                except InvalidInputError as exc:
                    errors.append(exc)
                    text_of.append(None)
            texts = tuple(valid)
        return texts

    def item(p: MetricPlan, i: int) -> Any:
        """What set ``i`` is passed to the plan's metric as."""
        if p.input == "texts":
            return text_of[i]
        if instantiations is not None:
            return instantiations[i]
        return inputs[i]

    # the rule's verdict and the sets it lets through, per granularity kind: the tuple of live
    # sets keeps one identity across plans (metrics share their tokenizing of it)
    verdicts: dict[tuple[str, bool], tuple[list[str | None], tuple[tuple[str, ...], ...]]] = {}

    def verdict(p: MetricPlan) -> tuple[list[str | None], tuple[tuple[str, ...], ...]]:
        key = (p.input, p.granularity in ONE_TEXT_GRANULARITIES)
        if key not in verdicts:
            if p.input == "texts":  # validated tuples of str (None: a malformed set): the rule's
                validated()  # own counts, without its checks of the item types
                why = [None if t is None else reason_from_counts(
                    len(t), count_non_blank(t), p.granularity) for t in text_of]
            else:
                why = [degenerate_reason(item(p, i), p.granularity) for i in range(len(inputs))]
            live: tuple[tuple[str, ...], ...] = ()
            if p.input == "texts":
                live = validated() if not any(why) else tuple(
                    t for t, w in zip(text_of, why, strict=True) if t is not None and w is None)
            verdicts[key] = (why, live)
        return verdicts[key]

    def set_name(i: int) -> str:
        return names[i] if names is not None else f"{what or 'sets'}[{i}]"

    vecs = vector_inputs(inputs, vectors, what)
    out: list[list[Outcome]] = []
    with rule_applied():  # the rule is applied here: nested public functions pass through
        for p in plans:
            if vecs is not None:  # precomputed vectors (divmeter.engine.precomputed)
                vrow = vector_outcomes(p.name, dict(p.params), inputs, vecs, set_name)
                if vrow is not None:
                    out.append(vrow)
                    continue
            if p.input == "texts":
                validated()
            fn = get_metric(p.name).kernel()  # the rule is applied here, once
            why, live = verdict(p)
            sig: list[str | InvalidInputError] = []  # computed at the first refused set

            def kwargs_of(i: int, p: MetricPlan = p) -> dict[str, Any]:
                kwargs = dict(p.params)
                if p.uses_prompt and prompts is not None and prompts[i] is not None:
                    kwargs["prompt"] = prompts[i]
                if p.uses_fields and fields is not None and fields[i] is not None:
                    kwargs["fields"] = fields[i]
                return kwargs

            def refuse(i: int, p: MetricPlan = p, fn: Callable[..., Any] = fn,
                       why: list[str | None] = why, sig: list[str | InvalidInputError] = sig
                       ) -> Outcome:
                if not sig:
                    sig.append(_rule_signature(fn, kwargs_of(i)))
                if isinstance(sig[0], InvalidInputError):
                    return sig[0]
                details = ({"per_response": [None] * len(item(p, i))}
                           if p.granularity == "response" else {})
                return MetricResult(p.name, None, sig[0], reason=str(why[i]), details=details)

            if p.input == "texts":  # memory estimates before any work, for the sets to be scored
                for i, s in enumerate(inputs):
                    if errors[i] is None and why[i] is None:
                        memory.precheck(p.name, s, p.params, set_name(i))
            many = batch_fn(p)
            if many is not None and len(inputs) >= min_batch:
                try:
                    results = iter(many(live, **p.params) if live else ())
                    out.append([err if err is not None else refuse(i) if why[i] is not None
                                else next(results) for i, err in enumerate(errors)])
                    continue
                except InvalidInputError:  # not expected after the checks: score set by set
                    pass
            row: list[Outcome] = []
            for i, s in enumerate(inputs):
                bad = errors[i] if p.input == "texts" else None
                if bad is not None:
                    row.append(bad)
                    continue
                if p.input != "texts" and instantiations is not None:
                    if instantiations[i] is None:
                        row.append(_not_instantiations(p.name))
                        continue
                    s = instantiations[i]
                if why[i] is not None:
                    row.append(refuse(i))
                    continue
                try:
                    with memory.working_on(set_name(i)):  # names the set in cost notes
                        row.append(fn(s, **kwargs_of(i)))
                except InvalidInputError as exc:
                    row.append(exc)
                except memory.MemoryLimitError as exc:
                    raise (memory.for_set(exc, set_name(i)) if set_name(i) else exc) from None
            out.append(row)
    return out


def _not_instantiations(name: str) -> InvalidInputError:
    """The error of a CDM-like metric (``input="instantiations"``) given a set of plain texts."""
    return InvalidInputError(
        f"{name} scores instantiations (lists of filler phrases), not texts; expected a "
        "JSONL of {'instantiations': [[...], ...]} or {'texts': [...]} with [[marked]] fillers."
    )
