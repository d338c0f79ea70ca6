"""End-to-end in a real headless browser: Playwright driving Debian's chromium.

For each of the five questionnaires (absHDS, aspHDS, simHDS, rnkHDS of Tevet & Berant 2021,
section 6.2 / appendix A, and the commonsense paper's rating + ranking form), one annotator opens
their link, completes the warm-up (own response + quality of the first response, Figure 7),
rates the first item with the mouse and the second with the keyboard only, closes the tab, comes
back (the third item's warm-up is shown again), finishes it with the keyboard and sees the end
page. The database then holds exactly the ratings typed and clicked, and the export agrees.

Skips cleanly without the ``playwright`` package or without chromium (``/usr/bin/chromium``, or
``DIVMETER_CHROMIUM``); never downloads a browser. ``DIVMETER_DOCS_SCREENSHOTS=1`` also writes
the screenshots shown in README to docs/annotate/.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("multipart")
sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path(os.environ.get("DIVMETER_CHROMIUM", "/usr/bin/chromium"))
if not CHROMIUM.exists():
    pytest.skip(f"chromium not found at {CHROMIUM} (apt-get install chromium)",
                allow_module_level=True)

from annotate_util import serve  # noqa: E402
from divmeter.apps.web.store import Store, create_study  # noqa: E402
from divmeter.inputs.data.model import ResponseSet  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

CONTEXTS = [
    ("Do the kings need a row really bad or something?",
     ["It's possible but unlikely it will happen.", "No way dude not at all.",
      "Yeah I think that would be a big help.", "That's the dumbest thing I've heard all day."],
     ["They really do need one.", "Yes, they need one badly.", "They need it, for sure.",
      "A row would help them a lot."]),
    ("Jane forgot to feed her cat before leaving for work.",
     ["The cat knocked a dish off the counter.", "Her neighbour fed it at noon.",
      "She drove back home at lunch.", "The cat found a mouse instead."],
     ["The cat was very hungry.", "The cat was hungry all day.", "Her cat was starving.",
      "The hungry cat waited for her."]),
    ("How is our new technology helping us?",
     ["It saves hours of paperwork.", "Doctors diagnose faster.", "Farmers waste less water.",
      "Kids learn to code early."],
     ["It makes work faster.", "It speeds work up.", "Work gets faster with it.",
      "It makes our jobs quicker."]),
]


def _sets() -> list[ResponseSet]:
    out = []
    for c, (prompt, high, low) in enumerate(CONTEXTS):
        out.append(ResponseSet(f"c{c}-high", high, prompt=prompt, label=1))
        out.append(ResponseSet(f"c{c}-low", low, prompt=prompt, label=0))
    return out


def _study_sets(kind: str) -> list[ResponseSet]:
    sets = _sets()
    if kind in ("abs", "asp"):
        return [s for s in sets if s.set_id.endswith("high")]  # 3 items
    if kind == "sim":
        s = sets[0]
        return [ResponseSet(s.set_id, s.responses[:3], prompt=s.prompt, label=1)]  # 3 pairs
    return sets  # rnk, cs: 3 contexts of 2 sets


# What each kind's item is answered with: {field: value}; cs ranks break the tie of item 2.
ANSWERS = {
    "abs": [{"diversity": 4}, {"diversity": 2}, {"diversity": 5}],
    "asp": [{"form": 3, "content": 5}, {"form": 2, "content": 1}, {"form": 4, "content": 4}],
    "sim": [{"similarity": 1}, {"similarity": 3}, {"similarity": 5}],
    "rnk": [{"ranking": 5}, {"ranking": 2}, {"ranking": 3}],
    "cs": [{"diversity_0": 4, "diversity_1": 2, "rank_0": 1, "rank_1": 2},
           {"diversity_0": 3, "diversity_1": 3, "rank_0": 2, "rank_1": 1},
           {"diversity_0": 1, "diversity_1": 5, "rank_0": 2, "rank_1": 1}],
}
FIELD_ORDER = {"abs": ["diversity"], "asp": ["form", "content"], "sim": ["similarity"],
               "rnk": ["ranking"], "cs": ["diversity_0", "diversity_1", "rank_0", "rank_1"]}


def _shot(page, out: Path, name: str) -> None:
    page.screenshot(path=str(out / f"{name}.png"), full_page=True)


def _warmup(page, *, keyboard: bool, text: str, quality: int) -> None:
    assert page.locator("h1").inner_text() == "Warm-up"
    page.locator("#own_response").click()
    page.keyboard.type(text)
    if keyboard:
        page.keyboard.press("Tab")  # leave the text box: digits now rate
        page.keyboard.press(str(quality))
        page.keyboard.press("Enter")
    else:
        page.locator("label.option", has=page.locator(
            f'input[name="quality"][value="{quality}"]')).click()
        page.get_by_role("button", name="Continue").click()
    page.wait_for_selector("#answer-form")


def _rate(page, kind: str, values: dict[str, int], *, keyboard: bool) -> int:
    assignment = int(page.locator('input[name="assignment"]').input_value())
    if keyboard:
        page.locator("h1").click()  # focus outside any text box
        for field in FIELD_ORDER[kind]:
            page.keyboard.press(str(values[field]))
        with page.expect_navigation():
            page.keyboard.press("Enter")
    else:
        for field in FIELD_ORDER[kind]:
            page.locator("label.option", has=page.locator(
                f'input[name="{field}"][value="{values[field]}"]')).click()
        with page.expect_navigation():
            page.get_by_role("button", name="Submit").click()
    return assignment


def test_browser_end_to_end(tmp_path):
    db = tmp_path / "e2e.sqlite"
    for kind in ANSWERS:
        create_study(db, _study_sets(kind), kind=kind, ratings=1, name=kind)
    store = Store(db)
    tokens = {kind: store.invite(kind, 1)[0] for kind in ANSWERS}
    shots = tmp_path / "shots"
    shots.mkdir()
    done: dict[int, dict[str, int]] = {}  # assignment -> values typed or clicked
    warm: dict[int, tuple[str, int]] = {}
    with serve(db, tmp_path / "server.log") as (base, _), sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        context = browser.new_context(viewport={"width": 1000, "height": 800})
        for kind, answers in ANSWERS.items():
            url = f"{base}/a/{tokens[kind]}"
            page = context.new_page()
            page.goto(url)
            if kind == "abs":
                _shot(page, shots, "warmup")
            for n in range(2):
                a = int(page.locator('input[name="assignment"]').input_value())
                text, quality = f"my {kind} reply {n}", 5 - n
                _warmup(page, keyboard=n == 1, text=text, quality=quality)
                warm[a] = (text, quality)
                if n == 0:
                    _shot(page, shots, f"rate-{kind}")
                assert _rate(page, kind, answers[n], keyboard=n == 1) == a
                done[a] = answers[n]
                assert page.locator("label[for=progress]").inner_text() == (
                    f"Rated {n + 1} of 3 items")
            a = int(page.locator('input[name="assignment"]').input_value())
            page.close()  # stop in the middle of the third item ...
            page = context.new_page()
            page.goto(url)  # ... and come back: the same item's warm-up
            assert int(page.locator('input[name="assignment"]').input_value()) == a
            _warmup(page, keyboard=True, text=f"my {kind} reply 2", quality=1)
            warm[a] = (f"my {kind} reply 2", 1)
            assert _rate(page, kind, answers[2], keyboard=True) == a
            done[a] = answers[2]
            assert page.locator("#finished").is_visible()
            if kind == "cs":
                _shot(page, shots, "done")
            page.close()
        page = context.new_page()
        page.goto(f"{base}/a/{tokens['abs']}")
        page.goto(f"{base}/a/{'z' * 43}")
        _shot(page, shots, "error")
        page.goto(f"{base}/admin/{store.admin_token()}")
        _shot(page, shots, "admin")
        browser.close()
    con = sqlite3.connect(db)
    stored: dict[int, dict[str, int]] = {}
    for a, aspect, target, value in con.execute(
            "SELECT a.assignment_id, r.aspect, r.target, r.value FROM answers a "
            "JOIN ratings r ON r.answer_id = a.id"):
        stored.setdefault(a, {})[f"{aspect}|{target}"] = value
    warm_db = {a: (t, q) for a, t, q in con.execute(
        "SELECT assignment_id, own_response, quality FROM warmups")}
    payload = {a: p for a, p in con.execute(
        "SELECT a.id, i.payload FROM assignments a JOIN items i ON i.id = a.item_id")}
    con.close()
    assert warm_db == warm
    expected: dict[int, dict[str, int]] = {}
    import json

    for a, values in done.items():
        sets = [s["set_id"] for s in json.loads(payload[a])["sets"]]
        exp = {}
        for field, v in values.items():
            name, _, idx = field.partition("_")
            aspect = {"diversity": "diversity", "form": "form", "content": "content",
                      "similarity": "similarity", "ranking": "ranking", "rank": "rank"}[name]
            exp[f"{aspect}|{sets[int(idx)] if idx else ''}"] = v
        expected[a] = exp
    assert stored == expected
    for kind in ANSWERS:
        rows = store.export(kind)
        assert sum(r["n_ratings"] for r in rows) == (6 if kind == "cs" else 3)
        means = sorted(r["mean"] for r in rows)
        if kind == "asp":
            sent = sorted(v["content"] for v in ANSWERS[kind])
        elif kind == "cs":
            sent = sorted(v[f"diversity_{i}"] for v in ANSWERS[kind] for i in (0, 1))
        else:
            sent = sorted(next(iter(v.values())) for v in ANSWERS[kind])
        assert means == sent, kind
    if os.environ.get("DIVMETER_DOCS_SCREENSHOTS") == "1":
        target = REPO / "docs" / "annotate"
        target.mkdir(parents=True, exist_ok=True)
        for f in shots.glob("*.png"):
            shutil.copy(f, target / f.name)
    assert len(list(shots.glob("*.png"))) == 9
