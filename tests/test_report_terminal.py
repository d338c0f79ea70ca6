"""What must be copied from a terminal is never broken (issue 26, "The terminal"): signatures,
set ids and numbers stay whole on their lines at 60, 80 and 120 columns, tables fold by whole
columns, and no line ends in spaces. Run through the real `divmeter` command in a subprocess,
as a person's terminal would show it (COLUMNS set, output read as text)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from divmeter.report.terminal import fold_columns, folded_tables, print_unbroken

REPO = Path(__file__).resolve().parents[1]
DIVMETER = Path(sys.executable).parent / "divmeter"
WIDTHS = (60, 80, 120)
METRICS = ("distinct-n", "self-bleu", "vendi-ngram:q=0.5", "homogenization:measure=rougeL",
           "ngram-cosine")


def run(*args: str, columns: int, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50"}
    return subprocess.run([str(DIVMETER), *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env)


def check_unbroken(text: str, width: int, whole: list[str]) -> list[str]:
    lines = text.splitlines()
    assert all(ln == ln.rstrip() for ln in lines), [ln for ln in lines if ln != ln.rstrip()]
    for item in whole:
        assert any(item in ln for ln in lines), f"{item!r} is not whole on any line"
    return lines


def _long_id_sets(tmp_path: Path) -> Path:
    rows = []
    stories = json.loads("[" + ",".join((REPO / "examples" / "stories.jsonl").read_text()
                                        .splitlines()) + "]")
    for i, s in enumerate(stories[:4]):
        rows.append({**s, "set_id": f"lighthouse@temperature=0.{i}2-and-a-long-tail-{i}"})
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("width", WIDTHS)
def test_score_table_and_summary_never_break_ids_numbers_or_signatures(width, tmp_path):
    import divmeter

    path = _long_id_sets(tmp_path)
    args = ["score", str(path), "--summary", "-f", "table"]
    for m in METRICS:
        args += ["-m", m]
    proc = run(*args, columns=width)
    assert proc.returncode == 0, proc.stderr
    texts = [json.loads(x)["responses"] for x in path.read_text().splitlines()]
    sigs = [divmeter.score(texts[0], m).signature for m in METRICS]
    ids = [json.loads(x)["set_id"] for x in path.read_text().splitlines()]
    lines = check_unbroken(proc.stdout, width, sigs + ids)
    # every signature stands alone after its column name, once
    for sig in sigs:
        assert sum(ln.endswith(sig) for ln in lines) == 1, sig
    # the table folds by whole columns: a part holding two metric columns or more fits the
    # terminal; only a part of the key columns and one metric column may overflow it (the long
    # set ids are never cut)
    parts: list[list[str]] = []
    for ln in lines:
        if ln.startswith("4 sets"):
            parts.append([])
        elif parts and ln.startswith("[1]"):
            break
        elif parts:
            parts[-1].append(ln)
    assert parts and sum(len(p[0].split()) - 3 for p in parts) == len(METRICS)
    for part in parts:
        if len(part[0].split()) - 3 > 1:
            assert max(len(ln) for ln in part) <= width, part
    if width == 120:
        assert len(parts) == 1


@pytest.mark.parametrize("width", WIDTHS)
def test_meta_and_compare_print_signatures_whole(width, tmp_path):
    rows_a, rows_b = [], []
    for i in range(6):
        rows_a.append({"set_id": f"s{i}", "self-bleu:n=3": 0.1 * i, "distinct-n": 0.5 + 0.05 * i})
        rows_b.append({"set_id": f"s{i}", "self-bleu:n=3": 0.1 * i + 0.07 * (i % 3),
                       "distinct-n": 0.5 + 0.03 * i})
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in rows_a))
    b.write_text("".join(json.dumps(r) + "\n" for r in rows_b))
    table = run("compare", str(a), str(b), "-c", "self-bleu:n=3", "-c", "distinct-n", "-f",
                "table", "--bootstrap", "200", columns=width)
    data = run("compare", str(a), str(b), "-c", "self-bleu:n=3", "-c", "distinct-n", "-f",
               "json", "--bootstrap", "200", columns=width)
    assert table.returncode == 0 and data.returncode == 0, table.stderr + data.stderr
    sigs = [row["signature"] for row in json.loads(data.stdout).values()]
    check_unbroken(table.stdout, width, sigs + ["self-bleu:n=3", "distinct-n"])
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("".join(json.dumps({**r, "label": i % 2}) + "\n"
                                for i, r in enumerate(rows_a)))
    table = run("meta", "contest", str(labelled), "-c", "distinct-n", "-f", "table",
                columns=width)
    data = run("meta", "contest", str(labelled), "-c", "distinct-n", "-f", "json",
               columns=width)
    assert table.returncode == 0, table.stderr
    sig = json.loads(data.stdout)["distinct-n"]["signature"]
    check_unbroken(table.stdout, width, [sig])


def test_fold_columns_keeps_key_columns_and_never_splits_one():
    assert fold_columns([5], [10, 10, 10], 40) == [[0, 1], [2]]
    assert fold_columns([5], [60], 40) == [[0]]  # too wide alone: its own part, whole
    assert fold_columns([], [], 80) == [[]]


def test_print_unbroken_folds_tables_and_strips_trailing_spaces(capsys):
    header = ["set_id"] + [f"metric-number-{i}" for i in range(6)]
    rows = [[f"set-{r}-long-id"] + [f"{0.1 * r * i:.4f}" for i in range(6)]
            for r in range(3)]
    console = Console(width=60, file=sys.stdout)
    print_unbroken(console, *folded_tables(header, rows, keys=1, width=60, title="sets"),
                   "sig|" + "x" * 90)
    out = capsys.readouterr().out.splitlines()
    assert [ln for ln in out if ln.startswith("sets")] == ["sets (1/3)", "sets (2/3)",
                                                           "sets (3/3)"]
    assert all(ln == ln.rstrip() for ln in out)
    assert sum(ln.startswith("set-0-long-id") for ln in out) == 3
    assert "sig|" + "x" * 90 in out
    assert max(len(ln) for ln in out if not ln.startswith("sig|")) <= 60


@pytest.mark.parametrize("width", (60, 80))
def test_agreement_signature_is_whole(width):
    ratings = REPO / "examples" / "ratings.csv"
    table = run("meta", "agreement", str(ratings), "--rater", "ann1", "--rater", "ann2",
                "--rater", "ann3", "--reference", "llm", "-f", "table", columns=width)
    data = run("meta", "agreement", str(ratings), "--rater", "ann1", "--rater", "ann2",
               "--rater", "ann3", "--reference", "llm", "-f", "json", columns=width)
    assert table.returncode == 0 and data.returncode == 0, table.stderr + data.stderr
    lines = check_unbroken(table.stdout, width, [json.loads(data.stdout)["signature"]])
    assert all(len(ln) <= width for ln in lines if "|v:" not in ln)
