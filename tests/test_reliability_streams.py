"""Issue 27, silent wrong answers: inputs that can be read only once (a pipe into /dev/stdin, a
FIFO, a process substitution) are streamed, not counted then read again (which scored 0 sets);
`meta agreement` refuses short CSV rows and nested JSON values instead of reading them as
missing or as text; `meta dectest --ranking` refuses sets without a context instead of pairing
every set as one context. Each of these fails on 74f78f3. Also: every agreement reader answers
a bad file (UTF-16, latin-1, binary, empty, ragged, corrupt xlsx) with one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_util import run_main

CLI = [sys.executable, "-c", "from divmeter.apps.cli import main; main()"]
SETS = ('{"set_id": "a", "responses": ["x y", "x z"]}\n'
        '{"set_id": "b", "responses": ["p q", "r s"]}\n')


def _env() -> dict[str, str]:
    return dict(os.environ)  # the divmeter this test session imports (installed or PYTHONPATH)


def test_score_reads_a_pipe_through_dev_stdin_once(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    res = subprocess.run([*CLI, "score", "/dev/stdin", "--input-format", "jsonl", "-m",
                          "distinct-n:n=1", "-o", str(out)], input=SETS.encode(),
                         capture_output=True, timeout=120, env=_env())
    assert res.returncode == 0, res.stderr
    assert b"scored 2 sets" in res.stderr
    assert [json.loads(x)["distinct-n:n=1"] for x in out.read_text().splitlines()] == [0.75, 1.0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_score_reads_a_fifo_once(tmp_path: Path) -> None:
    """A FIFO opened a second time waits for a writer that never comes: 74f78f3 hung here."""
    fifo = tmp_path / "sets.fifo"
    os.mkfifo(fifo)
    out = tmp_path / "o.jsonl"
    proc = subprocess.Popen([*CLI, "score", str(fifo), "--input-format", "jsonl", "-m",
                             "distinct-n:n=1", "-o", str(out)], stderr=subprocess.PIPE,
                            env=_env())
    try:
        with open(fifo, "w") as fh:
            fh.write(SETS)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert b"scored 2 sets" in err and len(out.read_text().splitlines()) == 2


# ---------------------------------------------------------------------------------------------
# meta agreement readers



def _agree(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], path: Path,
           *extra: str) -> tuple[int, str, str]:
    return run_main(monkeypatch, capsys, "meta", "agreement", str(path), "-r", "r1", "-r", "r2",
                    "-f", "json", *extra)


def test_agreement_refuses_a_short_csv_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.csv"
    p.write_text("item,r1,r2\na,1,1\nb,2\nc,1,2\n")
    code, out, err = _agree(monkeypatch, capsys, p)
    assert code == 2 and out == ""
    assert err == "divmeter: error: r.csv line 3: expected 3 fields as in the header; got 2.\n"


def test_agreement_refuses_nested_jsonl_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.jsonl"
    p.write_text('{"r1": 1, "r2": 1}\n{"r1": {"x": 2}, "r2": 2}\n{"r1": [1], "r2": 1}\n')
    code, out, err = _agree(monkeypatch, capsys, p)
    assert code == 2 and out == ""
    assert err == ("divmeter: error: r.jsonl line 2: field 'r1' must be a label (a string, a "
                   "number or null); got object.\n")


def test_agreement_reads_good_tables_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(1, 1), (2, 2), (1, 2), (3, 3), (2, 2)]
    (tmp_path / "r.csv").write_text("r1,r2\n" + "".join(f"{a},{b}\n" for a, b in rows))
    (tmp_path / "r.jsonl").write_text("".join(json.dumps({"r1": a, "r2": b}) + "\n"
                                              for a, b in rows))
    (tmp_path / "r.json").write_text(json.dumps({"r1": [a for a, _ in rows],
                                                 "r2": [b for _, b in rows]}))
    got = []
    for name in ("r.csv", "r.jsonl", "r.json"):
        code, out, err = _agree(monkeypatch, capsys, tmp_path / name)
        assert code == 0, err
        got.append(json.loads(out))
    assert got[0] == got[1] == got[2]
    assert got[0]["n_items"] == 5 and got[0]["mean_pairwise_agreement"] == pytest.approx(0.8)


BAD_TABLES = {
    "utf16.csv": ("r1,r2\n1,2\n".encode("utf-16"), "not valid UTF-8"),
    "latin1.csv": ("r1,r2\ncaf\xe9,2\n".encode("latin-1"), "line 2: not valid UTF-8"),
    "binary.jsonl": (b"\x00\x01\x02\xff\xfe", "not valid UTF-8"),
    "empty.csv": (b"", "empty table"),
    "empty.jsonl": (b"", "empty table"),
    "ragged.tsv": (b"r1\tr2\n1\t2\t3\n", "line 2: expected 2 fields"),
    "corrupt.xlsx": (b"PK\x03\x04 not really a zip", "not a readable Excel file"),
    "corrupt.parquet": (b"PAR1 nope", "not a readable Parquet file"),
    "list.json": (b"[1, 2]", "item 1: each row must be a JSON object; got int"),
    "bigint.jsonl": (b'{"r1": ' + b"9" * 5000 + b', "r2": 1}\n', "line 1:"),
}


@pytest.mark.parametrize("name", sorted(BAD_TABLES))
def test_agreement_bad_files_are_one_line(name: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    if name.endswith((".xlsx", ".parquet")):
        pytest.importorskip("pandas")
        pytest.importorskip("openpyxl" if name.endswith(".xlsx") else "pyarrow")
    data, match = BAD_TABLES[name]
    p = tmp_path / name
    p.write_bytes(data)
    code, out, err = _agree(monkeypatch, capsys, p)
    assert code == 2 and out == "", err
    assert len(err.splitlines()) == 1 and err.startswith(f"divmeter: error: {name}")
    assert match in err


# ---------------------------------------------------------------------------------------------
# dectest --ranking


def test_dectest_ranking_refuses_sets_without_context(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "dec.jsonl"
    p.write_text("".join(json.dumps({"set_id": f"s{i}", "label": i / 4, "m": float(i % 3),
                                     "responses": ["a b", "c d"]}) + "\n" for i in range(6)))
    code, out, err = run_main(monkeypatch, capsys, "meta", "dectest", str(p), "-c", "m",
                              "--ranking", "-f", "json")
    assert code == 2 and out == ""
    assert err.startswith("divmeter: error: --ranking pairs sets of the same context, but set "
                          "'s0' (row 1) has no 'prompt'")


def test_agreement_reads_rater_columns_beside_nested_fields(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Only the rater columns must hold labels: a judge output's response lists beside them are
    carried, not refused (the study's `meta agreement` on `divmeter judge` output)."""
    p = tmp_path / "r.jsonl"
    p.write_text('{"set1": ["a", "b"], "r1": 1, "r2": 1}\n{"set1": ["c"], "r1": 0, "r2": 1}\n'
                 '{"set1": [], "r1": 1, "r2": 1}\n')
    code, out, err = _agree(monkeypatch, capsys, p)
    assert code == 0, err
    assert json.loads(out)["n_items"] == 3
