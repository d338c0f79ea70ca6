"""Score many response sets with many metrics, streaming, optionally over several processes.

:func:`score_sets` is what ``divmeter score`` runs. It yields one flat record per set, in input
order::

    {"set_id": "s1", "row": 0, "label": 1, "distinct-n": 0.71, "self-bleu:n=3": null,
     "reasons": {"self-bleu:n=3": "one response: self-BLEU needs at least two"}}

* ``row`` is the 0-based position of the set in the input. Set ids are kept as read, so files with
  repeated ids (the Tevet conTest and McDiv_nuggets files) stay unambiguous: ``row`` is the key.
* One key per metric, named by :func:`divmeter.registry.column_name` (the metric name plus its
  non-default parameters, e.g. ``self-bleu:n=3``), holding a float or ``None``.
* ``reasons`` maps every ``None`` column to why: the metric's own reason for a degenerate set
  (empty set, one response, texts shorter than n), or the message of an
  :class:`~divmeter.errors.InvalidInputError` the metric raised on that set. Such a set does not
  stop the run.
* ``per_response`` (only when a response-granularity metric is requested) maps its column to the
  list of per-response values.
* ``signatures`` (with ``with_signatures=True``) maps each column to the result's signature.

Metrics with a ``prompt`` parameter (Decan) get each set's prompt unless the run fixes one.

One core, :func:`evaluate`, scores a chunk of sets with every metric, for
:func:`divmeter.score_many` and for :func:`score_sets` (in this process or in workers): metrics
with a batched implementation (:func:`divmeter.registry.register_batch`, e.g. distinct-n) score a
whole chunk in one call, with results identical to per-set calls; the others run set by set.
Records are still yielded one per set, in input order.

One rule for degenerate sets, for every metric, applied here (the core every metric's scoring
passes through, :func:`divmeter.score` included): a set with fewer than two non-blank responses
(a response is blank when it is empty or whitespace only) is null before the metric's kernel
runs, with the reason ``"fewer than two non-blank responses (got k)"`` (``"empty set"`` for a set
with no response at all). Diversity is a property of two texts or more. Metrics of
``granularity="response"`` (TTR, MATTR, MTLD, HD-D, PATTR, length, response compression) are
defined on one text, so for them the rule asks for one non-blank response
(``"no non-blank response"``). See :func:`degenerate_reason`.

Parameter mistakes are not set problems: every parameter of every metric is checked against the
metric's declaration (:mod:`divmeter.params`) before the first set, for every family and any
number of workers, so a bad ``n`` fails the run at once instead of filling a file with nulls.
"""

from __future__ import annotations

import functools
import math
import os
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from divmeter import memory
from divmeter.data.lines import detect_format
from divmeter.data.model import ResponseSet, as_texts
from divmeter.data.readers import read_records
from divmeter.errors import InvalidInputError, UnknownMetricError
from divmeter.registry import check_params, column_name, get_metric, parse_metric_arg
from divmeter.result import MetricResult

__all__ = [
    "MetricPlan",
    "resolve_metrics",
    "evaluate",
    "score_sets",
    "Summary",
    "RECORD_KEYS",
    "metric_columns",
    "completed_rows",
    "degenerate_reason",
]

#: Keys of a result record that are not metric columns.
RECORD_KEYS = ("set_id", "row", "label", "reasons", "per_response", "signatures")

MetricArg = str | tuple[str, Mapping[str, Any]]
ProgressFn = Callable[[int, int | None], None]
OnError = Literal["raise", "null"]

#: Sets scored together, in this process, by metrics with a batched implementation
#: (:func:`divmeter.registry.register_batch`); records still come out one per set, in order.
BATCH_SIZE = 256


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
                _check_model(spec.family, params.get("model", spec.params["model"]))
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
            )
        )
    return plans


