"""Issue 27, tracebacks: every one of these ended in a Python traceback on 74f78f3 and is now one
line on stderr with exit code 2: the annotation CLI on a --db that is text, a truncated
database, a folder or in a missing folder; a lone surrogate in a set id; a 5,000-digit integer
in a label or set id; corpus checkpoints that are devices; --memory-budget inf/nan."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cli_util import run_main


def _one_line_exit_2(code: int, err: str) -> None:
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("divmeter: error: "), err


def _dbs(tmp_path: Path) -> dict[str, Path]:
    text = tmp_path / "text.sqlite"
    text.write_text("this is not a database\n" * 10)
    good = tmp_path / "good.sqlite"
    with sqlite3.connect(good) as con:
        con.execute("create table t (x)")
        con.executemany("insert into t values (?)", [(i,) for i in range(2000)])
    truncated = tmp_path / "trunc.sqlite"
    truncated.write_bytes(good.read_bytes()[:1500])
    folder = tmp_path / "folder.sqlite"
    folder.mkdir()
    return {"text": text, "truncated": truncated, "folder": folder,
            "missing-folder": tmp_path / "no" / "such" / "s.sqlite"}


@pytest.mark.parametrize("db", ["text", "truncated", "folder", "missing-folder"])
@pytest.mark.parametrize("cmd", [["status"], ["invite", "-n", "1"], ["invite", "--admin"],
                                 ["export", "-o", "-"], ["report", "-o", "{tmp}/rep"]])
def test_annotate_on_a_bad_database_is_one_line(db: str, cmd: list[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = _dbs(tmp_path)[db]
    args = [c.format(tmp=tmp_path) for c in cmd]
    code, _, err = run_main(monkeypatch, capsys, "annotate", args[0], str(path), *args[1:])
    _one_line_exit_2(code, err)


@pytest.mark.parametrize("db", ["text", "truncated", "folder"])
def test_annotate_init_on_a_bad_database_is_one_line(db: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    sets = tmp_path / "s.jsonl"
    sets.write_text('{"set_id": "a", "responses": ["x y", "z w"]}\n')
    path = _dbs(tmp_path)[db]
    before = path.read_bytes() if path.is_file() else None
    code, _, err = run_main(monkeypatch, capsys, "annotate", "init", str(sets), "--db",
                            str(path), "--kind", "abs")
    _one_line_exit_2(code, err)
    if before is not None:
        assert path.read_bytes() == before


def test_lone_surrogate_is_refused_where_it_is_read(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "s.jsonl"
    p.write_text('{"set_id": "a\\ud800", "responses": ["x y", "x z"]}\n')
    for out in ("o.jsonl", "o.csv", "o.json"):
        code, _, err = run_main(monkeypatch, capsys, "score", str(p), "-m", "distinct-n", "-o",
                                str(tmp_path / out))
        _one_line_exit_2(code, err)
        assert "s.jsonl line 1: the escape \\ud800 is a lone surrogate" in err
    # a surrogate pair is a character: it is kept
    p.write_text('{"set_id": "a\\ud83d\\ude00", "responses": ["x y", "x z"]}\n')
    code, out, err = run_main(monkeypatch, capsys, "score", str(p), "-m", "distinct-n", "-f",
                              "jsonl")
    assert code == 0 and json.loads(out)["set_id"] == "a\U0001f600"


def test_huge_integers_are_no_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    big = "9" * 5000
    csv = tmp_path / "s.csv"
    csv.write_text(f"set_id,response,label\na,x y,{big}\na,x z,{big}\n")
    code, out, err = run_main(monkeypatch, capsys, "score", str(csv), "-m", "distinct-n", "-f",
                              "jsonl")
    assert code == 0, err
    assert json.loads(out)["label"] == big  # too long for an int: kept as the text it is
    js = tmp_path / "s.jsonl"
    js.write_text('{"set_id": ' + big + ', "responses": ["x y", "x z"]}\n')
    code, _, err = run_main(monkeypatch, capsys, "score", str(js), "-m", "distinct-n")
    _one_line_exit_2(code, err)
    assert "s.jsonl line 1: a number too long to read" in err


@pytest.mark.parametrize("budget", ["inf", "nan", "-1", "1e300"])
def test_memory_budget_must_be_finite(budget: str, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    shard = tmp_path / "a.txt"
    shard.write_text("a b\nc d\n")
    code, _, err = run_main(monkeypatch, capsys, "score", "--corpus", str(shard), "-m",
                            "distinct-n", "--memory-budget", budget, "-f", "json")
    _one_line_exit_2(code, err)
    assert "--memory-budget must be a number of MB > 0" in err


def test_checkpoint_that_is_a_device_is_refused(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    shard = tmp_path / "a.txt"
    shard.write_text("a b\nc d\n")
    code, _, err = run_main(monkeypatch, capsys, "score", "--corpus", str(shard), "-m",
                            "distinct-n", "--checkpoint", "/dev/zero", "-f", "json")
    _one_line_exit_2(code, err)
    assert "--checkpoint /dev/zero is not a regular file" in err


# ---------------------------------------------------------------------------------------------
# meta on degenerate input: a refusal (exit 2) or a documented null with its reason (exit 0)


def test_meta_degenerate_input_refusal_or_documented_null(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, out, err = run_main(monkeypatch, capsys, "meta", "dectest", str(empty), "-m",
                              "distinct-n", "-f", "json")
    _one_line_exit_2(code, err)  # nothing to measure: a refusal
    const = tmp_path / "const.jsonl"
    const.write_text("".join(json.dumps({"set_id": f"s{i}", "label": 1.0,
                                         "responses": [f"a b {i}", "c d"]}) + "\n"
                             for i in range(5)))
    code, out, err = run_main(monkeypatch, capsys, "meta", "dectest", str(const), "-m",
                              "distinct-n", "-f", "json")
    assert code == 0, err  # a constant parameter: the correlation is a documented null
    row = json.loads(out)["distinct-n"]
    assert row["spearman"] is None and row["pearson"] is None
    assert row["details"]["reason"] == ("the parameter (label) is constant: no correlation is "
                                        "defined")
    one = tmp_path / "one.csv"
    one.write_text("r1,ref\n1,1\n2,2\n1,2\n")
    code, out, err = run_main(monkeypatch, capsys, "meta", "agreement", str(one), "-r", "r1",
                              "--reference", "ref", "-f", "json")
    assert code == 0, err  # one rater: agreement among raters is null, with its reasons
    d = json.loads(out)
    assert d["fleiss_kappa"] is None and d["per_rater"]["r1"]["n"] == 3
