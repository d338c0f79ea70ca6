"""Readers and writers of response sets (JSONL, JSON, CSV long and wide, Parquet) and of results.

Input layouts (every file is UTF-8; ``path`` may be ``"-"`` for stdin; a ``.gz`` suffix is read
through gzip):

* **JSONL / JSON**: one object per set with ``set_id`` (or ``id``), ``responses`` (a list of
  strings), optional ``prompt`` (or ``context``), ``label`` and ``metadata`` (an object); any other
  key goes into ``metadata``. A JSON file holds a list of such objects (or ``{"sets": [...]}``).
* **CSV, long form**: one row per response, ``set_id,response,...``. Rows are grouped by
  ``set_id`` in order of first appearance (the rows of a set need not be adjacent). Other columns
  (``prompt``/``context``, ``label``, ``metadata`` holding a JSON object, anything else) must be
  constant within a set.
* **CSV, wide form** (the Tevet & Berant files): one row per set, ``sample_id`` (or ``set_id`` /
  ``id``), ``context`` (or ``prompt``), ``label_value`` (or ``label``), ``resp_0 .. resp_k``, and
  any other columns (``label_name``, ``metric_*``, ...) which go into ``metadata``; ``metric_*``
  cells are read as floats. Empty response cells are read as empty strings, so every set of a
  file has the same number of responses.
* **Parquet**: the same three layouts as columns (``responses`` as a list column, or ``response``,
  or ``resp_*``); needs ``pyarrow`` (``pip install 'divmeter[io]'``).

Set ids are kept exactly as read, duplicates included (the Tevet conTest files pair sets that share
a context, and McDiv_nuggets repeats ids with different labels). Consumers that need a unique key
use the position of the set in the input, which :func:`divmeter.batch.score_sets` writes as the
``row`` field of every result.

A malformed file stops with one line naming the file, the line or row and the field, e.g.
``responses.jsonl line 17: field 'responses' must be a list of strings; got str.``
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from divmeter._optional import require
from divmeter.data.model import ResponseSet
from divmeter.errors import InvalidInputError

__all__ = [
    "FORMATS",
    "detect_format",
    "read_sets",
    "write_sets",
    "RecordWriter",
    "open_record_writer",
    "read_records",
]

#: Formats understood by the readers and writers.
FORMATS: tuple[str, ...] = ("jsonl", "json", "csv", "parquet")

_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_ID_KEYS = ("set_id", "id")
_PROMPT_KEYS = ("prompt", "context")
_WIDE_ID_KEYS = ("sample_id", "set_id", "id")
_WIDE_LABEL_KEYS = ("label_value", "label")
_RESP_COL = re.compile(r"^resp_(\d+)$")
_PLAIN_INT = re.compile(r"^-?(0|[1-9]\d*)$")
_PLAIN_FLOAT = re.compile(r"^-?\d+\.\d+([eE][-+]?\d+)?$|^-?\d+[eE][-+]?\d+$")


# --------------------------------------------------------------------------------------------
# helpers


def _display(path: str | os.PathLike[str]) -> str:
    return "<stdin>" if str(path) == "-" else Path(path).name


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def detect_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` if given, else from the extension (``.gz`` looked through).

    Args:
        path: A file path, or ``"-"`` for stdin/stdout.
        fmt: An explicit format (``jsonl``, ``json``, ``csv``, ``parquet``), or ``None``.

    Returns:
        The format name.

    Raises:
        InvalidInputError: For an unknown format or extension. For ``"-"`` without ``fmt`` the
            answer is ``"jsonl"`` (readers sniff stdin instead of calling this).

    Example:
        >>> detect_format("runs/scores.jsonl")
        'jsonl'
        >>> detect_format("sets.csv.gz")
        'csv'
    """
    if fmt is not None:
        low = fmt.lower()
        if low == "ndjson":
            low = "jsonl"
        if low not in FORMATS:
            raise InvalidInputError(f"format must be one of {', '.join(FORMATS)}; got {fmt!r}.")
        return low
    if str(path) == "-":
        return "jsonl"
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    ext = os.path.splitext(name)[1]
    if ext not in _EXTENSIONS:
        raise InvalidInputError(
            f"{Path(path).name}: cannot tell the format from the extension {ext or '(none)'!r}; "
            f"expected one of {', '.join(sorted(_EXTENSIONS))}, or give the format explicitly."
        )
    return _EXTENSIONS[ext]