@functools.lru_cache(maxsize=64)
def _check_model(family: str, model: Any) -> None:
    """Resolve a metric's ``model`` without loading it, so an alias, path or cached name that
    does not exist fails before the first set (not as a null on every set). Remembered per
    process (resolving an alias may hash its weights). A server model (``openai:NAME``) is left
    to its scorer, which asks the server (``base_url`` or ``$DIVMETER_BASE_URL``)."""
    from divmeter.backends.server import server_model_name

    if server_model_name(model) is not None:
        return
    if family == "lm":
        from divmeter.backends.lm import resolve_model as resolve_lm

        resolve_lm(model)
        return
    from divmeter.backends.embed import resolve_model

    resolve_model(model)


# --------------------------------------------------------------------------------------------
# the one rule for degenerate sets

#: Granularities whose metrics are defined on a single text (a per-response value averaged over
#: the set): the rule asks them for one non-blank response instead of two.
ONE_TEXT_GRANULARITIES = frozenset({"response"})


def _non_blank(item: Any) -> bool | None:
    """Whether a response (a string, or a CDM instantiation: a list of phrases) holds any
    non-whitespace character; ``None`` for something else (the metric reports it)."""
    if isinstance(item, str):
        return bool(item) and not item.isspace()
    if isinstance(item, (list, tuple)) and all(isinstance(x, str) for x in item):
        return any(x and not x.isspace() for x in item)
    return None


def degenerate_reason(items: Any, granularity: str = "set") -> str | None:
    """Why the one rule makes a set null, or ``None`` when the metric is to score it.

    A set needs at least two non-blank responses (one for metrics of a granularity in
    :data:`ONE_TEXT_GRANULARITIES`). Input the rule cannot read (not a list of strings or of
    phrase lists) is left to the metric, which reports it.

    Example:
        >>> [degenerate_reason(s) for s in ([], [""], ["x"], ["x", " \\t"], ["x", "y"])]
        ['empty set', 'fewer than two non-blank responses (got 0)', \
'fewer than two non-blank responses (got 1)', 'fewer than two non-blank responses (got 1)', None]
        >>> degenerate_reason(["x"], "response"), degenerate_reason(["", " "], "response")
        (None, 'no non-blank response')
    """
    if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple)):
        return None
    if not items:
        return "empty set"
    flags = [_non_blank(x) for x in items]
    if any(f is None for f in flags):
        return None
    k = sum(1 for f in flags if f)
    if granularity in ONE_TEXT_GRANULARITIES:
        return None if k else "no non-blank response"
    return None if k >= 2 else f"fewer than two non-blank responses (got {k})"


def _rule_signature(fn: Callable[..., Any], kwargs: Mapping[str, Any]
                    ) -> str | InvalidInputError:
    """The metric's signature for the null results of the rule: from its answer on an empty
    input, which every registered metric gives at once, before any model or kernel (a
    registry-wide test checks); the metric's error if it refuses the parameters."""
    try:
        return str(fn([], **kwargs).signature)
    except InvalidInputError as exc:
        return exc


# --------------------------------------------------------------------------------------------
# the core: a chunk of sets x the plans (runs in the main process or in workers)

Outcome = MetricResult | InvalidInputError


def _batch_fn(p: MetricPlan) -> Callable[..., Any] | None:
    """The batched implementation of a plan's metric, when it has one and it applies."""
    if p.input != "texts" or p.uses_prompt:
        return None
    return get_metric(p.name).load_batch()


