"""The study database of ``divmeter annotate`` (divmeter.apps.web.store) and its analyses.

Tevet & Berant (2021): section 4 and appendix A (warm-up, four HDS questionnaires), section 5 (the
similarity-to-diversity reduction), section 6.4 / Figure 5 (stability); the commonsense paper,
section 4.1.2 (1-5 rating per set + a ranking that breaks ties); Krippendorff (2011) for alpha.
"""

from __future__ import annotations

import math
import sqlite3
import time

import pytest

from divmeter.apps.web.store import RequestError, Store, create_study, sim_reduction, summarise
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.model import ResponseSet

pytest.importorskip("krippendorff")


def _sets(n: int = 4, size: int = 3) -> list[ResponseSet]:
    out = []
    for i in range(n):
        group = f"g{i // 2}"
        out.append(ResponseSet(f"s{i}", [f"r{i}-{j}" for j in range(size)], prompt=f"ctx {group}",
                               label=i % 2, metadata={"group": group}))
    return out


@pytest.fixture
def db(tmp_path):
    return tmp_path / "study.sqlite"


def _step_through(store: Store, token: str, fields: dict[str, str]) -> int:
    """Warm-up then answer the current item with ``fields``; returns the assignment id."""
    step = store.next_step(token)
    assert step.stage == "warmup"
    base = {"csrf": step.csrf, "assignment": str(step.assignment)}
    store.save_warmup(token, {**base, "own_response": "mine", "quality": "4"})
    assert store.next_step(token).stage == "rate"
    store.save_answer(token, {**base, **fields})
    return int(step.assignment)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kind", "n_items", "first_key"), [
    ("abs", 4, "s0"),
    ("asp", 4, "s0"),
    ("sim", 4 * 3, "s0:0-1"),  # C(3, 2) = 3 pairs per set (Tevet: |S| = 5 -> 10 queries)
    ("rnk", 2, "s0|s1"),
    ("cs", 2, "s0|s1"),
])
def test_items_per_kind(db, kind, n_items, first_key):
    """One item per set (abs, asp), per pair of responses (sim), per context (rnk, cs)."""
    assert create_study(db, _sets(), kind=kind, ratings=2, name=kind) == n_items
    items = Store(db).items(kind)
    assert len(items) == n_items and items[0][0] == first_key


@pytest.mark.parametrize(("kwargs", "sets", "match"), [
    ({"kind": "xyz", "ratings": 1}, None,
     r"--kind must be one of abs, asp, sim, rnk, cs; got 'xyz'"),
    ({"kind": "abs", "ratings": 0}, None, r"--ratings must be an integer from 1 to 10,000; got 0"),
    ({"kind": "abs", "ratings": 1}, [], r"no response sets found"),
    ({"kind": "sim", "ratings": 1}, [ResponseSet("a", ["only"])],
     r"set 'a' has 1 response; simHDS rates pairs"),
    ({"kind": "abs", "ratings": 1}, [ResponseSet("a", ["", " "])], r"set 'a' has no non-blank"),
    ({"kind": "rnk", "ratings": 1}, [ResponseSet("a", ["x"], prompt="p")],
     r"rnkHDS compares two sets of the same context; context 'prompt:p' has 1 set\(s\) \(a\)"),
    ({"kind": "abs", "ratings": 1}, [ResponseSet("a", ["x"]), ResponseSet("a", ["y"])],
     r"item 'a' appears twice"),
])
def test_create_study_errors(db, kwargs, sets, match):
    with pytest.raises(InvalidInputError, match=match):
        create_study(db, _sets() if sets is None else sets, name="x", **kwargs)


def test_study_names_and_schema(db, tmp_path):
    create_study(db, _sets(), kind="abs", ratings=1, name="a")
    with pytest.raises(InvalidInputError, match=r"already holds a study named 'a'"):
        create_study(db, _sets(), kind="abs", ratings=1, name="a")
    create_study(db, _sets(), kind="asp", ratings=1, name="b")
    store = Store(db)
    with pytest.raises(InvalidInputError, match=r"holds 2 studies \(a, b\); name one with --study"):
        store.study(None)
    with pytest.raises(InvalidInputError, match=r"has no study named 'c'; it has: a, b"):
        store.study("c")
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA user_version").fetchone()[0] == 1
    con.execute("PRAGMA user_version = 99")
    con.close()
    with pytest.raises(InvalidInputError, match=r"schema version 99; this divmeter reads "
                                                r"versions up to 1"):
        Store(db)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(InvalidInputError, match=r"not a divmeter annotate study database"):
        Store(other)
    with pytest.raises(InvalidInputError, match=r"no such study database"):
        Store(tmp_path / "missing.sqlite")


