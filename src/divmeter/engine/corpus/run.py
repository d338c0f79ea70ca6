"""Score a corpus given as shards (files): stream each shard in batches into every metric's
statistics (:mod:`divmeter.engine.corpus.stats`), merge, and checkpoint so an interrupted run
resumes.

``divmeter score --corpus FILE [FILE ...] -m METRIC`` runs :func:`score_corpus`. Every response
of every set of every file belongs to the one corpus; files are shards, and the value does not
depend on their order (the merges are exact, see :mod:`divmeter.engine.corpus.stats`).

Inputs: see :mod:`divmeter.engine.corpus.shards` (files, plain text, Hugging Face datasets). The
local run reads the shards here, one after the other; an engine (``shard_pass=``, e.g.
:func:`divmeter.engine.ray.score_corpus_ray`) reads them elsewhere, and the merge is the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from divmeter.core.errors import InvalidInputError, UnknownMetricError
from divmeter.engine.batch import MetricArg, MetricPlan, resolve_metrics
from divmeter.engine.corpus.checkpoint import load_checkpoint, save_checkpoint
from divmeter.engine.corpus.shards import (
    DEFAULT_BATCH_BYTES,
    ShardPass,
    iter_texts,
    shard_statistics,
)
from divmeter.engine.corpus.stats import Accumulator, make_accumulator
from divmeter.engine.registry import get_metric, parse_metric_arg

__all__ = ["CorpusRun", "score_corpus", "budgets", "iter_texts", "shard_statistics",
           "refuse_non_texts", "DEFAULT_BATCH_BYTES"]

CorpusProgress = Callable[[int, int, int], None]  # (responses so far, shards done, shards)


@dataclass
class CorpusRun:
    """What :func:`score_corpus` did.

    Attributes:
        plans: The resolved metrics.
        records: One record per metric: ``metric`` (the column), ``value``, ``signature``,
            ``reason`` (when ``value`` is ``None``), ``merge`` (``exact``, ``exact-two-pass`` or
            ``none``: run on one worker), ``responses`` and ``shards``.
        responses: Responses read (per pass; each pass reads them once).
        seconds: Wall time of this run (resumed work not included).
        resumed_shards: Shard passes taken from the checkpoint.
    """

    plans: list[MetricPlan]
    records: list[dict[str, Any]] = field(default_factory=list)
    responses: int = 0
    seconds: float = 0.0
    resumed_shards: int = 0

    @property
    def throughput(self) -> float:
        """Responses read per second by this run."""
        return self.responses / self.seconds if self.seconds > 0 else 0.0


def _run_key(plans: Sequence[MetricPlan], shards: Sequence[str]) -> str:
    """What a checkpoint belongs to: the metrics and the set of shards (size and mtime)."""
    h = hashlib.sha256()
    h.update(json.dumps([[p.column, sorted((k, repr(v)) for k, v in p.params.items())]
                         for p in plans]).encode())
    for s in sorted(shards):
        st = os.stat(s) if os.path.exists(s) else None
        h.update(f"{s}|{st.st_size if st else ''}|{st.st_mtime_ns if st else ''}".encode())
    return h.hexdigest()


def _check_inputs(inputs: Sequence[str | os.PathLike[str]]) -> list[str]:
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    shards = [os.fspath(s) for s in inputs]
    if not shards:
        raise InvalidInputError("--corpus needs at least one input file; got none.")
    if len(set(shards)) != len(shards):
        dup = next(s for s in shards if shards.count(s) > 1)
        raise InvalidInputError(f"corpus shard {dup!r} is given twice; give each file once.")
    for s in shards:
        if not s.startswith("hf:") and not os.path.exists(s):
            raise InvalidInputError(f"corpus shard {s!r} does not exist.")
    return shards


def refuse_non_texts(metrics: Sequence[MetricArg]) -> None:
    """Refuse a metric that scores instantiations, not texts (CDM): it has no corpus mode. The
    kind is read from the registry before any metric is set up (setting CDM up resolves its
    model), so this is the error whatever is installed; a name the registry does not know is
    left to :func:`~divmeter.engine.batch.resolve_metrics` to report.

    Example:
        >>> refuse_non_texts(["distinct-n:n=2", ("self-bleu", {})])
        >>> try:
        ...     refuse_non_texts(["distinct-n", "cdm"])
        ... except InvalidInputError as exc:
        ...     print(exc)
        cdm scores instantiations, not texts; it has no corpus mode.
    """
    for m in metrics:
        if isinstance(m, MetricPlan):
            name, kind = m.name, m.input
        else:
            try:
                spec = get_metric(parse_metric_arg(m)[0] if isinstance(m, str) else m[0])
            except (UnknownMetricError, InvalidInputError, TypeError, IndexError):
                continue  # (resolve_metrics says what is wrong with it)
            name, kind = spec.name, spec.definition.input
        if kind != "texts":
            raise InvalidInputError(f"{name} scores instantiations, not texts; it has no corpus "
                                    "mode.")


def score_corpus(
    inputs: Sequence[str | os.PathLike[str]],
    metrics: Sequence[MetricArg],
    *,
    input_format: str | None = None,
    memory_budget_mb: float | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    progress: CorpusProgress | None = None,
    shard_pass: ShardPass | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
) -> CorpusRun:
    """Score all responses of all ``inputs`` (shards) as one corpus with each metric.

    Args:
        inputs: Shard files (see the module docstring); their order does not matter.
        metrics: ``"name[:k=v,...]"`` strings or ``(name, params)`` pairs.
        input_format: Input format of every shard (default: from each extension).
        memory_budget_mb: Memory for the run's text batches and statistics, in MB: a
            batch holds at most a sixteenth of it (64 MB at most), and the n-gram tables of
            the metrics share half of it (:func:`budgets`); past their share they spill to
            disk as sorted runs, merged at the end (:mod:`divmeter.inputs.text.table`), so a
            corpus of any size scores within it, with the same values. ``None``: 64 MB
            batches and no bound on the tables (they grow with the corpus's distinct
            n-grams, 24 bytes each). Metrics merged ``none`` (gathered and scored once) hold
            the whole corpus's texts whatever the budget.
        checkpoint: File to keep the merged statistics in after every shard; a run given the
            same file, metrics and shards resumes after the last finished shard.
        progress: Called as ``progress(responses, shards_done, shard_passes)``.
        shard_pass: Where the shards are read: ``None`` in this process, one after the other;
            an engine's pass (:data:`divmeter.engine.corpus.shards.ShardPass`, e.g. Ray tasks:
            :func:`divmeter.engine.ray.score_corpus_ray`), whose statistics are merged here
            as they come.
        spill_dir: Folder for the spilled runs (default: a temporary folder, removed at the
            end).

    Returns:
        A :class:`CorpusRun` with one record per metric.

    Raises:
        UnknownMetricError, InvalidInputError: For bad metrics or parameters, a missing or
            repeated shard, a malformed shard (file and line), a metric that does not score
            texts (CDM).

    Example:
        >>> import pathlib, tempfile
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "a.txt").write_text("a b\\n")
        >>> _ = (d / "b.txt").write_text("a c\\n")
        >>> run = score_corpus([d / "b.txt", d / "a.txt"], ["distinct-n:n=1"])
        >>> run.records[0]["value"], run.records[0]["merge"]
        (0.75, 'exact')
    """
    refuse_non_texts(metrics)
    plans = resolve_metrics(metrics)
    shards = sorted(_check_inputs(inputs))  # a canonical order: results cannot depend on it
    if memory_budget_mb is not None and not 0 < memory_budget_mb < 2**40:  # NaN fails too
        raise InvalidInputError(f"--memory-budget must be a number of MB > 0 (and finite); got "
                                f"{memory_budget_mb}.")
    accs = [make_accumulator(p.name, p.params) for p in plans]
    budget, per_acc = budgets(memory_budget_mb, accs)
    own_dir = None
    if spill_dir is None and per_acc is not None:
        own_dir = tempfile.mkdtemp(prefix="divmeter-corpus-")
    folder = own_dir if spill_dir is None else os.fspath(spill_dir)
    try:
        return _run(plans, shards, accs, budget, per_acc, folder, input_format, checkpoint,
                    progress, shard_pass)
    finally:
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)


def budgets(memory_budget_mb: float | None, accs: Sequence[Any]) -> tuple[int, int | None]:
    """``(text bytes per batch, bytes of in-memory statistics per bounded accumulator)`` for a
    run's memory budget: a batch takes a sixteenth of the budget (at most
    :data:`DEFAULT_BATCH_BYTES`); the accumulators that keep n-gram tables share half of it, and
    each keeps its in-memory runs under half its share (a merge of runs needs as much again).

    Example:
        >>> from divmeter.engine.corpus.stats import Accumulator, make_accumulator
        >>> budgets(1024, [make_accumulator("distinct-n", {}), make_accumulator("ttr", {})])
        (67108864, 234881024)
    """
    if memory_budget_mb is None:
        return DEFAULT_BATCH_BYTES, None
    total = int(memory_budget_mb * (1 << 20))
    batch = max(1, min(DEFAULT_BATCH_BYTES, total // 16))
    bounded = [a for a in accs if type(a)._configure is not Accumulator._configure]
    return batch, max(1, (total // 2 - batch) // max(len(bounded), 1) // 2)


def _run(plans: list[MetricPlan], shards: list[str], accs: list[Accumulator], budget: int,
         per_acc: int | None, folder: str | None, input_format: str | None,
         checkpoint: str | os.PathLike[str] | None, progress: CorpusProgress | None,
         shard_pass: ShardPass | None) -> CorpusRun:
    for a in accs:
        a.configure(per_acc, folder)
    passes = max(a.passes for a in accs)
    key = _run_key(plans, shards)
    state: dict[str, Any] = {"key": key, "pass": 0, "done": [], "accs": accs, "responses": 0}
    run = CorpusRun(plans)
    ckpt = None if checkpoint is None else os.fspath(checkpoint)
    if ckpt is not None and os.path.exists(ckpt) and not os.path.isfile(ckpt):
        raise InvalidInputError(f"--checkpoint {ckpt} is not a regular file (a device, folder "
                                "or pipe); give a file path.")
    if ckpt is not None and os.path.exists(ckpt):
        state = load_checkpoint(ckpt, key, plans)
        accs = state["accs"]
        for a in accs:
            a.configure(per_acc, folder)
        run.resumed_shards = state["pass"] * len(shards) + len(state["done"])
    start = time.perf_counter()
    total_units = passes * len(shards)
    responses = 0

    def tick(n: int) -> None:
        nonlocal responses
        responses += n
        if progress is not None:
            progress(responses, state["pass"] * len(shards) + len(state["done"]), total_units)

    while state["pass"] < passes:
        p_ = state["pass"]
        active = [i for i, a in enumerate(accs) if a.passes > p_]
        todo = [s for s in shards if s not in state["done"]]
        reduce = None
        if shard_pass is not None:
            results = shard_pass(todo, [accs[i] for i in active], input_format=input_format,
                                 batch_bytes=budget)
            reduce = getattr(results, "reduce", None)
        else:
            results = (
                (s, *shard_statistics(s, [accs[i] for i in active], input_format=input_format,
                                      batch_bytes=budget, on_batch=tick))
                for s in todo
            )
        for s, part, n in results:
            for i, a in zip(active, part, strict=True):
                accs[i].merge(a)
                a.close()
            if shard_pass is not None:
                tick(n)
            if p_ == 0:
                state["responses"] += n
            state["done"].append(s)
            if ckpt is not None and reduce is None:
                save_checkpoint(ckpt, key, state)
        if reduce is not None:  # statistics reduced by key range where they lie
            for i, summaries in zip(active, reduce(), strict=True):
                if summaries is not None:
                    accs[i].absorb(summaries)
        for i in active:
            if accs[i].passes > p_ + 1:
                accs[i].next_pass()
        state["pass"] = p_ + 1
        state["done"] = []
        if ckpt is not None:
            save_checkpoint(ckpt, key, state)
    run.responses = responses
    run.seconds = time.perf_counter() - start
    for p, a in zip(plans, accs, strict=True):
        res = a.finish()
        a.close()
        rec: dict[str, Any] = {"metric": p.column, "value": res.value,
                               "signature": res.signature}
        if res.value is None:
            rec["reason"] = res.reason
        rec.update({"merge": a.kind, "responses": state["responses"], "shards": len(shards)})
        run.records.append(rec)
    return run