def evaluate(
    inputs: Sequence[Any],
    plans: Sequence[MetricPlan],
    *,
    prompts: Sequence[str | None] | None = None,
    instantiations: Sequence[Any] | None = None,
    what: str | None = None,
    min_batch: int = 2,
    names: Sequence[str] | None = None,
) -> list[list[Outcome]]:
    """Score a chunk of sets with every plan: ``out[plan][set]`` is the
    :class:`~divmeter.result.MetricResult`, or the :class:`~divmeter.errors.InvalidInputError`
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
        instantiations: Each set's instantiations (``None`` for a set of plain texts), passed
            to metrics that take them (``input="instantiations"``, CDM) instead of ``inputs``.
        what: How a malformed set is named in its error: ``"sets"`` gives ``sets[3][1]``; by
            default the metric's own wording (``responses[1]``).
        min_batch: The fewest sets worth a batched call.
        names: How each set is named in a :class:`~divmeter.memory.MemoryLimitError` (default
            ``sets[i]``): pairwise and kernel metrics check their memory estimate against
            :func:`divmeter.memory.current_limit` before the work, and a set above it stops the
            run (it is not a null: the limit is the user's to raise).

    Example:
        >>> [[r.value for r in per_plan]
        ...  for per_plan in evaluate([["a b", "a c"], []], resolve_metrics(["distinct-n:n=1"]))]
        [[0.75, None]]
    """
    texts: tuple[tuple[str, ...], ...] | None = None
    errors: list[InvalidInputError | None] = []
    text_of: list[tuple[str, ...] | None] = []

    def validated() -> tuple[tuple[str, ...], ...]:
        nonlocal texts
        if texts is None:
            valid: list[tuple[str, ...]] = []
            for i, s in enumerate(inputs):
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
            why = [degenerate_reason(item(p, i), p.granularity) for i in range(len(inputs))]
            live: tuple[tuple[str, ...], ...] = ()
            if p.input == "texts":
                live = validated() if not any(why) else tuple(
                    t for t, w in zip(text_of, why, strict=True) if t is not None and w is None)
            verdicts[key] = (why, live)
        return verdicts[key]

    def set_name(i: int) -> str:
        return names[i] if names is not None else f"{what or 'sets'}[{i}]"

    out: list[list[Outcome]] = []
    for p in plans:
        if p.input == "texts":
            validated()
        fn = get_metric(p.name).load()
        why, live = verdict(p)
        sig: list[str | InvalidInputError] = []  # computed at the first refused set

        def kwargs_of(i: int, p: MetricPlan = p) -> dict[str, Any]:
            kwargs = dict(p.params)
            if p.uses_prompt and prompts is not None and prompts[i] is not None:
                kwargs["prompt"] = prompts[i]
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
        many = _batch_fn(p)
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


def _record(row: int, s: ResponseSet, plans: Sequence[MetricPlan], outcomes: Sequence[Outcome]
            ) -> dict[str, Any]:
    """The flat record of one set from its outcome under each plan."""
    rec: dict[str, Any] = {"set_id": s.set_id, "row": row}
    if s.label is not None:
        rec["label"] = s.label
    reasons: dict[str, str] = {}
    per_response: dict[str, Any] = {}
    signatures: dict[str, str] = {}
    for p, res in zip(plans, outcomes, strict=True):
        if isinstance(res, InvalidInputError):
            rec[p.column] = None
            reasons[p.column] = str(res)
            continue
        value = res.value
        if value is not None:
            value = float(value)
            if math.isnan(value):
                value = None
        rec[p.column] = value
        signatures[p.column] = res.signature
        if value is None:
            reasons[p.column] = res.reason or "undefined on this set"
        if p.granularity == "response":
            pr = res.details.get("per_response") if res.details else None
            per_response[p.column] = _floats(pr)
    rec["reasons"] = reasons
    if per_response:
        rec["per_response"] = per_response
    rec["signatures"] = signatures
    return rec


def _floats(values: Any) -> list[float | None] | None:
    if values is None:
        return None
    out: list[float | None] = []
    for v in list(values):
        f = None if v is None else float(v)
        out.append(None if f is None or math.isnan(f) else f)
    return out


def _score_chunk(
    chunk: list[tuple[int, ResponseSet]], plans: Sequence[MetricPlan]
) -> list[dict[str, Any]]:
    """Records of a chunk of ``(row, set)`` (in this process or a worker)."""
    outcomes = evaluate([s.responses for _, s in chunk], plans,
                        prompts=[s.prompt for _, s in chunk],
                        instantiations=[s.instantiations for _, s in chunk],
                        names=[f"set {s.set_id!r} (row {row})" for row, s in chunk])
    return [
        _record(row, s, plans, [per_plan[i] for per_plan in outcomes])
        for i, (row, s) in enumerate(chunk)
    ]


