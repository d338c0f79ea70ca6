"""Readers: response sets (JSONL, JSON, CSV long and wide, Parquet), CDM instantiations, records.

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
use the position of the set in the input, which :func:`divmeter.engine.batch.score_sets` writes as
the ``row`` field of every result.

A malformed file stops with one line naming the file, the line or row and the field, e.g.
``responses.jsonl line 17: field 'responses' must be a list of strings; got str.``

CDM input (:func:`read_cdm_jsonl`, :func:`read_instantiation_sets`) is JSONL, one abstract
representation per line (see :mod:`divmeter.inputs.data.items`). Result records (the output of
``divmeter score``) are read back by :func:`read_records`, e.g. to resume a run.

Every JSON line goes through :func:`divmeter.inputs.data.lines.json_lines` (one wording for every
error).
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import IO, Any

from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.items import CDMItem, cdm_item
from divmeter.inputs.data.lines import (
    csv_error,
    csv_reader,
    decode_all,
    decode_lines,
    detect_format,
    display_name,
    invalid_json,
    json_lines,
    loads,
    max_line,
    open_source,
    prepend,
    read_head,
    read_json_lines,
    read_whole,
    require_object,
    table_hint,
    type_name,
)
from divmeter.inputs.data.model import ResponseSet
from divmeter.inputs.data.records import Grouping, TableLayout, record_cell, set_from_object

#: What a user may do instead of one big JSON document (said when one is too long).
JSONL_HINT = ", or JSONL: one record per line, streamed"

__all__ = [
    "read_sets",
    "read_records",
    "read_cdm_jsonl",
    "read_instantiation_sets",
]


def _read_jsonl(fh: IO[bytes], name: str, grouping: Grouping | None = None
                ) -> Iterator[ResponseSet]:
    if grouping is not None:  # long form: one response an object, grouped into sets
        yield from _grouped_objects(json_lines(fh, name), name, grouping)
        return
    for index, (where, obj) in enumerate(json_lines(fh, name)):
        yield set_from_object(obj, where, index)


def _grouped_objects(lines: Iterator[tuple[str, Any]], name: str, grouping: Grouping
                     ) -> Iterator[ResponseSet]:
    """Long-form JSONL (one response an object) as sets; the first object's keys are the
    table's columns."""
    first = next(lines, None)
    if first is None:
        return
    head = require_object(first[1], first[0], "row")
    layout = TableLayout(list(head), name, from_csv=False, grouping=grouping)

    def rows() -> Iterator[tuple[str, dict[str, Any]]]:
        yield first[0], head
        for where, obj in lines:
            yield where, require_object(obj, where, "row")

    yield from layout.sets(rows())


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
        doc = loads(text, name)
        if not isinstance(doc.get("sets"), list):
            raise InvalidInputError(
                f"{name}: a JSON file must hold a list of sets, or an object with a list "
                f"'sets'; got an object with keys {sorted(doc)[:5]}."
            )
        for i, obj in enumerate(doc["sets"]):
            yield set_from_object(obj, f"{name} item {i + 1}", i)
        return
    if pos >= n or text[pos] != "[":
        hint = table_hint(text[pos:].split("\n", 1)[0])
        raise InvalidInputError(
            f"{name} line {line_of(pos)}: a JSON file must hold a list of sets (starting with "
            "'['); " + (hint + "." if hint else "for one object per line use the .jsonl format.")
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
            raise invalid_json(name, exc.lineno, exc) from None
        except RecursionError:
            raise InvalidInputError(
                f"{name} line {line_of(start)}: JSON nested too deeply to read (more levels than "
                "the parser allows); expected response sets a few levels deep."
            ) from None
        yield set_from_object(obj, f"{name} line {line_of(start)}", index)
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


def _read_json(fh: IO[bytes], name: str, grouping: Grouping | None = None
               ) -> Iterator[ResponseSet]:
    if grouping is not None:
        raise InvalidInputError(f"{name}: --group-by reads a long-form CSV, JSONL or Parquet "
                                "file (one response a row); a .json file holds whole sets.")
    data = read_whole(fh, name, "a JSON file", JSONL_HINT)
    yield from _read_json_text(decode_all(data, name), name)


def _read_csv(fh: IO[bytes], name: str, grouping: Grouping | None = None
              ) -> Iterator[ResponseSet]:
    counter = [0]
    reader = csv_reader(decode_lines(fh, name, counter))
    try:
        header = next(reader)
    except StopIteration:
        raise InvalidInputError(f"{name}: the file is empty; expected a CSV header.") from None
    except csv.Error as exc:
        raise csv_error(name, counter[0], exc) from None
    header = [h.strip() for h in header]
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise InvalidInputError(f"{name} line 1: column {dupes[0]!r} appears twice in the header.")
    layout = TableLayout(header, name, from_csv=True, grouping=grouping)

    def rows() -> Iterator[tuple[str, dict[str, str]]]:
        rowno = 0
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise csv_error(name, counter[0], exc) from None
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


def _read_parquet(fh: IO[bytes], name: str, grouping: Grouping | None = None
                  ) -> Iterator[ResponseSet]:
    pq = require("pyarrow.parquet", extra="io", package="pyarrow")
    source: Any = fh if fh.seekable() else io.BytesIO(
        read_whole(fh, name, "Parquet from a pipe", ", or the Parquet file's path in its place"))
    try:
        pf = pq.ParquetFile(source)
    except Exception as exc:  # pyarrow raises its own error types
        raise InvalidInputError(f"{name}: not a readable Parquet file ({exc}).") from None
    layout = TableLayout(pf.schema_arrow.names, name, from_csv=False, grouping=grouping)

    def rows() -> Iterator[tuple[str, dict[str, Any]]]:
        rowno = 0
        for batch in pf.iter_batches():
            for row in batch.to_pylist():
                rowno += 1
                yield f"{name} row {rowno}", row

    yield from layout.sets(rows())


def _sniff(data: bytes) -> str:
    """Guess the format of stdin from its first bytes (up to its first non-blank line)."""
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


def read_sets(path: str | os.PathLike[str], fmt: str | None = None, *,
              group_by: Sequence[str] | None = None, text_column: str = "response",
              label_column: str | None = None) -> Iterator[ResponseSet]:
    """Read response sets from a file (or stdin), lazily, one :class:`ResponseSet` at a time.

    Args:
        path: File path, or ``"-"`` for stdin. ``.gz`` files are decompressed.
        fmt: ``jsonl``, ``json``, ``csv`` or ``parquet``; ``None`` guesses from the extension
            (for stdin: from the first bytes).
        group_by: A long-form file (one response a row: CSV, JSONL or Parquet) without a
            ``set_id`` column: the column(s) whose values tell the sets apart, e.g.
            ``["prompt"]``; a set's id is its values joined with ``|`` (``divmeter score
            --group-by``).
        text_column: The column of texts in long form (default ``response``).
        label_column: The column holding each set's label in long form (default ``label``).

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
        >>> _ = p.with_suffix(".csv").write_text("prompt,response\\nA,x y\\nB,u\\nA,x z\\n")
        >>> [(s.set_id, s.responses) for s in read_sets(p.with_suffix(".csv"),
        ...                                               group_by=["prompt"])]
        [('A', ['x y', 'x z']), ('B', ['u'])]
    """
    name = display_name(path)
    grouping = (Grouping(tuple(group_by or ()), text_column, label_column)
                if group_by or text_column != "response" or label_column else None)
    if str(path) == "-":  # streamed: only the first line is read ahead to sniff the format
        fh: IO[bytes] = sys.stdin.buffer
        if fmt is None:
            head = read_head(fh, name)
            chosen = _sniff(head)
            fh = prepend(head, fh)
        else:
            chosen = detect_format(path, fmt)
        yield from _READERS[chosen](fh, name, grouping)
        return
    chosen = detect_format(path, fmt)
    with open_source(path) as fh:
        yield from _READERS[chosen](fh, name, grouping)


# --------------------------------------------------------------------------------------------
# CDM instantiations


def read_cdm_jsonl(
    path: str | os.PathLike[str], *, open_mark: str = "[[", close_mark: str = "]]"
) -> list[CDMItem]:
    """Read CDM input from JSONL: one abstract representation (k instantiations) per line.

    Each line is an object with ``"instantiations"`` (list of equal-length lists of phrases) or
    ``"texts"`` (list of texts with fillers marked ``[[...]]``); optional ``"id"``, ``"label"``;
    other fields go to ``metadata`` (Susilo, Suominen & Haslum, sec. 3: the filler lists CDM
    compares). ``path`` may be ``.gz`` or ``"-"`` for stdin.

    Raises:
        InvalidInputError: Naming the file, line and field, for malformed JSON or fields.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "c.jsonl")
        >>> _ = open(f, "w").write('{"id": "s1", "texts": ["[[a]] x", "[[b]] y"]}\\n')
        >>> read_cdm_jsonl(f)[0].instantiations
        [['a'], ['b']]
    """
    return [
        cdm_item(
            require_object(obj, where, "item"), where, index,
            open_mark=open_mark, close_mark=close_mark,
        )
        for index, (where, obj) in enumerate(read_json_lines(path))
    ]


def read_instantiation_sets(
    path: str | os.PathLike[str], fmt: str | None = None
) -> Iterator[ResponseSet]:
    """Read CDM input (:func:`read_cdm_jsonl`) as response sets for a batch run.

    Each item becomes a :class:`ResponseSet` with ``instantiations`` set, ``responses`` = the
    plain texts when the item gave marked ``texts`` (else empty), and its id, label and metadata;
    so ``divmeter score FILE -m cdm`` scores every item, and text metrics requested next to it
    score the plain texts.

    Raises:
        InvalidInputError: For a format other than JSONL, or a malformed line.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "c.jsonl")
        >>> _ = open(f, "w").write('{"id": "s1", "instantiations": [["a"], ["b"]]}\\n')
        >>> next(read_instantiation_sets(f)).instantiations
        [['a'], ['b']]
    """
    chosen = detect_format(path, fmt)
    if chosen != "jsonl":
        raise InvalidInputError(
            f"{display_name(path)}: instantiations (CDM input) are read from JSONL only; "
            f"got format {chosen!r}."
        )
    for item in read_cdm_jsonl(path):
        yield ResponseSet(
            item.item_id, list(item.texts or []), None, item.label, item.metadata,
            instantiations=item.instantiations,
        )


# --------------------------------------------------------------------------------------------
# result records (for --resume and meta-evaluation)


def read_records(path: str | os.PathLike[str], fmt: str | None = None) -> Iterator[dict[str, Any]]:
    """Read result records back (JSONL, JSON, CSV, Parquet), e.g. to resume a run.

    A JSONL file whose last line was cut off by an interrupted run yields the complete lines only.
    Nested values that CSV/Parquet hold as JSON text (``reasons``, ``per_response``) are decoded.

    Raises:
        InvalidInputError: If a line other than the last is not valid JSON.
    """
    chosen = detect_format(path, fmt)
    name = display_name(path)
    if chosen == "jsonl":
        for where, rec in read_json_lines(path, torn_tail=True):
            yield require_object(rec, where, "record")
        return
    if chosen == "json":
        with open_source(path) as fh:
            doc = loads(decode_all(read_whole(fh, name, "a JSON file", JSONL_HINT), name), name)
        if isinstance(doc, dict) and isinstance(doc.get("results"), list):
            doc = doc["results"]
        if not isinstance(doc, list):
            raise InvalidInputError(
                f"{name}: a JSON file of result records must hold a list of records (or an "
                f"object with a list 'results'); got {type_name(doc)}."
            )
        for i, rec in enumerate(doc):
            yield require_object(rec, f"{name} item {i + 1}", "record")
        return
    if chosen == "csv":
        counter = [0]
        with open_source(path) as fh:
            reader = csv.DictReader(decode_lines(fh, name, counter), strict=True)
            csv.field_size_limit(max_line())
            try:
                for row in reader:
                    if None in row or None in row.values():
                        raise InvalidInputError(
                            f"{name} line {counter[0]}: expected {len(reader.fieldnames or [])} "
                            "fields as in the header; got another number."
                        )
                    yield {k: _record_cell(k, v, f"{name} line {counter[0]}")
                           for k, v in row.items()}
            except csv.Error as exc:
                raise csv_error(name, counter[0], exc) from None
        return
    pq = require("pyarrow.parquet", extra="io", package="pyarrow")
    try:
        table = pq.read_table(str(path))
    except Exception as exc:  # pyarrow raises its own error types
        raise InvalidInputError(f"{name}: not a readable Parquet file ({exc}).") from None
    for i, row in enumerate(table.to_pylist()):
        yield {k: _record_cell(k, v, f"{name} row {i + 1}") if isinstance(v, str) else v
               for k, v in row.items()}


def _record_cell(key: str, value: str | None, where: str) -> Any:
    try:
        return record_cell(key, value)
    except ValueError:  # a nested column that is not JSON (json.JSONDecodeError is one)
        raise InvalidInputError(
            f"{where}: field {key!r} must hold JSON; got {str(value)[:40]!r}."
        ) from None
