"""The batch driver: every set of a stream scored with every metric, in this process (chunks of
:data:`BATCH_SIZE` sets for the batched kernels) or over worker processes, one record per set in
input order; sets already in a resumed output are skipped."""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from divmeter.core.errors import DivmeterError, InvalidInputError
from divmeter.engine.batch.plan import MetricArg, resolve_metrics
from divmeter.engine.batch.records import score_chunk
from divmeter.engine.batch.summary import ProgressFn, Summary, Tally
from divmeter.inputs.data.model import ResponseSet

__all__ = ["BATCH_SIZE", "MAX_WORKERS", "score_sets", "unscored"]

#: Sets scored together, in this process, by metrics whose formula takes many sets at once
#: (``Metric.batched``); records still come out one per set, in order.
BATCH_SIZE = 256
#: The most worker processes a run may ask for.
MAX_WORKERS = 1024


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
        sets: Response sets (e.g. from :func:`divmeter.inputs.data.read_sets`); consumed lazily.
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
        >>> from divmeter.inputs.data import ResponseSet
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
    if workers > MAX_WORKERS:
        got = f"{workers:,}" if workers < 10**15 else "more"
        raise InvalidInputError(f"`workers` must be at most {MAX_WORKERS:,} processes; got {got}.")
    if total is None and hasattr(sets, "__len__"):
        total = len(sets)  # type: ignore[arg-type]
    skip = skip or {}
    tally = Tally(progress, total, summary, with_signatures)
    finish = tally.finish

    def pending() -> Iterator[tuple[int, ResponseSet]]:
        return unscored(sets, skip, tally.skipped)

    if workers == 1:
        batched = any(p.metric.batched for p in plans)
        for chunk in _chunks(pending(), (chunk_size or BATCH_SIZE) if batched else 1):
            for rec in score_chunk(chunk, plans):
                yield finish(rec)
        return

    size = chunk_size or (
        max(1, min(64, (total - len(skip)) // (workers * 8))) if total is not None else 16
    )
    import multiprocessing

    from divmeter.core import memory

    ctx = multiprocessing.get_context("spawn")
    reporter = memory.current_reporter()
    notes, relay = None, None
    if reporter is not None and reporter.note is not None:  # cost notes from the workers
        notes = ctx.Queue()
        relay = _relay(notes, reporter.note)
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_start_worker,
        initargs=(os.getpid(), notes, reporter.above if reporter is not None else 0.0),
    )
    window: deque[Future[list[dict[str, Any]]]] = deque()
    try:
        for chunk in _chunks(pending(), size):
            with _sigint_blocked():  # a worker started here never sees SIGINT
                window.append(pool.submit(_score_chunk, chunk, plans))
            while len(window) >= 2 * workers:
                for rec in _result(window.popleft()):
                    yield finish(rec)
        while window:
            for rec in _result(window.popleft()):
                yield finish(rec)
        pool.shutdown(wait=True)
    except BaseException:  # an interrupt, an error, or the consumer stopped early (close())
        _stop(pool)
        raise
    finally:
        if notes is not None and relay is not None:
            notes.put(None)  # after the workers' lines: they flushed them when they exited
            relay.join(timeout=10)
            notes.close()


def _result(fut: Future[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A worker's records; a worker that died (killed by the system, e.g. out of memory, or by
    a signal) is said in one line, not as a broken pool."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        return fut.result()
    except BrokenProcessPool:
        raise DivmeterError(
            "a worker process of -j died before it finished its sets (killed by a signal, or "
            "by the system when memory ran out); what was written is kept: rerun with --resume, "
            "with fewer workers or a lower --max-memory.") from None


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread while inside: a worker process the pool starts here
    inherits the mask (through fork and exec), so Ctrl-C, which reaches the whole process
    group, never interrupts a worker while it starts up or while it holds the pool's queues;
    the parent still gets it (another of its threads takes it, or it waits until the end of
    the block)."""
    import signal

    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop the workers now and wait for nothing they were doing: the queued tasks are
    cancelled, the workers terminated (they ignore SIGINT: the parent owns the interrupt), and
    further interrupts are held off until the pool is down, so a second Ctrl-C during the
    teardown cannot leave a half-closed pool that the interpreter then waits on forever."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        # the queued tasks are cancelled by the pool's own manager thread (shutdown's flag), not
        # from here: a future cancelled here while that thread finds the pool broken is failed a
        # second time there, which on Python 3.11 kills the thread with InvalidStateError
        pool.shutdown(wait=False, cancel_futures=True)
        processes = dict(getattr(pool, "_processes", None) or {})
        for proc in processes.values():
            with contextlib.suppress(Exception):
                proc.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        for proc in processes.values():
            with contextlib.suppress(Exception):
                proc.join(timeout=5)
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


def _relay(notes: Any, note: Callable[[str], None]) -> Any:
    """A thread of the parent that passes the workers' cost notes to its reporter, in the order
    they come, until ``None``."""
    import threading

    def run() -> None:
        while True:
            try:
                line = notes.get()
            except Exception:  # a worker terminated while it wrote: nothing more to relay
                return
            if line is None:
                return
            with contextlib.suppress(Exception):
                note(line)

    thread = threading.Thread(target=run, name="divmeter-cost-notes", daemon=True)
    thread.start()
    return thread


#: In a worker process: where its cost notes go (the parent's queue) and from which rough time.
_NOTES: Any = None
_ABOVE = 0.0


def _start_worker(parent: int, notes: Any, above: float) -> None:
    """Worker initializer: watch the parent (:func:`_watch_parent`) and keep where the cost
    notes go (``notes``: ``None`` when the parent has no reporter)."""
    import signal

    global _NOTES, _ABOVE
    _NOTES, _ABOVE = notes, above
    # Ctrl-C reaches the whole process group: the parent stops the workers (terminate), and a
    # worker interrupted inside the pool's queues could leave them locked
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _watch_parent(parent)


def _score_chunk(chunk: list[tuple[int, ResponseSet]], plans: Sequence[Any]
                 ) -> list[dict[str, Any]]:
    """:func:`score_chunk` in a worker, its sets' cost notes sent to the parent as each set
    starts (the same lines, from the same threshold, as in one process)."""
    if _NOTES is None:
        return score_chunk(chunk, plans)
    from divmeter.core import memory

    with memory.reporting(_NOTES.put, above=_ABOVE):
        return score_chunk(chunk, plans)


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