# --------------------------------------------------------------------------------------------
# summary


@dataclass
class _Stat:
    count: int = 0
    nulls: int = 0
    mean: float = 0.0
    m2: float = 0.0
    reasons: Counter[str] = field(default_factory=Counter)
    signature: str | None = None


class Summary:
    """Running per-column aggregates of result records: mean, std, count, nulls, reasons.

    ``std`` is the sample standard deviation (ddof = 1) of the non-null values; ``None`` with
    fewer than two values. Feed it with :meth:`add` (``score_sets(..., summary=s)`` does).

    Example:
        >>> s = Summary(["m"])
        >>> for v in (1.0, 3.0, None):
        ...     s.add({"m": v, "reasons": {"m": "empty set"} if v is None else {}})
        >>> s.to_dict()["metrics"]["m"]["mean"], s.to_dict()["metrics"]["m"]["nulls"]
        (2.0, 1)
    """

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.sets = 0
        self._stats = {c: _Stat() for c in self.columns}

    def add(self, record: Mapping[str, Any]) -> None:
        """Add one result record."""
        self.sets += 1
        reasons = record.get("reasons") or {}
        sigs = record.get("signatures") or {}
        for c in self.columns:
            st = self._stats[c]
            v = record.get(c)
            if st.signature is None and c in sigs:
                st.signature = sigs[c]
            if v is None:
                st.nulls += 1
                st.reasons[str(reasons.get(c, "undefined"))] += 1
                continue
            st.count += 1
            d = float(v) - st.mean
            st.mean += d / st.count
            st.m2 += d * (float(v) - st.mean)

    def to_dict(self) -> dict[str, Any]:
        """``{"sets": N, "metrics": {column: {mean, std, count, nulls, reasons, signature}}}``."""
        out: dict[str, Any] = {}
        for c, st in self._stats.items():
            out[c] = {
                "mean": st.mean if st.count else None,
                "std": math.sqrt(st.m2 / (st.count - 1)) if st.count > 1 else None,
                "count": st.count,
                "nulls": st.nulls,
                "reasons": dict(st.reasons.most_common()),
            }
            if st.signature is not None:
                out[c]["signature"] = st.signature
        return {"sets": self.sets, "metrics": out}


# --------------------------------------------------------------------------------------------
# the batch driver


def _chunks(
    items: Iterable[tuple[int, ResponseSet]], size: int
) -> Iterator[list[tuple[int, ResponseSet]]]:
    buf: list[tuple[int, ResponseSet]] = []
    for item in items:
        buf.append(item)
        if len(buf) >= size:
            yield buf
            buf = []
    if buf:
        yield buf


def unscored(sets: Iterable[ResponseSet], skip: Mapping[int, str],
             on_skip: Callable[[], None]) -> Iterator[tuple[int, ResponseSet]]:
    """``(row, set)`` for every set whose row is not in ``skip`` (``{row: set_id}`` already in a
    resumed output); ``on_skip`` is called for each skipped set.

    Raises:
        InvalidInputError: A skipped row holds another set id: the output was written from
            another input.
    """
    for row, s in enumerate(sets):
        if row in skip:
            if skip[row] != s.set_id:
                raise InvalidInputError(
                    f"cannot resume: the output has set {skip[row]!r} at row {row} but the "
                    f"input has {s.set_id!r}; the output was written from another input."
                )
            on_skip()
            continue
        yield row, s


class Tally:
    """The bookkeeping of a scoring run shared by every engine: counts the sets done (scored
    or skipped on resume) for ``progress``, adds each record to ``summary`` and drops its
    signatures unless ``with_signatures``."""

    def __init__(self, progress: ProgressFn | None, total: int | None,
                 summary: Summary | None, with_signatures: bool) -> None:
        self.progress, self.total = progress, total
        self.summary, self.with_signatures = summary, with_signatures
        self.done = 0

    def skipped(self) -> None:
        """Count a set skipped on resume."""
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total)

    def finish(self, rec: dict[str, Any]) -> dict[str, Any]:
        """Count a scored set; returns its record as written."""
        if self.summary is not None:
            self.summary.add(rec)
        if not self.with_signatures:
            rec.pop("signatures", None)
        self.skipped()
        return rec


