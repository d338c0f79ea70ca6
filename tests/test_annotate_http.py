"""The annotation web app over HTTP (in-process ASGI client) and the ``divmeter annotate`` CLI.

Refused requests (the issue's list, plus a few more), each answered with a 4xx and leaving every
table byte-identical: wrong token, another annotator's item, rating 0 / 6 / "abc", duplicate
submission, missing CSRF token, wrong CSRF token, oversized body (with and without
Content-Length), a repeated field, a JSON body, a wrong admin token, an invite without CSRF.
Then the round trip of the issue: a simulated study whose ratings are drawn around planted
per-set means, exported, and ``divmeter meta contest`` on the export recovers the planted order
(Tevet & Berant 2021, section 3.2 conTest: Spearman rho of the HDS column with the 0/1 label).
"""

from __future__ import annotations

import inspect
import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("multipart")
pytest.importorskip("krippendorff")

from starlette.testclient import TestClient  # noqa: E402

from annotate_util import ASSIGNMENT, CSRF  # noqa: E402
from cli_util import run_main  # noqa: E402
from divmeter.apps.web.app import create_app  # noqa: E402
from divmeter.apps.web.store import Store, create_study  # noqa: E402
from divmeter.inputs.data.model import ResponseSet  # noqa: E402

FORM = {"content-type": "application/x-www-form-urlencoded"}


def _snapshot(db: Path) -> dict[str, list[tuple]]:
    con = sqlite3.connect(db)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    out = {t: con.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in tables}
    con.close()
    return out


@pytest.fixture
def study(tmp_path):
    db = tmp_path / "s.sqlite"
    sets = [ResponseSet(f"s{i}", ["one", "two", "three"], prompt="How are you?", label=i % 2)
            for i in range(3)]
    create_study(db, sets, kind="abs", ratings=2, name="a")
    store = Store(db)
    client = TestClient(create_app(db, max_body=4096), raise_server_exceptions=False)
    return db, store, client


def _open_item(client, token):
    page = client.get(f"/a/{token}")
    assert page.status_code == 200
    return page, CSRF.search(page.text).group(1), ASSIGNMENT.search(page.text).group(1)


