"""Every output of ``score``, ``meta`` and ``compare`` holds the metric signatures (issue 31).

One test per format: score's JSONL, CSV, JSON, Parquet (records and schema metadata), Markdown,
terminal table and HTML; meta's and compare's JSON, table, Markdown and HTML. ``report``,
``meta`` and ``compare`` read the signatures from the file, never recompute them: the files
below carry a signature no run of this divmeter would make (``v:9.9.9``), and it is that one
that comes out. ``--resume`` refuses a file whose signatures differ from the run's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import divmeter
from cli_util import run_main
from divmeter.inputs.data import read_records, read_sets

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "stories.jsonl"
SIG = divmeter.score(["a b", "a c"], "distinct-n").signature  # this install's
FOREIGN = SIG.replace("|v:", "|v:9.9.9-was-") if "|v:" in SIG else SIG + "|v:9.9.9"


def _score(monkeypatch, capsys, *args: str) -> tuple[str, str]:
    code, out, err = run_main(monkeypatch, capsys, "score", str(EXAMPLE), "-m", "distinct-n",
                              "-q", *args)
    assert code == 0, err
    return out, err


# --------------------------------------------------------------------------------------------
# score: one test per format


@pytest.mark.parametrize("ext", ["jsonl", "csv", "json", "parquet"])
def test_score_record_files_hold_signatures(tmp_path, monkeypatch, capsys, ext):
    if ext == "parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"s.{ext}"
    _score(monkeypatch, capsys, "-o", str(out))
    records = list(read_records(out))
    assert len(records) == 8
    assert all(r["signatures"] == {"distinct-n": SIG} for r in records)


def test_score_parquet_schema_metadata(tmp_path, monkeypatch, capsys):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "s.parquet"
    _score(monkeypatch, capsys, "-o", str(out))
    meta = pq.read_schema(str(out)).metadata
    assert json.loads(meta[b"divmeter.signatures"]) == {"distinct-n": SIG}


def test_score_json_summary_holds_signatures(tmp_path, monkeypatch, capsys):
    out = tmp_path / "s.json"
    _score(monkeypatch, capsys, "-o", str(out))
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["summary"]["metrics"]["distinct-n"]["signature"] == SIG


def test_score_jsonl_to_stdout(monkeypatch, capsys):
    out, _ = _score(monkeypatch, capsys, "-f", "jsonl")
    assert all(json.loads(line)["signatures"] == {"distinct-n": SIG}
               for line in out.splitlines())


@pytest.mark.parametrize("fmt", ["markdown", "table"])
def test_score_markdown_and_table_show_signatures(monkeypatch, capsys, fmt):
    monkeypatch.setenv("COLUMNS", "200")
    out, _ = _score(monkeypatch, capsys, "-f", fmt)
    assert SIG in out
    assert out.count(SIG) == 1  # once, under the table (not again in a summary)


def test_score_no_signatures_opts_out(tmp_path, monkeypatch, capsys):
    out = tmp_path / "s.jsonl"
    _score(monkeypatch, capsys, "-o", str(out), "--no-signatures")
    assert all("signatures" not in r for r in read_records(out))


def test_score_html_report(tmp_path, monkeypatch, capsys):
    out, html = tmp_path / "s.jsonl", tmp_path / "r.html"
    _score(monkeypatch, capsys, "-o", str(out), "--html", str(html))
    assert SIG in html.read_text(encoding="utf-8")


def _foreign_file(tmp_path: Path, ext: str = "jsonl") -> Path:
    """The example's scores as another divmeter version wrote them (its signature)."""
    rows = []
    for i, s in enumerate(read_sets(EXAMPLE)):
        v = divmeter.score(s.responses, "distinct-n").value
        rows.append({"set_id": s.set_id, "row": i, "label": s.label, "prompt": s.prompt,
                     "distinct-n": v,
                     "reasons": {}, "signatures": {"distinct-n": FOREIGN}})
    path = tmp_path / f"old.{ext}"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("ext", ["jsonl", "csv", "parquet"])
