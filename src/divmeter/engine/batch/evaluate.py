"""The engine's core: a chunk of sets x the metrics, the rules applied once, here.

For every metric of the run (a :class:`~divmeter.engine.batch.plan.MetricPlan`: the metric's
definition with its parameters validated), :func:`evaluate`

1. scores precomputed vectors with the metric's vector formula when the sets hold vectors
   (:mod:`divmeter.engine.precomputed`);
2. validates the sets of texts once for every metric;
3. applies the one rule for degenerate sets (:mod:`divmeter.core.degenerate`): a refused set
   gets its null result with the metric's signature, without any call of the metric;
4. checks and announces each set's cost (the metric's own :meth:`~divmeter.engine.definition.
   Metric.cost`) against the memory limit;
5. calls the metric's formula (:meth:`~divmeter.engine.definition.Metric.score`) on the sets
   the rule let through, in one call (one immutable tuple of tuples, so a metric may share work
   on it), or set by set when a set costs enough to be announced (so its notes and a memory
   refusal name it) or the batch raised (so the error is the set's own).

It runs in the main process or in workers, and is what :func:`divmeter.score`,
:func:`divmeter.score_many`, the metrics' public functions and ``divmeter score`` are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from divmeter.core import memory
from divmeter.core.degenerate import (
    ONE_TEXT_GRANULARITIES,
    degenerate_reason,
    reasons_of_sets,
)
from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetricResult
from divmeter.engine.batch.plan import MetricPlan
from divmeter.engine.definition import Metric
from divmeter.engine.precomputed import vector_inputs, vector_outcomes
from divmeter.inputs.data.model import as_texts

__all__ = ["Outcome", "evaluate"]

Outcome = MetricResult | InvalidInputError
_STR = {str}


def evaluate(
    inputs: Sequence[Any],
    plans: Sequence[MetricPlan],
    *,
    prompts: Sequence[str | None] | None = None,
    fields: Sequence[Mapping[str, Any] | None] | None = None,
    instantiations: Sequence[Any] | None = None,
    what: str | None = None,
    names: Sequence[str] | None = None,
    vectors: Sequence[Any] | None = None,
) -> list[list[Outcome]]:
    """Score a chunk of sets with every plan: ``out[plan][set]`` is the
    :class:`~divmeter.core.result.MetricResult`, or the
    :class:`~divmeter.core.errors.InvalidInputError` that set raised (a malformed set, or a set
    the metric cannot take).

    Args:
        inputs: What each set is passed to the metric as (a list of strings, or the metric's
            own input kind).
        plans: The metrics, parameters validated
            (:func:`~divmeter.engine.batch.plan.resolve_metrics`).
        prompts: Each set's prompt, for metrics that read the set's prompt.
        fields: Each set's other fields (its metadata), for metrics that read them.
        instantiations: Each set's instantiations (``None`` for a set of plain texts), passed
            to metrics that take them (``input="instantiations"``, CDM) instead of ``inputs``.
        what: How a malformed set is named in its error: ``"sets"`` gives ``sets[3][1]``; by
            default the metric's own wording (``responses[1]``).
        names: How each set is named in a :class:`~divmeter.core.memory.MemoryLimitError` and in
            cost notes (default ``sets[i]``).
        vectors: Each set's precomputed embeddings (``(n, d)`` arrays, or ``None``); sets given
            as arrays in ``inputs`` are read as vectors too (:mod:`divmeter.engine.precomputed`).

    Example:
        >>> from divmeter.engine.batch.plan import resolve_metrics
        >>> [[r.value for r in per_plan]
        ...  for per_plan in evaluate([["a b", "a c"], []], resolve_metrics(["distinct-n:n=1"]))]
        [[0.75, None]]
    """
    memory.current_limit()  # a bad $DIVMETER_MAX_MEMORY stops the run, not each set
    sets = _Sets(inputs, what, instantiations)

    def set_name(i: int) -> str:
        return names[i] if names is not None else f"{what or 'sets'}[{i}]"

    def context(i: int) -> dict[str, Any]:
        ctx: dict[str, Any] = {}
        if prompts is not None and prompts[i] is not None:
            ctx["prompt"] = prompts[i]
        if fields is not None and fields[i] is not None:
            ctx["fields"] = fields[i]
        return ctx

    vecs = vector_inputs(inputs, vectors, what)
    out: list[list[Outcome]] = []
    for plan in plans:
        metric = plan.metric
        with memory.collector_paused(metric.pauses_collector):
            out.append(_row(metric, inputs, vecs, sets, set_name, context))
    return out


def _row(metric: Metric, inputs: Sequence[Any], vecs: Any, sets: _Sets,
         set_name: Callable[[int], str], context: Callable[[int], dict[str, Any]]
         ) -> list[Outcome]:
    """One metric's outcome for every set of the chunk."""
    if vecs is not None:  # precomputed vectors (divmeter.engine.precomputed)
        vrow = vector_outcomes(metric, inputs, vecs, set_name)
        if vrow is not None:
            return vrow
    row: list[Outcome | None] = [None] * len(inputs)
    live, items = sets.live(metric)
    for i in range(len(inputs)) if len(live) < len(inputs) else ():
        item, err = sets.item(metric, i)
        if err is not None:
            row[i] = err
        elif (why := sets.reason(metric, i)) is not None:
            row[i] = metric.null(why, len(item))
    costly = (getattr(metric.cost, "__func__", None) is not Metric.cost  # linear: no check
              and _check_costs(metric, items, [set_name(i) for i in live]))
    ctx = ([context(i) for i in live] if metric.context else None)
    for i, res in zip(live, _score(metric, items, live, ctx, costly, set_name), strict=True):
        row[i] = res
    return row  # type: ignore[return-value]


