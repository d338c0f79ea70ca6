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
  (``empty set`` / ``fewer than two vectors (got k)``);
* vectors of any magnitude (issue 34): a set whose largest entry lies outside
  ``2^-64 .. 2^64`` (squares and Gram products of 1e+-154 leave float64) is scored at a
  power-of-two scale where it is safe (:func:`at_safe_scale`, exact), and the value is brought
  back by the metric's degree of homogeneity, found from the kernel itself (the value at twice
  the scale): a scale-free metric (cosines, a grid's occupancy) gives the value of the
  unscaled vectors, a distance of degree ``k`` its value times ``2^(k e)``; a value outside
  float64, or a metric that is not homogeneous in the scale, is null with the reason. Vectors
  in the safe range are scored as they are (their numbers do not move).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from divmeter.core import memory
from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetricResult
from divmeter.engine.definition import Metric
from divmeter.inputs.data.vectors import as_vectors, is_vector_input

__all__ = ["vector_inputs", "vector_outcomes", "at_safe_scale", "SAFE_EXPONENT"]

#: Vectors whose largest entry is below ``2^-SAFE_EXPONENT`` or at least ``2^SAFE_EXPONENT``
#: are scored at a power-of-two scale (:func:`at_safe_scale`).
SAFE_EXPONENT = 64

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
            out[i] = metric.null(why, vectors=True)
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
                    label = set_name(i)
                    try:
                        memory.check(metric.name, cost.needed, cost.what, hint=cost.hint)
                    except memory.MemoryLimitError as exc:
                        raise (memory.for_set(exc, label) if label else exc) from None
            if costs[n] is not None:
                with memory.working_on(set_name(i)):
                    memory.announce(costs[n])
            live.append(i)
    scales = {i: _exponent(vectors[i]) for i in live}  # type: ignore[arg-type]
    plain = [i for i in live if scales[i] == 0]
    if plain:
        try:
            conflict = metric.encoder_conflict()
            if conflict is not None:
                raise conflict
            results: list[Outcome] = list(metric.vectors([vectors[i] for i in plain]))
        except InvalidInputError as exc:
            results = [exc] * len(plain)
        for i, r in zip(plain, results, strict=True):
            out[i] = r
    for i in live:
        if scales[i]:
            out[i] = at_safe_scale(metric, vectors[i], scales[i])  # type: ignore[arg-type]
    return out  # type: ignore[return-value]


def _exponent(X: np.ndarray) -> int:
    """``e`` with ``max |x|`` in ``[2^(e-1), 2^e)`` when that lies outside the safe range, else
    0 (and 0 for a set with no finite non-zero entry, or with NaN or an infinity: the kernel
    names those)."""
    with np.errstate(invalid="ignore"):
        top = float(np.max(np.abs(X))) if X.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return 0
    e = int(np.frexp(top)[1])
    return e if e > SAFE_EXPONENT or e < -SAFE_EXPONENT else 0


def at_safe_scale(metric: Metric, X: np.ndarray, e: int) -> Outcome:
    """Score vectors of extreme magnitude: the kernel on ``X 2^-e`` (exact, largest entry in
    ``[0.5, 1)``) and on twice that; from the two values the metric's degree ``k`` in the
    scale (0: scale-free; 1: distances; 2: squared distances...), and the value at the real
    scale, ``value 2^(k e)``. A value outside float64 (or below its normal range), or a metric
    whose value is not a power of the scale, is null with the reason.

    Example:
        >>> from divmeter.engine.registry import get_metric
        >>> X = np.array([[3.0, 4.0], [0.0, 0.0], [6.0, 8.0]]) * 2.0**300
        >>> at_safe_scale(get_metric("diameter").plan({"distance": "euclidean"}), X, 304).value
        2.037035976334486e+91
    """
    import math

    base = np.ldexp(X, -e)
    try:
        first, second = (metric.vectors([Y])[0] for Y in (base, 2.0 * base))
    except InvalidInputError as exc:
        return exc
    if not isinstance(first, MetricResult) or first.value is None:
        return first
    v1 = float(first.value)
    v2 = float(second.value) if isinstance(second, MetricResult) and second.value is not None \
        else math.nan
    where = (f"the vectors' largest entry is about 2^{e} (1e{e * math.log10(2):+.0f})")
    if v1 == v2 or math.isclose(v1, v2, rel_tol=1e-9, abs_tol=0.0):
        return first  # scale-free: the value of the vectors at any scale
    ratio = v2 / v1 if v1 != 0 and math.isfinite(v2) else math.nan
    k = round(math.log2(ratio)) if ratio > 0 else 0
    if not (ratio > 0 and 1 <= k <= 16 and abs(math.log2(ratio) - k) < 1e-6):
        return MetricResult(first.metric, None, first.signature, reason=(
            f"{where}, beyond what float64 holds in this metric's products, and its value does "
            "not scale as a power of them; rescale the vectors (e.g. divide by their largest "
            "entry)"))
    try:
        value = math.ldexp(v1, k * e)
    except OverflowError:
        value = math.inf
    if not math.isfinite(value) or abs(value) < 2.2250738585072014e-308:
        return MetricResult(first.metric, None, first.signature, reason=(
            f"{where}; the value (about 2^{k * e + math.frexp(v1)[1]}) is outside float64's "
            "range; rescale the vectors (e.g. divide by their largest entry)"))
    return MetricResult(first.metric, value, first.signature, reason=first.reason,
                        details={**first.details, "scaled_by": f"2^{-e}"})


def _text_rule(texts: Any) -> str | None:
    """The one rule for degenerate sets on a set that has texts beside its vectors (fewer than
    two non-blank responses: null, as for the text path); ``None`` for vectors alone."""
    if not isinstance(texts, (list, tuple)) or not texts or is_vector_input(texts):
        return None
    if not all(isinstance(t, str) for t in texts):
        return None
    k = sum(1 for t in texts if t and not t.isspace())
    return None if k >= 2 else f"fewer than two non-blank responses (got {k})"
