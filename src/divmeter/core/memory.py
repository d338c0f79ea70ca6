"""Memory limits and cost of pairwise and kernel metrics: estimate before the work, refuse in
one line, say what a large set will cost and report progress inside it.

A set of 50,000 responses needs a 50,000 x 50,000 similarity matrix (20 GB of float64) under a
metric that compares every pair. Such metrics estimate what they need before they start and
either run a bounded algorithm (``homogenization`` scores its pairs in row blocks,
``vendi-ngram`` merges duplicate responses and takes the smaller of its kernel and dual matrices,
or approximates when asked with ``approx="slq"`` or ``approx="nystroem"``) or stop with a
:class:`MemoryLimitError` that names the set, the estimate and the option that lifts the limit::

    set 'big' (row 0): vendi-ngram needs about 20.0 GB (a 50,000 x 50,000 kernel), above the
    memory limit of 4.0 GB; raise it with --max-memory (library: max_memory=...) or use
    vendi-ngram:approx=slq.

The limit is ``DEFAULT_MAX_MEMORY`` = 4 GiB unless set: ``divmeter score --max-memory 16G``,
``divmeter.score(..., max_memory="16G")`` or ``with memory_limit("16G"): ...``. Estimates count
the large arrays only (the matrices that grow as n^2), so they are lower bounds of the peak;
Python's own overhead and the inputs come on top.

**Each metric declares its own cost** next to its definition (issues 30 and 34):
``Metric.cost(n, items) -> Cost | None`` (``items``: the set's texts or vectors when known;
``None`` back: nothing large, no check; a function metric's ``register(..., cost=fn)`` with
``fn(n, params, items)``), which the engine checks and announces before the work
(:func:`plan`), so no metric is judged by another's formula: the linear geometry measures
(``geo-mean-std``, ``span-centroid``, ``convex-hull-volume``, ``binned-entropy``) declare
linear costs, the geometry measures that build ``n x n`` matrices their own multiple of
``8 n^2``, and the partition metrics (``distinct-k``, ``novelty-utility``,
``semantic-entropy``) their quadratic number of comparisons (with a note and progress, and the
comparisons kept in the result only with ``comparisons=true``). No table here is keyed by a
metric's name; :func:`pair_cost` is the cost of the metrics that build ``n x n`` matrices.

Estimates per metric (``n`` responses; ``d`` = 1,024 as a bound on an embedding's width):

* ``vendi-ngram`` (checked inside the metric, after its linear-size feature matrix is built):
  up to 2,000 responses ``3 * 8 m^2`` with ``m = min(n, D)`` (``D`` distinct n-grams); above,
  ``8 m^2`` with ``m`` the smaller of the number of distinct responses and the number of
  distinct n-grams once the n-grams of a single response are merged; ``approx="slq"``:
  ``32 n P`` (``P`` probes); ``approx="nystroem"``: ``32 k^2`` plus two blocks.
* the embedding metrics (their own ``cost``, :mod:`divmeter.metrics.embedding`):
  ``vendi-embedding`` ``8 n d`` (embeddings) + ``8 min(n, d)^2`` (kernel or dual);
  ``embedding-cosine``, ``chamfer``, ``chamfer-sqeuclidean``, ``remote-clique`` ``3 * 8 n^2``
  (the distance or similarity matrix and two temporaries); ``bertscore`` ``4 * 8 n^2``;
  ``kmeans-inertia`` ``8 n (d + k)`` (linear); the geometry measures that build ``n x n``
  distance or kernel matrices (``sum-pairwise-distance``, ``diameter``, ``energy``,
  ``dcscore``, ...) ``4 * 8 n^2`` (:mod:`divmeter.metrics.geometry`).
* ``ngram-cosine`` (its own ``cost``, :mod:`divmeter.metrics.ngram`): ``3 * 8 n^2`` (one
  Gram matrix per order, its dense copy and the sum).
* ``homogenization`` (checked inside, after tokenizing, before any pair): up to 1,000
  responses ``6 * 8 n^2``; above, row blocks: ``6 *`` :data:`BLOCK_BYTES` plus its n-gram
  level matrices (``rougeL``: one row of ``n`` pairs at a time).

self-BLEU is not among them: it needs each n-gram's top two counts, not the pairs.

**Cost and progress** (issue 27). Each of these metrics also builds a :class:`Cost` of the set
before the work (responses, pairs or matrix entries, the memory above and a rough time from the
per-unit times below, measured on the project's machine) and tells the reporter in force
(:func:`reporting`, installed by ``divmeter score``) when the rough time reaches
:data:`ANNOUNCE_SECONDS`: one line such as ``set 'big' (row 0): homogenization (rougeL) on
20,000 responses: 199,990,000 pairs, about 1.2 MB (one row of pairs at a time), roughly 18.7
min; cheaper: use homogenization:measure=rouge1 or rouge2 ...``. Inside such a set the metric
reports its progress through :class:`Steps` (homogenization: pairs after each row or block;
vendi-ngram: Gram rows after each block, then the eigenvalue stage). Reporting reads counters
only: the arithmetic, the blocks and every value are the same with or without a reporter.
With worker processes (``score_sets(..., workers=N)``, ``divmeter score -j N``) each worker
announces with the parent's reporter's threshold and sends the line to the parent, which passes
it to its reporter as the set starts: the same line as in one process; progress inside a set is
not shown there. The Ray engine (``--engine ray``) reports neither.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from divmeter.core.errors import DivmeterError, InvalidInputError

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "BLOCK_BYTES",
    "MemoryLimitError",
    "parse_memory",
    "format_bytes",
    "memory_limit",
    "current_limit",
    "check",
    "pair_cost",
    "Cost",
    "Steps",
    "announce",
    "progress",
    "plan",
    "reporting",
    "current_reporter",
    "working_on",
    "format_seconds",
]

#: The default limit: 4 GiB, enough for an exact n-gram Vendi score of about 20,000 distinct
#: responses and small enough for a laptop. ``--max-memory`` / ``max_memory`` change it.
DEFAULT_MAX_MEMORY = 4 * 2**30

#: Size of one block of a blocked pairwise computation (rows x n float64 entries).
BLOCK_BYTES = 32 * 2**20

#: A bound on an embedding's width, for estimates made before the vectors exist.
EMBED_DIM = _EMBED_DIM = 1024

_LIMIT: ContextVar[int | None] = ContextVar("divmeter_max_memory", default=None)

_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


class MemoryLimitError(DivmeterError, MemoryError):
    """A metric would need more memory than the limit allows (see :mod:`divmeter.core.memory`).

    Attributes:
        needed: The estimate in bytes.
        limit: The limit in bytes.
    """

    def __init__(self, message: str, needed: int = 0, limit: int = 0) -> None:
        super().__init__(message)
        self.needed = needed
        self.limit = limit


def parse_memory(value: Any) -> int:
    """A memory size in bytes from an integer or a string such as ``"512M"``, ``"4G"``,
    ``"1.5GB"`` (binary units: K = 1024).

    Raises:
        InvalidInputError: For anything else or a size below 1 byte.

    Example:
        >>> parse_memory("4G"), parse_memory(1000), parse_memory("1.5kb")
        (4294967296, 1000, 1536)
    """
    if isinstance(value, bool):
        raise InvalidInputError(
            f"max_memory must be a size such as 4G, 512M or a number of bytes; got {value!r}."
        )
    if isinstance(value, int | float) and math.isfinite(value) and value >= 1:
        return int(value)
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([kmgt]?)(?:i?b)?\s*", value.lower())
        if m and float(m.group(1)) * _UNITS[m.group(2)] >= 1:
            return int(float(m.group(1)) * _UNITS[m.group(2)])
    raise InvalidInputError(
        f"max_memory must be a size such as 4G, 512M or a number of bytes; got {value!r}."
    )


def format_bytes(n: float) -> str:
    """``"20.0 GB"``-style size (binary units, one decimal).

    Example:
        >>> format_bytes(2**30 * 20), format_bytes(1536 * 2**20), format_bytes(300)
        ('20.0 GB', '1.5 GB', '300 B')
    """
    for unit, size in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


#: Environment variable read when no limit is set in this context; ``divmeter score
#: --max-memory`` sets it, so worker processes (``-j``) inherit the limit.
ENV = "DIVMETER_MAX_MEMORY"


def current_limit() -> int:
    """The memory limit in force (bytes): the innermost :func:`memory_limit`, else
    ``$DIVMETER_MAX_MEMORY``, else :data:`DEFAULT_MAX_MEMORY`."""
    limit = _LIMIT.get()
    if limit is not None:
        return limit
    env = os.environ.get(ENV)
    if not env:
        return DEFAULT_MAX_MEMORY
    try:
        return parse_memory(env)
    except InvalidInputError:
        raise InvalidInputError(
            f"${ENV} must be a size such as 4G, 512M or a number of bytes; got {env!r}. Set "
            f"it right or unset it (default {format_bytes(DEFAULT_MAX_MEMORY)}).") from None


@contextlib.contextmanager
def memory_limit(value: Any) -> Iterator[int]:
    """Set the memory limit for the code inside the ``with`` block (``None`` keeps it).

    Example:
        >>> with memory_limit("1G") as limit:
        ...     current_limit() == limit == 2**30
        True
    """
    limit = current_limit() if value is None else parse_memory(value)
    token = _LIMIT.set(limit)
    try:
        yield limit
    finally:
        _LIMIT.reset(token)


def check(metric: str, needed: int, what: str, *, hint: str = "") -> None:
    """Raise :class:`MemoryLimitError` when ``needed`` bytes exceed the limit in force.

    The message names the metric, the estimate and the options; the batch runner prefixes
    the set (``set 'big' (row 0): ...``).

    Example:
        >>> with memory_limit("1M"):
        ...     check("chamfer", 8 * 10**8, "a 10,000 x 10,000 distance matrix")
        Traceback (most recent call last):
        ...
        divmeter.core.memory.MemoryLimitError: chamfer needs about 762.9 MB (a 10,000 x 10,000 \
distance matrix), above the memory limit of 1.0 MB; raise it with --max-memory (library: \
max_memory=...).
    """
    limit = current_limit()
    if needed <= limit:
        return
    raise MemoryLimitError(
        f"{metric} needs about {format_bytes(needed)} ({what}), above the memory limit of "
        f"{format_bytes(limit)}; raise it with --max-memory (library: max_memory=...)"
        + (f" or {hint}" if hint else "") + ".",
        needed,
        limit,
    )


def for_set(exc: MemoryLimitError, label: str) -> MemoryLimitError:
    """The same error with the set named first: ``set 'big' (row 0): vendi-ngram needs ...``."""
    return MemoryLimitError(f"{label}: {exc}", exc.needed, exc.limit)


# --------------------------------------------------------------------------------------------
# Cost of one set before the work, and progress inside it (issue 27)
#
# A metric that compares every pair of a set, or decomposes its n x n kernel, says what one set
# will cost before it starts (:class:`Cost`: responses, pairs, the memory of its large arrays,
# a rough time, and how to make it cheaper) and reports its progress over pair blocks or Gram
# rows (:class:`Steps`). Both go to the reporter in force (:func:`reporting`), which the command
# line installs (a line on stderr, a bar or a plain line every 10 s); with none, nothing is
# reported and the numbers are the same.

#: Announce the cost of a set whose rough time is at least this many seconds.
ANNOUNCE_SECONDS = 10.0

#: Rough single-core costs measured on the project's 2-core machine (``benchmarks/bench_cost.py``
#: checks the estimates against measured times; ``benchmarks/results_speed.md``; the metrics'
#: own per-unit costs live with them, e.g. ``HOMOGENIZATION_PAIR_SECONDS`` in
#: :mod:`divmeter.metrics.overlap`, ``GRAM_ENTRY_SECONDS`` in :mod:`divmeter.metrics.vendi`).
#: Dense pair matrices of vectors (cosine, distances): seconds per entry.
MATRIX_ENTRY_SECONDS = 2e-8
#: BERTScore on the CPU: seconds per ordered pair, plus per multiply-add of its token matrices.
BERTSCORE_PAIR_SECONDS = 5e-6
FLOP_SECONDS = 4e-10

_LABEL: ContextVar[str] = ContextVar("divmeter_set_label", default="")


def format_seconds(s: float) -> str:
    """``"40 s"``, ``"3.5 min"``, ``"2.1 h"`` (rough times).

    Example:
        >>> format_seconds(0.2), format_seconds(40.4), format_seconds(210), format_seconds(7560)
        ('< 1 s', '40 s', '3.5 min', '2.1 h')
    """
    if s < 1:
        return "< 1 s"
    if s < 100:
        return f"{s:.0f} s"
    if s < 6000:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


@dataclass(frozen=True)
class Cost:
    """What one set will cost a metric, estimated before the work.

    Attributes:
        metric: The metric (with its variant, e.g. ``homogenization (rougeL)``).
        n: Responses in the set.
        needed: Bytes of the large arrays (checked against the memory limit).
        what: What they are (``"a 20,000 x 20,000 kernel matrix"``).
        pairs: Pairs compared, or entries of the matrix built.
        seconds: Rough time on one core.
        cheaper: How to make it cheaper (an approximate variant, a cheaper setting).
        hint: The options a refusal above the memory limit names beside ``--max-memory``
            (empty: none).
    """

    metric: str
    n: int
    needed: int
    what: str
    pairs: int
    seconds: float
    cheaper: str = ""
    hint: str = ""

    def note(self) -> str:
        """The one line announcing the cost.

        Example:
            >>> Cost("homogenization (rougeL)", 20000, 2**27, "pair blocks", 199990000, 512.0,
            ...      "measure=rouge1").note()
            'homogenization (rougeL) on 20,000 responses: 199,990,000 pairs, about 128.0 MB \
(pair blocks), roughly 8.5 min; cheaper: measure=rouge1'
        """
        line = (f"{self.metric} on {self.n:,} responses: {self.pairs:,} pairs, about "
                f"{format_bytes(self.needed)} ({self.what}), roughly "
                f"{format_seconds(self.seconds)}")
        return line + (f"; cheaper: {self.cheaper}" if self.cheaper else "")


def pair_cost(name: str, n: int, squares: int, what: str) -> Cost:
    """What a metric that builds ``squares`` ``n x n`` float64 matrices costs on a set of ``n``:
    their memory, the pairs and a rough time (an encoder's time comes on top).

    Example:
        >>> pair_cost("chamfer", 1000, 3, "distance").what
        '3 x a 1,000 x 1,000 distance matrix'
    """
    return Cost(name, n, squares * 8 * n * n, f"{squares} x a {n:,} x {n:,} {what} matrix",
                n * (n - 1) // 2, 3 * n * n * MATRIX_ENTRY_SECONDS,
                "score a random sample of the responses")


@dataclass(frozen=True)
class Reporter:
    """Where costs and progress go (see :func:`reporting`)."""

    note: Callable[[str], None] | None = None
    progress: Callable[[str, int, int | None], None] | None = None
    above: float = ANNOUNCE_SECONDS
    every: float = 0.2


_REPORTER: ContextVar[Reporter | None] = ContextVar("divmeter_reporter", default=None)


@contextlib.contextmanager
def reporting(note: Callable[[str], None] | None = None,
              progress: Callable[[str, int, int | None], None] | None = None, *,
              above: float | None = None, every: float = 0.2) -> Iterator[Reporter]:
    """Report the cost of large sets and the progress inside them, in the ``with`` block.

    Args:
        note: Called with one line (:meth:`Cost.note`, the set named first) before the work on
            a set whose rough time is at least ``above`` seconds.
        progress: Called as ``progress(label, done, total)`` while such a set is worked on
            (``label`` names the set, the metric and the stage; ``total`` ``None``: a stage
            with no count, such as an eigenvalue solver), at most every ``every`` seconds and
            at the end of each stage.
        above: The rough time (seconds) from which a set is announced and its progress shown
            (default :data:`ANNOUNCE_SECONDS`, read when the block starts).
        every: Seconds between two progress reports of one stage (0: every step).

    Example:
        >>> lines = []
        >>> with reporting(lines.append, above=0):
        ...     with working_on("set 'a' (row 0)"):
        ...         steps = announce(Cost("m", 3, 72, "a 3 x 3 matrix", 3, 0.5))
        >>> lines
        ["set 'a' (row 0): m on 3 responses: 3 pairs, about 72 B (a 3 x 3 matrix), roughly < 1 s"]
    """
    token = _REPORTER.set(Reporter(note, progress, ANNOUNCE_SECONDS if above is None else above,
                                   every))
    try:
        yield _REPORTER.get()  # type: ignore[misc]
    finally:
        _REPORTER.reset(token)


def current_reporter() -> Reporter | None:
    """The reporter in force (:func:`reporting`), or ``None``; the process pool (``-j``) relays
    its workers' notes to it."""
    return _REPORTER.get()


_GC_LOCK = threading.Lock()
_gc_pauses = 0  # blocks inside collector_paused() that found the collector running


@contextlib.contextmanager
def collector_paused(active: bool = True) -> Iterator[None]:
    """Python's cyclic garbage collector paused inside the block (where ``active``), and
    running again after the last such block ends (left as it was where it was off already).
    Scoring a batch makes many small containers (tuples of texts, results and their details)
    that form no cycle, and the collector's passes over everything alive cost about a tenth of
    the time of a large batch of cheap metrics; reference counting frees them as before."""
    global _gc_pauses
    with _GC_LOCK:
        mine = active and (gc.isenabled() or _gc_pauses > 0)
        if mine:
            _gc_pauses += 1
            gc.disable()
    try:
        yield
    finally:
        if mine:
            with _GC_LOCK:
                _gc_pauses -= 1
                if _gc_pauses == 0:
                    gc.enable()


@contextlib.contextmanager
def working_on(label: str) -> Iterator[None]:
    """Name the set being scored (``set 'big' (row 1)``) in the notes and progress of the
    metrics run inside the block."""
    token = _LABEL.set(label)
    try:
        yield
    finally:
        _LABEL.reset(token)


class Steps:
    """Progress of one set's work, in stages (pair blocks, Gram rows, the eigenvalue solver).

    Calls are cheap when no reporter listens (:data:`NO_STEPS`); the metric's arithmetic does
    not depend on them.
    """

    def __init__(self, label: str, report: Callable[[str, int, int | None], None] | None,
                 every: float = 0.2) -> None:
        self.label, self.report, self.every = label, report, every
        self.stage_name, self.last = "", -math.inf
        self.total: int | None = None

    def stage(self, name: str, total: int | None = None) -> None:
        """Start a stage of ``total`` steps (``None``: no count)."""
        self.stage_name, self.total, self.last = name, total, -math.inf
        self(0)

    def __call__(self, done: int) -> None:
        """``done`` steps of the current stage are done."""
        if self.report is None:
            return
        now = time.monotonic()
        if now - self.last < self.every and done != self.total:
            return
        self.last = now
        self.report(f"{self.label}: {self.stage_name}" if self.stage_name else self.label,
                    done, self.total)


NO_STEPS = Steps("", None)


def announce(cost: Cost, *, note: bool = True) -> Steps:
    """Before the work on a set: announce its cost to the reporter in force when the rough time
    reaches its threshold, and return the :class:`Steps` that report the set's progress
    (:data:`NO_STEPS` when nobody listens or the set is quick). A cost with no time (a memory
    bound only: a metric linear in its set) is never announced."""
    rep = _REPORTER.get()
    if rep is None or cost.seconds < rep.above or cost.seconds <= 0:
        return NO_STEPS
    label = _LABEL.get()
    if note and rep.note is not None:
        rep.note(f"{label}: {cost.note()}" if label else cost.note())
    return progress(cost)


def progress(cost: Cost) -> Steps:
    """The :class:`Steps` that report the progress inside a set of this cost, without the note
    (a metric's formula asks for them once the engine has announced the set:
    :func:`divmeter.engine.batch.evaluate`); :data:`NO_STEPS` when nobody listens or the set
    is below the reporter's threshold."""
    rep = _REPORTER.get()
    if rep is None or rep.progress is None or cost.seconds < rep.above:
        return NO_STEPS
    label = _LABEL.get()
    return Steps(f"{label}: {cost.metric}" if label else cost.metric, rep.progress, rep.every)


def plan(cost: Cost) -> Steps:
    """:func:`check` the cost's memory against the limit (a refusal names ``cost.hint``), then
    :func:`announce` it: what the engine does before a set's work."""
    check(cost.metric.split(" ")[0], cost.needed, cost.what, hint=cost.hint)
    return announce(cost)
