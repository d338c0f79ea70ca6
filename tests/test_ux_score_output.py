"""`divmeter score` output (issue 15): readable at 80 columns, Markdown, one JSON shape, the
input's metadata carried into the records so `meta paired --by stage` can group them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import divmeter
from divmeter.inputs.data import read_sets

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "stories.jsonl"
DIVMETER = Path(sys.executable).parent / "divmeter"
MANY = ["-m", "distinct-n", "-m", "self-bleu:variant=sentence,n=3", "-m", "vendi-ngram:q=0.5",
        "-m", "ttr", "-m", "self-bleu"]


def run(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([str(DIVMETER), *args], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env=env)


def test_table_at_80_columns_numbers_headers_never_cuts_them() -> None:
    proc = run("score", str(EXAMPLE), *MANY, "-f", "table", "--summary")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    # every line fits, but a signature: it prints whole on its own line and may overflow
    # (issue 26: a signature is copied into papers, so it is never broken)
    assert max(len(ln) for ln in lines if "|v:" not in ln) <= 80
    header = next(ln for ln in lines if ln.lstrip().startswith("row"))
    assert header.split()[-5:] == ["[1]", "[2]", "[3]", "[4]", "[5]"]
    # the legend names every column in full, with its direction and range
    assert "[2] self-bleu:n=3,variant=sentence: lower = more diverse, range [0, 1]" in lines
    assert "[5] self-bleu: lower = more diverse, range [0, 1]" in lines
    assert "[3] vendi-ngram:q=0.5: higher = more diverse, range [1, ∞)" in lines
    first = divmeter.score(next(read_sets(EXAMPLE)).responses, "distinct-n").value
    row0 = next(ln for ln in lines if ln.split()[:2] == ["0", "lighthouse-diverse"])
    assert row0.split()[3] == f"{first:.4f}"
    # summary: full names with their arrow, then the signatures
    assert any(ln.startswith("self-bleu:n=3,variant=sentence ↓") for ln in lines)


def test_table_wide_terminal_uses_full_names() -> None:
    proc = run("score", str(EXAMPLE), "-m", "distinct-n", "-m", "ttr", "-f", "table",
               columns=120)
    header = next(ln for ln in proc.stdout.splitlines() if ln.lstrip().startswith("row"))
    assert header.split() == ["row", "set_id", "label", "distinct-n", "↑", "ttr", "↑"]


def test_markdown_to_stdout_and_file(tmp_path: Path) -> None:
    proc = run("score", str(EXAMPLE), "-m", "distinct-n", "-m", "self-bleu", "-f", "markdown")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "| row | set_id | label | distinct-n ↑ | self-bleu ↓ |"
    assert lines[1] == "|---:|---|---:|---:|---:|"
    assert lines[9] == "| 7 | empty-outputs | 0 | null | null |"
    assert "- distinct-n: fewer than two non-blank responses (got 0) (x1)" in lines
    out = tmp_path / "scores.md"
    proc = run("score", str(EXAMPLE), "-m", "distinct-n", "-m", "self-bleu", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == run("score", str(EXAMPLE), "-m", "distinct-n", "-m", "self-bleu",
                                  "-f", "markdown").stdout


def test_json_has_one_shape_with_or_without_summary(tmp_path: Path) -> None:
    docs = []
    for extra in ([], ["--summary"]):
        out = tmp_path / f"s{len(extra)}.json"
        assert run("score", str(EXAMPLE), "-m", "ttr", "-o", str(out), *extra).returncode == 0
        docs.append(json.loads(out.read_text()))
    assert docs[0] == docs[1]
    assert list(docs[0]) == ["results", "summary"]
    assert docs[0]["summary"]["metrics"]["ttr"]["count"] == 7
    stdout = json.loads(run("score", str(EXAMPLE), "-m", "ttr", "-f", "json").stdout)
    assert stdout == docs[0]


def _staged(tmp_path: Path) -> Path:
    """Two stages per prompt: base (the example's sets) and sft (its first two responses twice)."""
    rows = []
    for i, s in enumerate(read_sets(EXAMPLE)):
        if not any(s.responses):
            continue
        rows.append({"set_id": f"p{i}-base", "responses": s.responses, "stage": "base",
                     "prompt_id": i, "tags": ["x"]})
        rows.append({"set_id": f"p{i}-sft", "responses": s.responses[:2] * 2, "stage": "sft",
                     "prompt_id": i, "tags": ["x"]})
    path = tmp_path / "staged.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("ext", ["jsonl", "csv"])
def test_metadata_carried_and_meta_paired_by_stage(tmp_path: Path, ext: str) -> None:
    staged = _staged(tmp_path)
    out = tmp_path / f"scores.{ext}"
    proc = run("score", str(staged), "-m", "distinct-n", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    if ext == "jsonl":
        first = json.loads(out.read_text().splitlines()[0])
        # scalar metadata after the label position, lists left out
        assert list(first) == ["set_id", "row", "stage", "prompt_id", "distinct-n", "reasons",
                               "signatures"]
        assert (first["stage"], first["prompt_id"]) == ("base", 0)
    else:
        assert out.read_text().splitlines()[0] == (
            "set_id,row,stage,prompt_id,distinct-n,reasons,signatures")
    proc = run("meta", "paired", str(out), "-c", "distinct-n", "--by", "stage", "--key",
               "set_id" if False else "prompt_id", "--contrast", "base>sft", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)["base>sft"]
    assert res["n"] == 7
    # the metric's signature comes from the score file, beside the protocol's
    assert res["details"]["metric_signature"] == (
        "distinct-n|n:1..5|avg:mean|tok:tevet|case:mixed|v:0.1.0")
    # every sft set repeats two responses: fewer distinct n-grams than the base set
    base = [divmeter.score(s.responses, "distinct-n").value
            for s in read_sets(staged) if s.metadata["stage"] == "base"]
    sft = [divmeter.score(s.responses, "distinct-n").value
           for s in read_sets(staged) if s.metadata["stage"] == "sft"]
    assert res["delta"] == pytest.approx(sum(b - a for b, a in zip(base, sft, strict=True)) / 7)
    assert res["sign_accuracy"] == 1.0


def test_resume_with_carried_metadata(tmp_path: Path) -> None:
    staged = _staged(tmp_path)
    out = tmp_path / "scores.jsonl"
    assert run("score", str(staged), "-m", "ttr", "-o", str(out)).returncode == 0
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:5]) + "\n")
    proc = run("score", str(staged), "-m", "ttr", "-o", str(out), "--resume")
    assert proc.returncode == 0, proc.stderr
    assert "(5 already there)" in proc.stderr
    assert out.read_text().splitlines() == lines