def _open_binary(path: str | os.PathLike[str]) -> IO[bytes]:
    if str(path).lower().endswith(".gz"):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")  # noqa: SIM115


def _decode_lines(raw: Iterable[bytes], name: str, counter: list[int]) -> Iterator[str]:
    """Decode byte lines as UTF-8 one at a time, so a bad byte is reported with its line."""
    for i, line in enumerate(raw):
        counter[0] = i + 1
        try:
            text = line.decode("utf-8-sig" if i == 0 else "utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"{name} line {i + 1}: not valid UTF-8 (byte 0x{line[exc.start]:02x} at "
                f"column {exc.start + 1}); divmeter reads UTF-8 only."
            ) from None
        yield text


def _decode_all(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInputError(
            f"{name} line {line}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); "
            "divmeter reads UTF-8 only."
        ) from None


def _num(value: str, *, integral_to_int: bool = False) -> int | float | str:
    """A CSV cell as int/float when it is plainly one (``"007"`` stays a string), else as is."""
    s = value.strip()
    if _PLAIN_INT.match(s):
        return int(s)
    if _PLAIN_FLOAT.match(s) or s.lower() in {"nan", "inf", "-inf"}:
        f = float(s)
        return int(f) if integral_to_int and f.is_integer() and abs(f) < 2**53 else f
    return value


# --------------------------------------------------------------------------------------------
# JSON objects -> ResponseSet


def _set_from_object(obj: Any, where: str, index: int) -> ResponseSet:
    if not isinstance(obj, dict):
        raise InvalidInputError(f"{where}: each set must be a JSON object; got {_type_name(obj)}.")
    obj = dict(obj)
    set_id: Any = None
    for key in _ID_KEYS:
        if key in obj:
            set_id = obj.pop(key)
            break
    if set_id is None:
        set_id = str(index)
    elif isinstance(set_id, bool) or not isinstance(set_id, (str, int)):
        raise InvalidInputError(
            f"{where}: field 'set_id' must be a string or an integer; got {_type_name(set_id)}."
        )
    if "responses" not in obj:
        raise InvalidInputError(
            f"{where}: field 'responses' is missing; expected a list of strings."
        )
    responses = obj.pop("responses")
    if not isinstance(responses, list):
        raise InvalidInputError(
            f"{where}: field 'responses' must be a list of strings; got {_type_name(responses)}."
        )
    for i, r in enumerate(responses):
        if not isinstance(r, str):
            raise InvalidInputError(
                f"{where}: field 'responses[{i}]' must be a string; got {_type_name(r)}."
            )
    prompt: Any = None
    for key in _PROMPT_KEYS:
        if key in obj:
            prompt = obj.pop(key)
            if prompt is not None and not isinstance(prompt, str):
                raise InvalidInputError(
                    f"{where}: field '{key}' must be a string; got {_type_name(prompt)}."
                )
            break
    label = obj.pop("label", None)
    if isinstance(label, (dict, list)):
        raise InvalidInputError(
            f"{where}: field 'label' must be a number, string or boolean; got {_type_name(label)}."
        )
    metadata = obj.pop("metadata", None) or {}
    if not isinstance(metadata, dict):
        raise InvalidInputError(
            f"{where}: field 'metadata' must be an object; got {_type_name(metadata)}."
        )
    metadata = {**metadata, **obj}
    return ResponseSet(str(set_id), list(responses), prompt, label, metadata)


def _invalid_json(name: str, lineno: int, exc: json.JSONDecodeError) -> InvalidInputError:
    """The error for a JSON syntax error in file ``name`` at line ``lineno``."""
    return InvalidInputError(
        f"{name} line {lineno}: invalid JSON ({exc.msg} at column {exc.colno})."
    )


def _read_jsonl(fh: IO[bytes], name: str) -> Iterator[ResponseSet]:
    counter = [0]
    index = 0
    for text in _decode_lines(fh, name, counter):
        if not text.strip():
            continue
        lineno = counter[0]
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _invalid_json(name, lineno, exc) from None
        yield _set_from_object(obj, f"{name} line {lineno}", index)
        index += 1


def _read_json_text(text: str, name: str) -> Iterator[ResponseSet]:
    decoder = json.JSONDecoder()
    n = len(text)
    ws = " \t\r\n"

    def skip(pos: int) -> int:
        while pos < n and text[pos] in ws:
            pos += 1
        return pos

    def line_of(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    pos = skip(0)
    if pos < n and text[pos] == "{":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _invalid_json(name, exc.lineno, exc) from None
        if not isinstance(doc.get("sets"), list):
            raise InvalidInputError(
                f"{name}: a JSON file must hold a list of sets, or an object with a list "
                f"'sets'; got an object with keys {sorted(doc)[:5]}."
            )
        for i, obj in enumerate(doc["sets"]):
            yield _set_from_object(obj, f"{name} item {i + 1}", i)
        return
    if pos >= n or text[pos] != "[":
        raise InvalidInputError(
            f"{name} line {line_of(pos)}: a JSON file must hold a list of sets (starting with "
            "'['); for one object per line use the .jsonl format."
        )
    pos = skip(pos + 1)
    index = 0
    if pos < n and text[pos] == "]":
        return
    while True:
        start = pos
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise _invalid_json(name, exc.lineno, exc) from None
        yield _set_from_object(obj, f"{name} line {line_of(start)}", index)
        index += 1
        pos = skip(pos)
        if pos < n and text[pos] == ",":
            pos = skip(pos + 1)
            continue
        if pos < n and text[pos] == "]":
            break
        raise InvalidInputError(
            f"{name} line {line_of(pos)}: invalid JSON (expected ',' or ']' after a set)."
        )


def _read_json(fh: IO[bytes], name: str) -> Iterator[ResponseSet]:
    data = fh.read()
    yield from _read_json_text(_decode_all(data, name), name)


# --------------------------------------------------------------------------------------------
# tables (CSV rows as strings, Parquet rows as typed values) -> ResponseSet


class _TableLayout:
    """Which columns of a table play which role."""

    def __init__(self, columns: Sequence[str], name: str, *, from_csv: bool) -> None:
        self.columns = list(columns)
        self.name = name
        self.from_csv = from_csv
        resp = [(int(m.group(1)), c) for c in columns if (m := _RESP_COL.match(c))]
        if "responses" in columns:
            self.kind = "list"
        elif "response" in columns:
            self.kind = "long"
        elif resp:
            self.kind = "wide"
        else:
            raise InvalidInputError(
                f"{name}: the header must have a 'response' column (long form, one row per "
                "response), resp_0..resp_k columns (wide form, one row per set) or a "
                f"'responses' list column; got columns {', '.join(columns[:8])}"
                f"{'...' if len(columns) > 8 else ''}."
            )
        self.resp_cols = [c for _, c in sorted(resp)] if self.kind == "wide" else []
        id_keys = _WIDE_ID_KEYS if self.kind == "wide" else _ID_KEYS + ("sample_id",)
        self.id_col = next((k for k in id_keys if k in columns), None)
        if self.kind == "long" and self.id_col is None:
            raise InvalidInputError(
                f"{name}: a long-form table needs a 'set_id' column next to 'response'."
            )
        self.prompt_col = next((k for k in _PROMPT_KEYS if k in columns), None)
        label_keys = _WIDE_LABEL_KEYS if self.kind == "wide" else ("label", "label_value")
        self.label_col = next((k for k in label_keys if k in columns), None)
        used = {self.id_col, self.prompt_col, self.label_col, "response", "responses"}
        used.update(self.resp_cols)
        self.meta_cols = [c for c in columns if c not in used]

    # cell conversions ------------------------------------------------------------------

    def text(self, value: Any, where: str, field: str, *, empty_is_none: bool) -> str | None:
        if value is None:
            return None if empty_is_none else ""
        if isinstance(value, float) and math.isnan(value):
            return None if empty_is_none else ""
        if not isinstance(value, str):
            raise InvalidInputError(
                f"{where}: field '{field}' must be a string; got {_type_name(value)}."
            )
        if empty_is_none and value == "":
            return None
        return value

    def label(self, value: Any, where: str) -> Any:
        if value is None or value == "":
            return None
        if isinstance(value, str):
            return _num(value, integral_to_int=True)
        if isinstance(value, float):
            if math.isnan(value):
                return None
            return int(value) if value.is_integer() and self.kind == "wide" else value
        return value

    def meta(self, col: str, value: Any, where: str) -> Any:
        if col == "metadata":
            if value is None or value == "":
                return {}
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except json.JSONDecodeError:
                    raise InvalidInputError(
                        f"{where}: field 'metadata' must hold a JSON object; got {value[:40]!r}."
                    ) from None
            if not isinstance(value, dict):
                raise InvalidInputError(
                    f"{where}: field 'metadata' must hold a JSON object; got {_type_name(value)}."
                )
            return value
        if not self.from_csv:
            return value
        if value is None or value == "":
            return None
        if col.startswith("metric_"):
            try:
                return float(value)
            except ValueError:
                raise InvalidInputError(
                    f"{where}: field '{col}' must be a number; got {value[:40]!r}."
                ) from None
        return _num(value)

    def metadata(self, row: Mapping[str, Any], where: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        nested: dict[str, Any] = {}
        for col in self.meta_cols:
            value = self.meta(col, row.get(col), where)
            if col == "metadata":
                nested = value
            else:
                out[col] = value
        return {**nested, **out}

    def set_id(self, row: Mapping[str, Any], where: str, index: int) -> str:
        if self.id_col is None:
            return str(index)
        value = row.get(self.id_col)
        if value is None or value == "":
            raise InvalidInputError(
                f"{where}: field '{self.id_col}' is empty; every set needs an id."
            )
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return str(value)

    # row groups -> sets -----------------------------------------------------------------

    def sets(self, rows: Iterable[tuple[str, Mapping[str, Any]]]) -> Iterator[ResponseSet]:
        if self.kind == "long":
            yield from self._long(rows)
            return
        for index, (where, row) in enumerate(rows):
            set_id = self.set_id(row, where, index)
            if self.kind == "wide":
                responses = [
                    self.text(row.get(c), where, c, empty_is_none=False) or ""
                    for c in self.resp_cols
                ]
            else:
                value: Any = row.get("responses")
                if isinstance(value, str) and self.from_csv:
                    try:
                        value = json.loads(value)
                    except json.JSONDecodeError:
                        value = "?"
                if hasattr(value, "tolist"):
                    value = value.tolist()
                if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
                    raise InvalidInputError(
                        f"{where}: field 'responses' must be a list of strings; "
                        f"got {_type_name(value)}."
                    )
                responses = list(value)
            prompt = (
                self.text(row.get(self.prompt_col), where, self.prompt_col, empty_is_none=True)
                if self.prompt_col
                else None
            )
            label = self.label(row.get(self.label_col), where) if self.label_col else None
            yield ResponseSet(set_id, responses, prompt, label, self.metadata(row, where))

    def _long(self, rows: Iterable[tuple[str, Mapping[str, Any]]]) -> Iterator[ResponseSet]:
        groups: dict[str, ResponseSet] = {}
        firsts: dict[str, dict[str, Any]] = {}
        const_cols = [c for c in (self.prompt_col, self.label_col) if c] + self.meta_cols
        for index, (where, row) in enumerate(rows):
            set_id = self.set_id(row, where, index)
            response = self.text(row.get("response"), where, "response", empty_is_none=False)
            group = groups.get(set_id)
            if group is None:
                firsts[set_id] = {c: row.get(c) for c in const_cols}
                prompt = (
                    self.text(row.get(self.prompt_col), where, self.prompt_col, empty_is_none=True)
                    if self.prompt_col
                    else None
                )
                label = self.label(row.get(self.label_col), where) if self.label_col else None
                group = ResponseSet(set_id, [], prompt, label, self.metadata(row, where))
                groups[set_id] = group
            else:
                first = firsts[set_id]
                for c in const_cols:
                    if row.get(c) != first[c] and not (
                        _is_blank(row.get(c)) and _is_blank(first[c])
                    ):
                        got, before = str(row.get(c))[:40], str(first[c])[:40]
                        raise InvalidInputError(
                            f"{where}: field '{c}' must be the same on every row of set "
                            f"{set_id!r}; got {got!r} after {before!r}."
                        )
            group.responses.append(response or "")
        yield from groups.values()


def _is_blank(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def _read_csv(fh: IO[bytes], name: str) -> Iterator[ResponseSet]:
    counter = [0]
    reader = csv.reader(_decode_lines(fh, name, counter), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InvalidInputError(f"{name}: the file is empty; expected a CSV header.") from None
    except csv.Error as exc:
        raise InvalidInputError(f"{name} line {counter[0]}: invalid CSV ({exc}).") from None
    header = [h.strip() for h in header]
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise InvalidInputError(f"{name} line 1: column {dupes[0]!r} appears twice in the header.")
    layout = _TableLayout(header, name, from_csv=True)

    def rows() -> Iterator[tuple[str, dict[str, str]]]:
        rowno = 0
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise InvalidInputError(f"{name} line {counter[0]}: invalid CSV ({exc}).") from None
            if not cells or cells == [""] and len(header) > 1:
                continue
            rowno += 1
            where = f"{name} row {rowno} (line {counter[0]})"
            if len(cells) != len(header):
                raise InvalidInputError(
                    f"{where}: expected {len(header)} fields as in the header; got {len(cells)}."
                )
            yield where, dict(zip(header, cells, strict=True))

    yield from layout.sets(rows())


def _read_parquet(fh: IO[bytes], name: str) -> Iterator[ResponseSet]:
    pq = require("pyarrow.parquet", extra="io", package="pyarrow")
    source: Any = fh if fh.seekable() else io.BytesIO(fh.read())
    try:
        pf = pq.ParquetFile(source)
    except Exception as exc:  # pyarrow raises its own error types
        raise InvalidInputError(f"{name}: not a readable Parquet file ({exc}).") from None
    layout = _TableLayout(pf.schema_arrow.names, name, from_csv=False)

    def rows() -> Iterator[tuple[str, dict[str, Any]]]:
        rowno = 0
        for batch in pf.iter_batches():
            for row in batch.to_pylist():
                rowno += 1
                yield f"{name} row {rowno}", row

    yield from layout.sets(rows())


def _sniff(data: bytes) -> str:
    """Guess the format of stdin from its first bytes."""
    stripped = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(b"PAR1"):
        return "parquet"
    if stripped.startswith(b"["):
        return "json"
    if stripped.startswith(b"{"):
        try:
            json.loads(stripped.split(b"\n", 1)[0])
        except ValueError:
            return "json"
        return "jsonl"
    return "csv"


_READERS = {"jsonl": _read_jsonl, "json": _read_json, "csv": _read_csv, "parquet": _read_parquet}


def read_sets(path: str | os.PathLike[str], fmt: str | None = None) -> Iterator[ResponseSet]:
    """Read response sets from a file (or stdin), lazily, one :class:`ResponseSet` at a time.

    Args:
        path: File path, or ``"-"`` for stdin. ``.gz`` files are decompressed.
        fmt: ``jsonl``, ``json``, ``csv`` or ``parquet``; ``None`` guesses from the extension
            (for stdin: from the first bytes).

    Yields:
        The sets in file order. Ids are kept as read, duplicates included.

    Raises:
        InvalidInputError: On the first malformed record, naming file, line/row and field.
        MissingDependencyError: Parquet without pyarrow.
        FileNotFoundError: If the file does not exist.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "sets.jsonl"
        >>> _ = p.write_text('{"id": "a", "responses": ["x y", "x z"], "temp": 0.7}\\n')
        >>> [(s.set_id, s.responses, s.metadata) for s in read_sets(p)]
        [('a', ['x y', 'x z'], {'temp': 0.7})]
    """
    name = _display(path)
    if str(path) == "-":
        data = sys.stdin.buffer.read()
        chosen = _sniff(data) if fmt is None else detect_format(path, fmt)
        yield from _READERS[chosen](io.BytesIO(data), name)
        return
    chosen = detect_format(path, fmt)
    fh = _open_binary(path)
    try:
        yield from _READERS[chosen](fh, name)
    finally:
        fh.close()


# --------------------------------------------------------------------------------------------
# writers of sets


def _open_text_out(path: str | os.PathLike[str], mode: str = "w") -> IO[str]:
    if str(path) == "-":
        return sys.stdout
    if str(path).lower().endswith(".gz"):
        raise InvalidInputError(f"{_display(path)}: compressed output is not supported.")
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
        >>> [s.to_dict() for s in read_sets(p)]
        [{'set_id': 'a', 'responses': ['x', 'y'], 'label': 1}]
    """
    chosen = detect_format(path, fmt)
    if layout not in {"long", "wide"}:
        raise InvalidInputError(f"layout must be 'long' or 'wide'; got {layout!r}.")
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
            count = _write_sets_csv(items, fh, layout, _display(path))  # type: ignore[arg-type]
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
            if self.fmt == "json":
                fh = _open_text_out(self.path)
                try:
                    doc: Any = records
                    if self.extra:
                        doc = {"results": records, **self.extra}
                    text = json.dumps(
                        _clean(doc), ensure_ascii=False, indent=1, default=_json_default
                    )
                    fh.write(text + "\n")
                finally:
                    if fh is not sys.stdout:
                        fh.close()
                    else:
                        fh.flush()
            else:
                _write_records_parquet(records, self.path, self.columns)
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
    pq.write_table(pa.table(data), str(path))


def read_records(path: str | os.PathLike[str], fmt: str | None = None) -> Iterator[dict[str, Any]]:
    """Read result records back (JSONL, JSON, CSV, Parquet), e.g. to resume a run.

    A JSONL file whose last line was cut off by an interrupted run yields the complete lines only.
    Nested values that CSV/Parquet hold as JSON text (``reasons``, ``per_response``) are decoded.

    Raises:
        InvalidInputError: If a line other than the last is not valid JSON.
    """
    chosen = detect_format(path, fmt)
    name = _display(path)
    if chosen == "jsonl":
        with open(path, "rb") as fh:
            lines = fh.read().split(b"\n")
        for i, raw in enumerate(lines):
            if not raw.strip():
                continue
            try:
                yield json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                if i == len(lines) - 1:  # a torn last line (no newline): dropped
                    return
                raise InvalidInputError(
                    f"{name} line {i + 1}: not a valid JSON record; cannot resume from this file."
                ) from None
    elif chosen == "json":
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        yield from doc["results"] if isinstance(doc, dict) else doc
    elif chosen == "csv":
        with open(path, encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                yield {k: _record_cell(k, v) for k, v in row.items()}
    else:
        pq = require("pyarrow.parquet", extra="io", package="pyarrow")
        for row in pq.read_table(str(path)).to_pylist():
            yield {k: _record_cell(k, v) if isinstance(v, str) else v for k, v in row.items()}


def _record_cell(key: str, value: str | None) -> Any:
    if value is None or value == "":
        return None
    if key in {"reasons", "per_response", "signatures"} and value[:1] in "{[":
        return json.loads(value)
    if key in {"set_id"}:
        return value
    return _num(value)
