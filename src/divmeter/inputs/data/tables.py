"""Inputs of meta-evaluation: score tables and pairwise preference files.

* :func:`load_table` -> :class:`MetaTable`: a Tevet CSV or any response-set file (read by
  :func:`divmeter.inputs.data.readers.read_sets`; numeric metadata such as Tevet's ``metric_*``
  columns become columns), or a ``divmeter score`` output (read by
  :func:`divmeter.inputs.data.readers.read_records`; every metric key becomes a column);
* :func:`read_pairs` -> :class:`Pairs`: the generic pairwise file, JSONL rows
  ``{set1, set2, label}`` read line by line by :func:`divmeter.inputs.data.lines.read_json_lines`.

Rows keep their file order; duplicate set ids are kept (Tevet's conTest pairs two sets per
``sample_id``), the row position is the key.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.items import pair_label, pair_texts
from divmeter.inputs.data.lines import (
    decode_lines,
    detect_format,
    open_source,
    read_json_lines,
)
from divmeter.inputs.data.lines import require_object as _require_object
from divmeter.inputs.data.model import ResponseSet
from divmeter.inputs.data.readers import read_records, read_sets
from divmeter.inputs.data.signatures import read_signatures

__all__ = ["MetaTable", "load_table", "label_array", "Pairs", "read_pairs", "as_float"]

_SET_KEYS = {"responses", "response", "resp_0"}
#: Keys of a score record that are neither scores nor grouping fields (the prompt, carried by
#: ``divmeter score``, is kept as a field: ``compare --key prompt`` matches by it).
_RECORD_SKIP = {"set_id", "row", "label", "reasons", "per_response", "signatures"}


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
        signatures: ``{column: signature}`` of the columns a ``divmeter score`` output holds,
            read from the file (its records' ``signatures``, JSON summary, Parquet metadata).
    """

    source: str
    ids: list[str]
    labels: np.ndarray
    label_name: str | None = None
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    sets: list[ResponseSet] | None = None
    metadata: list[dict[str, Any]] = field(default_factory=list)
    signatures: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def default_columns(self) -> list[str]:
        """Precomputed columns used when none is named (Tevet: ``metric_*`` except ``*_std``)."""
        cols = [c for c in self.columns if not c.endswith("_std")]
        return cols


def _number(value: int | float) -> float:
    """``float(value)``; an integer beyond the float range is +-inf, as ``float("1e400")`` is
    (the protocols refuse infinite values with the column named)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def as_float(value: Any) -> float:
    """A cell as a float: numbers and numeric strings converted, anything else (None, bools,
    text) NaN."""
    if value is None or isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return _number(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _pair_number(value: Any, where: str, field: str) -> float:
    """A number (or null: NaN) of a pairs row; anything else names the line and field."""
    if value is None:
        return math.nan
    if isinstance(value, str):  # a number written as text ("3.5") is read as that number
        with contextlib.suppress(ValueError):
            return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(
            f"{where}: field {field!r} must be a number or null; got {value!r}"[:200] + "."
        )
    return _number(value)


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
            out[i] = _number(v) if isinstance(v, (int, float)) else float(v)
        except ValueError:
            raise InvalidInputError(f"row {i}: label must be a number; got "
                                    f"{str(v)[:40]!r}.") from None
    return out


def _looks_like_sets(path: str | os.PathLike[str]) -> bool:
    """True for response-set files, False for ``divmeter score`` outputs (no texts)."""
    fmt = detect_format(path)
    if fmt == "csv":
        with open_source(path) as fh:
            header = next(decode_lines(fh, os.path.basename(str(path)), [0]), "")
        cols = {c.strip().strip('"') for c in header.rstrip("\r\n").split(",")}
        return bool(cols & _SET_KEYS)
    first = next(iter(read_records(path)), None)
    return first is None or bool(set(first) & _SET_KEYS)


def load_table(path: str | os.PathLike[str]) -> MetaTable:
    """Read a Tevet CSV / response-set file, or a ``divmeter score`` output, into a MetaTable.

    Response-set files go through :func:`divmeter.inputs.data.readers.read_sets`: the label is the
    set's ``label``, numeric metadata (Tevet's ``metric_*`` columns) become columns. Score outputs
    go through :func:`divmeter.inputs.data.readers.read_records`: every metric key becomes a column
    (``null`` values become NaN, handled later by the NaN policy).

    Raises:
        InvalidInputError: Malformed file (file and line named by the reader), non-numeric label.
        FileNotFoundError: Missing file.
    """
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
                    numeric.setdefault(k, [math.nan] * len(sets))[i] = as_float(v)
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
            columns[k] = np.asarray([as_float(v) for v in vals], dtype=float)
        else:
            for i, v in enumerate(vals):
                meta_rows[i][k] = v
    sigs = {c: s for c, s in read_signatures(path, records).items() if c in columns}
    return MetaTable(name, ids, labels, None, columns, None, meta_rows, sigs)


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
    for where, obj in read_json_lines(path):
        row = _require_object(obj, where, "pair")
        s1.append(pair_texts(row, "set1", where))
        s2.append(pair_texts(row, "set2", where))
        labels.append(pair_label(row, where))
        r1.append(_pair_number(row.get("rating1", row.get("score1")), where, "rating1"))
        r2.append(_pair_number(row.get("rating2", row.get("score2")), where, "rating2"))
        for key, out in (("scores1", sc1), ("scores2", sc2)):
            value = row.get(key) or {}
            if not isinstance(value, dict):
                raise InvalidInputError(
                    f"{where}: field {key!r} must be an object of metric values; "
                    f"got {type(value).__name__}."
                )
            out.append({k: _pair_number(v, where, f"{key}.{k}") for k, v in value.items()})
    if not labels:
        raise InvalidInputError(f"{name}: no pairs found.")
    keys = sorted({k for d in sc1 + sc2 for k in d})
    return Pairs(
        name, s1, s2, np.asarray(labels),
        np.asarray(r1) if not np.isnan(r1).all() else None,
        np.asarray(r2) if not np.isnan(r2).all() else None,
        {k: np.asarray([as_float(d.get(k)) for d in sc1]) for k in keys},
        {k: np.asarray([as_float(d.get(k)) for d in sc2]) for k in keys},
    )