def test_report_reads_signatures_from_the_file(tmp_path, monkeypatch, capsys, ext):
    if ext == "parquet":
        pytest.importorskip("pyarrow")
    src = _foreign_file(tmp_path)
    if ext != "jsonl":  # the same records in another format, written by divmeter's writer
        from divmeter.inputs.data import open_record_writer

        path = tmp_path / f"old.{ext}"
        with open_record_writer(path) as w:
            for r in read_records(src):
                w.write(r)
        src = path
    html = tmp_path / "r.html"
    code, _, err = run_main(monkeypatch, capsys, "report", str(src), "-o", str(html))
    assert code == 0, err
    page = html.read_text(encoding="utf-8")
    assert FOREIGN in page and SIG not in page


# --------------------------------------------------------------------------------------------
# --resume


def test_resume_refuses_other_signatures(tmp_path, monkeypatch, capsys):
    part = _foreign_file(tmp_path)
    lines = part.read_text(encoding="utf-8").splitlines(keepends=True)
    part.write_text("".join(lines[:3]), encoding="utf-8")
    code, _, err = run_main(monkeypatch, capsys, "score", str(EXAMPLE), "-m", "distinct-n",
                            "-o", str(part), "--resume", "-q")
    assert code == 2
    assert err.startswith("divmeter: error: cannot resume old.jsonl: its 'distinct-n' was "
                          f"scored as {FOREIGN!r}, this run scores it as {SIG!r}")
    assert part.read_text(encoding="utf-8") == "".join(lines[:3])  # left as it was


def test_resume_refuses_a_file_without_signatures(tmp_path, monkeypatch, capsys):
    full = tmp_path / "full.jsonl"
    _score(monkeypatch, capsys, "-o", str(full))
    part = tmp_path / "part.jsonl"
    rows = [r for r in read_records(full)][:3]
    for r in rows:
        del r["signatures"]
    part.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, _, err = run_main(monkeypatch, capsys, "score", str(EXAMPLE), "-m", "distinct-n",
                            "-o", str(part), "--resume", "-q")
    assert code == 2 and "its records carry no signatures" in err
    # the user's way out: extend it unchecked, without signatures
    code, _, err = run_main(monkeypatch, capsys, "score", str(EXAMPLE), "-m", "distinct-n",
                            "-o", str(part), "--resume", "-q", "--no-signatures")
    assert code == 0, err
    assert len(list(read_records(part))) == 8


def test_resume_with_the_same_signatures_completes(tmp_path, monkeypatch, capsys):
    full = tmp_path / "full.jsonl"
    _score(monkeypatch, capsys, "-o", str(full))
    part = tmp_path / "part.jsonl"
    part.write_text("".join(full.read_text(encoding="utf-8").splitlines(keepends=True)[:3]),
                    encoding="utf-8")
    code, _, err = run_main(monkeypatch, capsys, "score", str(EXAMPLE), "-m", "distinct-n",
                            "-o", str(part), "--resume", "-q")
    assert code == 0, err
    assert part.read_bytes() == full.read_bytes()


# --------------------------------------------------------------------------------------------
# meta and compare: JSON, table, Markdown, HTML


def _meta(monkeypatch, capsys, *args: str) -> str:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, err = run_main(monkeypatch, capsys, *args)
    assert code == 0, err
    return out


@pytest.mark.parametrize("fmt", ["json", "table", "markdown"])
def test_meta_contest_of_a_score_file_shows_its_signature(tmp_path, monkeypatch, capsys, fmt):
    src = _foreign_file(tmp_path)
    out = _meta(monkeypatch, capsys, "meta", "contest", str(src), "-c", "distinct-n", "-f", fmt,
                "--nan", "omit")
    if fmt == "json":
        assert json.loads(out)["distinct-n"]["details"]["metric_signature"] == FOREIGN
    else:
        assert FOREIGN in out


@pytest.mark.parametrize("fmt", ["json", "table", "markdown"])
def test_meta_computed_metric_shows_its_signature(monkeypatch, capsys, fmt):
    out = _meta(monkeypatch, capsys, "meta", "dectest", str(EXAMPLE), "-m", "distinct-n",
                "-f", fmt)
    if fmt == "json":
        assert json.loads(out)["distinct-n"]["details"]["metric_signature"] == SIG
    else:
        assert SIG in out


