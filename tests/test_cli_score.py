"""The `divmeter score` command, run as a user would (subprocess of the console script)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import divmeter
from divmeter.apps.cli import app
from divmeter.inputs.data import ResponseSet, read_records, read_sets, write_sets

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "stories.jsonl"
DIVMETER = Path(sys.executable).parent / "divmeter"
METRICS = ["-m", "distinct-n", "-m", "distinct-n:n=2"]


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(DIVMETER), *args], input=stdin, capture_output=True, timeout=300, cwd=REPO
    )


def expected() -> list[dict]:
    """The records of the example, with each metric's signature (kept in every output)."""
    out = []
    for row, s in enumerate(read_sets(EXAMPLE)):
        a = divmeter.score(s.responses, "distinct-n")
        b = divmeter.score(s.responses, "distinct-n", n=2)
        reasons = {c: r.reason for c, r in (("distinct-n", a), ("distinct-n:n=2", b)) if r.reason}
        out.append(
            {
                "set_id": s.set_id,
                "row": row,
                "label": s.label,
                "prompt": s.prompt,  # the input's own fields are carried (issue 33)
                "distinct-n": a.value,
                "distinct-n:n=2": b.value,
                "reasons": reasons,
                "signatures": {"distinct-n": a.signature, "distinct-n:n=2": b.signature},
            }
        )
    return out


