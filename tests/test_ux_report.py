"""`divmeter report` and the HTML builders without a browser (issue 15, "Browser"): the page is
self-contained (no http(s) URL, no external src/href), holds the numbers of its inputs, and bad
destinations are one-line errors. The browser test is tests/test_ux_report_browser.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from divmeter.core.errors import InvalidInputError
from divmeter.report.html import check_destination, spearman_matrix

REPO = Path(__file__).resolve().parents[1]
DIVMETER = Path(sys.executable).parent / "divmeter"
SCORES = REPO / "examples" / "scores.jsonl"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(DIVMETER), *args], capture_output=True, text=True, timeout=300,
                          cwd=REPO)


def assert_self_contained(page: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert '<meta name="viewport"' in page


def test_report_of_score_output_and_meta_json(tmp_path: Path) -> None:
    meta_dir = tmp_path / "meta"
    proc = run("meta", "paired", str(SCORES), "-c", "distinct-n", "--by", "stage", "--key",
               "prompt_id", "--contrast", "base>sft", "--report", str(meta_dir), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    delta = json.loads(proc.stdout)["base>sft"]["delta"]
    out = tmp_path / "r.html"
    proc = run("report", str(SCORES), str(meta_dir / "report.json"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"divmeter: report written to {out}\n"
    page = out.read_text()
    assert_self_contained(page)
    recs = [json.loads(ln) for ln in SCORES.read_text().splitlines()]
    mean = np.mean([r["distinct-n"] for r in recs])
    assert f"<td>{mean:.4f}</td>" in page
    assert f"<td>{delta:.4f}</td>" in page
    assert page.count("<svg") == 3  # two histograms and the heatmap
    # metadata fields are shown in the sets table, not mistaken for metrics
    assert "<th>stage</th>" in page and "<th>prompt_id</th>" in page
    assert ">prompt_id</figcaption>" not in page


@pytest.mark.parametrize(
    ("args", "message"),
    [(["-o", "r.txt"], "--html/-o must name an .html file; got 'r.txt'."),
     (["-o", "no/such/dir/r.html"], "report folder 'no/such/dir' does not exist."),
     (["missing.jsonl", "-o", "r.html"], "No such file or directory: missing.jsonl")],
)
def test_report_errors(args: list[str], message: str, tmp_path: Path) -> None:
    inputs = [] if args[0] == "missing.jsonl" else [str(SCORES)]
    proc = subprocess.run([str(DIVMETER), "report", *inputs, *args], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"divmeter: error: {message}\n"


def test_check_destination() -> None:
    with pytest.raises(InvalidInputError, match=r"must name an \.html file; got 'x\.png'"):
        check_destination("x.png")


@pytest.mark.parametrize(
    ("cols", "expected"),
    [({"a": [1, 2, 3], "b": [3, 2, 1]}, [[1, -1], [-1, 1]]),
     # rows where either is missing are left out; a constant column has no correlation
     ({"a": [1, 2, 3, np.nan], "b": [1, 2, 3, 4], "c": [5, 5, 5, 5]},
      [[1, 1, np.nan], [1, 1, np.nan], [np.nan, np.nan, np.nan]]),
     ({"a": [1, 2], "b": [2, 1]}, [[np.nan, np.nan], [np.nan, np.nan]])],  # fewer than 3 rows
)
def test_spearman_matrix(cols: dict, expected: list) -> None:
    np.testing.assert_allclose(spearman_matrix(cols), np.array(expected, dtype=float))


def test_score_html_without_output_file(tmp_path: Path) -> None:
    out = tmp_path / "s.html"
    proc = run("score", str(REPO / "examples" / "stories.jsonl"), "-m", "ttr", "-f", "markdown",
               "--html", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    page = out.read_text()
    assert_self_contained(page)
    assert "ttr|tok:whitespace|case:mixed|v:" in page  # the signature, from the run's summary
