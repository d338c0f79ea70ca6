"""`divmeter annotate init` on a file with sets that cannot be shown (issue 26, "First steps"):
skipped with a count by default, the whole file refused with --strict."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cli_util import run_main
from divmeter.data import read_sets

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "stories.jsonl"


def test_init_skips_blank_sets_and_counts_them(tmp_path, monkeypatch, capsys):
    db = tmp_path / "study.sqlite"
    code, out, err = run_main(monkeypatch, capsys, "annotate", "init", str(EXAMPLE), "--db",
                              str(db), "--kind", "abs")
    assert code == 0, err
    usable = [s for s in read_sets(EXAMPLE) if any(r.strip() for r in s.responses)]
    assert f"{len(usable)} items" in out
    assert "skipped 1 set(s) that cannot be shown (first: 'empty-outputs': no non-blank " \
           "response)" in err
    with sqlite3.connect(db) as con:
        keys = [k for (k,) in con.execute("SELECT item_key FROM items ORDER BY position")]
    assert keys == [s.set_id for s in usable]


def test_init_strict_refuses_the_file(tmp_path, monkeypatch, capsys):
    db = tmp_path / "study.sqlite"
    code, _, err = run_main(monkeypatch, capsys, "annotate", "init", str(EXAMPLE), "--db",
                            str(db), "--kind", "abs", "--strict")
    assert code == 2
    assert "set 'empty-outputs' has no non-blank response" in err
    assert not db.exists() or db.stat().st_size == 0


def test_init_sim_skips_sets_of_one_response(tmp_path, monkeypatch, capsys):
    src = tmp_path / "sets.jsonl"
    src.write_text('{"set_id": "a", "responses": ["x y", "y z"]}\n'
                   '{"set_id": "b", "responses": ["only one"]}\n')
    code, out, err = run_main(monkeypatch, capsys, "annotate", "init", str(src), "--db",
                              str(tmp_path / "s.sqlite"), "--kind", "sim")
    assert code == 0, err
    assert "1 items" in out and "'b': 1 response (simHDS rates pairs" in err
