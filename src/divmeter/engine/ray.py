"""The Ray engine (``--engine ray``, ``pip install 'divmeter[dist]'``): the same records as the
local run, computed on a Ray cluster.

* Per-set scoring (:func:`score_file_ray`): the input is read here, streamed in windows of
  chunks; each window is a Ray Data dataset mapped with ``map_batches`` over an actor pool
  (:class:`_ChunkScorer`: each actor resolves the metrics once and keeps its encoder / LM loaded
  for all the chunks it scores, on a GPU when the cluster has one and a metric asks for it).
  Records carry their input row; a window's records are checked to hold every row exactly once
  (a task retried after a worker died cannot lose or duplicate a set) and are written in input
  order, through the same writer, resume and summary as :func:`divmeter.engine.runner.score_file`.
* Corpus statistics (:func:`score_corpus_ray`, one pass: :class:`CorpusPass`): one Ray task per
  shard computes its statistics (:func:`divmeter.engine.corpus.shards.shard_statistics`) and
  cuts its n-gram tables into key ranges left in the object store; one task per key range
  merges that range of every shard and returns its totals (count spectra, or the frozen
  records of a second pass), in parallel; the driver
  (:func:`divmeter.engine.corpus.run.score_corpus`) merges the shards' scalar counts as they
  finish and the ranges' totals at the end (every merge is exact and order-free: the local
  run's numbers, bit for bit). Shards must be readable at the same path on every node.

``address``: ``None`` starts (or reuses) a local cluster; ``"auto"`` or ``"ray://host:port"``
joins an existing one. The local engine never imports Ray.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

from divmeter.core.errors import DivmeterError, InvalidInputError
from divmeter.engine.batch import (
    MetricArg,
    MetricPlan,
    ProgressFn,
    Tally,
    resolve_metrics,
    score_chunk,
    unscored,
)

__all__ = ["init", "corpus_pass", "CorpusPass", "score_corpus_ray", "score_file_ray",
           "ray_score_sets", "score_sets_ray", "WINDOW_CHUNKS", "CHUNK_SETS"]

#: Sets per chunk (one ``map_batches`` row) and chunks per window (one dataset execution).
CHUNK_SETS = 64
WINDOW_CHUNKS = 256


def check_address(address: str, timeout: float = 3.0) -> None:
    """Refuse an ``--address`` that is not ``auto``, ``local``, ``HOST:PORT`` or
    ``ray://HOST:PORT``, or whose port does not accept a connection within ``timeout`` seconds
    (Ray itself retries such an address for minutes).

    Example:
        >>> try:
        ...     check_address("no port here")
        ... except InvalidInputError as exc:
        ...     print(str(exc).split(";")[0])
        --address must be auto, local, HOST:PORT or ray://HOST:PORT
    """
    import socket

    if address in ("auto", "local"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or " " in host:
        raise InvalidInputError(
            f"--address must be auto, local, HOST:PORT or ray://HOST:PORT; got {address!r}.")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise InvalidInputError(
            f"no Ray cluster answers at {address} ({why.lower()}); start one there "
            "(`ray start --head`) or leave --address out for a local cluster.") from None


def init(address: str | None = None) -> Any:
    """Connect to Ray (once per process) and return the module."""
    from divmeter.core._optional import require

    ray = require("ray", extra="dist", package="ray[data]")
    if address is not None:
        check_address(address)
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address is not None:
            kwargs["address"] = address
        quiet = os.environ.get("DIVMETER_QUIET") == "1"  # set by the CLI's -q
        if quiet:
            kwargs["logging_level"] = logging.ERROR
        ray.init(**kwargs)
        if quiet:
            from ray.data import DataContext

            DataContext.get_current().enable_progress_bars = False
    return ray


def _shard_task(src: str, accs: list[Any], input_format: str | None, batch_bytes: int,
                parts: int) -> Any:
    """One shard's statistics (spilled, if at all, on this worker's own disk), and with
    ``parts`` > 0 each accumulator's key-partitionable statistics cut into ``parts`` key
    ranges: ``((src, accumulators, n), range 0, ..., range parts-1)``, one Ray object each."""
    from divmeter.engine.corpus.shards import shard_statistics

    for a in accs:
        a.configure(a.budget, None)  # the driver's spill folder is not this worker's
    part, n = shard_statistics(src, accs, input_format=input_format, batch_bytes=batch_bytes)
    if not parts:
        return src, part, n
    splits = [a.split(parts) for a in part]
    ranges = [[None if sp is None else sp[i] for sp in splits] for i in range(parts)]
    return ((src, part, n), *ranges)


def _reduce_task(accs: list[Any], index: int, fault: tuple[int, str] | None,
                 *shard_ranges: list[Any]) -> list[Any]:
    """Key range ``index`` of every shard, reduced per accumulator to its summary
    (:meth:`divmeter.engine.corpus.stats.Accumulator.reduce_part`); ``None`` for an accumulator
    with nothing partitioned. ``fault`` is a test hook (see :func:`score_corpus_ray`)."""
    if fault is not None and fault[0] == index:
        _kill_once(fault[1])
    out: list[Any] = []
    for j, acc in enumerate(accs):
        parts = [r[j] for r in shard_ranges if r[j] is not None]
        if not parts:
            out.append(None)
            continue
        empty = acc.spawn()
        empty.configure(acc.budget, None)
        out.append(empty.reduce_part(parts))
    return out


class CorpusPass:
    """One pass of corpus statistics over ``shards`` on Ray (:func:`corpus_pass`).

    Iterating gives ``(shard, accumulators, n)`` per shard in the order the shard tasks finish
    (Ray retries a task whose worker died); those accumulators carry only their scalar counts
    when their statistics are partitioned: each shard task cuts its n-gram tables into
    ``partitions`` key ranges left in Ray's object store, and :meth:`reduce` runs one task per
    key range that merges that range of every shard and returns its summary (count spectra, or
    the frozen records a second pass looks up), so the driver receives per-range totals, never
    the tables. The summaries are exact and disjoint, so the result is the local run's, bit for
    bit."""

    def __init__(self, shards: Sequence[str], accs: Sequence[Any], *, input_format: str | None,
                 batch_bytes: int, address: str | None = None, partitions: int | None = None,
                 fault: tuple[int, str] | None = None) -> None:
        from divmeter.engine.corpus.stats import Accumulator

        ray = init(address)
        self.ray = ray
        splittable = any(type(a).split is not Accumulator.split for a in accs)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.parts = 0 if not splittable else (partitions or max(2, cpus))
        self.fault = fault
        self.base = ray.put(list(accs))
        self.n_accs = len(accs)
        task = ray.remote(max_retries=3, num_returns=1 + self.parts)(_shard_task)
        paths = [os.path.abspath(s) if os.path.exists(s) else s for s in shards]
        self.names = dict(zip(paths, shards, strict=True))
        self.refs: list[Any] = []
        for src in paths:
            got = task.remote(src, self.base, input_format, batch_bytes, self.parts)
            self.refs.append(got if self.parts else [got])

    def __iter__(self) -> Iterator[tuple[str, list[Any], int]]:
        ray = self.ray
        pending = [r[0] for r in self.refs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                src, part, n = ray.get(done[0])
            except ray.exceptions.RayTaskError as exc:
                _stop(ray, pending)
                raise _task_cause(exc) from None
            yield self.names[src], part, n

    def reduce(self) -> list[list[Any] | None]:
        """Per accumulator, the summaries of every key range in range order (``None`` where
        nothing was partitioned)."""
        if not self.parts:
            return [None] * self.n_accs
        ray = self.ray
        task = ray.remote(max_retries=3)(_reduce_task)
        refs = [task.remote(self.base, i, self.fault, *[r[1 + i] for r in self.refs])
                for i in range(self.parts)]
        try:
            by_range = ray.get(refs)
        except ray.exceptions.RayTaskError as exc:
            raise _task_cause(exc) from None
        self.refs = []
        out: list[list[Any] | None] = []
        for j in range(self.n_accs):
            col = [by_range[i][j] for i in range(self.parts)]
            out.append(None if all(c is None for c in col) else col)
        return out


def corpus_pass(
    shards: Sequence[str],
    accs: Sequence[Any],
    *,
    input_format: str | None = None,
    batch_bytes: int,
    address: str | None = None,
    partitions: int | None = None,
    fault: tuple[int, str] | None = None,
) -> CorpusPass:
    """One pass of corpus statistics over ``shards`` on Ray: a :class:`CorpusPass` (iterate it
    for the shards' accumulators, then :meth:`CorpusPass.reduce` for the key ranges)."""
    return CorpusPass(shards, accs, input_format=input_format, batch_bytes=batch_bytes,
                      address=address, partitions=partitions, fault=fault)


def _task_cause(exc: Exception) -> Exception:
    """What a shard task raised (a bad shard's one-line :class:`InvalidInputError`, a missing
    file), not Ray's wrapper, whose message holds the worker's traceback."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, Exception) else exc


def _stop(ray: Any, pending: list[Any]) -> None:
    """Cancel the shard tasks still running after one failed, and collect their outcome (Ray
    logs an error it thinks nobody saw, with a traceback, when its reference is dropped).
    Their workers are killed, not interrupted: an interrupt that lands inside an import (numba's,
    the first time a worker counts) leaves that module half made in a worker Ray would reuse,
    and every later task there failed with "partially initialized module 'numba'"."""
    for ref in pending:
        ray.cancel(ref, force=True)
    ready, _ = ray.wait(pending, num_returns=len(pending), timeout=10)
    for ref in ready:
        try:
            ray.get(ref)
        except Exception:  # noqa: S110 - cancelled, or failed the same way: the first error wins
            pass


def score_corpus_ray(inputs: Sequence[str | os.PathLike[str]], metrics: Sequence[MetricArg], *,
                     address: str | None = None, partitions: int | None = None,
                     fault: tuple[int, str] | None = None, **options: Any) -> Any:
    """:func:`divmeter.engine.corpus.run.score_corpus` on a Ray cluster (:class:`CorpusPass`):
    one task per shard computes its statistics; n-gram tables are cut by key range and reduced
    by one task per range, in parallel, the driver receiving only each range's totals. The
    same records as the local run, bit for bit.

    Args:
        inputs: The shard files.
        metrics: ``"name[:k=v,...]"`` strings or ``(name, params)`` pairs.
        address: Ray cluster (``None``: start or reuse a local one; ``"auto"``,
            ``"ray://host:port"``).
        partitions: Key ranges reduced in parallel (default: the cluster's CPUs, at least 2).
        fault: Test hook: ``(range, marker_path)`` makes the first task reducing that key
            range exit abruptly (once, across the cluster); Ray retries it.
        **options: ``input_format``, ``memory_budget_mb``, ``checkpoint``, ``progress``.

    Returns:
        The :class:`divmeter.engine.corpus.run.CorpusRun`.
    """
    import functools

    from divmeter.engine.corpus.run import score_corpus

    return score_corpus(inputs, metrics, shard_pass=functools.partial(
        corpus_pass, address=address, partitions=partitions, fault=fault), **options)


class _ChunkScorer:
    """A Ray Data actor: the metrics resolved once; encoders and LMs stay loaded (the family
    modules cache them per process) for every chunk this actor scores."""

    def __init__(self, plans: list[MetricPlan], fault: tuple[int, str] | None = None) -> None:
        self.plans = plans
        self.fault = fault
        from divmeter.engine.registry import list_metrics

        list_metrics()  # import the family modules once

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import pickle

        out = []
        for payload in batch["chunk"]:
            chunk = pickle.loads(payload)
            if self.fault is not None and chunk and chunk[0][0] == self.fault[0]:
                _kill_once(self.fault[1])
            out.append(pickle.dumps(score_chunk(chunk, self.plans)))
        return {"records": out}


def _kill_once(marker: str) -> None:
    """Test hook: the first worker to reach a chosen chunk dies (os._exit) mid-job."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(1)


def _windows(sets: Iterator[tuple[int, Any]], chunk: int, window: int
             ) -> Iterator[list[list[tuple[int, Any]]]]:
    buf: list[list[tuple[int, Any]]] = []
    cur: list[tuple[int, Any]] = []
    for item in sets:
        cur.append(item)
        if len(cur) >= chunk:
            buf.append(cur)
            cur = []
            if len(buf) >= window:
                yield buf
                buf = []
    if cur:
        buf.append(cur)
    if buf:
        yield buf


def score_sets_ray(
    pending: Iterator[tuple[int, Any]],
    plans: list[MetricPlan],
    *,
    address: str | None = None,
    concurrency: int | None = None,
    chunk_sets: int = CHUNK_SETS,
    window_chunks: int = WINDOW_CHUNKS,
    fault: tuple[int, str] | None = None,
) -> Iterator[dict[str, Any]]:
    """Records of ``(row, set)`` pairs scored on Ray, in input order (see the module doc).

    ``fault`` is a test hook: ``(row, marker_path)`` makes the first actor that reaches the
    chunk starting at ``row`` exit abruptly (once, across the cluster)."""
    import pickle

    init(address)
    import ray
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    import logging

    logging.getLogger("ray.data").setLevel(logging.WARNING)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    gpus = ray.cluster_resources().get("GPU", 0)
    needs_model = any(p.family in ("content", "lm") for p in plans)
    size = concurrency or max(1, cpus)
    remote_args: dict[str, Any] = {"num_cpus": 1}
    if gpus and needs_model:
        remote_args = {"num_gpus": min(1.0, gpus / size)}
    for window in _windows(pending, chunk_sets, window_chunks):
        items = [{"chunk": pickle.dumps(c)} for c in window]
        ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
            _ChunkScorer, fn_constructor_args=(plans, fault), batch_size=1,
            compute=ray.data.ActorPoolStrategy(size=min(size, len(items))), **remote_args)
        by_row: dict[int, dict[str, Any]] = {}
        for row in ds.iter_rows():
            for rec in pickle.loads(row["records"]):
                if rec["row"] in by_row:
                    raise DivmeterError(f"ray engine: set at row {rec['row']} came back twice.")
                by_row[rec["row"]] = rec
        expected = [r for c in window for r, _ in c]
        missing = [r for r in expected if r not in by_row]
        if missing or len(by_row) != len(expected):
            raise DivmeterError(f"ray engine: {len(missing)} sets were lost (row {missing[:1]}).")
        for r in expected:
            yield by_row[r]


def ray_score_sets(address: str | None = None, concurrency: int | None = None,
                   chunk_sets: int = CHUNK_SETS, fault: tuple[int, str] | None = None) -> Any:
    """A drop-in for :func:`divmeter.engine.batch.score_sets` (same contract: input order, ``skip``,
    ``summary``, ``progress``, ``with_signatures``) that scores the sets on Ray."""

    def score_sets(sets: Any, metrics: Any, *, workers: int = 1, chunk_size: Any = None,
                   progress: ProgressFn | None = None, total: int | None = None,
                   skip: Any = None, summary: Any = None, with_signatures: bool = False
                   ) -> Iterator[dict[str, Any]]:
        plans = resolve_metrics(metrics)
        tally = Tally(progress, total, summary, with_signatures)
        for rec in score_sets_ray(unscored(sets, skip or {}, tally.skipped), plans,
                                  address=address, concurrency=concurrency,
                                  chunk_sets=chunk_sets, fault=fault):
            yield tally.finish(rec)

    return score_sets


def score_file_ray(
    input: str | os.PathLike[str], metrics: Sequence[MetricArg], output: str | None = None, *,
    address: str | None = None, concurrency: int | None = None, chunk_sets: int = CHUNK_SETS,
    fault: tuple[int, str] | None = None, **options: Any,
) -> Any:
    """:func:`divmeter.engine.runner.score_file` with the sets scored on Ray: the same records, in
    the same order, written the same way (every option of ``score_file`` but ``workers``).

    Args:
        input: The response-set file.
        metrics: ``"name[:k=v,...]"`` strings or ``(name, params)`` pairs.
        output: As in ``score_file``.
        address: Ray cluster (``None``: start or reuse a local one).
        concurrency: Actors in the pool (default: the cluster's CPUs).
        chunk_sets: Sets per chunk (one actor call).
        fault: Test hook (see :func:`score_sets_ray`).
        **options: ``fmt``, ``input_format``, ``resume``, ``signatures``,
            ``summary_in_output``, ``progress``.

    Returns:
        The :class:`divmeter.engine.runner.FileRun`.
    """
    from divmeter.engine.runner import score_file

    return score_file(input, metrics, output,
                      scorer=ray_score_sets(address=address, concurrency=concurrency,
                                            chunk_sets=chunk_sets, fault=fault), **options)