def test_tokens_are_unguessable_and_scoped(db):
    create_study(db, _sets(), kind="abs", ratings=1, name="a")
    create_study(db, _sets(), kind="abs", ratings=1, name="b")
    store = Store(db)
    ta, tb = store.invite("a", 1)[0], store.invite("b", 1)[0]
    assert len(ta) >= 43 and ta != tb  # token_urlsafe(32): 256 random bits
    assert store.next_step(ta).study == "a" and store.next_step(tb).study == "b"
    # b's assignment is not a's, even with a's CSRF token
    sb = store.next_step(tb)
    sa = store.next_step(ta)
    with pytest.raises(RequestError, match=r"is not assigned to this link") as err:
        store.save_warmup(ta, {"csrf": sa.csrf, "assignment": str(sb.assignment),
                               "own_response": "x", "quality": "3"})
    assert err.value.status == 404


def test_assignment_distinct_annotators_and_capacity(db):
    """Each item gets exactly `ratings` answers from distinct annotators; nobody sees an item
    twice; an annotator with nothing left gets the end page."""
    create_study(db, _sets(4), kind="abs", ratings=2, name="a")
    store = Store(db)
    tokens = store.invite("a", 3)
    seen: dict[str, list[str]] = {t: [] for t in tokens}
    progress = True
    while progress:
        progress = False
        for t in tokens:
            step = store.next_step(t)
            if step.stage == "done":
                continue
            seen[t].append(step.item_key)  # type: ignore[arg-type]
            _step_through(store, t, {"diversity": "3"})
            progress = True
    assert all(len(v) == len(set(v)) for v in seen.values())
    rows = store.export("a")
    assert [r["n_ratings"] for r in rows] == [2, 2, 2, 2]
    assert sum(len(v) for v in seen.values()) == 8
    st = store.status()[0]
    assert (st["answers"], st["answers_wanted"], st["items_complete"], st["open_leases"]) == (
        8, 8, 4, 0)


def test_resume_same_item_and_lease_expiry(db):
    """Stop and come back: the open item is shown again. An expired lease frees the slot; the
    late annotator is then refused (409) instead of over-filling the item."""
    create_study(db, [ResponseSet("only", ["a", "b"], prompt="p")], kind="abs", ratings=1,
                 name="a")
    store = Store(db, lease=0.2)
    t1, t2 = store.invite("a", 2)
    first = store.next_step(t1)
    assert store.next_step(t1).assignment == first.assignment  # come back: same item
    assert store.next_step(t2).stage == "done"  # the only slot is leased to t1
    time.sleep(0.3)
    second = store.next_step(t2)  # t1's lease expired: t2 may take the slot
    assert second.stage == "warmup"
    base = {"csrf": first.csrf, "assignment": str(first.assignment)}
    with pytest.raises(RequestError, match=r"reservation expired and others have rated it") as e:
        store.save_warmup(t1, {**base, "own_response": "x", "quality": "2"})
    assert e.value.status == 409
    _step_through(store, t2, {"diversity": "5"})
    assert store.next_step(t1).stage == "done"  # t1's stale lease is retired, never reused
    con = sqlite3.connect(db)
    assert con.execute("SELECT status FROM assignments ORDER BY id").fetchall() == [
        ("expired",), ("done",)]
    con.close()
    with pytest.raises(RequestError, match=r"reservation of item \d+ expired"):
        store.save_answer(t1, {**base, "diversity": "3"})
    assert [r["n_ratings"] for r in store.export("a")] == [1]