def test_example_to_jsonl_file(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    proc = run("score", str(EXAMPLE), *METRICS, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert list(read_records(out)) == expected()
    assert expected()[-1]["distinct-n"] is None  # the degenerate set: null with a reason
    assert b"divmeter: scored 8 sets" in proc.stderr


def test_stdin_to_stdout_jsonl() -> None:
    proc = run("score", "-", *METRICS, stdin=EXAMPLE.read_bytes())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode("utf-8").splitlines()
    assert [json.loads(line) for line in lines] == expected()


def test_stdin_csv_with_input_format() -> None:
    data = b"set_id,response\nq,a b\nq,a c\n"
    proc = run("score", "-", "--input-format", "csv", "-m", "distinct-n:n=1", stdin=data)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "set_id": "q",
        "row": 0,
        "distinct-n:n=1": 0.75,
        "reasons": {},
        "signatures": {"distinct-n:n=1": "distinct-n|n:1|tok:tevet|case:mixed|v:0.1.0"},
    }


@pytest.mark.parametrize("ext", ["csv", "json", "parquet"])
def test_other_output_formats_hold_the_same_records(tmp_path: Path, ext: str) -> None:
    out = tmp_path / f"scores.{ext}"
    proc = run("score", str(EXAMPLE), *METRICS, "-o", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    assert list(read_records(out)) == expected()
    assert not Path(f"{out}.partial.jsonl").exists()


def test_summary_in_json_output(tmp_path: Path) -> None:
    out = tmp_path / "scores.json"
    proc = run("score", str(EXAMPLE), *METRICS, "-o", str(out), "--summary", "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["results"] == expected()
    values = [r["distinct-n"] for r in expected() if r["distinct-n"] is not None]
    s = doc["summary"]["metrics"]["distinct-n"]
    assert doc["summary"]["sets"] == 8
    assert (s["count"], s["nulls"]) == (7, 1)
    assert s["mean"] == pytest.approx(sum(values) / 7)
    assert s["signature"] == "distinct-n|n:1..5|avg:mean|tok:tevet|case:mixed|v:0.1.0"
    assert s["reasons"] == {"fewer than two non-blank responses (got 0)": 1}  # the one rule
    assert b"summary over 8 sets" in proc.stderr  # also shown to the user


@pytest.mark.parametrize("ext", ["jsonl", "csv"])
def test_resume_completes_an_interrupted_run(tmp_path: Path, ext: str) -> None:
    full = tmp_path / f"full.{ext}"
    assert run("score", str(EXAMPLE), *METRICS, "-o", str(full)).returncode == 0
    lines = full.read_text(encoding="utf-8").splitlines(keepends=True)
    part = tmp_path / f"part.{ext}"
    part.write_text("".join(lines[:4]) + lines[4][:25], encoding="utf-8")  # killed mid-write
    done = 4 if ext == "jsonl" else 3  # the CSV header is one of the lines
    proc = run("score", str(EXAMPLE), *METRICS, "-o", str(part), "--resume")
    assert proc.returncode == 0, proc.stderr
    assert f"scored {8 - done} sets ({done} already there)".encode() in proc.stderr
    assert part.read_text(encoding="utf-8") == full.read_text(encoding="utf-8")


def test_resume_json_from_sidecar(tmp_path: Path) -> None:
    full = tmp_path / "full.json"
    assert run("score", str(EXAMPLE), *METRICS, "-o", str(full), "-q").returncode == 0
    out = tmp_path / "part.json"
    side = Path(f"{out}.partial.jsonl")
    side.write_text("".join(json.dumps(r) + "\n" for r in expected()[:4]), encoding="utf-8")
    proc = run("score", str(EXAMPLE), *METRICS, "-o", str(out), "--resume", "-q")
    assert proc.returncode == 0, proc.stderr
    assert not side.exists()
    assert out.read_text(encoding="utf-8") == full.read_text(encoding="utf-8")


def test_workers_two_equals_one(tmp_path: Path) -> None:
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert run("score", str(EXAMPLE), *METRICS, "-o", str(one)).returncode == 0
    assert run("score", str(EXAMPLE), *METRICS, "-o", str(two), "--workers", "2").returncode == 0
    assert two.read_text(encoding="utf-8") == one.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "distinct"],
         "Unknown metric 'distinct'. Did you mean 'distinct-n' or 'distinct-k'?"),
        (["-m", "distinct-n:n=0"], "metric 'distinct-n:n=0': `n` of distinct-n must be"),
        (["-m", "distinct-n", "-f", "xml"],
         "--format must be one of table, markdown, json, jsonl, csv, parquet; got 'xml'"),
        (["-m", "distinct-n", "--resume"], "--resume needs an output file"),
        (["-m", "distinct-n", "-f", "parquet"], "Parquet output needs a file"),
    ],
)
def test_usage_errors_one_line_exit_2(args: list[str], message: str) -> None:
    proc = run("score", str(EXAMPLE), *args)
    assert proc.returncode == 2
    err = proc.stderr.decode("utf-8")
    assert err.startswith("divmeter: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_malformed_file_stops_before_writing(tmp_path: Path) -> None:
    bad = tmp_path / "responses.jsonl"
    good = EXAMPLE.read_text(encoding="utf-8").splitlines()[:2]
    bad.write_text("\n".join([*good, '{"set_id": "x", "responses": "oops"}']) + "\n")
    out = tmp_path / "out.jsonl"
    proc = run("score", str(bad), "-m", "distinct-n", "-o", str(out))
    assert proc.returncode == 2
    assert proc.stderr.decode() == (
        "divmeter: error: responses.jsonl line 3: field 'responses' must be a list of strings; "
        "got str.\n"
    )
    assert not out.exists()
    proc = run("--debug", "score", str(bad), "-m", "distinct-n")
    assert b"Traceback" in proc.stderr


def test_missing_input_file() -> None:
    proc = run("score", "nope.jsonl", "-m", "distinct-n")
    assert proc.returncode == 2
    assert proc.stderr.decode() == "divmeter: error: No such file or directory: nope.jsonl\n"


def test_table_output_with_summary() -> None:
    result = CliRunner().invoke(
        app, ["score", str(EXAMPLE), *METRICS, "--format", "table", "--summary"]
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "lighthouse-diverse" in out and "0.9604" in out
    assert "null" in out and "fewer than two non-blank responses (got 0)" in out
    assert "summary over 8 sets" in out


def test_ctrl_c_keeps_what_was_written_and_resume_finishes(tmp_path: Path) -> None:
    import random
    import signal
    import time

    from divmeter.engine.batch import score_sets

    rng = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    sets = [
        ResponseSet(f"s{i}", [" ".join(rng.choices(words, k=12)) for _ in range(5)])
        for i in range(3000)
    ]
    src = tmp_path / "many.jsonl"
    write_sets(sets, src)
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [str(DIVMETER), "score", str(src), "-m", "homogenization:measure=rougeL", "-o", str(out)],
        stderr=subprocess.PIPE,
    )
    while not (out.exists() and out.stat().st_size > 0):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert err.decode().endswith("divmeter: interrupted (what was written so far is kept).\n")
    kept = list(read_records(out))
    assert 0 < len(kept) < len(sets)
    again = run(
        "score", str(src), "-m", "homogenization:measure=rougeL", "-o", str(out), "--resume"
    )
    assert again.returncode == 0, again.stderr
    assert list(read_records(out)) == list(score_sets(sets, ["homogenization:measure=rougeL"],
                                                      with_signatures=True))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "decan:permutations=0", "-j", "2"],
         "metric 'decan:permutations=0': `permutations` of decan must be an integer >= 1; got 0."),
        (["-m", "decan:format=x"],
         "metric 'decan:format=x': `format` of decan must be one of instruct, completion; "
         "got 'x'."),
        (["-m", "embedding-cosine:reduction=mean", "-j", "2"],
         "metric 'embedding-cosine:reduction=mean': `reduction` of embedding-cosine must be one "
         "of neg-mean, one-minus-mean; got 'mean'."),
        (["-m", "distinct-n:lowercase=maybe"],
         "metric 'distinct-n:lowercase=maybe': `lowercase` of distinct-n must be true or false; "
         "got 'maybe'."),
    ],
)
def test_bad_parameters_exit_2_before_any_set(tmp_path: Path, args: list[str],
                                              message: str) -> None:
    """Issue 16: every family, every -j: one error line, exit 2, no output file."""
    out = tmp_path / "out.jsonl"
    proc = run("score", str(EXAMPLE), *args, "-o", str(out))
    assert proc.returncode == 2
    assert proc.stderr.decode() == f"divmeter: error: {message}\n"
    assert not out.exists()


