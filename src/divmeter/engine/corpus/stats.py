"""Corpus mode's generic merge machinery: statistics of a metric over a corpus, merged exactly.

In corpus mode a metric is computed over *every* response of every input shard taken as one
set. A metric's accumulator keeps the statistics its value is a function of; statistics of two
shards merge (:meth:`Accumulator.merge`) into the statistics of their union, so a corpus can be
split into shards in any way, the shards scored anywhere (processes, Ray workers, machines) and
merged in any order. The value from the merged statistics equals the metric called once on the
whole corpus (:func:`divmeter.score` on the list of all responses): integers (counts) bit for
bit, floats within 1e-12 relative (``tests/test_corpus.py`` checks both with random shardings).

Each metric declares its accumulator where it is defined, in its own module
(``register(..., corpus=MyAccumulator)``, :func:`divmeter.engine.registry.register`, the way
torchmetrics declares ``add_state(..., dist_reduce_fx=...)``); ``merge`` of
:class:`divmeter.engine.registry.MetricSpec` (shown by ``divmeter list``) is its ``kind``:

* ``exact`` (one pass): e.g. the pooled n-gram counts of distinct-n, the cosine sums of n-gram
  and embedding cosine, the feature covariance of Vendi on embeddings, and the per-response
  values of the response-level metrics (:class:`ResponseMean`: an exactly rounded sum,
  :class:`ExactSum`);
* ``exact-two-pass`` (:class:`TwoPass`): a first pass gathers corpus-wide statistics, a second
  scores each response against them (self-repetition, self-BLEU);
* ``none``: no accumulator declared; the shards' texts are gathered (shards in the order of
  their names, so the result does not depend on the order they were given or merged in) and
  the metric is called once (:class:`OneWorker`).

This module holds only what every metric shares: the base classes, the exact float sum, the
one rule for degenerate sets on the counts of the whole corpus (:meth:`Accumulator.finish`: a
corpus with fewer than two non-blank responses is null with the reason :func:`divmeter.score`
gives; one non-blank response for response-level metrics) and :func:`make_accumulator`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from divmeter.core import memory
from divmeter.core.degenerate import count_non_blank, reason_from_counts
from divmeter.core.result import MetricResult
from divmeter.engine.registry import get_metric
from divmeter.inputs.text.table import FrozenRun, NgramTable

__all__ = [
    "ExactSum",
    "Accumulator",
    "TwoPass",
    "ResponseMean",
    "OneWorker",
    "merge_kind",
    "make_accumulator",
]


def merge_kind(name: str) -> str:
    """``exact``, ``exact-two-pass`` or ``none`` (see the module docstring): the ``kind`` of
    the accumulator metric ``name`` declares.

    Example:
        >>> merge_kind("distinct-n"), merge_kind("self-repetition"), merge_kind("chamfer")
        ('exact', 'exact-two-pass', 'none')
    """
    return get_metric(name).merge


class ExactSum:
    """A sum of floats kept exactly (Shewchuk's non-overlapping partials, as :func:`math.fsum`),
    so sums of shards merged in any order round to the same float.

    Example:
        >>> a, b = ExactSum(), ExactSum()
        >>> for x in (1e100, 1.0): a.add(x)
        >>> for x in (-1e100, 1e-20): b.add(x)
        >>> a.merge(b); a.value()
        1.0
    """

    __slots__ = ("partials",)

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, x: float) -> None:
        """Add one float exactly."""
        partials = self.partials
        i = 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        partials[i:] = [x]

    def extend(self, xs: Iterable[float]) -> None:
        for x in xs:
            self.add(x)

    def merge(self, other: ExactSum) -> None:
        """Add another exact sum (still exact)."""
        self.extend(list(other.partials))

    def value(self) -> float:
        """The exact sum, correctly rounded."""
        return math.fsum(self.partials)


class Accumulator:
    """Statistics of one metric over the responses added so far: the base of every corpus
    accumulator (a metric declares its subclass with ``register(..., corpus=...)``).

    A subclass implements :meth:`_setup` (resolve the parameters: tokenizer, signature),
    :meth:`_reset` (empty statistics of the current pass), :meth:`_add` (a batch of responses),
    :meth:`_merge` (another shard's statistics, exactly and in any order) and :meth:`result`
    (the value), and sets :attr:`kind` (``exact``; two-pass metrics derive from
    :class:`TwoPass`). A run adds every shard's responses for pass 0, merges the shards'
    accumulators, then (two-pass metrics) calls :meth:`next_pass` on the merged one and repeats
    with accumulators made by :meth:`spawn` (they carry the frozen statistics of the earlier
    pass); :meth:`finish` gives the value, after the one rule for degenerate sets on the counts
    of the whole corpus (so :meth:`result` never sees fewer than two non-blank responses, one
    for response-level metrics).

    Attributes:
        name: The metric.
        params: Its parameters, defaults filled in.
        pass_: The current pass (0-based).
        n_responses: Responses added in the current pass.
        n_seen: Responses of the corpus (added in the first pass).
        n_non_blank: Non-blank responses among them (the rule's count).
    """

    passes = 1
    kind = "exact"
    #: The shard being added (set by the runner; one-worker metrics order texts by it).
    key = ""
    #: Bytes of statistics this accumulator may hold in memory before it spills them to disk
    #: (``None``: no bound), and where it spills (``None``: a temporary folder); set by the
    #: run with :meth:`configure`.
    budget: int | None = None
    spill_dir: str | None = None

    def __init__(self, name: str, params: Mapping[str, Any]) -> None:
        self.name = name
        self.params = dict(params)
        #: The metric with these parameters (its definition resolved once): every statistic
        #: reads its settings from it, as the one-set path does.
        self.metric = get_metric(name).plan(self.params)
        self.pass_ = 0
        self.n_responses = 0
        self.n_seen = 0
        self.n_non_blank = 0
        self._setup()
        self._reset()

    def _setup(self) -> None:
        """Resolve the parameters (tokenizer, signature ...)."""

    def configure(self, budget: int | None, spill_dir: str | None = None) -> None:
        """Bound the memory of the statistics (bytes; past it they spill to ``spill_dir``)."""
        self.budget = budget
        self.spill_dir = spill_dir
        self._configure()

    def _configure(self) -> None:
        """Pass :attr:`budget` and :attr:`spill_dir` on to the statistics (default: nothing
        to bound)."""

    def close(self) -> None:
        """Release what the statistics keep outside memory (spilled runs)."""

    # the distributed reduce: statistics cut by key range, reduced where they lie ---------------

    def split(self, parts: int) -> list[Any] | None:
        """Move this accumulator's key-partitionable statistics out of it, cut into ``parts``
        disjoint key ranges (the accumulator keeps its scalar counts, which merge as usual);
        ``None`` when it has none (the whole accumulator is merged on the driver)."""
        return None

    def reduce_part(self, parts: Sequence[Any]) -> Any:
        """The summary of one key range: ``parts`` are that range's statistics from every shard
        (what :meth:`split` gave); called on an empty accumulator of the same metric and pass,
        wherever the range is reduced."""
        raise NotImplementedError

    def absorb(self, summaries: Sequence[Any]) -> None:
        """Take the summaries of every key range (in range order) as this merged accumulator's
        statistics."""
        raise NotImplementedError

    def _reset(self) -> None:
        """Empty statistics of the current pass."""

    def add(self, texts: Sequence[str]) -> None:
        """Add a batch of responses (validated strings) to the current pass."""
        self.n_responses += len(texts)
        if self.pass_ == 0:
            self.n_seen += len(texts)
            self.n_non_blank += count_non_blank(texts)
        with memory.collector_paused(self.metric.pauses_collector):
            self._add(texts)

    def _add(self, texts: Sequence[str]) -> None:
        raise NotImplementedError

    def merge(self, other: Accumulator) -> None:
        """Add another accumulator's statistics of the same metric and pass."""
        if other.name != self.name or other.pass_ != self.pass_ or other.params != self.params:
            raise ValueError(f"cannot merge statistics of {other.name}/{other.pass_} into "
                             f"{self.name}/{self.pass_}")
        self.n_responses += other.n_responses
        if self.pass_ == 0:
            self.n_seen += other.n_seen
            self.n_non_blank += other.n_non_blank
        self._merge(other)

    def _merge(self, other: Any) -> None:
        raise NotImplementedError

    def spawn(self) -> Accumulator:
        """An empty accumulator of the same metric and pass (with the earlier passes' frozen
        statistics), for one more shard."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.n_responses = new.n_seen = new.n_non_blank = 0
        new._reset()
        return new

    def next_pass(self) -> None:
        """Freeze this (merged) pass's statistics and start the next pass, empty."""
        raise NotImplementedError

    def result(self) -> MetricResult:
        """The metric's value over everything merged (after the last pass)."""
        raise NotImplementedError

    def finish(self) -> MetricResult:
        """The corpus value: ``None`` with the rule's reason when the corpus has fewer than two
        non-blank responses (one for response-level metrics), as :func:`divmeter.score` on all
        the responses gives it, else :meth:`result`.

        Example:
            >>> acc = make_accumulator("distinct-n", {})
            >>> acc.add(["a b c"]); acc.finish().reason
            'fewer than two non-blank responses (got 1)'
        """
        why = reason_from_counts(self.n_seen, self.n_non_blank, self.metric.granularity)
        if why is None:
            return self.result()
        return MetricResult(self.name, None, self.metric.signature(), reason=why)


class TwoPass(Accumulator):
    """An exact two-pass metric: pass 1 gathers corpus-wide statistics, pass 2 scores each
    response against them; :meth:`next_pass` records the number of responses (``n_docs``) and
    calls :meth:`_freeze`."""

    passes = 2
    kind = "exact-two-pass"

    def _freeze(self) -> None:
        """Freeze what pass 2 reads from pass 1 (beyond ``n_docs``)."""

    def next_pass(self) -> None:
        self.n_docs = self.n_responses
        self._freeze()
        self.pass_ = 1
        self.n_responses = 0
        self._reset()


class FrozenTables(TwoPass):
    """An exact two-pass metric whose pass 1 gathers an n-gram table (an
    :class:`divmeter.inputs.text.table.NgramTable` of the orders ``orders``, its values of kind
    ``mode``) and whose pass 2 reads it frozen, one :class:`~divmeter.inputs.text.table.FrozenRun`
    per order in ``frozen``. The table's memory bound, its freezing (the run owns the frozen
    tables; its shards read them), closing, and the distributed reduce of pass 1 (the table cut
    by key range, each range frozen where it lies, the ranges absorbed) are the same for each
    such metric; a subclass calls :meth:`_tables` in ``_setup`` and starts pass 0 with
    ``self.table = self._table()`` in ``_reset``."""

    table: NgramTable

    def _tables(self, orders: tuple[int, ...], mode: int) -> None:
        self.orders, self.mode = orders, mode
        self.frozen: dict[int, FrozenRun] | None = None
        self.owns_frozen = False

    def _table(self) -> NgramTable:
        return NgramTable(self.orders, self.mode, self.budget, self.spill_dir)

    def _configure(self) -> None:
        self.table.budget, self.table.spill_dir = self.budget, self.spill_dir

    def _freeze(self) -> None:
        if self.frozen is None:
            self.frozen = {k: self.table.frozen(k) for k in self.orders}
        self.table.close()
        self.owns_frozen = True

    def spawn(self) -> Accumulator:
        new = super().spawn()
        new.owns_frozen = False  # type: ignore[attr-defined]  # the run closes the frozen tables
        return new

    def close(self) -> None:
        self.table.close()
        if self.frozen is not None and self.owns_frozen:
            for f in self.frozen.values():
                f.close()

    def split(self, parts: int) -> list[Any] | None:
        if self.pass_ != 0:
            return None
        out: list[Any] = self.table.split(parts)
        self.table.close()
        self.table = self._table()
        return out

    def reduce_part(self, parts: Sequence[Any]) -> Any:
        t = self._table()
        for part in parts:
            t.merge(part)
        try:
            return {k: np.asarray(t.frozen(k).run).copy() for k in self.orders}
        finally:
            t.close()

    def absorb(self, summaries: Sequence[Any]) -> None:
        self.frozen = {k: FrozenRun(np.concatenate([np.asarray(x[k]) for x in summaries],
                                                    axis=1)) for k in self.orders}
        self.owns_frozen = True


class ResponseMean(Accumulator):
    """Response-level metrics: each response's value (the metric on a batch of responses gives
    the same per-response values as on any other batch) and their exactly rounded sum; the
    corpus value is the mean over the defined responses, as the metric's set value."""

    def _setup(self) -> None:
        # the formula itself: a response's value does not depend on the batch it comes in (a
        # batch of blank responses included); the rule is the corpus's (finish)
        self.sig = self.metric.signature()
        self.none_reason: str | None = None

    def _reset(self) -> None:
        self.total = ExactSum()
        self.n_defined = 0

    def _add(self, texts: Sequence[str]) -> None:
        if not texts:
            return
        res = self.metric.score((tuple(texts),))[0]
        per = (res.details or {}).get("per_response") or []
        for v in per:
            if v is not None and v == v:
                self.total.add(float(v))
                self.n_defined += 1
        if res.value is None and self.none_reason is None:
            self.none_reason = res.reason

    def _merge(self, other: ResponseMean) -> None:
        self.total.merge(other.total)
        self.n_defined += other.n_defined
        if self.none_reason is None:
            self.none_reason = other.none_reason

    def result(self) -> MetricResult:
        details = {"n_responses": self.n_responses, "n_defined": self.n_defined}
        if self.n_responses == 0:
            return MetricResult(self.name, None, self.sig, reason="empty set", details=details)
        if self.n_defined == 0:
            return MetricResult(self.name, None, self.sig,
                                reason=self.none_reason or "no defined response",
                                details=details)
        return MetricResult(self.name, self.total.value() / self.n_defined, self.sig,
                            details=details)


class OneWorker(Accumulator):
    """Metrics with no exact merge: the texts of each shard, gathered and scored once, shards in
    the order of their keys (so merge order does not matter)."""

    kind = "none"

    def _reset(self) -> None:
        self.shards: dict[str, list[str]] = {}

    def _add(self, texts: Sequence[str]) -> None:
        self.shards.setdefault(self.key, []).extend(texts)

    def _merge(self, other: OneWorker) -> None:
        for k, texts in other.shards.items():
            self.shards.setdefault(k, []).extend(texts)

    def result(self) -> MetricResult:
        texts = [t for k in sorted(self.shards) for t in self.shards[k]]
        cost = self.metric.cost(len(texts), texts)
        if cost is not None:  # the gathered corpus is one set: checked and announced first
            memory.plan(cost)
        return self.metric.score((tuple(texts),))[0]


def make_accumulator(name: str, params: Mapping[str, Any]) -> Accumulator:
    """An empty accumulator of metric ``name`` with ``params`` (validated, defaults filled
    in from the registry): the one it declares (``register(..., corpus=...)``), else
    :class:`OneWorker`.

    Example:
        >>> acc = make_accumulator("distinct-n", {"n": 1})
        >>> acc.add(["a b", "a c"]); acc.finish().value
        0.75
    """
    spec = get_metric(name)
    full = {**spec.params, **dict(params)}
    factory = spec.definition.statistics or OneWorker
    acc: Accumulator = factory(spec.name, full)
    return acc
