"""The Ray engine (``--engine ray``, ``pip install 'divmeter[dist]'``): the same records as the
local run, computed on a Ray cluster.

* Per-set scoring (:func:`score_file_ray`): the input is read here, streamed in windows of
  chunks; each window is a Ray Data dataset mapped with ``map_batches`` over an actor pool
  (:class:`_ChunkScorer`: each actor resolves the metrics once and keeps its encoder / LM loaded
  for all the chunks it scores, on a GPU when the cluster has one and a metric asks for it).
  Records carry their input row; a window's records are checked to hold every row exactly once
  (a task retried after a worker died cannot lose or duplicate a set) and are written in input
  order, through the same writer, resume and summary as :func:`divmeter.engine.runner.score_file`.
* Corpus statistics (:func:`score_corpus_ray`, one pass: :func:`corpus_pass`): one Ray task per
  shard computes its statistics (:func:`divmeter.engine.corpus.shards.shard_statistics`); the driver
  (:func:`divmeter.engine.corpus.run.score_corpus`) merges them as they finish (the merges are exact
  and order-free). Shards must be readable at the same path on every node.

``address``: ``None`` starts (or reuses) a local cluster; ``"auto"`` or ``"ray://host:port"``
joins an existing one. The local engine never imports Ray.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

from divmeter.engine.batch import (
    MetricArg,
    MetricPlan,
    ProgressFn,
    Tally,
    resolve_metrics,
    score_chunk,
    unscored,
)
from divmeter.core.errors import DivmeterError, InvalidInputError

__all__ = ["init", "corpus_pass", "score_corpus_ray", "score_file_ray", "ray_score_sets",
           "score_sets_ray", "WINDOW_CHUNKS", "CHUNK_SETS"]

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


def _shard_task(src: str, accs: list[Any], input_format: str | None, batch_bytes: int
                ) -> tuple[str, list[Any], int]:
    from divmeter.engine.corpus.shards import shard_statistics

    part, n = shard_statistics(src, accs, input_format=input_format, batch_bytes=batch_bytes)
    return src, part, n


def corpus_pass(
    shards: Sequence[str],
    accs: Sequence[Any],
    *,
    input_format: str | None = None,
    batch_bytes: int,
    address: str | None = None,
) -> Iterator[tuple[str, list[Any], int]]:
    """One pass of corpus statistics over ``shards`` on Ray: ``(shard, accumulators, n)`` per
    shard, in the order they finish (Ray retries a task whose worker died)."""
    ray = init(address)
    task = ray.remote(max_retries=3)(_shard_task)
    base = ray.put(list(accs))
    pending = [task.remote(os.path.abspath(s) if os.path.exists(s) else s, base,
                           input_format, batch_bytes) for s in shards]
    names = dict(zip([os.path.abspath(s) if os.path.exists(s) else s for s in shards],
                     shards, strict=True))
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        try:
            src, part, n = ray.get(done[0])
        except ray.exceptions.RayTaskError as exc:
            _stop(ray, pending)
            raise _task_cause(exc) from None
        yield names[src], part, n


def _task_cause(exc: Exception) -> Exception:
    """What a shard task raised (a bad shard's one-line :class:`InvalidInputError`, a missing
    file), not Ray's wrapper, whose message holds the worker's traceback."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, Exception) else exc


def _stop(ray: Any, pending: list[Any]) -> None:
    """Cancel the shard tasks still running after one failed, and collect their outcome (Ray
    logs an error it thinks nobody saw, with a traceback, when its reference is dropped)."""
    for ref in pending:
        ray.cancel(ref)
    ready, _ = ray.wait(pending, num_returns=len(pending), timeout=10)
    for ref in ready:
        try:
            ray.get(ref)
        except Exception:  # noqa: S110 - cancelled, or failed the same way: the first error wins
            pass


def score_corpus_ray(inputs: Sequence[str | os.PathLike[str]], metrics: Sequence[MetricArg], *,
                     address: str | None = None, **options: Any) -> Any:
    """:func:`divmeter.engine.corpus.run.score_corpus` with each shard's statistics computed by a Ray
    task (:func:`corpus_pass`): the same records as the local run.

    Args:
        inputs: The shard files.
        metrics: ``"name[:k=v,...]"`` strings or ``(name, params)`` pairs.
        address: Ray cluster (``None``: start or reuse a local one; ``"auto"``,
            ``"ray://host:port"``).
        **options: ``input_format``, ``memory_budget_mb``, ``checkpoint``, ``progress``.

    Returns:
        The :class:`divmeter.engine.corpus.run.CorpusRun`.
    """
    import functools

    from divmeter.engine.corpus.run import score_corpus

    return score_corpus(inputs, metrics, shard_pass=functools.partial(corpus_pass,
                                                                      address=address),
                        **options)


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
    """:func:`divmeter.engine.runner.score_file` with the sets scored on Ray: the same records, in the
    same order, written the same way (every option of ``score_file`` but ``workers``).

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
