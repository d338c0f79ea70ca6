"""Issue 27, time and memory bounds: every count parameter has a declared cap (shown by
`divmeter list`) refused before any work; meta resampling options are bounded and checked
against the memory limit before anything is allocated; a line longer than the line reader's
bound (e.g. /dev/zero as input) is one line of error, not a MemoryError. These ran away
(gigabytes, then MemoryError or a traceback) on 74f78f3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_util import run_main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BIG = "1" + "0" * 32


@pytest.mark.parametrize(("metric", "name", "cap"), [
    ("decan:permutations=1000000000", "permutations", "10000"),
    ("decan:threads=" + BIG, "threads", "1024"),
    ("judge:samples=1000000000", "samples", "100"),
    ("kmeans-inertia:n_init=1000000000", "n_init", "1000"),
    ("bertscore:layer=1000000000", "layer", "1000"),
    ("mattr:window=" + BIG, "window", "10000000"),
])
def test_count_parameters_are_capped_before_any_work(metric: str, name: str, cap: str,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(monkeypatch, capsys, "score", str(EXAMPLES / "stories.jsonl"),
                              "-m", metric, "-f", "jsonl")
    assert code == 2 and out == "", err
    assert len(err.splitlines()) == 1
    assert f"`{name}` of {metric.split(':')[0]} must be at most {cap}" in err


def test_list_shows_the_caps(monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(monkeypatch, capsys, "list", "--format", "json")
    assert code == 0
    specs = {m["name"]: m for m in json.loads(out)}
    assert specs["decan"]["parameters"]["permutations"]["constraint"] == \
        "an integer >= 1, at most 10000"
    assert "at most 1000" in specs["kmeans-inertia"]["parameters"]["n_init"]["constraint"]


@pytest.fixture()
def scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "s.jsonl"
    assert run_main(monkeypatch, capsys, "score", str(EXAMPLES / "stories.jsonl"), "-m",
                    "distinct-n", "-o", str(out), "-q")[0] == 0
    return out


@pytest.mark.parametrize("args", [
    ["contest", "{s}", "-c", "distinct-n", "--nan", "omit", "--bootstrap", "1000000000"],
    ["dectest", "{s}", "-c", "distinct-n", "--nan", "omit", "--subsample", "3", "--repeats",
     "1000000000"],
    ["pairwise", str(EXAMPLES / "pairs.jsonl"), "-m", "distinct-n", "--resamples",
     "1000000000"],
])
def test_resampling_options_are_capped(args: list[str], scores: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.format(s=scores) for a in args]
    code, out, err = run_main(monkeypatch, capsys, "meta", *args, "-f", "json")
    assert code == 2 and out == "", err
    assert err.splitlines()[-1].startswith("divmeter: error: ")
    assert "to 10,000,000; got 1,000,000,000." in err  # the option's cap (issue 34)


def test_resampling_memory_is_estimated_first(scores: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DIVMETER_MAX_MEMORY", "1M")
    code, out, err = run_main(monkeypatch, capsys, "meta", "contest", str(scores), "-c",
                              "distinct-n", "--nan", "omit", "--bootstrap", "100000", "-f",
                              "json")
    assert code == 2 and out == "", err
    assert "bootstrap resamples 100000 over 7 items needs about" in err
    assert "more than the limit 1 MiB" in err or "more than the limit" in err


def test_negative_seed_is_a_usage_error(scores: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(monkeypatch, capsys, "meta", "contest", str(scores), "-c",
                            "distinct-n", "--nan", "omit", "--bootstrap", "100", "--seed", "-1")
    assert code == 2 and "--seed" in err and "Traceback" not in err


def test_a_line_without_end_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DIVMETER_MAX_LINE", "100000")
    zero = tmp_path / "zero.jsonl"
    zero.write_bytes(b"\0" * 300_000)
    code, out, err = run_main(monkeypatch, capsys, "score", str(zero), "-m", "distinct-n",
                              "-f", "jsonl")
    assert code == 2 and out == ""
    assert err == ("divmeter: error: zero.jsonl line 1: longer than 100,000 bytes with no "
                   "newline; expected a text file of lines (set DIVMETER_MAX_LINE to allow "
                   "longer ones).\n")
    csv = tmp_path / "z.csv"
    csv.write_bytes(b"set_id,response\n" + b"a" * 300_000)
    code, _, err = run_main(monkeypatch, capsys, "score", str(csv), "-m", "distinct-n")
    assert code == 2 and "z.csv line 2: longer than 100,000 bytes" in err