def test_meta_html(tmp_path, monkeypatch, capsys):
    html = tmp_path / "m.html"
    _meta(monkeypatch, capsys, "meta", "contest", str(_foreign_file(tmp_path)), "-c",
          "distinct-n", "-f", "json", "--html", str(html), "--no-plots", "--nan", "omit")
    assert FOREIGN in html.read_text(encoding="utf-8")


def test_meta_pairwise_shows_computed_signature(tmp_path, monkeypatch, capsys):
    pairs = tmp_path / "pairs.jsonl"
    rows = [{"set1": ["a b c", "d e f"], "set2": ["a b c", "a b c"], "label": 0},
            {"set1": ["x y", "x y"], "set2": ["p q", "r s"], "label": 1},
            {"set1": ["k l m", "n o p"], "set2": ["k l", "k l"], "label": 0}]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = _meta(monkeypatch, capsys, "meta", "pairwise", str(pairs), "-m", "distinct-n",
                "-f", "json", "--resamples", "50")
    assert json.loads(out)["distinct-n"]["details"]["metric_signature"] == SIG


def _systems(tmp_path: Path) -> tuple[Path, Path]:
    base = _foreign_file(tmp_path)
    new = tmp_path / "new.jsonl"
    rows = list(read_records(base))
    for r in rows:
        r["distinct-n"] = None if r["distinct-n"] is None else r["distinct-n"] * 0.9
    new.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return base, new


@pytest.mark.parametrize("fmt", ["json", "table", "markdown"])
def test_compare_shows_each_systems_signature(tmp_path, monkeypatch, capsys, fmt):
    base, new = _systems(tmp_path)
    out = _meta(monkeypatch, capsys, "compare", f"base={base}", f"new={new}", "-c",
                "distinct-n", "-f", fmt, "--bootstrap", "100")
    if fmt == "json":
        row = json.loads(out)["distinct-n"]
        assert row["details"]["metric_signature"] == FOREIGN
        assert "baseline_metric_signature" not in row["details"]  # same settings on both sides
    else:
        assert FOREIGN in out and "DIFFERS" not in out


def test_compare_says_when_the_systems_were_scored_differently(tmp_path, monkeypatch, capsys):
    base, _ = _systems(tmp_path)
    fresh = tmp_path / "fresh.jsonl"
    _score(monkeypatch, capsys, "-o", str(fresh))  # this install's signature
    out = _meta(monkeypatch, capsys, "compare", f"base={base}", f"fresh={fresh}", "-c",
                "distinct-n", "-f", "json", "--bootstrap", "100")
    row = json.loads(out)["distinct-n"]
    assert (row["details"]["metric_signature"],
            row["details"]["baseline_metric_signature"]) == (SIG, FOREIGN)
    table = _meta(monkeypatch, capsys, "compare", f"base={base}", f"fresh={fresh}", "-c",
                  "distinct-n", "-f", "markdown", "--bootstrap", "100")
    assert f"{SIG} (DIFFERS from the baseline's {FOREIGN})" in table


def test_compare_html(tmp_path, monkeypatch, capsys):
    base, new = _systems(tmp_path)
    html = tmp_path / "c.html"
    _meta(monkeypatch, capsys, "compare", f"base={base}", f"new={new}", "-c", "distinct-n",
          "-f", "json", "--bootstrap", "100", "--html", str(html), "--no-plots")
    page = html.read_text(encoding="utf-8")
    assert FOREIGN in page
    assert '<section id="evidence">' in page and "<li><b>distinct-n</b>: " in page


def test_meta_nuggets_shows_the_metric_signature(monkeypatch, capsys):
    out = _meta(monkeypatch, capsys, "meta", "nuggets", str(EXAMPLE), "-m", "distinct-n",
                "--group-size", "4", "-f", "json")
    assert json.loads(out)["distinct-n"]["details"]["metric_signature"] == SIG
    out = _meta(monkeypatch, capsys, "meta", "nuggets", str(EXAMPLE), "-m", "distinct-n",
                "--group-size", "4", "-f", "table")
    assert f"distinct-n: {SIG}" in out
