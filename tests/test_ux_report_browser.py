"""The HTML report in a real headless browser (issues 15 and 26): Playwright driving Debian's
chromium, pointed at the system executable (never `playwright install`).

The page of `divmeter score --html` and of `divmeter meta paired ... --html` loads from file://
with no console error, no page error and no request leaving the file (every request that is
not file: or data: is recorded and aborted; the test asserts there are none); the key numbers
(each metric's mean over the sets, computed here by divmeter.score) are on the page; on a phone
viewport (390 px) the page does not scroll sideways. DIVMETER_DOCS_SCREENSHOTS=1 rewrites the
screenshots under docs/report/ shown in README.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path(os.environ.get("DIVMETER_CHROMIUM", "/usr/bin/chromium"))
if not CHROMIUM.exists():
    pytest.skip(f"chromium not found at {CHROMIUM} (apt-get install chromium)",
                allow_module_level=True)

import divmeter  # noqa: E402
from divmeter.inputs.data import read_sets  # noqa: E402
from divmeter.report.panels import most_similar_pair, numeric_levels, trend_points  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "stories.jsonl"
SWEEP = REPO / "benchmarks" / "results_dectest_e2e.jsonl"  # Gemma-3-270m, 5 temperatures
DIVMETER = Path(sys.executable).parent / "divmeter"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = REPO / "docs" / "report"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def open_page(browser, path: Path, width: int = 1000, height: int = 900):
    """The page at ``path`` with console errors, page errors and outside requests recorded."""
    page = browser.new_page(viewport={"width": width, "height": height})
    seen = {"errors": [], "outside": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))

    def route(r):
        url = r.request.url
        if url.startswith(("file:", "data:")):
            r.continue_()
        else:
            seen["outside"].append(url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, seen


def run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(DIVMETER), *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


def in_copy(tmp_path: Path) -> Path:
    """A folder holding a copy of examples/, so commands name clean relative paths (what the
    screenshots show, never a machine's temporary folder)."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    return tmp_path


def test_score_report_in_browser(browser, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    metrics = ["distinct-n", "self-bleu", "ttr"]
    proc = run("score", "examples/stories.jsonl", *sum((["-m", m] for m in metrics), []),
               "-o", "scores.jsonl", "--html", "report.html", cwd=in_copy(tmp_path))
    assert proc.returncode == 0, proc.stderr
    page, seen = open_page(browser, html)
    assert seen["errors"] == []
    assert seen["outside"] == []
    summary = page.inner_text("#summary")
    for m in metrics:
        values = [divmeter.score(s.responses, m).value for s in read_sets(EXAMPLE)]
        mean = float(np.mean([v for v in values if v is not None]))
        row = [ln for ln in summary.splitlines() if ln.startswith(m)]
        assert row and f"{mean:.4f}" in row[0], (m, mean, row)
    assert "↓ lower" in [ln for ln in summary.splitlines() if ln.startswith("self-bleu")][0]
    sigs = page.inner_text("#signatures")
    assert "distinct-n|n:1..5|avg:mean|tok:tevet|case:mixed|v:" in sigs
    assert page.locator("#distributions svg").count() == 3
    assert page.locator("#correlations svg rect").count() == 9
    if os.environ.get("DIVMETER_DOCS_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "score-report.png"), full_page=True)
    # the records table sorts by a click: ascending distinct-n puts the lowest value first
    heads = page.locator("table.records th").all_inner_texts()
    col = heads.index("distinct-n") + 1  # after the set's id, label and carried fields
    page.click(f"table.records th:nth-child({col})")
    first = page.inner_text(f"table.records tbody tr:first-child td:nth-child({col})")
    assert first == "0.6299"
    page.close()


def test_score_report_on_a_phone(browser, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    proc = run("score", "examples/stories.jsonl", "-m", "distinct-n", "-m",
               "self-bleu:variant=sentence,n=3", "-m", "vendi-ngram:q=0.5", "-m", "ttr", "-o",
               "scores.jsonl", "--html", "report.html", cwd=in_copy(tmp_path))
    assert proc.returncode == 0, proc.stderr
    page, seen = open_page(browser, html, width=390, height=844)
    assert seen["errors"] == [] and seen["outside"] == []
    # tables scroll inside their box; the page itself never scrolls sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    if os.environ.get("DIVMETER_DOCS_SCREENSHOTS"):
        page.screenshot(path=str(SHOTS / "score-report-phone.png"), full_page=False)
    page.close()


def test_meta_report_in_browser(browser, tmp_path: Path) -> None:
    """`meta paired --html` on a score output grouped by a carried metadata field."""
    sets = tmp_path / "sets.jsonl"
    rows = []
    for i, s in enumerate(read_sets(EXAMPLE)):
        if not s.responses or not any(s.responses):
            continue
        rows.append({"set_id": f"{s.set_id}-a", "responses": s.responses, "stage": "base",
                     "prompt_id": i})
        rows.append({"set_id": f"{s.set_id}-b", "responses": s.responses[:2] * 2,
                     "stage": "sft", "prompt_id": i})
    sets.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scores = tmp_path / "scores.jsonl"
    assert run("score", str(sets), "-m", "distinct-n", "-o", str(scores)).returncode == 0
    html = tmp_path / "meta.html"
    proc = run("meta", "paired", str(scores), "-c", "distinct-n", "--by", "stage", "--key",
               "prompt_id", "--contrast", "base>sft", "--html", str(html), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    page, seen = open_page(browser, html)
    assert seen["errors"] == [] and seen["outside"] == []
    text = page.inner_text("#meta")
    delta = next(iter(result.values()))["delta"]
    assert f"{delta:.3f}" in text
    assert page.locator("#plots img").count() >= 1
    page.close()


def shot(page, name: str, section: str | None = None, height: int = 900) -> None:
    """Save a screenshot for the docs: the whole page, or the top of one section."""
    if not os.environ.get("DIVMETER_DOCS_SCREENSHOTS"):
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    if section is None:
        page.screenshot(path=str(SHOTS / name), full_page=True)
        return
    box = page.locator(section).bounding_box()  # relative to the scrolled viewport
    top = box["y"] + page.evaluate("window.scrollY")
    page.screenshot(path=str(SHOTS / name), full_page=True,
                    clip={"x": box["x"], "y": top, "width": box["width"],
                          "height": min(box["height"], height)})


def test_sweep_report_trend_strips_heatmap_and_texts(browser, tmp_path: Path) -> None:
    shutil.copy(SWEEP, tmp_path / "sweep.jsonl")
    metrics = ["distinct-n", "self-bleu", "vendi-ngram:q=0.5"]
    proc = run("score", "sweep.jsonl", *sum((["-m", m] for m in metrics), []), "-o",
               "scores.jsonl", "--html", "sweep.html", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in SWEEP.read_text().splitlines()]
    labels = np.array([r["label"] for r in rows], dtype=float)
    page, seen = open_page(browser, tmp_path / "sweep.html", width=1100)
    assert seen["errors"] == [] and seen["outside"] == []
    # trend: one panel per metric, rho in its title equal to scipy's over the sets
    assert page.locator("#trend svg.trend").count() == len(metrics)
    for i, m in enumerate(metrics):
        values = np.array([v.value for v in divmeter.score_many([r["responses"] for r in rows],
                                                                m)], dtype=float)
        rho = spearmanr(values, labels).statistic
        text = page.locator("#trend svg.trend").nth(i).text_content()
        assert f"Spearman ρ = {rho:.3f}" in text, (m, text)
        pts = trend_points(values, labels)
        assert len(pts["levels"]) == 5 and pts["n"] == [30] * 5
    assert "temperature" in page.locator("#trend").text_content()
    # strips side by side: one column per temperature, counts that match the data
    counts = page.locator("#distributions svg.strip").first.locator("text.count")
    assert [counts.nth(k).text_content() for k in range(counts.count())] == ["n=30"] * 5
    # agreement: self-BLEU (lower = more diverse) agrees with distinct-n, so its cell is +
    cell = page.locator("#correlations svg rect").nth(1)
    raw = spearmanr(
        [divmeter.score(r["responses"], "distinct-n").value for r in rows],
        [divmeter.score(r["responses"], "self-bleu").value for r in rows]).statistic
    assert raw < 0
    assert f"raw Spearman ρ {raw:.3f}, agreement {-raw:.3f}" in cell.inner_html()
    end = page.locator("#correlations").bounding_box()
    if os.environ.get("DIVMETER_DOCS_SCREENSHOTS"):  # the page down to the heatmap
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "sweep-report.png"), full_page=True,
                        clip={"x": 0, "y": 0, "width": 1100, "height": end["y"] + end["height"]})
    # texts: sorting by self-bleu (highest first) puts the most repetitive set first
    page.select_option("#text-sort", "1")
    first = page.locator("#text-list details").first
    sb = [divmeter.score(r["responses"], "self-bleu").value for r in rows]
    top = rows[int(np.argmax(sb))]["set_id"]
    assert first.locator("summary b").inner_text() == top
    first.locator("summary").click()
    items = first.locator("li")
    assert items.count() == len(rows[int(np.argmax(sb))]["responses"])
    pair = most_similar_pair(rows[int(np.argmax(sb))]["responses"])
    marked = [k for k in range(items.count()) if "similar" in (items.nth(k).get_attribute(
        "class") or "")]
    assert marked == [pair[0], pair[1]]
    shot(page, "sweep-report-texts.png", "#texts", 700)
    page.click("#text-dir")  # lowest first
    low = rows[int(np.argmin(sb))]["set_id"]
    assert page.locator("#text-list details").first.locator("summary b").inner_text() == low
    page.close()


def test_compare_report_in_browser(browser, tmp_path: Path) -> None:
    """Low vs high temperature of the same prompts, as two systems: the high temperature is
    more diverse on every metric; the page shows the table and the paired plots."""
    rows = [json.loads(x) for x in SWEEP.read_text().splitlines()]
    for name, t in (("t0.2", 0.2), ("t1.2", 1.2)):
        keep = [{**r, "set_id": r["prompt_id"]} for r in rows if r["label"] == t]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    proc = run("compare", "t0.2.jsonl", "t1.2.jsonl", "-m", "distinct-n", "-m", "self-bleu",
               "--html", "compare.html", "-f", "json", "--bootstrap", "1000", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert all(v["mean_diff"] > 0 and v["system"] == "t1.2" for v in result.values())
    page, seen = open_page(browser, tmp_path / "compare.html", width=1100)
    assert seen["errors"] == [] and seen["outside"] == []
    text = page.inner_text("#meta")
    for v in result.values():
        assert f"{v['mean_diff']:.3f}" in text and f"{v['win_rate']:.3f}" in text
    assert page.locator("#plots img").count() == 2
    shot(page, "compare-report.png")
    page.close()


def test_numeric_levels_need_three_numbers() -> None:
    assert numeric_levels([1, 0, 1]) is None
    assert numeric_levels(["a", "b", "c"]) is None
    assert numeric_levels([0.5, None, 1.0, 1.5]).tolist()[0] == 0.5
