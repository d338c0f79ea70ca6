"""Record shapes shared by the readers: one response set from a JSON object or a table row.

* :func:`set_from_object`: a JSONL/JSON object -> :class:`~divmeter.inputs.data.model.ResponseSet`
  (``set_id``/``id``, ``responses``, ``prompt``/``context``, ``label``, ``metadata``; other keys
  go into ``metadata``);
* :class:`TableLayout`: which columns of a CSV/Parquet table play which role (long form, Tevet
  wide form ``resp_0..resp_k``, or a ``responses`` list column), and the rows -> sets grouping;
* :func:`num` and :func:`record_cell`: CSV cells as numbers where they plainly are.

Every error names the place (``NAME line N`` / ``NAME row R (line N)``) and the field, in the
phrasing of :mod:`divmeter.inputs.data.lines`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.lines import json_field, require_object, string_list, type_name
from divmeter.inputs.data.model import ResponseSet

__all__ = ["set_from_object", "TableLayout", "Grouping", "num", "record_cell"]

_ID_KEYS = ("set_id", "id")
_PROMPT_KEYS = ("prompt", "context")
_WIDE_ID_KEYS = ("sample_id", "set_id", "id")
_WIDE_LABEL_KEYS = ("label_value", "label")
_RESP_COL = re.compile(r"^resp_(\d+)$")
_PLAIN_INT = re.compile(r"^-?(0|[1-9]\d*)$")
_PLAIN_FLOAT = re.compile(r"^-?\d+\.\d+([eE][-+]?\d+)?$|^-?\d+[eE][-+]?\d+$")


def num(value: str, *, integral_to_int: bool = False) -> int | float | str:
    """A CSV cell as int/float when it is plainly one (``"007"`` stays a string), else as is."""
    s = value.strip()
    if _PLAIN_INT.match(s):
        if len(s) > 4000:  # Python converts at most 4,300 digits: such a cell stays text
            return value
        return int(s)
    if _PLAIN_FLOAT.match(s) or s.lower() in {"nan", "inf", "-inf"}:
        f = float(s)
        return int(f) if integral_to_int and f.is_integer() and abs(f) < 2**53 else f
    return value


def set_from_object(obj: Any, where: str, index: int) -> ResponseSet:
    """One response set from a JSON object read at ``where`` (``index``: its position, the id
    of a set without one).

    Raises:
        InvalidInputError: Naming ``where`` and the field.

    Example:
        >>> set_from_object({"id": 7, "responses": ["a"], "temp": 1}, "s.jsonl line 1", 0)
        ResponseSet(set_id='7', responses=['a'], prompt=None, label=None, metadata={'temp': 1})
    """
    obj = dict(require_object(obj, where, "set"))
    set_id: Any = None
    for key in _ID_KEYS:
        if key in obj:
            set_id = obj.pop(key)
            break
    if set_id is None:
        set_id = str(index)
    elif isinstance(set_id, bool) or not isinstance(set_id, (str, int)):
        raise InvalidInputError(
            f"{where}: field 'set_id' must be a string or an integer; got {type_name(set_id)}."
        )
    if "responses" not in obj:
        raise InvalidInputError(
            f"{where}: field 'responses' is missing; expected a list of strings."
        )
    responses = string_list(obj.pop("responses"), where, "responses")
    prompt: Any = None
    for key in _PROMPT_KEYS:
        if key in obj:
            prompt = obj.pop(key)
            if prompt is not None and not isinstance(prompt, str):
                raise InvalidInputError(
                    f"{where}: field '{key}' must be a string; got {type_name(prompt)}."
                )
            break
    label = obj.pop("label", None)
    if isinstance(label, (dict, list)):
        raise InvalidInputError(
            f"{where}: field 'label' must be a number, string or boolean; got {type_name(label)}."
        )
    metadata = obj.pop("metadata", None) or {}
    if not isinstance(metadata, dict):
        raise InvalidInputError(
            f"{where}: field 'metadata' must be an object; got {type_name(metadata)}."
        )
    metadata = {**metadata, **obj}
    return ResponseSet(str(set_id), list(responses), prompt, label, metadata)



@dataclass(frozen=True)
class Grouping:
    """How a long-form table (one response a row) becomes sets: the column(s) whose values tell
    the sets apart (``by``; none: a ``set_id`` column), the column of texts and the label's.

    A set's id is its ``by`` values joined with ``|`` (as
    :func:`divmeter.engine.frame.sets_from_frame` names them); the ``by`` columns stay in the
    set's metadata (a ``prompt`` / ``context`` column is also its prompt), so a score output
    carries them.

    Example:
        >>> Grouping(by=("prompt",)).check(["prompt", "response"], "t.csv")
        >>> Grouping(by=("model",)).check(["prompt", "response"], "t.csv")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: t.csv: --group-by column 'model' is not in ...
    """

    by: tuple[str, ...] = ()
    text: str = "response"
    label: str | None = None

    def check(self, columns: Sequence[str], name: str) -> None:
        """Refuse a named column the table does not have (one line, the columns listed)."""
        shown = ", ".join(_short(str(c)) for c in columns[:12])
        more = "..." if len(columns) > 12 else ""
        for what, col in ([("--group-by", c) for c in self.by]
                          + [("--label-column", self.label)] * (self.label is not None)
                          + [("--text-column", self.text)] * (self.text != "response"
                                                              or bool(self.by))):
            if col not in columns:
                raise InvalidInputError(
                    f"{name}: {what} column {col!r} is not in the header; the columns are "
                    f"{shown}{more}."
                )


class TableLayout:
    """Which columns of a table play which role.

    Args:
        columns: The table's header.
        name: The source's name in messages.
        from_csv: Cells are CSV text (numbers parsed), not typed values.
        grouping: How a long-form table (one response a row) tells its sets apart, and its text
            and label columns (:class:`Grouping`; default: a ``set_id`` column, ``response``,
            ``label``).
    """

    def __init__(self, columns: Sequence[str], name: str, *, from_csv: bool,
                 grouping: Grouping | None = None) -> None:
        self.columns = list(columns)
        self.name = name
        self.from_csv = from_csv
        grouping = grouping or Grouping()
        grouping.check(self.columns, name)
        self.group_by = list(grouping.by)
        self.text_col = grouping.text
        resp = [(int(m.group(1)), c) for c in columns if (m := _RESP_COL.match(c))]
        if self.group_by or grouping.text != "response":
            self.kind = "long"
        elif "responses" in columns:
            self.kind = "list"
        elif "response" in columns:
            self.kind = "long"
        elif resp:
            self.kind = "wide"
        else:
            first = ",".join(str(c) for c in columns).lstrip()
            if first[:1] in ("{", "["):
                raise InvalidInputError(
                    f"{name} line 1: read as CSV, but the line is JSON ({_short(first)}): it "
                    "looks like JSONL, one set per line; drop --input-format csv (or give "
                    "--input-format jsonl)."
                )
            shown = ", ".join(_short(str(c)) for c in columns[:8])
            raise InvalidInputError(
                f"{name}: the header must have a 'response' column (long form, one row per "
                "response), resp_0..resp_k columns (wide form, one row per set) or a "
                f"'responses' list column; got columns {shown}"
                f"{'...' if len(columns) > 8 else ''}."
            )
        self.resp_cols = [c for _, c in sorted(resp)] if self.kind == "wide" else []
        id_keys = _WIDE_ID_KEYS if self.kind == "wide" else _ID_KEYS + ("sample_id",)
        self.id_col = None if self.group_by else next((k for k in id_keys if k in columns), None)
        if self.kind == "long" and self.id_col is None and not self.group_by:
            raise InvalidInputError(
                f"{name}: a long-form table needs a 'set_id' column next to "
                f"'{self.text_col}', or the column(s) that tell its sets apart: --group-by "
                "COLUMN, e.g. --group-by prompt (library: group_by=[...])."
            )
        self.prompt_col = next((k for k in _PROMPT_KEYS if k in columns), None)
        label_keys = _WIDE_LABEL_KEYS if self.kind == "wide" else ("label", "label_value")
        self.label_col = grouping.label or next((k for k in label_keys if k in columns), None)
        used = {self.id_col, self.prompt_col, self.label_col, self.text_col, "responses"}
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
                f"{where}: field '{field}' must be a string; got {type_name(value)}."
            )
        if empty_is_none and value == "":
            return None
        return value

    def label(self, value: Any, where: str) -> Any:
        if value is None or value == "":
            return None
        if isinstance(value, str):
            return num(value, integral_to_int=True)
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
                value = json_field(value, f"{where}: field 'metadata'", "a JSON object")
            if not isinstance(value, dict):
                raise InvalidInputError(
                    f"{where}: field 'metadata' must hold a JSON object; got {type_name(value)}."
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
        return num(value)

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
        if self.group_by:  # the values of the grouping columns, as sets_from_frame joins them
            return "|".join(_key_text(row.get(c)) for c in self.group_by)
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
                        f"got {type_name(value)}."
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
            response = self.text(row.get(self.text_col), where, self.text_col,
                                 empty_is_none=False)
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


def _key_text(value: Any) -> str:
    """A grouping cell as a set id: integral floats without ``.0``, blanks as ``""``.

    Example:
        >>> _key_text(3.0), _key_text("a"), _key_text(None)
        ('3', 'a', '')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _short(text: str, limit: int = 40) -> str:
    """``text`` quoted, cut to ``limit`` characters, for a message.

    Example:
        >>> _short("a" * 50, 10)
        "'aaaaaaa...'"
    """
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _is_blank(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def record_cell(key: str, value: str | None) -> Any:
    """A cell of a score record read from CSV/Parquet: nested JSON decoded, numbers parsed."""
    if value is None or value == "":
        return None
    if key in {"reasons", "per_response", "signatures"} and value[:1] in "{[":
        return json.loads(value)
    if key in {"set_id"}:
        return value
    return num(value)
