"""Readers and writers of response sets and result records (divmeter.inputs.data
readers/writers)."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path

import pytest

from divmeter.core.errors import InvalidInputError, MissingDependencyError
from divmeter.inputs.data import ResponseSet, read_records, read_sets, write_sets
from divmeter.inputs.data.lines import detect_format
from divmeter.inputs.data.writers import open_record_writer

SETS = [
    ResponseSet(
        "s1",
        ["héllo — 你好 🙂", 'a "quoted", comma', "line one\nline two", ""],
        prompt="Say hi, in any language.",
        label=1,
        metadata={"temp": 0.7, "model": "x", "tags": ["a", "b"], "nested": {"k": None}},
    ),
    ResponseSet("s2", ["  leading space", "trailing space  "], label=0.25),
    ResponseSet("007", ["only one"], prompt="p", metadata={"n": 3}),
]


def _dicts(sets: list[ResponseSet]) -> list[dict]:
    return [s.to_dict() for s in sets]


# ---------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize(
    ("name", "fmt", "layout"),
    [
        ("sets.jsonl", None, "long"),
        ("sets.json", None, "long"),
        ("sets.csv", None, "long"),
        ("sets.parquet", None, "long"),
        ("sets.txt", "jsonl", "long"),
    ],
)
def test_round_trip(tmp_path: Path, name: str, fmt: str | None, layout: str) -> None:
    path = tmp_path / name
    assert write_sets(SETS, path, fmt, layout=layout) == 3
    back = list(read_sets(path, fmt))
    assert _dicts(back) == _dicts(SETS)
    label_types = [type(s.label) for s in back]
    # Parquet stores a label column of one type: ints mixed with floats come back as floats.
    assert label_types == (
        [float, float, type(None)] if "parquet" in name else [int, float, type(None)]
    )


def test_round_trip_wide_csv(tmp_path: Path) -> None:
    sets = [
        ResponseSet("a", ["x, y", ""], prompt="p1", label=2, metadata={"m": 1.5}),
        ResponseSet("a", ["z", "w"], label=0.5),  # repeated id: kept
    ]
    path = tmp_path / "wide.csv"
    write_sets(sets, path, layout="wide")
    assert path.read_text(encoding="utf-8").splitlines()[0] == (
        "set_id,prompt,label,metadata,resp_0,resp_1"
    )
    assert _dicts(list(read_sets(path))) == _dicts(sets)


def test_string_labels_survive_text_formats(tmp_path: Path) -> None:
    sets = [ResponseSet("a", ["x"], label="high"), ResponseSet("b", ["y"], label=True)]
    for name in ("s.jsonl", "s.json"):
        write_sets(sets, tmp_path / name)
        assert [s.label for s in read_sets(tmp_path / name)] == ["high", True]
    write_sets(sets[:1], tmp_path / "s.csv")
    assert [s.label for s in read_sets(tmp_path / "s.csv")] == ["high"]


def test_gzip_input(tmp_path: Path) -> None:
    plain = tmp_path / "sets.jsonl"
    write_sets(SETS, plain)
    gz = tmp_path / "sets.jsonl.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    assert _dicts(list(read_sets(gz))) == _dicts(SETS)


def test_jsonl_fields_aliases_and_extras(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(
        '{"id": 5, "context": "c", "responses": ["a"], "temp": 0.9, "metadata": {"m": 1}}\n'
        "\n"
        '{"responses": ["b", "c"]}\n',
        encoding="utf-8",
    )
    a, b = read_sets(path)
    assert (a.set_id, a.prompt, a.metadata) == ("5", "c", {"m": 1, "temp": 0.9})
    assert (b.set_id, b.responses) == ("1", ["b", "c"])  # no id: its position


def test_long_csv_groups_interleaved_rows(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    path.write_text(
        "set_id,response,prompt,temp\nq1,a,P1,0.5\nq2,b,P2,1\nq1,c,P1,0.5\nq2,,P2,1\n",
        encoding="utf-8",
    )
    got = [(s.set_id, s.responses, s.prompt, s.metadata) for s in read_sets(path)]
    assert got == [
        ("q1", ["a", "c"], "P1", {"temp": 0.5}),
        ("q2", ["b", ""], "P2", {"temp": 1}),
    ]


def test_detect_format() -> None:
    assert detect_format("x.ndjson") == "jsonl"
    assert detect_format("x.PQ") == "parquet"
    assert detect_format("x.csv", "JSONL") == "jsonl"
    with pytest.raises(InvalidInputError, match=r"x.txt: cannot tell the format .*'.txt'"):
        detect_format("x.txt")
    with pytest.raises(InvalidInputError, match="format must be one of jsonl, json, csv, parquet"):
        detect_format("x.csv", "xlsx")


# ---------------------------------------------------------------------------------- stdin


@pytest.mark.parametrize("name", ["s.jsonl", "s.json", "s.csv", "s.parquet"])
def test_stdin_sniffed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    path = tmp_path / name
    write_sets(SETS, path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    assert _dicts(list(read_sets("-"))) == _dicts(SETS)


def test_stdin_explicit_format(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"set_id,response\na,x\na,y\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert [s.responses for s in read_sets("-", "csv")] == [["x", "y"]]


# ---------------------------------------------------------------------------------- Tevet files


def test_tevet_contest_prompt_gen(tevet_dir: Path) -> None:
    sets = list(read_sets(tevet_dir / "conTest" / "con_test_200_with_hds_prompt_gen.csv"))
    assert len(sets) == 200
    assert {len(s.responses) for s in sets} == {5}
    assert len({s.set_id for s in sets}) == 100  # pairs share a context: ids repeat, kept
    first = sets[0]
    assert first.label in (0, 1) and isinstance(first.label, int)
    assert first.prompt
    assert first.metadata["label_name"] == "content_diversity"
    assert set(first.metadata) == {
        "label_name",
        "metric_abs_hds_mean",
        "metric_abs_hds_std",
        "metric_averaged_cosine_similarity",
        "metric_averaged_distinct_ngrams",
        "metric_bert_score",
        "metric_bert_sts",
        "metric_sent_bert",
    }
    assert all(isinstance(v, float) for k, v in first.metadata.items() if k.startswith("metric_"))


def test_tevet_dectest_all_empty_row(tevet_dir: Path) -> None:
    sets = list(read_sets(tevet_dir / "decTest" / "dec_test_1000_no_hds_prompt_gen.csv"))
    assert len(sets) == 1000
    hit = [s for s in sets if s.set_id.endswith("temp1.01::00955")]
    assert len(hit) == 1
    s = hit[0]
    assert s.responses == [""] * 10
    assert s.label == 1.01
    assert s.metadata["label_name"] == "temp"
    assert s.metadata["metric_averaged_distinct_ngrams"] == 0.0


def test_tevet_nuggets_duplicate_ids_kept(tevet_dir: Path) -> None:
    sets = list(read_sets(tevet_dir / "McDiv_nuggets" / "mcdiv_nuggets_no_hds_prompt_gen.csv"))
    assert len(sets) == 1008
    by_id: dict[str, set] = {}
    for s in sets:
        by_id.setdefault(s.set_id, set()).add(s.label)
    assert len(by_id) == 765
    assert any(labels == {0, 1} for labels in by_id.values())  # same id, different labels


# ---------------------------------------------------------------------------------- errors


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


GOOD = '{"set_id": "a", "responses": ["x"]}\n'


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"set_id": "c", "responses": "just one"}',
            "responses.jsonl line 3: field 'responses' must be a list of strings; got str.",
        ),
        (
            '{"set_id": "c", "responses": ["x", null]}',
            "responses.jsonl line 3: field 'responses[1]' must be a string; got null.",
        ),
        (
            '{"set_id": "c"}',
            "responses.jsonl line 3: field 'responses' is missing; expected a list of strings.",
        ),
        (
            '{"set_id": ["c"], "responses": []}',
            "responses.jsonl line 3: field 'set_id' must be a string or an integer; got list.",
        ),
        (
            '{"set_id": "c", "responses": [], "prompt": 3}',
            "responses.jsonl line 3: field 'prompt' must be a string; got int.",
        ),
        (
            '{"set_id": "c", "responses": [], "metadata": [1]}',
            "responses.jsonl line 3: field 'metadata' must be an object; got list.",
        ),
        ('["x", "y"]', "responses.jsonl line 3: each set must be a JSON object; got list."),
        (
            '{"set_id": "c", "responses": [}',
            "responses.jsonl line 3: invalid JSON (Expecting value at column 31).",
        ),
    ],
)
def test_jsonl_errors_name_file_line_field(tmp_path: Path, line: str, message: str) -> None:
    path = _write(tmp_path, "responses.jsonl", GOOD + GOOD + line + "\n" + GOOD)
    with pytest.raises(InvalidInputError) as err:
        list(read_sets(path))
    assert str(err.value) == message


def test_invalid_utf8_names_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.jsonl", GOOD.encode() + b'{"set_id": "b\xff", "responses": []}\n')
    with pytest.raises(InvalidInputError, match=r"^bad.jsonl line 2: not valid UTF-8 \(byte 0xff"):
        list(read_sets(path))


def test_json_array_errors_give_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "sets.json",
        '[\n  {"set_id": "a", "responses": ["x"]},\n  {"set_id": "b", "responses": 7}\n]\n',
    )
    with pytest.raises(InvalidInputError) as err:
        list(read_sets(path))
    assert str(err.value) == (
        "sets.json line 3: field 'responses' must be a list of strings; got int."
    )
    path = _write(tmp_path, "obj.json", '{"x": 1}')
    with pytest.raises(InvalidInputError, match="obj.json: a JSON file must hold a list of sets"):
        list(read_sets(path))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "set_id,response\na,x\nb,y,z\n",
            "sets.csv row 2 (line 3): expected 2 fields as in the header; got 3.",
        ),
        (
            "set_id,text\na,x\n",
            "sets.csv: the header must have a 'response' column",
        ),
        (
            "response,prompt\nx,p\n",
            "sets.csv: a long-form table needs a 'set_id' column next to 'response', or the "
            "column(s) that tell its sets apart: --group-by COLUMN, e.g. --group-by prompt",
        ),
        (
            "set_id,response,prompt\na,x,P\na,y,Q\n",
            "sets.csv row 2 (line 3): field 'prompt' must be the same on every row of set 'a'; "
            "got 'Q' after 'P'.",
        ),
        (
            "sample_id,context,label_value,resp_0,resp_1,metric_x\ns,c,1,a,b,high\n",
            "sets.csv row 1 (line 2): field 'metric_x' must be a number; got 'high'.",
        ),
        (
            "sample_id,resp_0\n,a\n",
            "sets.csv row 1 (line 2): field 'sample_id' is empty; every set needs an id.",
        ),
        ("", "sets.csv: the file is empty; expected a CSV header."),
        (
            "set_id,response,set_id\na,x,a\n",
            "sets.csv line 1: column 'set_id' appears twice in the header.",
        ),
        (
            'set_id,response\na,"x\n',
            "sets.csv line 2: invalid CSV",
        ),
    ],
)
def test_csv_errors_name_file_row_field(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, "sets.csv", text)
    with pytest.raises(InvalidInputError) as err:
        list(read_sets(path))
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_missing_file() -> None:
    with pytest.raises(FileNotFoundError):
        list(read_sets("/nonexistent/sets.jsonl"))


def test_parquet_without_pyarrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.parquet"
    write_sets(SETS, path)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import now fails
    with pytest.raises(MissingDependencyError, match=r"pip install 'divmeter\[io\]'"):
        list(read_sets(path))


def test_writer_refusals(tmp_path: Path) -> None:
    dup = [ResponseSet("a", ["x"]), ResponseSet("a", ["y"])]
    with pytest.raises(InvalidInputError, match="set id 'a' appears twice"):
        write_sets(dup, tmp_path / "d.csv")
    uneven = [ResponseSet("a", ["x"]), ResponseSet("b", ["y", "z"])]
    with pytest.raises(InvalidInputError, match=r"needs sets of one size .* got sizes \[1, 2\]"):
        write_sets(uneven, tmp_path / "u.csv", layout="wide")
    with pytest.raises(InvalidInputError, match="layout must be 'long' or 'wide'"):
        write_sets(dup, tmp_path / "x.csv", layout="tall")


# ---------------------------------------------------------------------------------- records

RECORDS = [
    {"set_id": "a", "row": 0, "label": 1, "m": 0.5, "reasons": {}},
    {"set_id": "b", "row": 1, "label": 0, "m": None, "reasons": {"m": "empty set"}},
]


@pytest.mark.parametrize("name", ["r.jsonl", "r.json", "r.csv", "r.parquet"])
def test_record_writer_round_trip(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    with open_record_writer(path, columns=list(RECORDS[0])) as w:
        for r in RECORDS:
            w.write(r)
    assert list(read_records(path)) == RECORDS
    assert not Path(f"{path}.partial.jsonl").exists()


def test_record_writer_jsonl_streams_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    w = open_record_writer(path)
    w.write(RECORDS[0])
    assert json.loads(path.read_text(encoding="utf-8")) == RECORDS[0]  # flushed before close
    w.close()
    with open_record_writer(path, append=True) as w:
        w.write(RECORDS[1])
    assert list(read_records(path)) == RECORDS


def test_record_writer_json_keeps_sidecar_when_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    with pytest.raises(KeyboardInterrupt), open_record_writer(path) as w:
        w.write(RECORDS[0])
        raise KeyboardInterrupt
    assert not path.exists()
    side = Path(f"{path}.partial.jsonl")
    assert list(read_records(side, "jsonl")) == RECORDS[:1]


def test_read_records_drops_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + '\n{"set_id": "b", "ro', encoding="utf-8")
    assert list(read_records(path)) == RECORDS[:1]
    path.write_text('{"set_id": "b", "ro\n' + json.dumps(RECORDS[0]) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"^r.jsonl line 1: invalid JSON \("):
        list(read_records(path))


def test_csv_with_a_json_responses_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.csv", 'set_id,responses,label\na,"[""x"", ""y""]",0.5\nb,"x",\n')
    with pytest.raises(InvalidInputError) as err:
        list(read_sets(path))
    assert str(err.value) == (
        "s.csv row 2 (line 3): field 'responses' must be a list of strings; got str."
    )
    first = next(read_sets(path))
    assert (first.set_id, first.responses, first.label) == ("a", ["x", "y"], 0.5)


def test_parquet_long_and_wide_tables_from_pandas(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    long = pd.DataFrame(
        {"set_id": ["a", "b", "a"], "response": ["x", "y", "z"], "temp": [0.5, 1.0, 0.5]}
    )
    long.to_parquet(tmp_path / "long.parquet")
    got = [(s.set_id, s.responses, s.metadata) for s in read_sets(tmp_path / "long.parquet")]
    assert got == [("a", ["x", "z"], {"temp": 0.5}), ("b", ["y"], {"temp": 1.0})]
    wide = pd.DataFrame(
        {
            "sample_id": ["s", "s"],
            "context": ["c", None],
            "label_value": [1.0, 0.25],
            "resp_1": ["b", None],
            "resp_0": ["a", "c"],
        }
    )
    wide.to_parquet(tmp_path / "wide.parquet")
    got = [(s.set_id, s.responses, s.prompt, s.label) for s in read_sets(tmp_path / "wide.parquet")]
    assert got == [("s", ["a", "b"], "c", 1), ("s", ["c", ""], None, 0.25)]


def test_csv_with_bom_and_crlf(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.csv", b'\xef\xbb\xbfset_id,response\r\na,"x\r\ny"\r\na,z\r\n')
    assert [s.to_dict() for s in read_sets(path)] == [{"set_id": "a", "responses": ["x\r\ny", "z"]}]
