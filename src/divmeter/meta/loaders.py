"""Thin adapters from response sets and score records to the arrays meta-evaluation needs.

Files are read by :mod:`divmeter.data.io` (the Tevet wide CSVs, JSONL/JSON/CSV/Parquet sets) and by
:func:`divmeter.data.io.read_records` (the output of ``divmeter score``); metrics are computed by
:func:`divmeter.batch.score_sets`. This module only lines the numbers up:

* :func:`load_table` -> :class:`MetaTable` (ids, labels, precomputed numeric columns, the sets);
* :func:`resolve_scores` -> one float array per requested metric or column, with the policy for
  empty sets applied and echoed (``empty``: ``drop`` / ``zero`` / ``error``);
* :func:`read_pairs` -> the generic pairwise file (JSONL rows ``{set1, set2, label}``).

Rows keep their file order; duplicate set ids are kept (Tevet's conTest pairs two sets per
``sample_id``), the row position is the key.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from divmeter.data.model import ResponseSet
from divmeter.errors import InvalidInputError

__all__ = [
    "MetaTable",
    "load_table",
    "resolve_scores",
    "EMPTY_POLICIES",
    "is_empty_set",
    "Pairs",
    "read_pairs",
    "label_array",
]

EMPTY_POLICIES = ("drop", "zero", "error")
_SET_KEYS = {"responses", "response", "resp_0"}
_RECORD_SKIP = {"set_id", "row", "label", "reasons", "per_response", "signatures", "prompt"}


@dataclass
class MetaTable:
    """Rows to meta-evaluate: one per response set (or per scored record).

    Attributes:
        source: Where the rows came from (file name).
        ids: Set ids in row order (duplicates kept).
        labels: Label / parameter per row as floats (NaN where missing).
        label_name: Name of the label (Tevet's ``label_name`` column), if known.
        columns: Precomputed numeric columns (Tevet ``metric_*``, or the metric columns of a
            ``divmeter score`` output), as float arrays with NaN for missing values.
        sets: The response sets, or ``None`` for a scored file (no texts).
        metadata: Other per-row metadata values (strings kept), for grouping (``--by stage``).
    """

    source: str
    ids: list[str]
    labels: np.ndarray
    label_name: str | None = None
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    sets: list[ResponseSet] | None = None
    metadata: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def default_columns(self) -> list[str]:
        """Precomputed columns used when none is named (Tevet: ``metric_*`` except ``*_std``)."""
        cols = [c for c in self.columns if not c.endswith("_std")]
        return cols


def _float(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def label_array(values: Sequence[Any]) -> np.ndarray:
    """Labels as floats; non-numeric labels are an error naming the first one."""
    out = np.empty(len(values))
    for i, v in enumerate(values):
        if v is None:
            out[i] = math.nan
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise InvalidInputError(f"row {i}: label must be a number; got {v!r}.")
        try:
            out[i] = float(v)
        except ValueError:
            raise InvalidInputError(f"row {i}: label must be a number; got {v!r}.") from None
    return out


def _looks_like_sets(path: str | os.PathLike[str]) -> bool:
    """True for response-set files, False for ``divmeter score`` outputs (no texts)."""
    from divmeter.data.io import detect_format, read_records

    fmt = detect_format(path)
    if fmt == "csv":
        with open(path, encoding="utf-8", newline="") as fh:
            header = fh.readline()
        cols = {c.strip().strip('"') for c in header.rstrip("\r\n").split(",")}
        return bool(cols & _SET_KEYS)
    first = next(iter(read_records(path)), None)
    return first is None or bool(set(first) & _SET_KEYS)


def load_table(path: str | os.PathLike[str]) -> MetaTable:
    """Read a Tevet CSV / response-set file, or a ``divmeter score`` output, into a MetaTable.

    Response-set files go through :func:`divmeter.data.io.read_sets`: the label is the set's
    ``label``, numeric metadata (Tevet's ``metric_*`` columns) become columns. Score outputs go
    through :func:`divmeter.data.io.read_records`: every metric key becomes a column (``null``
    values become NaN, handled later by the NaN policy).

    Raises:
        InvalidInputError: Malformed file (file and line named by the reader), non-numeric label.
        FileNotFoundError: Missing file.
    """
    from divmeter.data.io import read_records, read_sets

    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", str(path))
    name = os.path.basename(str(path))
    if _looks_like_sets(path):
        sets = list(read_sets(path))
        ids = [s.set_id for s in sets]
        labels = label_array([s.label for s in sets])
        names = {s.metadata.get("label_name") for s in sets} - {None}
        label_name = str(names.pop()) if len(names) == 1 else None
        numeric: dict[str, list[float]] = {}
        meta_rows: list[dict[str, Any]] = []
        for i, s in enumerate(sets):
            row_meta = {}
            for k, v in s.metadata.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) or v is None:
                    numeric.setdefault(k, [math.nan] * len(sets))[i] = _float(v)
                else:
                    row_meta[k] = v
            meta_rows.append(row_meta)
        columns = {k: np.asarray(v, dtype=float) for k, v in numeric.items()}
        return MetaTable(name, ids, labels, label_name, columns, sets, meta_rows)
    records = list(read_records(path))
    ids = [str(r.get("set_id", i)) for i, r in enumerate(records)]
    labels = label_array([r.get("label") for r in records])
    keys: list[str] = []
    for r in records:
        for k in r:
            if k not in _RECORD_SKIP and k not in keys:
                keys.append(k)
    columns = {}
    meta_rows = [{} for _ in records]
    for k in keys:
        vals = [r.get(k) for r in records]
        if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
               for v in vals):
            columns[k] = np.asarray([_float(v) for v in vals], dtype=float)
        else:
            for i, v in enumerate(vals):
                meta_rows[i][k] = v
    return MetaTable(name, ids, labels, None, columns, None, meta_rows)


def is_empty_set(s: ResponseSet) -> bool:
    """A set with no responses, or whose responses are all empty/whitespace."""
    return not any(r.strip() for r in s.responses)


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
    if not metrics and not columns:
        columns = table.default_columns()
        if not columns:
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


# --------------------------------------------------------------------------------------------
# pairwise files


@dataclass
class Pairs:
    """A pairwise preference file: two sets per row and the annotator's decision."""

    source: str
    set1: list[list[str]]
    set2: list[list[str]]
    labels: np.ndarray
    rating1: np.ndarray | None = None
    rating2: np.ndarray | None = None
    scores1: dict[str, np.ndarray] = field(default_factory=dict)
    scores2: dict[str, np.ndarray] = field(default_factory=dict)


def _texts(value: Any, where: str) -> list[str]:
    if isinstance(value, dict):
        value = value.get("responses")
    if isinstance(value, str) or not isinstance(value, list):
        raise InvalidInputError(
            f"{where} must be a list of strings (or an object with 'responses'); "
            f"got {type(value).__name__}."
        )
    for t in value:
        if not isinstance(t, str):
            raise InvalidInputError(f"{where} must be a list of strings; got {type(t).__name__}.")
    return list(value)


def read_pairs(path: str | os.PathLike[str]) -> Pairs:
    """Read a JSONL pairs file: ``{"set1": [...], "set2": [...], "label": 0|1|2}`` per line.

    ``label``: 0 = set1 more diverse, 1 = set2, 2 = tie. Optional keys: ``rating1`` /
    ``rating2`` (annotator ratings, for ``--min-rating-diff``; ``score1`` / ``score2`` are read
    as aliases), ``scores1`` / ``scores2``
    (objects of precomputed metric values, used with ``--column``). ``set1``/``set2`` may also be
    objects with a ``responses`` list.

    Raises:
        InvalidInputError: Naming file, line and field.
    """
    name = os.path.basename(str(path))
    s1: list[list[str]] = []
    s2: list[list[str]] = []
    labels: list[float] = []
    r1: list[float] = []
    r2: list[float] = []
    sc1: list[dict[str, Any]] = []
    sc2: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{name} line {lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{where}: not valid JSON ({exc.msg}).") from None
            if not isinstance(row, dict):
                raise InvalidInputError(f"{where}: expected an object; got {type(row).__name__}.")
            for key in ("set1", "set2", "label"):
                if key not in row:
                    raise InvalidInputError(f"{where}: field {key!r} is missing.")
            s1.append(_texts(row["set1"], f"{where}: field 'set1'"))
            s2.append(_texts(row["set2"], f"{where}: field 'set2'"))
            lab = row["label"]
            if isinstance(lab, bool) or lab not in (0, 1, 2):
                raise InvalidInputError(
                    f"{where}: field 'label' must be 0 (set1 more diverse), 1 (set2) or 2 (tie); "
                    f"got {lab!r}."
                )
            labels.append(float(lab))
            r1.append(_float(row.get("rating1", row.get("score1"))))
            r2.append(_float(row.get("rating2", row.get("score2"))))
            sc1.append(dict(row.get("scores1") or {}))
            sc2.append(dict(row.get("scores2") or {}))
    if not labels:
        raise InvalidInputError(f"{name}: no pairs found.")
    keys = sorted({k for d in sc1 + sc2 for k in d})
    return Pairs(
        name, s1, s2, np.asarray(labels),
        np.asarray(r1) if not np.isnan(r1).all() else None,
        np.asarray(r2) if not np.isnan(r2).all() else None,
        {k: np.asarray([_float(d.get(k)) for d in sc1]) for k in keys},
        {k: np.asarray([_float(d.get(k)) for d in sc2]) for k in keys},
    )
