"""Memory limits of pairwise and kernel metrics: estimate before the work, refuse in one line.

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

Estimates per metric (``n`` responses; ``d`` = 1,024 as a bound on an embedding's width):

* ``vendi-ngram`` (checked inside the metric, after its linear-size feature matrix is built):
  up to 2,000 responses ``3 * 8 m^2`` with ``m = min(n, D)`` (``D`` distinct n-grams); above,
  ``8 m^2`` with ``m`` the smaller of the number of distinct responses and the number of
  distinct n-grams once the n-grams of a single response are merged; ``approx="slq"``:
  ``32 n P`` (``P`` probes); ``approx="nystroem"``: ``32 k^2`` plus two blocks.
* ``vendi-embedding``: ``8 n d`` (embeddings) + ``8 min(n, d)^2`` (kernel or dual).
* ``embedding-cosine``, ``chamfer``, ``chamfer-sqeuclidean``, ``remote-clique``: ``3 * 8 n^2``
  (the distance or similarity matrix and two temporaries).
* ``bertscore``: ``4 * 8 n^2``.
* ``ngram-cosine``: ``3 * 8 n^2`` (one Gram matrix per order, its dense copy and the sum).
* ``kmeans-inertia``: ``8 n (d + k)``: linear, listed for completeness.
* ``homogenization``: bounded (blocks of at most :data:`BLOCK_BYTES` per temporary), so no
  refusal.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from divmeter.errors import DivmeterError, InvalidInputError

__all__ = [
    "DEFAULT_MAX_MEMORY",
    "BLOCK_BYTES",
    "MemoryLimitError",
    "parse_memory",
    "format_bytes",
    "memory_limit",
    "current_limit",
    "check",
    "estimate",
]

#: The default limit: 4 GiB, enough for an exact n-gram Vendi score of about 20,000 distinct
#: responses and small enough for a laptop. ``--max-memory`` / ``max_memory`` change it.
DEFAULT_MAX_MEMORY = 4 * 2**30

#: Size of one block of a blocked pairwise computation (rows x n float64 entries).
BLOCK_BYTES = 32 * 2**20

_EMBED_DIM = 1024

_LIMIT: ContextVar[int | None] = ContextVar("divmeter_max_memory", default=None)

_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


class MemoryLimitError(DivmeterError, MemoryError):
    """A metric would need more memory than the limit allows (see :mod:`divmeter.memory`).

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
    return parse_memory(env) if env else DEFAULT_MAX_MEMORY


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


def _square(factor: int, what: str) -> Callable[[int, Mapping[str, Any]], tuple[int, str]]:
    def est(n: int, params: Mapping[str, Any]) -> tuple[int, str]:
        return factor * 8 * n * n, f"{factor} x a {n:,} x {n:,} {what} matrix"

    return est


def _vendi_embedding(n: int, params: Mapping[str, Any]) -> tuple[int, str]:
    m = min(n, _EMBED_DIM)
    return 8 * n * _EMBED_DIM + 8 * m * m, f"{n:,} embeddings and a {m:,} x {m:,} kernel"


def _kmeans(n: int, params: Mapping[str, Any]) -> tuple[int, str]:
    k = int(params.get("k", 2))
    return 8 * n * (_EMBED_DIM + k), f"{n:,} embeddings and {n:,} x {k} distances"


#: Estimators run before a metric starts: ``(n responses, params) -> (bytes, what)``.
#: (``vendi-ngram`` checks inside, where its exact matrix size is known; ``homogenization`` is
#: blocked.)
ESTIMATORS: dict[str, Callable[[int, Mapping[str, Any]], tuple[int, str]]] = {
    "embedding-cosine": _square(3, "similarity"),
    "chamfer": _square(3, "distance"),
    "chamfer-sqeuclidean": _square(3, "distance"),
    "remote-clique": _square(3, "distance"),
    "bertscore": _square(4, "pair-score"),
    "ngram-cosine": _square(3, "Gram"),
    "vendi-embedding": _vendi_embedding,
    "kmeans-inertia": _kmeans,
}


def estimate(metric: str, n: int, params: Mapping[str, Any] | None = None
             ) -> tuple[int, str] | None:
    """Bytes a metric's large arrays need for a set of ``n`` responses, and what they are;
    ``None`` for a metric with no pre-check (linear, blocked, or checked inside).

    Example:
        >>> estimate("chamfer", 1000)
        (24000000, '3 x a 1,000 x 1,000 distance matrix')
        >>> estimate("distinct-n", 10**6) is None
        True
    """
    est = ESTIMATORS.get(metric)
    return None if est is None else est(n, params or {})


def check(metric: str, needed: int, what: str, *, hint: str = "") -> None:
    """Raise :class:`MemoryLimitError` when ``needed`` bytes exceed the limit in force.

    The message names the metric, the estimate and the options; the batch runner prefixes
    the set (``set 'big' (row 0): ...``).

    Example:
        >>> with memory_limit("1M"):
        ...     check("chamfer", 8 * 10**8, "a 10,000 x 10,000 distance matrix")
        Traceback (most recent call last):
        ...
        divmeter.memory.MemoryLimitError: chamfer needs about 762.9 MB (a 10,000 x 10,000 \
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


def precheck(metric: str, responses: Any, params: Mapping[str, Any], name: str = "") -> None:
    """The pre-check of :data:`ESTIMATORS` for one set (before the metric starts); ``name``
    names the set in the error."""
    est = ESTIMATORS.get(metric)
    if est is None or not hasattr(responses, "__len__"):
        return
    needed, what = est(len(responses), params)
    try:
        check(metric, needed, what)
    except MemoryLimitError as exc:
        raise (for_set(exc, name) if name else exc) from None


def for_set(exc: MemoryLimitError, label: str) -> MemoryLimitError:
    """The same error with the set named first: ``set 'big' (row 0): vendi-ngram needs ...``."""
    return MemoryLimitError(f"{label}: {exc}", exc.needed, exc.limit)