def _check_costs(metric: Metric, items: Sequence[Any], labels: list[str]) -> bool:
    """Check each set's cost against the memory limit and announce the costly ones; ``True``
    when some set is costly enough to be announced (then sets are scored one by one, each
    named in its notes and progress)."""
    costly = False
    for item, label in zip(items, labels, strict=True):
        cost = metric.cost(len(item), item)
        if cost is None:
            continue
        costly = costly or cost.seconds >= memory.ANNOUNCE_SECONDS
        try:
            with memory.working_on(label):
                if cost.pairs or cost.seconds:  # work beyond linear: checked and announced
                    memory.plan(cost)
                else:
                    memory.check(metric.name, cost.needed, cost.what, hint=cost.hint)
        except memory.MemoryLimitError as exc:
            raise (memory.for_set(exc, label) if label else exc) from None
    return costly


def _score(metric: Metric, items: tuple[Any, ...], live: list[int],
           ctx: list[dict[str, Any]] | None, one_by_one: bool, set_name: Any) -> list[Outcome]:
    """The metric's formula on the live sets: in one call, or set by set (named) when a set is
    costly or the batch raised (each set then gets its own error)."""
    if not live:
        return []
    if metric.batched and not one_by_one and len(live) > 1:
        try:
            return list(metric.score(items, ctx))
        except InvalidInputError:
            pass  # find which set the metric refuses
    out: list[Outcome] = []
    for k, i in enumerate(live):
        label = set_name(i)
        try:
            with memory.working_on(label):
                out.extend(metric.score((items[k],), None if ctx is None else [ctx[k]]))
        except InvalidInputError as exc:
            out.append(exc)
        except memory.MemoryLimitError as exc:
            raise (memory.for_set(exc, label) if label else exc) from None
    return out


class _Sets:
    """The chunk's sets as each metric takes them: texts validated once (tuples of str), or
    the metric's own input kind; the rule's verdict per granularity, computed once."""

    def __init__(self, inputs: Sequence[Any], what: str | None,
                 instantiations: Sequence[Any] | None) -> None:
        self.inputs, self.what, self.inst = inputs, what, instantiations
        self._texts: list[tuple[tuple[str, ...] | None, InvalidInputError | None]] | None = None
        self._why: dict[tuple[str, bool], list[str | None]] = {}
        self._live: dict[tuple[str, bool], tuple[list[int], tuple[Any, ...]]] = {}

    def texts(self) -> list[tuple[tuple[str, ...] | None, InvalidInputError | None]]:
        if self._texts is None:
            self._texts = []
            for i, s in enumerate(self.inputs):
                if (type(s) is list or type(s) is tuple) and set(map(type, s)) <= _STR:
                    self._texts.append((tuple(s), None))  # what as_texts gives, without calls
                    continue
                try:
                    label = {} if self.what is None else {"what": f"{self.what}[{i}]"}
                    self._texts.append((tuple(as_texts(s, **label)), None))
                except InvalidInputError as exc:
                    self._texts.append((None, exc))
        return self._texts

    def item(self, metric: Metric, i: int) -> tuple[Any, InvalidInputError | None]:
        """What set ``i`` is passed to ``metric`` as, or the error that makes it malformed."""
        if metric.input == "texts":
            return self.texts()[i]
        if self.inst is not None:
            if self.inst[i] is None:
                return None, _not_instantiations(metric.name)
            return self.inst[i], None
        return self.inputs[i], None

    def live(self, metric: Metric) -> tuple[list[int], tuple[Any, ...]]:
        """The sets ``metric`` scores (well-formed, let through by the rule) and their items: one
        tuple kept across the metrics of a granularity kind, so metrics may share work on it
        (tokenize it once per tokenizer)."""
        key = (metric.input, metric.granularity in ONE_TEXT_GRANULARITIES)
        if key not in self._live:
            if metric.input == "texts":  # (the same sets as below, without two calls a set)
                idx = [i for i, ((_, err), why) in enumerate(zip(
                       self.texts(), self._whys(metric), strict=True))
                       if err is None and why is None]
            else:
                idx = [i for i in range(len(self.inputs))
                       if self.item(metric, i)[1] is None and self.reason(metric, i) is None]
            whole = (metric.input == "texts" and len(idx) == len(self.inputs))
            items = (tuple(t for t, _ in self.texts()) if whole  # type: ignore[misc]
                     else tuple(self.item(metric, i)[0] for i in idx))
            if whole:  # the same tuple for every granularity kind
                items = self._whole = getattr(self, "_whole", None) or items
            self._live[key] = (idx, items)
        return self._live[key]

    def reason(self, metric: Metric, i: int) -> str | None:
        """The rule's verdict on set ``i`` for ``metric`` (``None``: it is scored)."""
        return self._whys(metric)[i]

    def _whys(self, metric: Metric) -> list[str | None]:
        """The rule's verdict on every set for ``metric``, computed once a granularity kind."""
        key = (metric.input, metric.granularity in ONE_TEXT_GRANULARITIES)
        whys = self._why.get(key)
        if whys is None and metric.input == "texts":
            whys = reasons_of_sets([item for item, _ in self.texts()], metric.granularity)
            self._why[key] = whys
        elif whys is None:
            whys = []
            for j in range(len(self.inputs)):
                item, err = self.item(metric, j)
                whys.append(None if err is not None
                            else degenerate_reason(item, metric.granularity))
            self._why[key] = whys
        return whys


def _not_instantiations(name: str) -> InvalidInputError:
    """The error of a CDM-like metric (``input="instantiations"``) given a set of plain texts."""
    return InvalidInputError(
        f"{name} scores instantiations (lists of filler phrases), not texts; expected a "
        "JSONL of {'instantiations': [[...], ...]} or {'texts': [...]} with [[marked]] fillers."
    )