def test_list_shows_parameter_types_and_choices() -> None:
    result = CliRunner().invoke(app, ["list", "--format", "json"])
    assert result.exit_code == 0
    specs = {s["name"]: s for s in json.loads(result.output)}
    assert specs["self-bleu"]["parameters"]["variant"] == {
        "type": "str", "default": "corpus", "choices": ["corpus", "sentence"],
        "constraint": "one of corpus, sentence", "doc": "corpus BLEU or mean sentence BLEU",
    }
    assert specs["distinct-n"]["parameters"]["n"]["constraint"] == "an integer >= 1 or none"
    assert specs["distinct-n"]["params"] == {"n": None, "n_max": 5, "tokenizer": "tevet",
                                             "lowercase": False, "approx": None}
    # issue 15: parameters moved from the list table to `divmeter list NAME`
    table = CliRunner().invoke(app, ["list", "self-bleu"], env={"COLUMNS": "250"})
    lines = [" ".join(ln.split()) for ln in table.output.splitlines()]
    assert ('variant str "corpus" one of corpus, sentence. corpus BLEU or mean sentence BLEU'
            in lines)
    table = CliRunner().invoke(app, ["list", "distinct-n"], env={"COLUMNS": "250"})
    lines = [" ".join(ln.split()) for ln in table.output.splitlines()]
    assert "n int|None null an integer >= 1 or none. one n-gram order (None: mean over 1..n_max)" \
        in lines


def test_score_file_is_what_the_command_runs(tmp_path: Path) -> None:
    """The library run (divmeter.engine.runner.score_file) writes the same bytes as the command."""
    from divmeter.engine.runner import score_file

    lib, cli = tmp_path / "lib.jsonl", tmp_path / "cli.jsonl"
    run_ = score_file(EXAMPLE, ["distinct-n", "distinct-n:n=2"], str(lib))
    assert (run_.scored, run_.skipped, run_.has_label) == (8, 0, True)
    proc = run("score", str(EXAMPLE), *METRICS, "-o", str(cli), "-q")
    assert proc.returncode == 0, proc.stderr
    assert lib.read_bytes() == cli.read_bytes()
    collected = score_file(EXAMPLE, ["distinct-n", "distinct-n:n=2"], signatures=True).records
    assert collected == expected()


def test_commands_stay_thin() -> None:
    """Issue 9: commands parse and print; no function in cli/ is over 80 lines."""
    import ast

    import divmeter.apps.cli as pkg

    long = []
    for path in sorted(Path(pkg.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        long += [(path.name, f.name, f.end_lineno - f.lineno + 1) for f in ast.walk(tree)
                 if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                 and f.end_lineno - f.lineno + 1 > 80]
    assert long == []


def test_html_report_of_a_run_streamed_to_stdout(tmp_path: Path, monkeypatch, capsys) -> None:
    """`divmeter score FILE -m M --html r.html` with stdout piped: the records go to stdout and
    the report holds them too (it read the emptied stdin stream before and refused)."""
    from tests.cli_util import run_main

    src = Path(__file__).resolve().parents[1] / "examples" / "stories.jsonl"
    html = tmp_path / "r.html"
    code, out, err = run_main(monkeypatch, capsys, "score", str(src), "-m", "distinct-n",
                              "--html", str(html))
    assert code == 0, err
    streamed = [json.loads(line) for line in out.splitlines()]
    assert [r["set_id"] for r in streamed] == [s.set_id for s in read_sets(src)]
    page = html.read_text(encoding="utf-8")
    assert all(r["set_id"] in page for r in streamed)
    assert streamed[0]["signatures"]["distinct-n"] in page
