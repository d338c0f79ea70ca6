"""Issue 16: never destroy a user's file, bounded work, one-line errors on every path.

Every case is reproduced first (parametrized over the bad inputs), through the console entry
point (:func:`divmeter.apps.cli.main`, in process) where the issue reports a command: exit code 2,
exactly one line on stderr starting ``divmeter: error:``, and the input left byte-identical.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli_util import run_main
from divmeter.core.errors import InvalidInputError
from divmeter.engine.batch import completed_rows, evaluate, resolve_metrics
from divmeter.engine.runner import score_file
from divmeter.inputs.data import ResponseSet, read_sets
from divmeter.inputs.data.outputs import output_lock, refuse_input_as_output, same_file
from divmeter.inputs.data.writers import write_sets

SETS = [
    {"set_id": "a", "responses": ["the cat sat", "a dog ran"]},
    {"set_id": "b", "responses": ["x y z", "x y w"]},
]


def _jsonl(path: Path, rows: list[dict[str, Any]] = SETS) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def assert_one_line_error(code: int, err: str, match: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("divmeter: error: "), err
    assert match in lines[0], lines[0]


# ------------------------------------------------------------------------------- data loss


@pytest.mark.parametrize("how", ["same", "dotted", "symlink", "hardlink"])
def test_score_refuses_output_that_is_the_input(how: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    src = _jsonl(tmp_path / "big.jsonl")
    before = src.read_bytes()
    out = {"same": src, "dotted": tmp_path / "." / "big.jsonl"}.get(how, tmp_path / "out.jsonl")
    if how == "symlink":
        out.symlink_to(src)
    elif how == "hardlink":
        os.link(src, out)
    code, _, err = run_main(monkeypatch, capsys, "score", str(src), "-m", "distinct-n", "-o",
                            str(out))
    assert_one_line_error(code, err, "is the input file big.jsonl")
    assert ("(through a link)" in err) == (how in {"symlink", "hardlink"})
    assert src.read_bytes() == before


def test_meta_nuggets_refuses_output_that_is_the_input(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"set_id": str(i), "responses": ["a b", f"c {i}"], "label": i % 2} for i in range(8)]
    src = _jsonl(tmp_path / "n.jsonl", rows)
    before = src.read_bytes()
    code, _, err = run_main(monkeypatch, capsys, "meta", "nuggets", str(src), "-m", "distinct-n",
                            "-o", str(src))
    assert_one_line_error(code, err, "is the input file n.jsonl")
    assert src.read_bytes() == before


def test_same_file() -> None:
    assert same_file("a/../b.jsonl", "b.jsonl")
    assert not same_file("-", "-")
    refuse_input_as_output(["-"], "-")  # stdin/stdout never collide
    refuse_input_as_output(["a.jsonl"], None)


NOT_DIVMETER = [
    ("r.csv", b"a,b\n1,2\n", "its header is ['a', 'b']"),
    ("h.csv", b"a,b\n", "its header is ['a', 'b']"),
    ("c.json", b"x\n", "invalid JSON"),
    ("s.json", b'{"a": 1}\n', "must hold a list of records"),
    ("l.json", b"[1, 2]\n", "each record must be a JSON object; got int"),
    ("p.parquet", b"PAR1xx", "not a readable Parquet file"),
    ("m.jsonl", b'{"set_id": "a", "row": 0, "ttr": 1.0, "reasons": {}}\n', "holds metrics"),
    ("n.jsonl", b'{"set_id": "a", "row": "x", "distinct-n": 1.0}\n', "no 'row' field"),
]


@pytest.mark.parametrize(("name", "data", "match"), NOT_DIVMETER,
                         ids=[n for n, _, _ in NOT_DIVMETER])
def test_resume_refuses_files_that_are_not_divmeter_records(
        name: str, data: bytes, match: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    src = _jsonl(tmp_path / "in.jsonl")
    out = tmp_path / name
    out.write_bytes(data)
    code, _, err = run_main(monkeypatch, capsys, "score", str(src), "-m", "distinct-n", "-o",
                            str(out), "--resume")
    assert_one_line_error(code, err, f"cannot resume from {name}")
    assert match in err
    assert out.read_bytes() == data  # untouched


def test_resume_of_a_divmeter_csv_still_works(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "in.jsonl")
    out = tmp_path / "o.csv"
    score_file(src, ["distinct-n"], str(out))
    first = out.read_bytes()
    run = score_file(src, ["distinct-n"], str(out), resume=True)
    assert (run.skipped, run.scored) == (2, 0)
    assert out.read_bytes() == first
    assert completed_rows(out, columns=["distinct-n"])[0] == {0: "a", 1: "b"}


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".json", ".parquet"])
@pytest.mark.parametrize("resume", [False, True])
def test_output_held_by_another_writer_is_refused(suffix: str, resume: bool,
                                                  tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "in.jsonl")
    out = tmp_path / f"o{suffix}"
    score_file(src, ["distinct-n"], str(out))
    before = out.read_bytes()
    locked = Path(f"{out}.partial.jsonl") if suffix in {".json", ".parquet"} else out
    with output_lock(locked), pytest.raises(
            InvalidInputError, match=r"is being written by another process"):
        score_file(src, ["distinct-n"], str(out), resume=resume)
    assert out.read_bytes() == before
    score_file(src, ["distinct-n"], str(out), resume=resume)  # released: fine again
    assert not Path(f"{out}.partial.jsonl").exists()


def test_failed_run_leaves_no_output_behind(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"not gzip")
    for name in ("o.jsonl", "o.json"):
        with pytest.raises(InvalidInputError, match="not a valid gzip file"):
            score_file(bad, ["distinct-n"], str(tmp_path / name))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl.gz"]


def test_whole_file_outputs_are_replaced_only_when_complete(tmp_path: Path) -> None:
    target = tmp_path / "sets.csv"
    target.write_text("precious\n")
    uneven = [ResponseSet("a", ["x"]), ResponseSet("b", ["x", "y"])]
    with pytest.raises(InvalidInputError, match="wide CSV form needs sets of one size"):
        write_sets(uneven, target, layout="wide")
    assert target.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sets.csv"]  # no temporary left
    assert write_sets(uneven, target) == 2
    assert [s.set_id for s in read_sets(target)] == ["a", "b"]


def test_symlinked_output_writes_through_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("[]\n")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    score_file(_jsonl(tmp_path / "in.jsonl"), ["distinct-n:n=1"], str(link))
    assert link.is_symlink()
    assert [r["set_id"] for r in json.loads(real.read_text())["results"]] == ["a", "b"]


@pytest.mark.skipif(not Path("/proc").is_dir() or sys.platform != "linux", reason="needs /proc")
def test_workers_exit_when_the_parent_is_killed(tmp_path: Path) -> None:
    """SIGKILL the parent of a ``-j 2`` run: its workers and resource tracker are gone soon."""
    rows = [{"set_id": str(i), "responses": [f"w{j} " * 200 + str(i) for j in range(30)]}
            for i in range(4000)]
    src = _jsonl(tmp_path / "in.jsonl", rows)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from divmeter.apps.cli import main; sys.argv[0] = "
         "'divmeter'; main()", "score", str(src), "-m", "self-bleu", "-j", "2", "-q",
         "-o", str(tmp_path / "o.jsonl")], env=env, stderr=subprocess.DEVNULL)

    def children() -> set[int]:
        kids = set()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == proc.pid:
                kids.add(int(stat.parent.name))
        return kids

    deadline = time.monotonic() + 60
    kids: set[int] = set()
    while time.monotonic() < deadline and len(kids) < 3 and proc.poll() is None:
        kids = children()  # two workers and the resource tracker
        time.sleep(0.2)
    assert len(kids) >= 2, "the workers never started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    alive = set(kids)
    deadline = time.monotonic() + 15
    while alive and time.monotonic() < deadline:
        alive = {k for k in alive if Path(f"/proc/{k}").exists()
                 and "Z" not in Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1][:3]}
        time.sleep(0.2)
    for k in alive:  # do not leave them behind if the test fails
        os.kill(k, signal.SIGKILL)
    assert not alive


# ------------------------------------------------------------------------------ bounded work


@pytest.mark.parametrize("metric", ["distinct-n", "entropy-n", "ead", "ngram-cosine",
                                    "self-repetition"])
def test_huge_n_is_null_at_once_in_batch_runs(metric: str) -> None:
    sets = [["a b c", "a b d"], [], ["x y", "x z"]]
    out = evaluate(sets, resolve_metrics([f"{metric}:n=1000000000"]))[0]
    assert [r.reason for r in out] == [  # type: ignore[union-attr]
        "n = 1000000000 is larger than the longest response (3 tokens): no 1000000000-grams",
        "empty set",
        "n = 1000000000 is larger than the longest response (2 tokens): no 1000000000-grams",
    ]


# ------------------------------------------------------------------------- one-line errors


def _bad_inputs(tmp: Path) -> dict[str, tuple[list[str], str]]:
    good = _jsonl(tmp / "good.jsonl")
    (tmp / "notgz.jsonl.gz").write_bytes(b"not gzip at all")
    (tmp / "cut.jsonl.gz").write_bytes(gzip.compress(good.read_bytes())[:30])
    (tmp / "deep.jsonl").write_text('{"responses": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (tmp / "wide.csv").write_bytes(b"set_id,resp_0,resp_1\na,\xff bad,ok\n")
    (tmp / "bad.json").write_text('{"bad\n')
    (tmp / "shape.json").write_text('{"a": 1}\n')
    (tmp / "pairs.jsonl").write_bytes(b'{"set1": ["a \xff"], "set2": ["x"], "label": 0}\n')
    (tmp / "num.jsonl").write_text(json.dumps(
        {"set1": ["a b"], "set2": ["x"], "label": 0, "scores1": {"m": "abc"},
         "scores2": {"m": 1}}) + "\n")
    (tmp / "corrupt.json").write_text("x")
    (tmp / "corrupt.parquet").write_bytes(b"xx")
    (tmp / "empty_model").mkdir()
    g = str(good)
    return {
        "not-gzip": (["score", str(tmp / "notgz.jsonl.gz"), "-m", "distinct-n"],
                     "notgz.jsonl.gz: the file is not a valid gzip file"),
        "truncated-gzip": (["score", str(tmp / "cut.jsonl.gz"), "-m", "distinct-n"],
                           "cut.jsonl.gz: the file is cut short"),
        "deep-jsonl": (["score", str(tmp / "deep.jsonl"), "-m", "distinct-n"],
                       "deep.jsonl line 1: JSON nested too deeply"),
        "deep-json": (["score", str(tmp / "deep.json"), "-m", "distinct-n"],
                      "deep.json line 1: JSON nested too deeply"),
        "wide-csv-utf8": (["score", str(tmp / "wide.csv"), "-m", "distinct-n"],
                          "wide.csv line 2: not valid UTF-8"),
        "contest-malformed": (["meta", "contest", str(tmp / "bad.json"), "-m", "distinct-n"],
                              "bad.json line 1: invalid JSON"),
        "contest-shape": (["meta", "contest", str(tmp / "shape.json"), "-m", "distinct-n"],
                          "shape.json: a JSON file of result records must hold a list"),
        "dectest-shape": (["meta", "dectest", str(tmp / "shape.json"), "-m", "distinct-n"],
                          "shape.json: a JSON file of result records must hold a list"),
        "dectest-deep": (["meta", "dectest", str(tmp / "deep.json"), "-m", "distinct-n"],
                         "deep.json line 1: JSON nested too deeply"),
        "pairwise-utf8": (["meta", "pairwise", str(tmp / "pairs.jsonl"), "-m", "distinct-n"],
                          "pairs.jsonl line 1: not valid UTF-8"),
        "pairwise-scores": (["meta", "pairwise", str(tmp / "num.jsonl"), "-c", "m"],
                            "num.jsonl line 1: field 'scores1.m' must be a number or null"),
        "full-disk-jsonl": (["score", g, "-m", "distinct-n", "-o", "/dev/full", "-f", "jsonl"],
                            "cannot write /dev/full: No space left on device"),
        "resume-json": (["score", g, "-m", "distinct-n", "-o", str(tmp / "corrupt.json"),
                         "--resume"], "cannot resume from corrupt.json"),
        "resume-parquet": (["score", g, "-m", "distinct-n", "-o", str(tmp / "corrupt.parquet"),
                            "--resume"], "cannot resume from corrupt.parquet"),
        "model-not-cached": (["score", g, "-m", "vendi-embedding:model=bogus-model-name"],
                             "model 'bogus-model-name' is not an alias"),
        "model-not-cached-j2": (["score", g, "-m", "chamfer:model=bogus-model-name", "-j", "2"],
                                "model 'bogus-model-name' is not an alias"),
        "model-empty-folder": (["score", g, "-m", f"chamfer:model={tmp / 'empty_model'}"],
                               "holds no model"),
        "model-nonexistent": (["score", g, "-m", "vendi-embedding:model=/nonexistent"],
                              "model path '/nonexistent' does not exist"),
        "decan-model": (["score", g, "-m", "decan:model=bogus-model-name"],
                        "model 'bogus-model-name' is not an alias"),
        "lowercase-maybe": (["score", g, "-m", "distinct-n:lowercase=maybe"],
                            "must be true or false; got 'maybe'"),
        "decan-permutations": (["score", g, "-m", "decan:permutations=0", "-j", "2"],
                               "`permutations` of decan must be an integer >= 1; got 0"),
        "decan-format": (["score", g, "-m", "decan:format=x"],
                         "`format` of decan must be one of instruct, completion; got 'x'"),
    }


CASES = [
    "not-gzip", "truncated-gzip", "deep-jsonl", "deep-json", "wide-csv-utf8",
    "contest-malformed", "contest-shape", "dectest-shape", "dectest-deep", "pairwise-utf8",
    "pairwise-scores", "full-disk-jsonl", "resume-json", "resume-parquet", "model-not-cached",
    "model-not-cached-j2", "model-empty-folder", "model-nonexistent", "decan-model",
    "lowercase-maybe", "decan-permutations", "decan-format"]


@pytest.mark.parametrize("case", CASES)
def test_one_line_error_exit_2(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    if case == "full-disk-jsonl" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    args, match = _bad_inputs(tmp_path)[case]
    code, _, err = run_main(monkeypatch, capsys, *args)
    if "needs the optional package" in err and os.environ.get(
            "DIVMETER_REQUIRE_EXTRAS", "") in {"", "0"}:  # a partial install (core only)
        pytest.skip(err.strip())
    assert_one_line_error(code, err, match)


def test_bom_is_accepted_by_score_and_pairwise(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    sets = tmp_path / "bom.jsonl"
    sets.write_bytes(b"\xef\xbb\xbf" + _jsonl(tmp_path / "x.jsonl").read_bytes())
    code, out, _ = run_main(monkeypatch, capsys, "score", str(sets), "-m", "distinct-n:n=1", "-f",
                            "jsonl")
    assert code == 0 and json.loads(out.splitlines()[0])["distinct-n:n=1"] == 1.0
    pairs = tmp_path / "p.jsonl"
    rows = [{"set1": ["a b", "c d"], "set2": ["a b", "a b"], "label": 0}] * 3
    pairs.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r) + "\n" for r in rows).encode())
    code, out, err = run_main(monkeypatch, capsys, "meta", "pairwise", str(pairs), "-m",
                              "distinct-n:n=1", "--resamples", "10", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["distinct-n:n=1"]["accuracy"] == 1.0


def test_metric_undefined_on_one_set_does_not_abort_meta(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # four tokens at least: self-BLEU-4 is null on a set whose responses are all shorter
    rows = [{"set_id": "a", "responses": ["the cat sat down", "a dog ran off"], "label": 1},
            {"set_id": "b", "responses": ["x y z w", "x y z w"], "label": 0},
            {"set_id": "c", "responses": ["one"], "label": 1},
            {"set_id": "d", "responses": ["p q r s", "s t u v"], "label": 1},
            {"set_id": "e", "responses": ["p q r s", "p q r s"], "label": 0}]
    src = _jsonl(tmp_path / "c.jsonl", rows)
    code, out, err = run_main(monkeypatch, capsys, "meta", "contest", str(src), "-m", "self-bleu",
                              "-f", "json")
    assert code == 0, err
    assert json.loads(out)["self-bleu"]["n_undefined"] == {"self-bleu": 1}
    assert ("self-bleu is undefined on 1 item(s), excluded (first: row 2 (set 'c'): fewer "
            "than two non-blank responses (got 1))") in err
    pairs = tmp_path / "p.jsonl"
    prs = [{"set1": ["a b c e", "a b d e"], "set2": ["x y z w", "x y z w"], "label": 0},
           {"set1": ["the cat sat down", "a dog ran off"], "set2": ["one"], "label": 0},
           {"set1": ["p q r s", "r s t u"], "set2": ["p q r s", "p q r s"], "label": 0}]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in prs))
    code, out, err = run_main(monkeypatch, capsys, "meta", "pairwise", str(pairs), "-m",
                              "self-bleu", "--resamples", "10", "-f", "json")
    assert code == 0, err
    assert json.loads(out)["self-bleu"]["n"] == 2
    assert "(first: pair 2 set2: fewer than two non-blank responses (got 1))" in err


# --------------------------------------------------------------------------- degenerate sets

EMBEDDING_METRICS = ["vendi-embedding", "chamfer", "chamfer-sqeuclidean", "kmeans-inertia",
                     "embedding-cosine", "remote-clique"]


@pytest.mark.parametrize("metric", EMBEDDING_METRICS)
@pytest.mark.parametrize(("texts", "n"), [(["", ""], 0), (["  ", "\t"], 0), (["a cat", ""], 1),
                                          (["", "a cat", " "], 1)])
def test_fewer_than_two_non_blank_responses_is_null(metric: str, texts: list[str], n: int
                                                    ) -> None:
    """All-empty sets gave vendi-embedding 1.0, chamfer 5.6e-16, kmeans-inertia 6.8e-33."""
    pytest.importorskip("sentence_transformers")
    import divmeter

    res = divmeter.score(texts, metric)
    assert (res.value, res.reason) == (None, f"fewer than two non-blank responses (got {n})")


def test_one_response_vendi_embedding_is_null() -> None:
    pytest.importorskip("sentence_transformers")
    import divmeter

    res = divmeter.score(["a cat"], "vendi-embedding")
    assert (res.value, res.reason) == (None, "fewer than two non-blank responses (got 1)")
