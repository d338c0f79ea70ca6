"""Issue 27, data loss: one guard (divmeter.inputs.data.paths.guard_outputs) for every path a
command writes. Each command refuses, in one line and before writing anything, an output that is one
of its inputs or another of its outputs; --resume cuts a torn last line only from a file it can
prove divmeter wrote; a device given as output (/dev/full) is written in place and never
replaced or removed. Every case here overwrote or deleted data on 74f78f3."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from cli_util import run_main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _sets(tmp_path: Path) -> Path:
    p = tmp_path / "sets.jsonl"
    p.write_text((EXAMPLES / "stories.jsonl").read_text())
    return p


def _pairs(tmp_path: Path) -> Path:
    p = tmp_path / "pairs.jsonl"
    p.write_text((EXAMPLES / "pairs.jsonl").read_text())
    return p


def _cases(tmp_path: Path) -> dict[str, tuple[list[str], Path, str]]:
    sets, pairs = _sets(tmp_path), _pairs(tmp_path)
    topics = tmp_path / "topics.txt"
    topics.write_text((EXAMPLES / "topics.txt").read_text())
    shard_b = tmp_path / "b.txt"
    shard_b.write_text("one two\nthree four\n")
    judge = ["judge", str(pairs), "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1"]
    return {
        "judge -o INPUT": ([*judge, "-o", str(pairs)], pairs, "-o"),
        "judge --nulls INPUT": ([*judge, "-o", str(tmp_path / "o.jsonl"), "--nulls", str(pairs)],
                                pairs, "--nulls"),
        "judge -o X --nulls X": ([*judge, "-o", str(tmp_path / "x.jsonl"), "--nulls",
                                  str(tmp_path / "x.jsonl")], pairs, "--nulls"),
        "build -o INPUT": (["build", "rndshuff", str(sets), "-o", str(sets)], sets, "-o"),
        "build --pairs INPUT": (["build", "rndshuff", str(sets), "-o", str(tmp_path / "b.jsonl"),
                                 "--pairs", str(sets)], sets, "--pairs"),
        "pattr-grid -o INPUT": (["build", "pattr-grid", str(topics), "-o", str(topics)], topics,
                                "-o"),
        "annotate init --db INPUT": (["annotate", "init", str(sets), "--db", str(sets), "--kind",
                                      "abs"], sets, "--db"),
        "corpus -o SHARD": (["score", "--corpus", str(topics), str(shard_b), "-m", "distinct-n",
                             "-o", str(topics)], topics, "-o"),
        "corpus --checkpoint SHARD": (["score", "--corpus", str(topics), str(shard_b), "-m",
                                       "distinct-n", "--checkpoint", str(shard_b)], shard_b,
                                      "--checkpoint"),
        "score --html INPUT": (["score", str(sets), "-m", "distinct-n", "-f", "jsonl", "--html",
                                str(sets)], sets, "--html"),
        "generate -o PROMPTS": (["generate", str(sets), "--model", "openai:m", "--base-url",
                                 "http://127.0.0.1:9/v1", "-o", str(sets)], sets, "-o"),
        "report -o INPUT": (["report", str(sets), "-o", str(sets)], sets, "-o"),
        "meta contest --html INPUT": (["meta", "contest", str(sets), "-m", "distinct-n",
                                       "--nan", "omit", "-f", "json", "--html", str(sets)],
                                      sets, "--html"),
    }


CASES = ["judge -o INPUT", "judge --nulls INPUT", "judge -o X --nulls X", "build -o INPUT",
         "build --pairs INPUT", "pattr-grid -o INPUT", "annotate init --db INPUT",
         "corpus -o SHARD", "corpus --checkpoint SHARD", "score --html INPUT",
         "generate -o PROMPTS", "report -o INPUT", "meta contest --html INPUT"]


@pytest.mark.parametrize("case", CASES)
def test_no_command_writes_over_its_input(case: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path / "cache"))
    args, kept, option = _cases(tmp_path)[case]
    before = kept.read_bytes()
    code, _, err = run_main(monkeypatch, capsys, *args)
    if "needs the optional package" in err:
        pytest.skip(err.strip())
    assert code == 2, err
    last = err.splitlines()[-1]  # (meta notes what it dropped before it gets to write)
    assert last.startswith(f"divmeter: error: {option} "), err
    assert all(x.startswith("divmeter: note:") for x in err.splitlines()[:-1]), err
    assert kept.read_bytes() == before


def test_annotate_export_never_overwrites_the_study(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    sets = tmp_path / "sets.jsonl"
    sets.write_text("".join(json.dumps({"set_id": f"s{i}", "responses": ["a b", f"c {i}"]})
                            + "\n" for i in range(3)))
    db = tmp_path / "study.sqlite"
    code, _, err = run_main(monkeypatch, capsys, "annotate", "init", str(sets), "--db", str(db),
                            "--kind", "abs", "-q")
    if code != 0 and "needs the optional package" in err:
        pytest.skip(err.strip())
    assert code == 0, err
    before = db.read_bytes()
    code, _, err = run_main(monkeypatch, capsys, "annotate", "export", str(db), "-o", str(db))
    assert code == 2 and err.startswith(f"divmeter: error: -o {db} is the input file "), err
    assert db.read_bytes() == before
    code, _, err = run_main(monkeypatch, capsys, "annotate", "export", str(db), "-o",
                            str(tmp_path / "e.jsonl"), "--raw", str(db))
    assert code == 2 and err.startswith("divmeter: error: --raw ") and db.read_bytes() == before


# ---------------------------------------------------------------------------------------------
# --resume owns only what divmeter wrote


@pytest.mark.parametrize("ext", ["jsonl", "csv"])
def test_resume_never_cuts_someone_elses_text(ext: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / f"notes.{ext}"
    notes.write_text("my important notes, do not delete")
    code, _, err = run_main(monkeypatch, capsys, "score", str(_sets(tmp_path)), "-m",
                            "distinct-n", "--resume", "-o", str(notes))
    assert code == 2 and err.startswith(f"divmeter: error: cannot resume from notes.{ext}"), err
    assert notes.read_text() == "my important notes, do not delete"


def test_resume_still_cuts_its_own_torn_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    sets = _sets(tmp_path)
    out = tmp_path / "o.jsonl"
    assert run_main(monkeypatch, capsys, "score", str(sets), "-m", "distinct-n", "-o",
                    str(out), "-q")[0] == 0
    full = out.read_text().splitlines()
    for torn in (full[3][:25], '{"set_i'):  # a torn record after records; a torn first record
        keep = full[:3] if torn != '{"set_i' else []
        out.write_text("".join(x + "\n" for x in keep) + torn)
        code, _, err = run_main(monkeypatch, capsys, "score", str(sets), "-m", "distinct-n",
                                "--resume", "-o", str(out))
        assert code == 0, err
        assert out.read_text().splitlines() == full or sorted(out.read_text().splitlines()) \
            == sorted(full)


# ---------------------------------------------------------------------------------------------
# devices


def _full(tmp_path: Path) -> Path:
    """A private copy of /dev/full (a node made with mknod, root only): the old code deleted the
    device node it failed to write, so the tests never hand it the system's own."""
    node = tmp_path / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        with open(node, "wb") as fh:
            fh.write(b"x")
            fh.flush()
    except PermissionError:
        pytest.skip("making a device node needs root")
    except OSError:
        return node  # the write failed: it is a full device
    pytest.skip("device 1,7 is not /dev/full here")
    return node


