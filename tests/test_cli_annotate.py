"""`divmeter annotate init` on a file with sets that cannot be shown (issue 26, "First steps"):
skipped with a count by default, the whole file refused with --strict."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cli_util import run_main
from divmeter.inputs.data import read_sets

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


def test_serve_on_a_port_in_use_is_one_line(tmp_path, monkeypatch, capsys):
    """A port another process listens on: refused before uvicorn starts (it exited 3 with its
    own log line), exit 2, one line naming the address."""
    import socket

    db = tmp_path / "study.sqlite"
    assert run_main(monkeypatch, capsys, "annotate", "init", str(EXAMPLE), "--db", str(db),
                    "--kind", "abs")[0] == 0
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        code, _, err = run_main(monkeypatch, capsys, "annotate", "serve", str(db), "--port",
                                str(port), "-q")
    assert code == 2
    assert err.strip().count("\n") == 0
    assert f"cannot listen on 127.0.0.1:{port}" in err and "choose another --port" in err


def test_counts_above_their_caps_are_refused(tmp_path, monkeypatch, capsys):
    db = tmp_path / "study.sqlite"
    code, _, err = run_main(monkeypatch, capsys, "annotate", "init", str(EXAMPLE), "--db",
                            str(db), "--kind", "abs", "--ratings", "1" + "0" * 40)
    assert code == 2 and "--ratings must be an integer from 1 to 10,000" in err
    assert run_main(monkeypatch, capsys, "annotate", "init", str(EXAMPLE), "--db", str(db),
                    "--kind", "abs")[0] == 0
    code, out, err = run_main(monkeypatch, capsys, "annotate", "invite", str(db), "-n",
                              "100001")
    assert code == 2 and "from 1 to 100,000" in err and out == ""  # the cap of -n
