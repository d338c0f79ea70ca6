"""The one JSONL line reader (divmeter.inputs.data.lines) behind every JSONL input: response sets,
preference pairs, CDM instantiations and resumed score records give the same error, in the same
words, for the same broken line; all read .gz, stdin and a leading BOM alike."""

from __future__ import annotations

import gzip
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data import read_cdm_jsonl, read_records, read_sets
from divmeter.inputs.data.lines import json_lines
from divmeter.inputs.data.tables import read_pairs


def _sets(p: Any) -> list[Any]:
    return [s.responses for s in read_sets(p)]


def _pairs(p: Any) -> list[Any]:
    return read_pairs(p).set1


def _cdm(p: Any) -> list[Any]:
    return [i.instantiations for i in read_cdm_jsonl(p)]


def _records(p: Any) -> list[Any]:
    return [r["row"] for r in read_records(p)]


# (name, reader, a good line, what the reader returns for it, the word for one record)
READERS: list[tuple[str, Callable[[Any], list[Any]], dict[str, Any], Any, str]] = [
    ("sets", _sets, {"set_id": "a", "responses": ["x", "y"]}, ["x", "y"], "set"),
    ("pairs", _pairs, {"set1": ["x"], "set2": ["y"], "label": 0}, ["x"], "pair"),
    ("cdm", _cdm, {"instantiations": [["a"], ["b"]]}, [["a"], ["b"]], "item"),
    ("records", _records, {"set_id": "a", "row": 0, "m": 0.5}, 0, ""),
]
IDS = [r[0] for r in READERS]

BROKEN = [
    (b"{not json", "invalid JSON (Expecting property name enclosed in double quotes at column 2)."),
    (b'{"a": [}', "invalid JSON (Expecting value at column 8)."),
    (b'{"a": "x\tb"}', "invalid JSON (Invalid control character at column 9)."),
    (b'{"a": "\xff"}', "not valid UTF-8 (byte 0xff at column 8); divmeter reads UTF-8 only."),
]


def _file(tmp_path: Path, name: str, lines: list[bytes]) -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


@pytest.mark.parametrize(("bad", "message"), BROKEN)
@pytest.mark.parametrize(("name", "read", "good", "got", "what"), READERS, ids=IDS)
def test_same_broken_line_same_message(
    tmp_path: Path, name: str, read: Callable[[Any], list[Any]], good: dict[str, Any],
    got: Any, what: str, bad: bytes, message: str,
) -> None:
    g = json.dumps(good).encode()
    path = _file(tmp_path, "in.jsonl", [g, b"", bad, g])  # a blank line still counts
    with pytest.raises(InvalidInputError) as err:
        read(path)
    assert str(err.value) == f"in.jsonl line 3: {message}"


@pytest.mark.parametrize(("name", "read", "good", "got", "what"), READERS[:3], ids=IDS[:3])
def test_non_object_line(
    tmp_path: Path, name: str, read: Callable[[Any], list[Any]], good: dict[str, Any],
    got: Any, what: str,
) -> None:
    path = _file(tmp_path, "in.jsonl", [json.dumps(good).encode(), b'["x"]'])
    with pytest.raises(InvalidInputError) as err:
        read(path)
    assert str(err.value) == f"in.jsonl line 2: each {what} must be a JSON object; got list."


@pytest.mark.parametrize(("name", "read", "good", "got", "what"), READERS, ids=IDS)
def test_gzip_and_bom(
    tmp_path: Path, name: str, read: Callable[[Any], list[Any]], good: dict[str, Any],
    got: Any, what: str,
) -> None:
    data = b"\xef\xbb\xbf" + json.dumps(good).encode() + b"\r\n\n"
    path = tmp_path / "in.jsonl.gz"
    path.write_bytes(gzip.compress(data))
    assert read(path) == [got]
    plain = tmp_path / "in.jsonl"
    plain.write_bytes(data)
    assert read(plain) == [got]


@pytest.mark.parametrize(("name", "read", "good", "got", "what"), READERS, ids=IDS)
def test_stdin(
    monkeypatch: pytest.MonkeyPatch, name: str, read: Callable[[Any], list[Any]],
    good: dict[str, Any], got: Any, what: str,
) -> None:
    data = (json.dumps(good) + "\n{oops\n").encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    with pytest.raises(InvalidInputError, match="^<stdin> line 2: invalid JSON"):
        read("-")


def test_torn_tail_only_when_asked() -> None:
    lines = [b'{"a": 1}\n', b'{"a": 2']
    assert list(json_lines(lines, "r.jsonl", torn_tail=True)) == [("r.jsonl line 1", {"a": 1})]
    with pytest.raises(InvalidInputError, match=r"^r.jsonl line 2: invalid JSON \("):
        list(json_lines(lines, "r.jsonl"))
    # a complete last line without its newline is kept either way
    assert len(list(json_lines([b'{"a": 1}'], "r.jsonl", torn_tail=True))) == 1
    # a BOM counts only at the start of the file
    with pytest.raises(InvalidInputError, match=r"^r.jsonl line 2: invalid JSON \(Unexpected"):
        list(json_lines([b"{}\n", b"\xef\xbb\xbf{}\n"], "r.jsonl"))


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"set2": ["y"], "label": 0}, "field 'set1' is missing; expected a list of strings."),
        ({"set1": "x", "set2": ["y"], "label": 0},
         "field 'set1' must be a list of strings (or an object with 'responses'); got str."),
        ({"set1": ["x"], "set2": ["y", 3], "label": 0},
         "field 'set2[1]' must be a string; got int."),
        ({"set1": ["x"], "set2": ["y"]},
         "field 'label' is missing; expected 0 (set1 more diverse), 1 (set2) or 2 (tie)."),
        ({"set1": ["x"], "set2": ["y"], "label": 3},
         "field 'label' must be 0 (set1 more diverse), 1 (set2) or 2 (tie); got 3."),
    ],
)
def test_pair_field_errors(tmp_path: Path, row: dict[str, Any], message: str) -> None:
    path = _file(tmp_path, "p.jsonl", [json.dumps(row).encode()])
    with pytest.raises(InvalidInputError) as err:
        read_pairs(path)
    assert str(err.value) == f"p.jsonl line 1: {message}"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": 1}, "field 'instantiations' is missing; expected lists of phrases (or a field "
         "'texts' with [[filler]] marks)."),
        ({"instantiations": "a"}, "field 'instantiations' must be a list of lists of phrases; "
         "got str."),
        ({"instantiations": [["a"], "b"]}, "field 'instantiations[1]' must be a list of phrases; "
         "got str."),
        ({"instantiations": [["a"], [2]]}, "field 'instantiations[1][0]' must be a string; "
         "got int."),
        ({"instantiations": [["a"], ["b", "c"]]}, "field 'instantiations' must hold lists of one "
         "length (position-aligned); instantiation 0 has 1 phrases, instantiation 1 has 2."),
        ({"texts": "a"}, "field 'texts' must be a list of strings; got str."),
        ({"texts": ["[[a]] x", None]}, "field 'texts[1]' must be a string; got null."),
        ({"texts": ["[[a]] x", "[[b y"]}, "field 'texts': text 1: unbalanced [[...]] marks in "
         "'[[b y'."),
    ],
)
def test_cdm_field_errors(tmp_path: Path, row: dict[str, Any], message: str) -> None:
    path = _file(tmp_path, "c.jsonl", [json.dumps(row).encode()])
    with pytest.raises(InvalidInputError) as err:
        read_cdm_jsonl(path)
    assert str(err.value) == f"c.jsonl line 1: {message}"