def test_answer_validation(db):
    create_study(db, _sets(2), kind="cs", ratings=1, name="c")
    store = Store(db)
    tok = store.invite("c", 1)[0]
    step = store.next_step(tok)
    base = {"csrf": step.csrf, "assignment": str(step.assignment)}
    good = {"diversity_0": "4", "diversity_1": "2", "rank_0": "1", "rank_1": "2"}
    with pytest.raises(RequestError, match=r"complete the warm-up of this item first"):
        store.save_answer(tok, {**base, **good})
    with pytest.raises(RequestError, match=r"field 'quality' must be an integer rating from 1 "
                                           r"to 5; got '6'"):
        store.save_warmup(tok, {**base, "own_response": "x", "quality": "6"})
    with pytest.raises(RequestError, match=r"field 'own_response' must be your own response"):
        store.save_warmup(tok, {**base, "own_response": "  ", "quality": "3"})
    store.save_warmup(tok, {**base, "own_response": "x", "quality": "3"})
    with pytest.raises(RequestError, match=r"warm-up of this item was already submitted"):
        store.save_warmup(tok, {**base, "own_response": "x", "quality": "3"})
    cases = [
        ({**good, "diversity_0": "0"}, r"'diversity_0' must be an integer rating from 1 to 5"),
        ({**good, "diversity_1": "abc"}, r"got 'abc'"),
        ({**good, "rank_1": "1"}, r"the ranks must use each of 1..2 once; got \[1, 1\]"),
        ({**good, "rank_0": "3"}, r"'rank_0' must be a rank from 1 to 2; got '3'"),
        ({**good, "rank_0": "2", "rank_1": "1"}, r"must agree with the ratings"),
        ({k: v for k, v in good.items() if k != "rank_1"}, r"'rank_1' must be a rank"),
    ]
    for fields, match in cases:
        with pytest.raises(RequestError, match=match) as e:
            store.save_answer(tok, {**base, **fields})
        assert e.value.status == 422
    with pytest.raises(RequestError, match=r"missing or wrong CSRF token") as e:
        store.save_answer(tok, {"assignment": base["assignment"], **good})
    assert e.value.status == 403
    assert store.raw("c") == []  # nothing stored by any refused request
    store.save_answer(tok, {**base, "diversity_0": "3", "diversity_1": "3", "rank_0": "2",
                            "rank_1": "1"})  # a tie, broken by the ranking
    with pytest.raises(RequestError, match=r"already answered") as e:
        store.save_answer(tok, {**base, **good})
    assert e.value.status == 409
    rows = store.export("c")
    assert [(r["item_id"], r["mean"], r["rank_mean"]) for r in rows] == [
        ("s0|s1/s0", 3.0, 2.0), ("s0|s1/s1", 3.0, 1.0)]


def _raw(item, aspect, set_id, values):
    return [{"item_id": item, "aspect": aspect, "set_id": set_id, "annotator": i, "value": v}
            for i, v in enumerate(values)]


@pytest.mark.parametrize(("values", "mean", "std"), [
    ([], None, None),
    ([4], 4.0, None),
    ([1, 5], 3.0, math.sqrt(8)),  # sample std, ddof = 1
    ([2, 3, 4], 3.0, 1.0),
    ([5, 5, 5, 5], 5.0, 0.0),
])
def test_summarise_abs_golden(values, mean, std):
    items = [("s", {"prompt": None, "sets": [{"set_id": "s", "responses": ["a"], "label": 1}]})]
    row = summarise("abs", items, _raw("s", "diversity", "s", values))[0]
    assert row == {"item_id": "s", "set_id": "s", "kind": "abs", "n_ratings": len(values),
                   "mean": mean, "std": pytest.approx(std) if std else std, "label": 1}


def test_summarise_sim_reduction_and_rnk():
    """simHDS: set score = -(mean over the C(3,2) pairs of each pair's mean similarity)."""
    items = [(f"s:{i}-{j}", {"prompt": None, "pair": [i, j], "n_responses": 3,
                             "sets": [{"set_id": "s", "responses": ["x", "y"], "label": 0}]})
             for i, j in ((0, 1), (0, 2), (1, 2))]
    raw = (_raw("s:0-1", "similarity", "s", [5, 4]) + _raw("s:0-2", "similarity", "s", [1])
           + _raw("s:1-2", "similarity", "s", [2, 3]))
    (row,) = summarise("sim", items, raw, level="set")
    # pair means 4.5, 1, 2.5 -> -(8 / 3)
    assert row == {"item_id": "s", "set_id": "s", "kind": "sim", "n_ratings": 5,
                   "mean": pytest.approx(-8 / 3), "std": None, "n_pairs": 3,
                   "n_pairs_rated": 3, "label": 0}
    (partial,) = summarise("sim", items, raw[:3], level="set")
    assert partial["mean"] is None and partial["n_pairs_rated"] == 2
    assert [r["mean"] for r in summarise("sim", items, raw)] == [4.5, 1.0, 2.5]
    with pytest.raises(InvalidInputError, match=r"--level set applies to simHDS only"):
        summarise("abs", [], [], level="set")
    assert sim_reduction([5, 3, 1]) == -3.0
    with pytest.raises(InvalidInputError, match=r"needs at least one pair"):
        sim_reduction([])
    rnk = [("a|b", {"prompt": "p", "sets": [{"set_id": "a", "responses": ["x"], "label": 1.2},
                                             {"set_id": "b", "responses": ["y"], "label": 0.2}]})]
    (r,) = summarise("rnk", rnk, _raw("a|b", "ranking", "a|b", [5, 4]))
    assert (r["mean"], r["label"], r["set_a"], r["set_b"]) == (4.5, pytest.approx(1.0), "a", "b")


