"""Load test of ``divmeter annotate serve`` on loopback, with a server kill mid-run.

20 concurrent scripted annotators (threads, plain HTTP: GET page, POST warm-up, POST answer)
fill a study of 40 items x 10 ratings = 400 answers (the full 2,000-answer run is
benchmarks/load_annotate.py). After about a third of the answers the server is SIGKILLed and
restarted on the same port; clients retry through the outage. Afterwards:

* every item has exactly 10 answers (none over-assigned), all from distinct annotators;
* every answer the server acknowledged to a client is in the database (nothing committed lost),
  and every answer in the database is in exactly one row (UNIQUE(annotator, item)), 400 in all;
* no request was refused.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("multipart")

from annotate_util import Annotator, serve  # noqa: E402
from divmeter.apps.web.store import Store, create_study  # noqa: E402
from divmeter.inputs.data.model import ResponseSet  # noqa: E402

ANNOTATORS, ITEMS, RATINGS = 20, 40, 10


def test_load_kill_restart(tmp_path):
    db = tmp_path / "load.sqlite"
    sets = [ResponseSet(f"s{i:03d}", [f"r{i} {j}" for j in range(4)], prompt=f"ctx {i}",
                        label=i % 2) for i in range(ITEMS)]
    create_study(db, sets, kind="abs", ratings=RATINGS, name="load")
    store = Store(db)
    tokens = store.invite("load", ANNOTATORS)
    deadline = time.monotonic() + 240  # bounded in time as well as in count
    with serve(db, tmp_path / "server.log") as (base, restart):
        clients = [Annotator(base, t, "abs", value=lambda a: 1 + a % 5, deadline=deadline)
                   for t in tokens]
        threads = [threading.Thread(target=c.run) for c in clients]
        for th in threads:
            th.start()
        while sum(len(c.acked) for c in clients) < ITEMS * RATINGS // 3:
            assert time.monotonic() < deadline, "no progress before the kill"
            time.sleep(0.05)
        acked_before_kill = sum(len(c.acked) for c in clients)
        restart()  # SIGKILL mid-run, then start again on the same port
        for th in threads:
            th.join(max(0.0, deadline - time.monotonic()))
        assert not any(th.is_alive() for th in threads), "annotators did not finish in time"
    assert all(c.finished for c in clients)
    assert [c.refused for c in clients] == [[]] * ANNOTATORS
    assert 0 < acked_before_kill < ITEMS * RATINGS
    assert sum(c.retries for c in clients) > 0  # the outage was really seen by clients
    con = sqlite3.connect(db)
    per_item = con.execute("SELECT COUNT(*), COUNT(DISTINCT annotator_id) FROM answers "
                           "GROUP BY item_id").fetchall()
    assert per_item == [(RATINGS, RATINGS)] * ITEMS
    stored = {(a, i) for a, i in con.execute("SELECT annotator_id, assignment_id FROM answers")}
    n_rows = con.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
    n_ratings = con.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]
    con.close()
    assert n_rows == len(stored) == n_ratings == ITEMS * RATINGS
    acked = {a for c in clients for a in c.acked}
    assert len(acked) == sum(len(c.acked) for c in clients)  # no answer acknowledged twice
    assert acked <= {a for _, a in stored}  # nothing acknowledged was lost
    # every stored value is the one its client sent (1 + assignment id mod 5)
    raw = {r["annotator"]: 0 for r in store.raw("load")}
    assert len(raw) == ANNOTATORS
    values = sqlite3.connect(db).execute(
        "SELECT a.assignment_id, r.value FROM answers a JOIN ratings r ON r.answer_id = a.id"
    ).fetchall()
    assert all(v == 1 + a % 5 for a, v in values)
