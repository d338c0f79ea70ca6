"""Thin adapters from response sets and score records to the arrays meta-evaluation needs.

Files are read by :mod:`divmeter.data.tables` (:func:`load_table` -> :class:`MetaTable`,
:func:`read_pairs` -> :class:`Pairs`; re-exported here, their former home); metrics are computed
by :func:`divmeter.batch.score_sets`. This module only lines the numbers up:

* :func:`resolve_scores` -> one float array per requested metric or column, with the policy for
  empty sets applied and echoed (``empty``: ``drop`` / ``zero`` / ``error``).
* :func:`metric_results` -> one registry metric's results on a list of sets, as
  :func:`divmeter.score` gives them (for the protocols that compute a metric themselves).

Rows keep their file order; duplicate set ids are kept (Tevet's conTest pairs two sets per
``sample_id``), the row position is the key.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from divmeter.data.model import ResponseSet
from divmeter.data.tables import MetaTable, Pairs, label_array, load_table, read_pairs
from divmeter.data.tables import as_float as _float
from divmeter.errors import InvalidInputError
from divmeter.result import MetricResult

__all__ = [
    "MetaTable",
    "load_table",
    "resolve_scores",
    "metric_results",
    "EMPTY_POLICIES",
    "is_empty_set",
    "Pairs",
    "read_pairs",
    "label_array",
]

EMPTY_POLICIES = ("drop", "zero", "error")


def is_empty_set(s: ResponseSet) -> bool:
    """A set with no responses, or whose responses are all empty/whitespace."""
    return not any(r.strip() for r in s.responses)


def metric_results(sets: Sequence[Sequence[str]], metric: str, **params: Any
                   ) -> list[MetricResult]:
    """The registry metric ``metric`` with ``params`` on each set, exactly as
    :func:`divmeter.score` gives it (the batch core: the rule for degenerate sets, then the
    metric).

    Raises:
        InvalidInputError: For bad parameters, or the first set the metric refuses.

    Example:
        >>> [r.value for r in metric_results([["a b", "a c"], ["x"]], "distinct-n", n=1)]
        [0.75, None]
    """
    from divmeter.batch import evaluate, resolve_metrics

    out: list[MetricResult] = []
    for res in evaluate([list(s) for s in sets], resolve_metrics([(metric, params)]))[0]:
        if isinstance(res, InvalidInputError):
            raise res
        out.append(res)
    return out


@dataclass
class ResolvedScores:
    """Score arrays ready for a protocol, with the row mask and the empty-set bookkeeping."""

    scores: dict[str, np.ndarray]
    keep: np.ndarray
    empty: str
    n_empty: int
    signatures: dict[str, str]

    @property
    def info(self) -> dict[str, Any]:
        return {"empty": self.empty, "n_empty": self.n_empty}


def resolve_scores(
    table: MetaTable,
    *,
    metrics: Sequence[str] = (),
    columns: Sequence[str] = (),
    empty: str = "drop",
    workers: int = 1,
    progress: Any = None,
) -> ResolvedScores:
    """One float array per requested metric (computed) or column (precomputed), aligned to rows.

    Args:
        table: From :func:`load_table`.
        metrics: Registry metrics, ``"name[:k=v,...]"``; keyed by their output column name
            (:func:`divmeter.registry.column_name`, e.g. ``distinct-n``, ``self-bleu:n=3``).
        columns: Precomputed columns by name (``metric_sent_bert``). With neither metrics nor
            columns, every default column is used.
        empty: What to do with empty sets (no non-blank response): ``drop`` removes the row for
            every metric and column (counted in ``n_empty``), ``zero`` scores computed metrics 0
            there (precomputed columns are left as they are), ``error`` stops.
        workers: Processes for computing metrics.
        progress: ``progress(done, total)`` callback while metrics are computed.

    Returns:
        :class:`ResolvedScores` (``keep`` is the row mask the protocol must apply to labels).
    """
    if empty not in EMPTY_POLICIES:
        raise InvalidInputError(
            f"`empty` must be one of {', '.join(EMPTY_POLICIES)}; got {empty!r}."
        )
    n = len(table)
    empty_rows = np.zeros(n, dtype=bool)
    if table.sets is not None:
        empty_rows = np.array([is_empty_set(s) for s in table.sets], dtype=bool)
    n_empty = int(empty_rows.sum())
    if n_empty and empty == "error":
        first = int(np.flatnonzero(empty_rows)[0])
        raise InvalidInputError(
            f"{table.source}: {n_empty} empty set(s) (no non-blank response; first: row {first}, "
            f"set {table.ids[first]!r}); expected texts. Use --empty drop or --empty zero."
        )
    if metrics and table.sets is None:
        raise InvalidInputError(
            f"{table.source} holds scores, not texts: metrics cannot be computed from it; "
            f"name its columns with --column ({', '.join(table.columns) or 'none found'})."
        )
    if not metrics and not (columns := columns or table.default_columns()):
        raise InvalidInputError(
            f"{table.source}: no metric or column to evaluate; give -m METRIC or --column COL."
        )
    scores: dict[str, np.ndarray] = {}
    sigs: dict[str, str] = {}
    for c in columns:
        if c not in table.columns:
            raise InvalidInputError(
                f"column {c!r} not found in {table.source}; available: "
                f"{', '.join(table.columns) or 'none'}."
            )
        scores[c] = table.columns[c].copy()
    if metrics:
        from divmeter.batch import resolve_metrics, score_sets

        plans = resolve_metrics(list(metrics))
        cols = [p.column for p in plans]
        arrs = {c: np.full(n, math.nan) for c in cols}
        assert table.sets is not None
        for rec in score_sets(table.sets, list(metrics), workers=workers, with_signatures=True,
                              progress=progress):
            row = rec["row"]
            for c in cols:
                arrs[c][row] = _float(rec.get(c))
            for c, sig in rec.get("signatures", {}).items():
                sigs.setdefault(c, sig)
        for c in cols:
            if empty == "zero":
                arrs[c][empty_rows] = 0.0
            scores[c] = arrs[c]
    keep = ~empty_rows if empty == "drop" else np.ones(n, dtype=bool)
    return ResolvedScores(scores, keep, empty, n_empty, sigs)