def test_pages_and_headers(study):
    db, store, client = study
    tok = store.invite("a", 1)[0]
    page, csrf, a = _open_item(client, tok)
    assert "Warm-up" in page.text and "ignore quality" in page.text
    h = page.headers
    assert "script-src 'self'" in h["content-security-policy"]
    assert (h["x-frame-options"], h["referrer-policy"], h["cache-control"]) == (
        "DENY", "no-referrer", "no-store")
    assert 'aria-label="Proposed response"' in page.text and "<legend>" in page.text
    r = client.post(f"/a/{tok}/warmup", data={"csrf": csrf, "assignment": a,
                                               "own_response": "<b>me</b>", "quality": "5"},
                    follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (303, f"/a/{tok}")
    page = client.get(f"/a/{tok}")
    assert "Ignore the quality of the responses" in page.text and 'name="diversity"' in page.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/").status_code == 200
    assert "127.0.0.1" == inspect.signature(
        __import__("divmeter.apps.cli.annotate", fromlist=["x"]).serve_cmd
    ).parameters["host"].default


def test_bad_requests_are_refused_and_change_nothing(study):
    db, store, client = study
    tok, other = store.invite("a", 2)
    _, csrf, a = _open_item(client, tok)
    _, other_csrf, other_a = _open_item(client, other)
    ok = client.post(f"/a/{tok}/warmup", data={"csrf": csrf, "assignment": a,
                                                "own_response": "mine", "quality": "4"})
    assert ok.status_code == 200  # followed the redirect to the rating page
    good = {"csrf": csrf, "assignment": a, "diversity": "4"}
    bad = [
        ("wrong token", f"/a/{'x' * 43}/answer", good, 404, "unknown annotation link"),
        ("another annotator's item", f"/a/{tok}/answer", {**good, "assignment": other_a}, 404,
         f"item {other_a} is not assigned to this link"),
        ("forged item id", f"/a/{tok}/answer", {**good, "assignment": "99999"}, 404,
         "item 99999 is not assigned"),
        ("rating 0", f"/a/{tok}/answer", {**good, "diversity": "0"}, 422,
         "field &#39;diversity&#39; must be an integer rating from 1 to 5; got &#39;0&#39;"),
        ("rating 6", f"/a/{tok}/answer", {**good, "diversity": "6"}, 422, "got &#39;6&#39;"),
        ("rating abc", f"/a/{tok}/answer", {**good, "diversity": "abc"}, 422,
         "got &#39;abc&#39;"),
        ("rating 4.5", f"/a/{tok}/answer", {**good, "diversity": "4.5"}, 422, "4.5"),
        ("missing CSRF", f"/a/{tok}/answer", {"assignment": a, "diversity": "4"}, 403,
         "missing or wrong CSRF token"),
        ("another annotator's CSRF", f"/a/{tok}/answer", {**good, "csrf": other_csrf}, 403,
         "missing or wrong CSRF token"),
        ("answer before warm-up", f"/a/{other}/answer",
         {"csrf": other_csrf, "assignment": other_a, "diversity": "4"}, 409,
         "complete the warm-up"),
    ]
    for name, path, data, status, text in bad:
        before = _snapshot(db)
        r = client.post(path, data=data, follow_redirects=False)
        assert (name, r.status_code) == (name, status), r.text
        assert text in r.text, name
        assert "Traceback" not in r.text and "Nothing was changed" in r.text
        assert _snapshot(db) == before, name
    raw = [
        ("oversized body", f"/a/{tok}/answer", b"diversity=4&own=" + b"x" * 5000, FORM, 413),
        ("repeated field", f"/a/{tok}/answer",
         f"csrf={csrf}&assignment={a}&diversity=4&diversity=5".encode(), FORM, 422),
        ("JSON body", f"/a/{tok}/answer", json.dumps(good).encode(),
         {"content-type": "application/json"}, 415),
    ]
    for name, path, body, headers, status in raw:
        before = _snapshot(db)
        r = client.post(path, content=body, headers=headers, follow_redirects=False)
        assert (name, r.status_code) == (name, status), r.text
        assert _snapshot(db) == before, name

    def chunks():  # no Content-Length: the limit is enforced while reading
        for _ in range(10):
            yield b"x" * 1000

    before = _snapshot(db)
    r = client.post(f"/a/{tok}/answer", content=chunks(), headers=FORM)
    assert r.status_code == 413 and _snapshot(db) == before
    assert client.post(f"/a/{tok}/answer", data=good, follow_redirects=False).status_code == 303
    before = _snapshot(db)
    dup = client.post(f"/a/{tok}/answer", data=good, follow_redirects=False)
    assert dup.status_code == 409 and "already answered" in dup.text
    assert _snapshot(db) == before
    assert [r["value"] for r in store.raw("a")] == [4]


def test_admin_pages(study):
    db, store, client = study
    admin = store.admin_token()
    assert client.get(f"/admin/{'y' * 43}").status_code == 404
    page = client.get(f"/admin/{admin}")
    assert page.status_code == 200 and ">abs<" in page.text
    assert "<td>a</td><td>abs</td><td>3</td><td>2</td>" in page.text  # study, kind, items, ratings
    assert "built-in method" not in page.text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    before = _snapshot(db)
    assert client.post(f"/admin/{admin}/invite/a", data={"n": "2"}).status_code == 403
    assert client.post(f"/admin/{admin}/invite/a", data={"n": "0", "csrf": csrf}).status_code == 422
    assert _snapshot(db) == before
    r = client.post(f"/admin/{admin}/invite/a", data={"n": "2", "csrf": csrf})
    links = re.findall(r"<code>([^<]+)</code>", r.text)
    assert r.status_code == 200 and len(links) == 2
    assert client.get(links[0].replace("http://testserver", "")).status_code == 200
    csv_text = client.get(f"/admin/{admin}/export/a.csv").text
    assert csv_text.splitlines()[0] == "item_id,set_id,kind,n_ratings,mean,std,label"
    assert client.get(f"/admin/{admin}/export/zzz.csv").status_code == 404
    assert client.get(f"/admin/{admin}/raw/a.jsonl").status_code == 200


def test_internal_error_shows_no_stack_trace(study):
    db, store, client = study
    tok = store.invite("a", 1)[0]
    con = sqlite3.connect(db)
    con.execute("DROP TABLE warmups")  # a broken database: every page now fails inside SQLite
    con.commit()
    con.close()
    r = client.get(f"/a/{tok}")
    assert r.status_code == 500
    assert "Traceback" not in r.text and "sqlite" not in r.text.lower()


def test_cli_round_trip_meta_contest_recovers_planted_order(tmp_path, monkeypatch, capsys):
    """20 sets with planted means (label 1: 3.5-4.5, label 0: 1.5-2.5); 10 simulated annotators
    rate each set with round(N(mean, 0.7)) clipped to 1-5 through the store's own validation; the
    export's per-set means keep the planted order and conTest separates the classes."""
    tasks = tmp_path / "tasks.jsonl"
    rng = np.random.default_rng(7)
    planted = {}
    with open(tasks, "w") as fh:
        for i in range(20):
            label = i % 2
            planted[f"s{i:02d}"] = (3.5 if label else 1.5) + (i // 2) / 9
            fh.write(json.dumps({"set_id": f"s{i:02d}", "prompt": f"context {i}",
                                 "responses": [f"a {i}", f"b {i}", f"c {i}"],
                                 "label": label}) + "\n")
    db = tmp_path / "study.sqlite"
    code, out, err = run_main(monkeypatch, capsys, "annotate", "init", str(tasks), "--db", str(db),
                          "--kind", "abs", "--ratings", "10")
    assert code == 0
    assert out.strip() == f"study tasks-abs: kind abs, 20 items, 10 ratings each, in {db}"
    code, out, _ = run_main(monkeypatch, capsys, "annotate", "invite", str(db), "-n", "10",
                        "--base-url", "http://127.0.0.1:9")
    links = out.split()
    assert code == 0 and len(links) == 10 and all(u.startswith("http://127.0.0.1:9/a/")
                                                   for u in links)
    store = Store(db)
    for link in links:
        tok = link.rsplit("/", 1)[1]
        while (step := store.next_step(tok)).stage != "done":
            base = {"csrf": step.csrf, "assignment": str(step.assignment)}
            store.save_warmup(tok, {**base, "own_response": "mine", "quality": "3"})
            value = int(np.clip(np.rint(rng.normal(planted[step.item_key], 0.7)), 1, 5))
            store.save_answer(tok, {**base, "diversity": str(value)})
    for fmt in ("csv", "jsonl", "parquet"):
        out_file = tmp_path / f"export.{fmt}"
        code, _, err = run_main(monkeypatch, capsys, "annotate", "export", str(db), "-o",
                            str(out_file), "--format", fmt, "--raw", str(tmp_path / "raw.jsonl"))
        assert code == 0 and "20 rows written" in err and "200 raw ratings" in err
    rows = [json.loads(line) for line in (tmp_path / "export.jsonl").read_text().splitlines()]
    assert [r["n_ratings"] for r in rows] == [10] * 20
    assert list(rows[0]) == ["item_id", "set_id", "kind", "n_ratings", "mean", "std", "label"]
    from scipy.stats import spearmanr

    means = [r["mean"] for r in rows]
    assert spearmanr(means, [planted[r["set_id"]] for r in rows]).statistic > 0.9
    expected = spearmanr(means, [r["label"] for r in rows]).statistic
    for fmt in ("csv", "jsonl", "parquet"):
        code, out, err = run_main(monkeypatch, capsys, "meta", "contest",
                              str(tmp_path / f"export.{fmt}"), "-c", "mean", "-f", "json")
        assert code == 0, err
        res = json.loads(out)
        row = res["mean"]
        assert row["spearman"] == pytest.approx(expected)
        assert row["auc"] == 1.0 and row["n"] == 20
    code, out, _ = run_main(monkeypatch, capsys, "annotate", "status", str(db), "-f", "json")
    st = json.loads(out)[0]
    assert (st["answers"], st["items_complete"], st["annotators_active"]) == (200, 20, 10)
    code, out, err = run_main(monkeypatch, capsys, "annotate", "report", str(db), "-o",
                          str(tmp_path / "rep"), "--reps", "20")
    assert code == 0 and "Krippendorff alpha (ordinal)" in out
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert rep["stability"]["full"] == pytest.approx(expected)
    assert (tmp_path / "rep" / "stability.png").stat().st_size > 1000
    code, _, err = run_main(monkeypatch, capsys, "annotate", "export", str(db), "--format", "xml")
    assert code == 2 and err.strip() == (
        "divmeter: error: --format must be csv, jsonl or parquet; got 'xml'.")


@pytest.mark.parametrize(("kind", "aspect"), [("asp", "content"), ("rnk", "ranking"),
                                              ("cs", "diversity")])
def test_cli_report_other_kinds(tmp_path, monkeypatch, capsys, kind, aspect):
    """The report's stability analysis uses each kind's HDS rating: aspHDS content, rnkHDS
    against label(A) - label(B), the commonsense form's per-set rating; ratings here equal
    the label ordering exactly, so the full-data rho is 1."""
    db = tmp_path / "s.sqlite"
    labels = [1, 0, 0, 1, 2, 0, 0, 2] if kind == "rnk" else [0, 1, 1, 2, 2, 3, 3, 4]
    sets = [ResponseSet(f"s{i}", ["x", "y"], prompt=f"ctx {i // 2}", label=labels[i])
            for i in range(8)]
    create_study(db, sets, kind=kind, ratings=2, name=kind)
    store = Store(db)
    for tok in store.invite(kind, 2):
        while (step := store.next_step(tok)).stage != "done":
            base = {"csrf": step.csrf, "assignment": str(step.assignment)}
            store.save_warmup(tok, {**base, "own_response": "mine", "quality": "3"})
            lab = [s["label"] for s in step.payload["sets"]]
            if kind == "asp":
                fields = {"form": "3", "content": str(1 + lab[0])}
            elif kind == "rnk":
                fields = {"ranking": str(3 + lab[0] - lab[1])}  # A - B: 1, -1, 2, -2
            else:
                fields = {"diversity_0": str(1 + lab[0]), "diversity_1": str(1 + lab[1]),
                          "rank_0": "2", "rank_1": "1"}
            store.save_answer(tok, {**base, **fields})
    code, out, err = run_main(monkeypatch, capsys, "annotate", "report", str(db), "-o",
                          str(tmp_path / "rep"), "--reps", "5", "--no-plots")
    assert code == 0, err
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert rep["stability"]["aspect"] == aspect
    assert rep["stability"]["full"] == pytest.approx(1.0)
    assert rep["krippendorff_alpha"][aspect]["alpha"] == pytest.approx(1.0)