def score_sets(
    sets: Iterable[ResponseSet],
    metrics: Sequence[MetricArg],
    *,
    workers: int = 1,
    chunk_size: int | None = None,
    progress: ProgressFn | None = None,
    total: int | None = None,
    skip: Mapping[int, str] | None = None,
    summary: Summary | None = None,
    with_signatures: bool = False,
) -> Iterator[dict[str, Any]]:
    """Score every set with every metric; yield one record per set, in input order, as it is done.

    Args:
        sets: Response sets (e.g. from :func:`divmeter.data.read_sets`); consumed lazily.
        metrics: ``"name[:k=v,...]"`` strings or ``(name, params)`` pairs.
        workers: Processes to spread sets over (1 = in this process). Output order and values
            do not depend on it.
        chunk_size: Sets per task sent to a worker (default: about 8 tasks per worker, at most
            64 sets, when ``total`` is known; else 16). With ``workers=1``: sets scored together
            by metrics with a batched implementation (default :data:`BATCH_SIZE`).
        progress: Called as ``progress(done, total)`` after each set (skipped ones included).
        total: Number of sets, when known in advance (defaults to ``len(sets)`` if it has one).
        skip: ``{row: set_id}`` of sets already scored (resume): they are not yielded. A set at a
            skipped row with another id means the input changed, which is an error.
        summary: A :class:`Summary` fed with every yielded record.
        with_signatures: Add ``signatures`` ``{column: signature}`` to every record.

    Yields:
        Result records (see the module docstring).

    Raises:
        UnknownMetricError, InvalidInputError: For bad metric names or parameters (before any set
            is scored) or a resumed output that does not match the input.

    Example:
        >>> from divmeter.data import ResponseSet
        >>> sets = [ResponseSet("a", ["x y", "x z"]), ResponseSet("b", [])]
        >>> for rec in score_sets(sets, ["distinct-n:n=1"]):
        ...     print(rec)  # doctest: +NORMALIZE_WHITESPACE
        {'set_id': 'a', 'row': 0, 'distinct-n:n=1': 0.75, 'reasons': {}}
        {'set_id': 'b', 'row': 1, 'distinct-n:n=1': None,
         'reasons': {'distinct-n:n=1': 'empty set'}}
    """
    plans = resolve_metrics(metrics)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidInputError(f"`workers` must be an integer >= 1; got {workers!r}.")
    if total is None and hasattr(sets, "__len__"):
        total = len(sets)  # type: ignore[arg-type]
    skip = skip or {}
    tally = Tally(progress, total, summary, with_signatures)
    finish = tally.finish

    def pending() -> Iterator[tuple[int, ResponseSet]]:
        return unscored(sets, skip, tally.skipped)

    if workers == 1:
        batched = any(_batch_fn(p) is not None for p in plans)
        for chunk in _chunks(pending(), (chunk_size or BATCH_SIZE) if batched else 1):
            for rec in _score_chunk(chunk, plans):
                yield finish(rec)
        return

    size = chunk_size or (
        max(1, min(64, (total - len(skip)) // (workers * 8))) if total is not None else 16
    )
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_watch_parent,
                             initargs=(os.getpid(),)) as pool:
        window: deque[Future[list[dict[str, Any]]]] = deque()
        try:
            for chunk in _chunks(pending(), size):
                window.append(pool.submit(_score_chunk, chunk, plans))
                while len(window) >= 2 * workers:
                    for rec in window.popleft().result():
                        yield finish(rec)
            while window:
                for rec in window.popleft().result():
                    yield finish(rec)
        finally:
            for fut in window:
                fut.cancel()


def _watch_parent(parent: int, interval: float = 0.5) -> None:
    """Worker initializer: exit as soon as the parent process is gone (even SIGKILLed, when it
    cannot tell its workers), so no worker, and hence no resource tracker, outlives a run."""
    import threading
    import time

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="divmeter-parent-watch", daemon=True).start()


