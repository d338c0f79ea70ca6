"""Thin adapters from response sets and score records to the arrays meta-evaluation needs.

Files are read by :mod:`divmeter.inputs.data.tables` (:func:`load_table` -> :class:`MetaTable`,
:func:`read_pairs` -> :class:`Pairs`; re-exported here, their former home); metrics are computed
by :func:`divmeter.engine.batch.score_sets`. This module only lines the numbers up:

* :func:`resolve_scores` -> one float array per requested metric or column, with the policy for
  empty sets applied and echoed (``empty``: ``drop`` / ``zero`` / ``error``).
* :func:`metric_results` -> one registry metric's results on a list of sets, as
  :func:`divmeter.score` gives them (for the protocols that compute a metric themselves).
* :func:`prepare_scores` -> what a protocol reads from a table: the score arrays after the
  empty-set policy, the items on which a computed metric is undefined excluded
  (:func:`exclude_undefined`, each with the metric's reason), optional rounding, and the
  settings every output echoes; :func:`metric_directions` says which way each is more diverse.

Rows keep their file order; duplicate set ids are kept (Tevet's conTest pairs two sets per
``sample_id``), the row position is the key.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetricResult
from divmeter.inputs.data.model import ResponseSet
from divmeter.inputs.data.tables import MetaTable, Pairs, label_array, load_table, read_pairs
from divmeter.inputs.data.tables import as_float as _float

__all__ = [
    "MetaTable",
    "load_table",
    "resolve_scores",
    "metric_results",
    "prepare_scores",
    "PreparedScores",
    "exclude_undefined",
    "Undefined",
    "metric_directions",
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
    from divmeter.engine.batch import evaluate, resolve_metrics

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
            (:func:`divmeter.engine.registry.column_name`, e.g. ``distinct-n``, ``self-bleu:n=3``).
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
            held = [(i, m[c]) for i, m in enumerate(table.metadata) if c in m]
            if held:  # the field exists, but a value of it is not a number
                i, v = next(((i, v) for i, v in held if v is not None and (
                    isinstance(v, bool) or not isinstance(v, (int, float)))), held[0])
                raise InvalidInputError(
                    f"column {c!r} of {table.source} must hold numbers (or null); row {i + 1} "
                    f"(set {table.ids[i]!r}) holds {str(v)[:40]!r}.")
            raise InvalidInputError(
                f"column {c!r} not found in {table.source}; available: "
                f"{', '.join(table.columns) or 'none'}."
            )
        scores[c] = table.columns[c].copy()
        if c in table.signatures:  # a `divmeter score` output: the file's own signature
            sigs[c] = table.signatures[c]
    if metrics:
        from divmeter.engine.batch import resolve_metrics, score_sets

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


@dataclass(frozen=True)
class Undefined:
    """Items on which a computed metric is undefined (null), excluded from a protocol.

    Attributes:
        column: The metric's column.
        count: Items excluded for it.
        first: Index of the first one.
        reason: Why the metric is null there (its reason, or the error it raised).
    """

    column: str
    count: int
    first: int
    reason: str


def exclude_undefined(sets: Sequence[ResponseSet] | None, scores: dict[str, np.ndarray],
                      metrics: Sequence[str], keep: np.ndarray) -> list[Undefined]:
    """Drop (in ``keep``, in place) the items on which a computed metric is undefined, as
    ``divmeter score`` writes null there; the first such item is scored again for its reason.

    Returns:
        One :class:`Undefined` per metric column with excluded items (empty when none).
    """
    if not metrics or sets is None:
        return []
    from divmeter.engine.batch import evaluate, resolve_metrics

    out: list[Undefined] = []
    for plan in resolve_metrics(list(metrics)):
        bad = keep & np.isnan(scores[plan.column])
        if not bad.any():
            continue
        first = int(np.flatnonzero(bad)[0])
        outcome = evaluate([sets[first].responses], [plan])[0][0]
        reason = str(outcome) if isinstance(outcome, Exception) else (outcome.reason or "null")
        out.append(Undefined(plan.column, int(bad.sum()), first, reason))
        keep &= ~bad
    return out


def metric_directions(metrics: Sequence[str] | None, lower: Sequence[str] | None = None,
                      columns: Sequence[str] | None = None) -> dict[str, str]:
    """``"lower"`` for metrics whose value falls as diversity rises, ``"higher"`` otherwise.

    Registry metrics know their direction; a precomputed column named like a registry metric
    (``self-bleu:n=3``, as ``divmeter score`` writes it) takes that metric's direction; columns
    in ``lower`` are ``"lower"`` whatever their name.

    Example:
        >>> metric_directions(["self-bleu:n=3"], ["my_score"], ["distinct-n"])
        {'distinct-n': 'higher', 'my_score': 'lower', 'self-bleu:n=3': 'lower'}
    """
    from divmeter.core.errors import UnknownMetricError
    from divmeter.engine.batch import resolve_metrics
    from divmeter.engine.registry import get_metric, parse_metric_arg

    dirs: dict[str, str] = {}
    for c in columns or []:
        try:
            spec = get_metric(parse_metric_arg(c)[0])
        except (InvalidInputError, UnknownMetricError):
            continue
        dirs[c] = "higher" if spec.higher_is_more_diverse else "lower"
    dirs.update({c: "lower" for c in lower or []})
    for p in resolve_metrics(list(metrics)) if metrics else []:
        dirs[p.column] = "higher" if get_metric(p.name).higher_is_more_diverse else "lower"
    return dirs


@dataclass
class PreparedScores:
    """What a protocol reads from a table (see :func:`prepare_scores`).

    Attributes:
        scores: One array per metric column or precomputed column, over the kept rows.
        labels: The kept rows' labels.
        settings: Echoed in every output: ``empty``, ``n_empty``, ``n_undefined``, ``round``.
        signatures: ``{column: signature}`` of the computed metrics, and of the columns of a
            ``divmeter score`` output (read from the file).
        rows: Indices of the kept rows in the table.
        n_dropped_empty: Empty sets dropped (``empty="drop"``).
        undefined: The items excluded because a computed metric is undefined there.
    """

    scores: dict[str, np.ndarray]
    labels: np.ndarray
    settings: dict[str, Any]
    signatures: dict[str, str]
    rows: np.ndarray
    n_dropped_empty: int = 0
    undefined: list[Undefined] = field(default_factory=list)


def prepare_scores(table: MetaTable, *, metrics: Sequence[str] = (), columns: Sequence[str] = (),
                   empty: str = "drop", round_: int | None = None, workers: int = 1,
                   progress: Any = None, need_labels: bool = True) -> PreparedScores:
    """Compute or read the scores of a table for a protocol: :func:`resolve_scores` (the
    empty-set policy), the items where a computed metric is undefined excluded, optional
    rounding; every choice echoed in ``settings``.

    Raises:
        InvalidInputError: No labels when ``need_labels``, a negative ``round_``, or what
            :func:`resolve_scores` refuses.
    """
    res = resolve_scores(table, metrics=metrics, columns=columns, empty=empty, workers=workers,
                         progress=progress)
    if need_labels and np.isnan(table.labels).all():
        raise InvalidInputError(
            f"{table.source}: no labels found; this protocol needs a label or parameter per set "
            "(Tevet's label_value column, or a 'label' field)."
        )
    keep = res.keep.copy()
    settings = dict(res.info)
    undefined = exclude_undefined(table.sets, res.scores, list(metrics), keep)
    if undefined and keep.sum() < 2:
        # nothing left to measure: a refusal that says why, in one line
        u = undefined[0]
        raise InvalidInputError(
            f"{table.source}: {u.column} is undefined on {u.count} of {len(keep)} set(s) (first: "
            f"set {table.ids[u.first]!r}: {u.reason}); {int(keep.sum())} set(s) left, a protocol "
            "needs at least 2."
        )
    if undefined:
        settings["n_undefined"] = {u.column: u.count for u in undefined}
    scores = {k: v[keep] for k, v in res.scores.items()}
    if round_ is not None:
        if round_ < 0:
            raise InvalidInputError(f"--round must be >= 0; got {round_}.")
        if round_ > 15:  # a float64 holds about 16 significant digits
            raise InvalidInputError(f"--round must be at most 15 decimals; got "
                                    f"{round_ if round_ < 10**15 else 'more'}.")
        scores = {k: np.round(v, round_) for k, v in scores.items()}
        settings["round"] = round_
    dropped = res.n_empty if empty == "drop" else 0
    return PreparedScores(scores, table.labels[keep], settings, res.signatures,
                          np.flatnonzero(keep), dropped, undefined)
