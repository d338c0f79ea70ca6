"""Scoring precomputed vectors: the runner's hook for metrics that take vectors.

:func:`divmeter.engine.batch.evaluate` (so :func:`divmeter.score`, :func:`divmeter.score_many` and
``divmeter score``) asks :func:`vector_outcomes` first, per metric: when the sets come as
precomputed embeddings (arrays in Python, a ``.npy`` file or ``--vectors`` on the command line,
:mod:`divmeter.inputs.data.vectors`) and the metric has a vector kernel
(its definition's :meth:`~divmeter.engine.definition.Metric.vectors`), that formula scores them and
no encoder runs; otherwise the usual text path does. The rules:

* a metric that takes vectors scores the vectors of every set (a set with texts *and* vectors,
  from ``--vectors``, is scored on its vectors); one call either gives vectors for every set or
  for none;
* a metric that scores texts gives each set that holds only vectors a null with the reason;
* the one rule for degenerate sets: a set with texts beside its vectors is null below two
  non-blank responses, as on the text path; vectors alone are null below two vectors
  (``empty set`` / ``fewer than two vectors (got k)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from divmeter.core import memory
from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetricResult
from divmeter.engine.definition import Metric
from divmeter.inputs.data.vectors import as_vectors, is_vector_input

__all__ = ["vector_inputs", "vector_outcomes"]

Outcome = MetricResult | InvalidInputError
VectorIn = np.ndarray | InvalidInputError | None


def vector_inputs(inputs: Sequence[Any], vectors: Sequence[Any] | None, what: str | None
                  ) -> list[VectorIn] | None:
    """Each set's vectors (checked arrays, an error for a malformed one, ``None`` for a set of
    texts), or ``None`` when no set has vectors.

    ``vectors`` are the sets' own (read from files, already checked); without them, sets given
    as arrays (``divmeter.score(X, ...)``) are read from ``inputs``, checked for shape and type
    here and for NaN and infinities by the vector kernels (which find them in the squared norms
    they compute anyway).

    Example:
        >>> vector_inputs([["a", "b"]], None, None) is None
        True
        >>> [v.shape for v in vector_inputs([np.eye(3)], None, None)]
        [(3, 3)]
    """
    if vectors is not None:
        return [None if v is None else v for v in vectors]
    out: list[VectorIn] = []
    for i, s in enumerate(inputs):
        if not is_vector_input(s):
            out.append(None)
            continue
        try:
            out.append(as_vectors(s, what=f"{what}[{i}]" if what else "vectors",
                                  check_finite=False))
        except InvalidInputError as exc:
            out.append(exc)
    return out if any(v is not None for v in out) else None


def _texts_missing(x: Any) -> bool:
    return is_vector_input(x) or (isinstance(x, (list, tuple)) and not x)


def vector_outcomes(metric: Metric, inputs: Sequence[Any], vectors: Sequence[VectorIn],
                    set_name: Callable[[int], str]) -> list[Outcome] | None:
    """The outcomes of ``metric`` on sets with vectors, or ``None`` when the usual text path
    scores them (the metric scores texts and the sets have texts).

    Raises:
        MemoryLimitError: A set above the memory limit (named by ``set_name``).
    """
    has = [v is not None for v in vectors]
    if not metric.takes_vectors():
        only = [h and _texts_missing(inputs[i]) for i, h in enumerate(has)]
        if not all(only):
            return None
        return [InvalidInputError(
            f"{metric.name} scores texts; this set holds precomputed vectors only (metrics "
            "that take vectors: the embedding and geometry metrics, divmeter list --family "
            "content).") for _ in inputs]
    out: list[Outcome | None] = [None] * len(inputs)
    live: list[int] = []
    costs: dict[int, Any] = {}  # set size -> its cost (checked against the memory limit)
    for i, v in enumerate(vectors):
        why = _text_rule(inputs[i])
        if why is not None and isinstance(v, np.ndarray):
            out[i] = replace(metric.null(why), signature=metric.vector_signature())
        elif v is None:
            out[i] = InvalidInputError(
                f"this call scores precomputed vectors (other sets are arrays); {set_name(i)} "
                "holds texts: score texts and vectors in separate calls."
            )
        elif isinstance(v, InvalidInputError):
            out[i] = v
        else:
            n = v.shape[0]
            if n not in costs:
                cost = costs[n] = metric.cost(n)
                if cost is not None:
                    try:
                        memory.check(metric.name, cost.needed, cost.what)
                    except memory.MemoryLimitError as exc:
                        label = set_name(i)
                        raise (memory.for_set(exc, label) if label else exc) from None
            if costs[n] is not None:
                with memory.working_on(set_name(i)):
                    memory.announce(costs[n])
            live.append(i)
    if live:
        try:
            conflict = metric.encoder_conflict()
            if conflict is not None:
                raise conflict
            results: list[Outcome] = list(metric.vectors([vectors[i] for i in live]))
        except InvalidInputError as exc:
            results = [exc] * len(live)
        for i, r in zip(live, results, strict=True):
            out[i] = r
    return out  # type: ignore[return-value]


def _text_rule(texts: Any) -> str | None:
    """The one rule for degenerate sets on a set that has texts beside its vectors (fewer than
    two non-blank responses: null, as for the text path); ``None`` for vectors alone."""
    if not isinstance(texts, (list, tuple)) or not texts or is_vector_input(texts):
        return None
    if not all(isinstance(t, str) for t in texts):
        return None
    k = sum(1 for t in texts if t and not t.isspace())
    return None if k >= 2 else f"fewer than two non-blank responses (got {k})"
