"""What one large set will cost, said before the work, and progress inside it (issue 27).

* A set whose rough time reaches the threshold is announced in one line naming its responses,
  pairs, memory and time (``divmeter.core.memory.reporting``; ``divmeter score`` prints it).
* A set above the memory limit is refused before any pair is computed.
* Progress inside a set (homogenization's pair rows and blocks, vendi-ngram's Gram rows and
  its eigenvalue stage) advances through the same hook, to the total.
* Reporting changes no number: values with and without it are identical (``==``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import divmeter
from cli_util import run_main
from divmeter.apps.cli import progress
from divmeter.core import memory
from divmeter.core.memory import MemoryLimitError
from divmeter.metrics import overlap, vendi

MEASURES = ["rouge1", "rouge2", "rougeL", "bleu", "bleu-hf"]


def _texts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(30)]
    return [" ".join(rng.choice(vocab, size=int(rng.integers(3, 9)))) for _ in range(n)]


class Heard:
    """What the reporter heard: notes and progress reports."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.steps: list[tuple[str, int, int | None]] = []

    def step(self, what: str, done: int, total: int | None) -> None:
        self.steps.append((what, done, total))


def test_cost_note_names_responses_pairs_memory_and_time() -> None:
    heard = Heard()
    texts = _texts(40)
    with memory.reporting(heard.notes.append, above=0):
        divmeter.score_many([texts], "homogenization")
    assert heard.notes == [
        "sets[0]: homogenization (rougeL) on 40 responses: 780 pairs, about 75.0 KB (6 x a 40 "
        "x 40 pair matrix), roughly < 1 s; cheaper: use homogenization:measure=rouge1 or rouge2 "
        "(tens of times faster), or score a random sample of the responses"
    ]


def test_no_note_below_the_threshold_or_without_a_reporter() -> None:
    heard = Heard()
    with memory.reporting(heard.notes.append, heard.step):  # default threshold: 10 s
        divmeter.score(_texts(40), "homogenization")
        divmeter.score(_texts(40), "vendi-ngram")
    assert heard.notes == [] and heard.steps == []


def test_estimates_scale_as_pairs() -> None:
    small = overlap.homogenization_cost(10_000, 300_000, "rougeL")
    big = overlap.homogenization_cost(100_000, 3_000_000, "rougeL")
    assert (small.pairs, big.pairs) == (49_995_000, 4_999_950_000)
    assert big.seconds == pytest.approx(small.seconds * big.pairs / small.pairs)
    assert big.seconds > 3600  # the case of the issue: hours, said before the work
    assert overlap.homogenization_cost(100_000, 3_000_000, "rouge1").seconds < big.seconds / 5
    # the metric's own cost of a set: the same estimate, its tokens counted by whitespace
    texts = ["a b c"] * 10_000
    assert overlap.Homogenization().cost(10_000, texts) == overlap.homogenization_cost(
        10_000, 30_000, "rougeL", blocked=True)
    exact = vendi.vendi_ngram_cost(20_000, 20_000, "a kernel", 8 * 20_000**2)
    assert exact.pairs == 20_000 * 20_001 // 2 and "approx=slq" in exact.cheaper


def test_vendi_ngram_note_has_the_exact_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vendi, "_LARGE", 10)
    texts = [f"w{i} common" for i in range(30)] + ["w0 common"] * 5  # 5 duplicates merged
    heard = Heard()
    with memory.reporting(heard.notes.append, above=0):
        divmeter.score(texts, "vendi-ngram")
    assert len(heard.notes) == 1
    assert heard.notes[0].startswith("vendi-ngram on 35 responses: ")
    assert "a 30 x 30 kernel matrix" in heard.notes[0] or "dual matrix" in heard.notes[0]