def test_asp_export_has_both_aspects(db):
    create_study(db, _sets(1), kind="asp", ratings=2, name="p")
    store = Store(db)
    for tok, (form, content) in zip(store.invite("p", 2), [("1", "4"), ("3", "5")], strict=True):
        _step_through(store, tok, {"form": form, "content": content})
    (row,) = store.export("p")
    assert (row["mean"], row["content_mean"], row["form_mean"], row["n_ratings"]) == (
        4.5, 4.5, 2.0, 2)
    assert row["form_std"] == pytest.approx(math.sqrt(2))
    raw = store.raw("p")
    assert [(r["aspect"], r["value"], r["warmup_quality"]) for r in raw] == [
        ("content", 4, 4), ("form", 1, 4), ("content", 5, 4), ("form", 3, 4)]
    assert all("token" not in str(r) for r in raw)


def test_krippendorff_alpha_reference_example():
    """Krippendorff (2011), 'Computing Krippendorff's alpha-reliability', section C: 4 observers,
    12 units, values 1-5; published ordinal alpha = 0.815 (nominal 0.743, interval 0.849)."""
    from divmeter.apps.web.analysis import alpha

    nan = None
    table = [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
             [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
             [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
             [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]
    raw = [{"item_id": f"u{j}", "set_id": f"u{j}", "aspect": "diversity", "annotator": i,
            "value": v} for i, row in enumerate(table) for j, v in enumerate(row) if v is not None]
    res = alpha(raw)["diversity"]
    assert round(res["alpha"], 3) == 0.815
    assert (res["units"], res["ratings"]) == (11, 40)  # unit 12 has one value: not pairable
    from importlib.metadata import version

    assert res["signature"] == (
        f"krippendorff-alpha|aspect:diversity|level:ordinal|values:1-5|krippendorff:"
        f"{version('krippendorff')}")
    same = alpha([{**r, "value": 3} for r in raw])["diversity"]
    assert same["alpha"] is None and "same value" in same["reason"]
    lone = alpha(raw[:1])["diversity"]
    assert lone["alpha"] is None and "fewer than 2 units" in lone["reason"]


def test_stability_endpoints_and_errors():
    """Figure 5 resampling: with every rating per set, and with every set, each draw uses all
    the data, so the mean rho is the full-data rho (2 sqrt(2) / 3 here, by hand) with std 0."""
    from divmeter.apps.web.analysis import stability

    r = stability([[1, 1], [2, 2], [4, 5], [5, 4]], [0, 0, 1, 1], reps=20, seed=3)
    assert r.full == pytest.approx(2 * math.sqrt(2) / 3)
    assert [x["k"] for x in r.by_ratings] == [1, 2] and [x["n"] for x in r.by_sets] == [2, 3, 4]
    assert r.by_ratings[-1]["mean"] == pytest.approx(r.full) and r.by_ratings[-1]["std"] < 1e-12
    assert r.by_sets[-1]["mean"] == pytest.approx(r.full) and r.by_sets[-1]["std"] < 1e-12
    assert r.signature == "hds-stability|aspect:diversity|reps:20|seed:3|corr:spearman"
    again = stability([[1, 1], [2, 2], [4, 5], [5, 4]], [0, 0, 1, 1], reps=20, seed=3)
    assert again.to_dict() == r.to_dict()  # seeded
    with pytest.raises(InvalidInputError, match=r"one label per set; got 2 sets and 1 labels"):
        stability([[1], [2]], [0])
    with pytest.raises(InvalidInputError, match=r"at least 2 sets with ratings"):
        stability([[1], []], [0, 1])
    with pytest.raises(InvalidInputError, match=r"ns must be integers from 2 to the number of "
                                                r"sets \(2\); got \[3\]"):
        stability([[1], [2]], [0, 1], ns=[3])
    with pytest.raises(InvalidInputError, match=r"reps must be an integer >= 1; got 0"):
        stability([[1], [2]], [0, 1], reps=0)
