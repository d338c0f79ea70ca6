"""Writers: response sets in every readable format, and result records, streaming.

* :func:`write_sets`: sets as JSONL, JSON, CSV (long or wide form) or Parquet; the readers of
  :mod:`divmeter.inputs.data.readers` read them back unchanged.
* :class:`RecordWriter` / :func:`open_record_writer`: the records of ``divmeter score``, one at a
  time, flushed after each (JSON and Parquet stream to a ``.partial.jsonl`` sidecar until closed).
* :func:`dumps`: the JSON text of a record (UTF-8 kept, NaN and infinities written as ``null``,
  numpy values converted).
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.formats import PARQUET_SIGNATURES_KEY
from divmeter.inputs.data.lines import FORMATS, detect_format, display_name
from divmeter.inputs.data.model import ResponseSet
from divmeter.inputs.data.outputs import replace_atomically
from divmeter.inputs.data.readers import read_records
from divmeter.inputs.data.signatures import record_signatures

__all__ = ["dumps", "write_sets", "RecordWriter", "open_record_writer"]


def _open_text_out(path: str | os.PathLike[str], mode: str = "w") -> IO[str]:
    if str(path) == "-":
        return sys.stdout
    if str(path).lower().endswith(".gz"):
        raise InvalidInputError(f"{display_name(path)}: compressed output is not supported.")
    return open(path, mode, encoding="utf-8", newline="")  # noqa: SIM115


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def dumps(obj: Any) -> str:
    """JSON text of a record (UTF-8 kept as is, NaN written as null, numpy values converted)."""
    return json.dumps(_clean(obj), ensure_ascii=False, default=_json_default, allow_nan=False)


def _clean(obj: Any) -> Any:
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "tolist"):
        return _clean(obj.tolist())
    return obj


def write_sets(
    sets: Iterable[ResponseSet],
    path: str | os.PathLike[str],
    fmt: str | None = None,
    *,
    layout: str = "long",
) -> int:
    """Write response sets in any readable format; :func:`read_sets` reads them back unchanged.

    Args:
        sets: The sets.
        path: Output file, or ``"-"`` for stdout (text formats).
        fmt: ``jsonl``, ``json``, ``csv`` or ``parquet``; ``None`` from the extension.
        layout: For CSV: ``long`` (one row per response; metadata as a JSON ``metadata`` column)
            or ``wide`` (one row per set, ``resp_0..resp_k``; every set must have the same number
            of responses, since empty cells read back as empty responses).

    Returns:
        The number of sets written.

    Raises:
        InvalidInputError: For a bad format/layout, or sets a layout cannot hold (repeated set ids
            in long form, sets of different sizes in wide form).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "sets.csv"
        >>> write_sets([ResponseSet("a", ["x", "y"], label=1)], p)
        1
        >>> from divmeter.inputs.data import read_sets
        >>> [s.to_dict() for s in read_sets(p)]
        [{'set_id': 'a', 'responses': ['x', 'y'], 'label': 1}]
    """
    chosen = detect_format(path, fmt)
    if layout not in {"long", "wide"}:
        raise InvalidInputError(f"layout must be 'long' or 'wide'; got {layout!r}.")
    if str(path) != "-":  # whole file to a temporary, renamed into place when complete
        if str(path).lower().endswith(".gz"):
            raise InvalidInputError(f"{display_name(path)}: compressed output is not supported.")
        with replace_atomically(path) as tmp:
            return _write_sets(sets, tmp, chosen, layout, display_name(path))
    return _write_sets(sets, path, chosen, layout, display_name(path))


def _write_sets(
    sets: Iterable[ResponseSet], path: str | os.PathLike[str], chosen: str, layout: str, name: str
) -> int:
    items = list(sets) if chosen in {"csv", "parquet", "json"} else sets
    count = 0
    if chosen == "parquet":
        pa = require("pyarrow", extra="io")
        pq = require("pyarrow.parquet", extra="io", package="pyarrow")
        rows = [_set_row(s) for s in items]  # type: ignore[union-attr]
        cols = {
            "set_id": pa.array([r["set_id"] for r in rows], pa.string()),
            "prompt": pa.array([r["prompt"] for r in rows], pa.string()),
            "label": _arrow_column(pa, [r["label"] for r in rows]),
            "responses": pa.array([r["responses"] for r in rows], pa.list_(pa.string())),
            "metadata": pa.array([r["metadata"] for r in rows], pa.string()),
        }
        pq.write_table(pa.table(cols), str(path) if str(path) != "-" else sys.stdout.buffer)
        return len(rows)
    fh = _open_text_out(path)
    try:
        if chosen == "jsonl":
            for s in items:
                fh.write(dumps(s.to_dict()) + "\n")
                count += 1
        elif chosen == "json":
            fh.write("[\n")
            for i, s in enumerate(items):
                fh.write(("  " if i == 0 else ",\n  ") + dumps(s.to_dict()))
                count += 1
            fh.write("\n]\n")
        else:
            count = _write_sets_csv(items, fh, layout, name)  # type: ignore[arg-type]
    finally:
        if fh is not sys.stdout:
            fh.close()
        else:
            fh.flush()
    return count


def _set_row(s: ResponseSet) -> dict[str, Any]:
    return {
        "set_id": s.set_id,
        "prompt": s.prompt,
        "label": s.label,
        "responses": list(s.responses),
        "metadata": dumps(s.metadata) if s.metadata else None,
    }


def _arrow_column(pa: Any, values: list[Any]) -> Any:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else str(v) for v in values], pa.string())


def _label_cell(label: Any) -> str:
    if label is None:
        return ""
    if isinstance(label, bool):
        return "true" if label else "false"
    return str(label)


def _write_sets_csv(items: list[ResponseSet], fh: IO[str], layout: str, name: str) -> int:
    w = csv.writer(fh, lineterminator="\n")
    if layout == "long":
        seen: dict[str, int] = {}
        w.writerow(["set_id", "prompt", "label", "metadata", "response"])
        for i, s in enumerate(items):
            if s.set_id in seen:
                raise InvalidInputError(
                    f"{name}: set id {s.set_id!r} appears twice (sets {seen[s.set_id] + 1} and "
                    f"{i + 1}); the long CSV form groups rows by id, so use layout='wide', JSONL "
                    "or Parquet for files with repeated ids."
                )
            seen[s.set_id] = i
            meta = dumps(s.metadata) if s.metadata else ""
            if not s.responses:
                raise InvalidInputError(
                    f"{name}: set {s.set_id!r} has no responses, which the long CSV form cannot "
                    "hold; use JSONL or Parquet."
                )
            for r in s.responses:
                w.writerow([s.set_id, s.prompt or "", _label_cell(s.label), meta, r])
        return len(items)
    sizes = {len(s.responses) for s in items}
    if len(sizes) > 1:
        raise InvalidInputError(
            f"{name}: the wide CSV form needs sets of one size (empty cells read back as empty "
            f"responses); got sizes {sorted(sizes)}. Use layout='long', JSONL or Parquet."
        )
    k = sizes.pop() if sizes else 0
    w.writerow(["set_id", "prompt", "label", "metadata"] + [f"resp_{j}" for j in range(k)])
    for s in items:
        meta = dumps(s.metadata) if s.metadata else ""
        w.writerow([s.set_id, s.prompt or "", _label_cell(s.label), meta, *s.responses])
    return len(items)


# --------------------------------------------------------------------------------------------
# result records: streaming writers and a reader (for --resume)


def _flat(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return dumps(value)
    return value


class RecordWriter:
    """Streams result records (flat dicts, possibly with nested dict/list values) to a file.

    * ``jsonl``: one object per line, flushed after every record; ``append=True`` continues a file.
    * ``csv``: a header from ``columns`` (or the first record's keys), nested values as JSON text,
      flushed after every record.
    * ``json`` and ``parquet``: records stream to a sidecar ``OUT.partial.jsonl`` (so an
      interrupted run keeps them) and the final file is written by :meth:`close`, from the
      records already in ``OUT`` (when appending) plus the sidecar, which is then removed.

    Use :func:`open_record_writer`, or the class as a context manager.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        fmt: str,
        *,
        columns: Sequence[str] | None = None,
        append: bool = False,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = path
        self.fmt = fmt
        self.columns = list(columns) if columns is not None else None
        self.append = append
        self.extra = dict(extra or {})
        self.count = 0
        self._csv: Any = None
        self._stdout = str(path) == "-"
        if fmt in {"json", "parquet"}:
            if self._stdout and fmt == "parquet":
                raise InvalidInputError("Parquet output needs a file (-o OUT.parquet), not stdout.")
            self._buffer: list[dict[str, Any]] | None = [] if self._stdout else None
            self.sidecar = None if self._stdout else Path(f"{path}.partial.jsonl")
            if self.sidecar is not None:
                self._fh: IO[str] | None = open(  # noqa: SIM115
                    self.sidecar, "a" if append else "w", encoding="utf-8"
                )
            else:
                self._fh = None
        elif fmt in {"jsonl", "csv"}:
            exists = not self._stdout and append and Path(path).exists()
            self._fh = _open_text_out(path, "a" if append else "w")
            if fmt == "csv":
                self._csv = csv.writer(self._fh, lineterminator="\n")
                self._header_done = bool(exists and Path(path).stat().st_size > 0)
                if self._header_done:  # appending: the file's header decides the columns
                    with open(path, encoding="utf-8", newline="") as fh:
                        self.columns = next(csv.reader(fh))
        else:
            raise InvalidInputError(
                f"output format must be one of {', '.join(FORMATS)}; got {fmt!r}."
            )

    def write(self, record: Mapping[str, Any]) -> None:
        """Write one record and flush it to disk."""
        self.count += 1
        if self.fmt == "csv":
            if self.columns is None:
                self.columns = list(record)
            if not self._header_done:
                self._csv.writerow(self.columns)
                self._header_done = True
            self._csv.writerow(
                ["" if record.get(c) is None else _flat(record.get(c)) for c in self.columns]
            )
        elif self._fh is not None:
            self._fh.write(dumps(record) + "\n")
        else:
            assert self._buffer is not None
            self._buffer.append(dict(record))
            return
        self._fh.flush()  # type: ignore[union-attr]

    def close(self) -> None:
        """Finish the file (JSON/Parquet: write it from the streamed records)."""
        if self.fmt in {"json", "parquet"}:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
            records: list[dict[str, Any]] = []
            if self._buffer is not None:
                records = self._buffer
            else:
                if self.append and Path(self.path).exists():
                    records.extend(read_records(self.path, self.fmt))
                assert self.sidecar is not None
                records.extend(read_records(self.sidecar, "jsonl"))
            doc: Any = records
            if self.extra:
                doc = {"results": records, **self.extra}
            if self._stdout:
                text = json.dumps(_clean(doc), ensure_ascii=False, indent=1, default=_json_default)
                sys.stdout.write(text + "\n")
                sys.stdout.flush()
            else:  # the whole file to a temporary, renamed over OUT once complete
                with replace_atomically(self.path) as tmp:
                    if self.fmt == "json":
                        text = json.dumps(
                            _clean(doc), ensure_ascii=False, indent=1, default=_json_default
                        )
                        with open(tmp, "w", encoding="utf-8", newline="") as fh:
                            fh.write(text + "\n")
                    else:
                        _write_records_parquet(records, tmp, self.columns)
            if self.sidecar is not None and self.sidecar.exists():
                self.sidecar.unlink()
        elif self._fh is not None:
            if self._fh is not sys.stdout:
                self._fh.close()
            else:
                self._fh.flush()
            self._fh = None

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None or self.fmt in {"jsonl", "csv"}:
            self.close()
        elif self._fh is not None:  # json/parquet interrupted: keep the sidecar, no final file
            self._fh.close()
            self._fh = None


def open_record_writer(
    path: str | os.PathLike[str],
    fmt: str | None = None,
    *,
    columns: Sequence[str] | None = None,
    append: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> RecordWriter:
    """Open a streaming :class:`RecordWriter` (format from ``fmt`` or the extension).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "out.jsonl"
        >>> with open_record_writer(p) as w:
        ...     w.write({"set_id": "a", "distinct-n": 0.5})
        >>> list(read_records(p))
        [{'set_id': 'a', 'distinct-n': 0.5}]
    """
    return RecordWriter(path, detect_format(path, fmt), columns=columns, append=append, extra=extra)


def _write_records_parquet(
    records: list[dict[str, Any]], path: str | os.PathLike[str], columns: Sequence[str] | None
) -> None:
    pa = require("pyarrow", extra="io")
    pq = require("pyarrow.parquet", extra="io", package="pyarrow")
    cols = list(columns) if columns else []
    for r in records:
        for k in r:
            if k not in cols:
                cols.append(k)
    data = {}
    for c in cols:
        values = [r.get(c) for r in records]
        if any(isinstance(v, (dict, list)) for v in values):
            values = [None if v is None else dumps(v) for v in values]
        data[c] = _arrow_column(pa, values)
    table = pa.table(data)
    sigs = record_signatures(records)
    if sigs:  # the signatures also in the schema: readable without reading a row
        table = table.replace_schema_metadata({PARQUET_SIGNATURES_KEY: dumps(sigs)})
    pq.write_table(table, str(path))