@pytest.mark.parametrize("fmt", ["parquet", "json", "jsonl", "csv"])
def test_full_device_is_an_error_and_stays_a_device(fmt: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    full = _full(tmp_path)
    code, _, err = run_main(monkeypatch, capsys, "score", str(_sets(tmp_path)), "-m",
                            "distinct-n", "-o", str(full), "-f", fmt)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "No space left on device" in err
    assert stat.S_ISCHR(os.stat(full).st_mode)


def test_corpus_output_write_errors_surface(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    full = _full(tmp_path)
    shard = tmp_path / "a.txt"
    shard.write_text("a b\nc d\n")
    code, _, err = run_main(monkeypatch, capsys, "score", "--corpus", str(shard), "-m",
                            "distinct-n", "-o", str(full), "-f", "jsonl")
    assert code == 2 and "No space left on device" in err
    assert stat.S_ISCHR(os.stat(full).st_mode)


def test_checkpoint_device_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    shard = tmp_path / "a.txt"
    shard.write_text("a b\nc d\n")
    code, _, err = run_main(monkeypatch, capsys, "score", "--corpus", str(shard), "-m",
                            "distinct-n", "--checkpoint", str(tmp_path), "-f", "json")
    assert code == 2 and err.startswith(f"divmeter: error: --checkpoint {tmp_path} is a folder")
    json.dumps(err)