# --------------------------------------------------------------------------------------------
# resume support


def metric_columns(record: Mapping[str, Any]) -> list[str]:
    """The metric columns of a result record (every key but :data:`RECORD_KEYS`)."""
    return [k for k in record if k not in RECORD_KEYS]


def _truncate_torn_tail(path: Path) -> None:
    """Cut a last line that an interrupted write left without its newline."""
    size = path.stat().st_size
    if size == 0:
        return
    with open(path, "rb+") as fh:
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return
        block = 1 << 16
        pos = size
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            data = fh.read(pos - start)
            nl = data.rfind(b"\n")
            if nl >= 0:
                fh.truncate(start + nl + 1)
                return
            pos = start
        fh.truncate(0)


def completed_rows(
    path: str | os.PathLike[str], fmt: str | None = None, *, columns: Sequence[str] | None = None
) -> tuple[dict[int, str], list[dict[str, Any]]]:
    """What an earlier (possibly interrupted) run already wrote to ``path``.

    For JSONL and CSV a torn last line is cut from the file so appending continues cleanly. For
    JSON and Parquet the finished file (if any) and the ``.partial.jsonl`` sidecar of an
    interrupted run are both read.

    Args:
        path: The output file of the earlier run.
        fmt: Its format (default: from the extension).
        columns: The metric columns of this run; an output written with others is an error.

    Returns:
        ``({row: set_id}, records)``; empty when the file does not exist.

    Raises:
        InvalidInputError: If the output's metric columns differ from ``columns``, or a record has
            no ``row``.
    """
    chosen = detect_format(path, fmt)
    p = Path(path)
    sources: list[tuple[Path, str]] = []
    if chosen in {"json", "parquet"}:
        if p.exists() and p.stat().st_size > 0:
            sources.append((p, chosen))
        side = Path(f"{path}.partial.jsonl")
        if side.exists():
            sources.append((side, "jsonl"))
    elif p.exists():
        sources.append((p, chosen))
    records: list[dict[str, Any]] = []
    refuse = f"cannot resume from {p.name}"
    for src, f in sources:
        if f in {"jsonl", "csv"}:
            _truncate_torn_tail(src)
        if f == "csv":
            _check_csv_header(src, refuse, columns)
        try:
            records.extend(read_records(src, f))
        except InvalidInputError as exc:
            raise InvalidInputError(
                f"{refuse}: {exc} It is not a complete divmeter score output; use another "
                "output file."
            ) from None
    rows: dict[int, str] = {}
    for i, rec in enumerate(records):
        row = rec.get("row")
        bad_row = isinstance(row, bool) or not isinstance(row, int) or row < 0
        if bad_row or not isinstance(row, int) or "set_id" not in rec:
            field = "'row' field (an integer >= 0)" if bad_row else "'set_id' field"
            raise InvalidInputError(
                f"{refuse}: record {i + 1} has no {field}; it was not written by divmeter score."
            )
        if columns is not None:
            have = metric_columns(rec)
            if have != list(columns):
                raise InvalidInputError(
                    f"{refuse}: it holds metrics {have} but this run asks for "
                    f"{list(columns)}; use another output file or the same metrics."
                )
        rows[row] = str(rec["set_id"])
    return rows, records


def _check_csv_header(path: Path, refuse: str, columns: Sequence[str] | None) -> None:
    """A CSV output being resumed must start with divmeter's header (even with no rows yet)."""
    with open(path, "rb") as fh:
        first = fh.readline()
    if not first.strip():
        return
    import csv

    try:
        header = next(csv.reader([first.decode("utf-8-sig")]))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        header = []
    metrics = [c for c in header if c not in RECORD_KEYS]
    if header[:2] != ["set_id", "row"] or (columns is not None and metrics != list(columns)):
        raise InvalidInputError(
            f"{refuse}: its header is {header[:8]}, not that of a divmeter score output with "
            f"metrics {list(columns or [])}; use another output file."
        )