def test_cli_prints_the_note_before_the_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "sets.jsonl"
    rows = [{"id": "small", "responses": ["a b", "a c"]}, {"id": "big", "responses": _texts(50)}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setattr(memory, "ANNOUNCE_SECONDS", 1e-5)  # the small set stays below it
    monkeypatch.setattr(progress, "PLAIN_EVERY", 0.0)
    code, out, err = run_main(monkeypatch, capsys, "score", str(src), "-m", "homogenization",
                              "-f", "jsonl")
    assert code == 0, err
    notes = [ln for ln in err.splitlines() if "pairs, about" in ln]
    assert notes == [
        "divmeter: set 'big' (row 1): homogenization (rougeL) on 50 responses: 1,225 pairs, "
        "about 117.2 KB (6 x a 50 x 50 pair matrix), roughly < 1 s; cheaper: use "
        "homogenization:measure=rouge1 or rouge2 (tens of times faster), or score a random "
        "sample of the responses"
    ]
    assert len(out.splitlines()) == 2
    with progress.progress_bar(False, within_sets=True):  # -q: nothing on stderr
        divmeter.score(_texts(50), "homogenization")
    assert capsys.readouterr().err == ""


def test_cli_workers_print_the_same_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """With ``-j 2`` each costly set is announced once, in the same line as in one process."""
    src = tmp_path / "sets.jsonl"
    rows = [{"id": "small", "responses": ["a b", "a c"]}, {"id": "big", "responses": _texts(50)},
            {"id": "tiny", "responses": ["x"]}, {"id": "big2", "responses": _texts(40, 1)}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setattr(memory, "ANNOUNCE_SECONDS", 1e-5)  # the small sets stay below it
    runs = {}
    for jobs in ("1", "2"):
        code, out, err = run_main(monkeypatch, capsys, "score", str(src), "-m", "homogenization",
                                  "-f", "jsonl", "-j", jobs)
        assert code == 0, err
        runs[jobs] = (sorted(ln for ln in err.splitlines() if "pairs, about" in ln), out)
    assert runs["2"] == runs["1"]
    assert [ln.split(":")[1] for ln in runs["2"][0]] == [" set 'big' (row 1)",
                                                        " set 'big2' (row 3)"]
    assert runs["2"][0][0].startswith("divmeter: set 'big' (row 1): homogenization (rougeL) on "
                                      "50 responses: 1,225 pairs, about 117.2 KB")


def test_pool_relays_notes_to_the_reporter() -> None:
    """``score_sets(workers=2)`` passes the workers' notes to the reporter in force, with its
    threshold (above it: none), and values are those of one process."""
    from divmeter.engine.batch import pool
    from divmeter.inputs.data import ResponseSet

    sets = [ResponseSet(f"s{i}", _texts(20 + i, i)) for i in range(3)]
    one = list(pool.score_sets(sets, ["homogenization:measure=rouge1"]))
    heard, high = Heard(), Heard()
    with memory.reporting(heard.notes.append, heard.step, above=0):
        two = list(pool.score_sets(sets, ["homogenization:measure=rouge1"], workers=2,
                                   chunk_size=1))
    with memory.reporting(high.notes.append, above=1e9):
        list(pool.score_sets(sets, ["homogenization:measure=rouge1"], workers=2))
    assert two == one
    assert [ln.split(" pairs, about ")[0] for ln in sorted(heard.notes)] == [
        f"set 's{i}' (row {i}): homogenization (rouge1) on {20 + i} responses: "
        f"{(20 + i) * (19 + i) // 2:,}" for i in range(3)]
    with memory.reporting(heard.notes.append, above=0):
        list(pool.score_sets(sets, ["homogenization:measure=rouge1"]))
    assert heard.notes[3:] == sorted(heard.notes[:3])  # the same lines in one process
    assert heard.steps == [] and high.notes == []


def test_refused_before_any_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny limit: the refusal comes before the first pair (no progress, no pair kernel)."""
    calls: list[int] = []
    real = overlap._lcs_from_masks

    def counted(*args: object) -> int:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(overlap, "_lcs_from_masks", counted)
    monkeypatch.setattr(overlap, "_DENSE_MAX", 10)
    heard = Heard()
    with memory.reporting(heard.notes.append, heard.step, above=0, every=0), \
            pytest.raises(MemoryLimitError) as err:
        divmeter.score(_texts(60), "homogenization:measure=bleu", max_memory="1K")
    assert str(err.value).startswith("homogenization needs about ")
    assert "(row blocks), above the memory limit of 1.0 KB; raise it with --max-memory" in str(
        err.value)
    assert heard.steps == [] and heard.notes == []
    with pytest.raises(MemoryLimitError, match=r"^sets\[1\]: homogenization needs about "):
        divmeter.score_many([["a b", "a c"], _texts(60)], "homogenization", max_memory="1K")
    assert calls == []  # every set's cost is checked before the first set is scored


def test_corpus_mode_checks_the_gathered_corpus() -> None:
    """Corpus mode gathers homogenization's responses (no exact merge) and checks their cost
    as one set, with the message and the options that divmeter.score gives."""
    from divmeter.engine.corpus.stats import make_accumulator

    texts = _texts(60)
    with pytest.raises(MemoryLimitError) as one:
        divmeter.score(texts, "homogenization:measure=bleu", max_memory="1K")
    acc = make_accumulator("homogenization", {"measure": "bleu"})
    acc.add(texts[:30])
    acc.add(texts[30:])
    with memory.memory_limit("1K"), pytest.raises(MemoryLimitError) as corpus:
        acc.finish()
    assert str(corpus.value) == str(one.value)
    assert str(one.value).endswith("(6 x a 60 x 60 pair matrix), above the memory limit of "
                                   "1.0 KB; raise it with --max-memory (library: "
                                   "max_memory=...) or score a random sample of the responses.")
    assert acc.finish().value == divmeter.score(texts, "homogenization:measure=bleu").value


def test_cli_refusal_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "sets.jsonl"
    src.write_text(json.dumps({"id": "big", "responses": _texts(1200)}) + "\n")
    monkeypatch.setenv(memory.ENV, "4G")  # --max-memory sets it: restored after the test
    code, out, err = run_main(monkeypatch, capsys, "score", str(src), "-m",
                              "homogenization:measure=rouge1", "--max-memory", "1M", "-f",
                              "jsonl")
    assert code == 2 and out == ""
    assert err.startswith("divmeter: error: set 'big' (row 0): homogenization needs about ")
    assert err.count("\n") == 1 and "(row blocks), above the memory limit of 1.0 MB" in err


@pytest.mark.parametrize("measure", ["rougeL", "rouge2", "bleu"])
def test_homogenization_progress_advances_to_every_pair(monkeypatch: pytest.MonkeyPatch,
                                                        measure: str) -> None:
    monkeypatch.setattr(overlap, "_DENSE_MAX", 10)
    monkeypatch.setattr(memory, "BLOCK_BYTES", 8 * 60 * 7)  # 7 rows a block: 9 blocks
    heard = Heard()
    with memory.reporting(heard.notes.append, heard.step, above=0, every=0):
        divmeter.score(_texts(60), "homogenization", measure=measure)
    done = [d for _, d, _ in heard.steps]
    assert {w for w, _, _ in heard.steps} == {f"homogenization ({measure}): pairs"}
    assert {t for _, _, t in heard.steps} == {1770}
    assert done == sorted(done) and done[0] == 0 and done[-1] == 1770
    assert len(set(done)) == (60 if measure == "rougeL" else 10)  # rows, or blocks + start


def test_vendi_ngram_progress_over_gram_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vendi, "_LARGE", 10)
    monkeypatch.setattr(memory, "BLOCK_BYTES", 8 * 60 * 6)  # about 6 rows a block
    texts = _texts(60)
    heard = Heard()
    with memory.reporting(heard.notes.append, heard.step, above=0, every=0):
        value = divmeter.score(texts, "vendi-ngram").value
    rows = [(d, t) for w, d, t in heard.steps if w == "vendi-ngram: Gram rows"]
    m = rows[0][1]
    step = max(1, 8 * 60 * 6 // (8 * m))
    assert m > 20 and step < m
    assert rows == [(0, m)] + [(min(b, m), m) for b in range(step, m + step, step)]
    assert heard.steps[-1] == (f"vendi-ngram: eigenvalues of a {m:,} x {m:,} matrix", 0, None)
    assert value is not None and value > 1


@pytest.mark.parametrize("measure", MEASURES)
def test_homogenization_values_identical_with_progress(monkeypatch: pytest.MonkeyPatch,
                                                        measure: str) -> None:
    texts = _texts(80, seed=3)
    quiet_dense = divmeter.score(texts, "homogenization", measure=measure)
    monkeypatch.setattr(overlap, "_DENSE_MAX", 10)  # the row-block path, blocks as shipped
    quiet = divmeter.score(texts, "homogenization", measure=measure)
    heard = Heard()
    with memory.reporting(heard.notes.append, heard.step, above=0, every=0):
        loud = divmeter.score(texts, "homogenization", measure=measure)
        monkeypatch.setattr(overlap, "_DENSE_MAX", 1000)
        loud_dense = divmeter.score(texts, "homogenization", measure=measure)
    assert heard.steps and len(heard.notes) == 2
    assert loud.value == quiet.value and loud.signature == quiet.signature
    assert loud_dense.value == quiet_dense.value
    assert np.array_equal(loud_dense.details["similarity"], quiet_dense.details["similarity"])


@pytest.mark.parametrize("params", [{}, {"dtype": "float32"}, {"approx": "slq"},
                                    {"approx": "nystroem", "k": 50}])
def test_vendi_ngram_values_identical_with_progress(monkeypatch: pytest.MonkeyPatch,
                                                    params: dict[str, object]) -> None:
    monkeypatch.setattr(vendi, "_LARGE", 10)
    monkeypatch.setattr(vendi, "_FLOAT32_MIN", 10)
    texts = _texts(500, seed=4)
    quiet = divmeter.score(texts, "vendi-ngram", **params)
    heard = Heard()
    with memory.reporting(heard.notes.append, heard.step, above=0, every=0):
        loud = divmeter.score(texts, "vendi-ngram", **params)
    assert len(heard.notes) == 1
    assert loud.value == quiet.value and loud.signature == quiet.signature
    assert np.array_equal(loud.details["eigenvalues"], quiet.details["eigenvalues"])


def test_rich_bar_shows_the_set_and_prints_the_note(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """On a terminal the note is printed above the bar and the set gets its own task."""
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(overlap, "_DENSE_MAX", 10)
    monkeypatch.setattr(memory, "ANNOUNCE_SECONDS", 0.0)
    with progress.progress_bar(True, 1, within_sets=True) as tick:
        value = divmeter.score(_texts(30), "homogenization").value
        assert tick is not None
        tick(1, 1)
    monkeypatch.setattr(memory, "ANNOUNCE_SECONDS", 10.0)
    assert value == divmeter.score(_texts(30), "homogenization").value
    assert "divmeter: homogenization (rougeL) on 30 responses: 435 pairs" in capsys.readouterr().err


def test_pair_matrix_metrics_are_announced_before_the_work() -> None:
    """The embedding metrics' pair matrices (here on precomputed vectors: no model), and
    nothing for a metric that is linear in the set."""
    X = np.random.default_rng(0).standard_normal((50, 8))
    heard = Heard()
    with memory.reporting(heard.notes.append, above=0):
        chamfer = divmeter.score(X, "chamfer").value
        divmeter.score(X, "vendi-embedding")
    assert heard.notes == [
        "chamfer on 50 responses: 1,225 pairs, about 58.6 KB (3 x a 50 x 50 distance matrix), "
        "roughly < 1 s; cheaper: score a random sample of the responses"
    ]
    assert chamfer == divmeter.score(X, "chamfer").value
