"""Batch scoring: records, nulls with reasons, summary, resume, workers (divmeter.engine.batch)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

import divmeter
from divmeter.core.errors import InvalidInputError, UnknownMetricError
from divmeter.core.result import MetricResult
from divmeter.engine.batch import Summary, completed_rows, resolve_metrics, score_sets
from divmeter.engine.public import register
from divmeter.engine.registry import _REGISTRY
from divmeter.inputs.data import ResponseSet, open_record_writer, read_records, read_sets

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "stories.jsonl"

SETS = [
    ResponseSet("a", ["a b c", "a b d"], label=1),  # distinct-1 = 4/6
    ResponseSet("b", []),  # empty set: undefined
    ResponseSet("c", ["x x", "x"]),  # distinct-1 = 1/3
    ResponseSet("d", ["fine", 3]),  # type: ignore[list-item]  # bad set: the metric raises
    ResponseSet("a", ["p q", "r s"], label=0),  # repeated id: row tells them apart
]


def test_records_values_nulls_and_reasons() -> None:
    recs = list(score_sets(SETS, ["distinct-n:n=1"]))
    assert [(r["set_id"], r["row"]) for r in recs] == [
        ("a", 0),
        ("b", 1),
        ("c", 2),
        ("d", 3),
        ("a", 4),
    ]
    assert recs[0] == {"set_id": "a", "row": 0, "label": 1, "distinct-n:n=1": 4 / 6, "reasons": {}}
    assert recs[1]["distinct-n:n=1"] is None
    assert recs[1]["reasons"] == {"distinct-n:n=1": "empty set"}
    assert "label" not in recs[1]
    assert recs[2]["distinct-n:n=1"] == pytest.approx(1 / 3)
    # a metric raising InvalidInputError on one set: null + the error as reason, run goes on
    assert recs[3]["distinct-n:n=1"] is None
    assert recs[3]["reasons"] == {"distinct-n:n=1": "`responses[1]` must be a string; got int."}
    assert recs[4]["distinct-n:n=1"] == 1.0


def test_columns_follow_registry_names_and_match_score() -> None:
    sets = list(read_sets(EXAMPLE))
    metrics = ["distinct-n", ("distinct-n", {"n": 2}), "distinct-n:n_max=5,tokenizer=word"]
    recs = list(score_sets(sets, metrics, with_signatures=True))
    assert list(recs[0])[:5] == ["set_id", "row", "label", "distinct-n", "distinct-n:n=2"]
    assert "distinct-n:tokenizer=word" in recs[0]  # n_max=5 is the default: not in the name
    for s, r in zip(sets, recs, strict=True):
        assert r["distinct-n"] == divmeter.score(s.responses, "distinct-n").value
        assert r["distinct-n:n=2"] == divmeter.score(s.responses, "distinct-n", n=2).value
    assert recs[0]["signatures"]["distinct-n:n=2"] == "distinct-n|n:2|tok:tevet|case:mixed|v:0.1.0"
    assert recs[-1]["set_id"] == "empty-outputs"
    # the one rule for degenerate sets (issue 16): blank responses only, so null before the kernel
    assert recs[-1]["reasons"]["distinct-n"] == "fewer than two non-blank responses (got 0)"


def test_bad_parameters_fail_before_any_set() -> None:
    with pytest.raises(InvalidInputError, match=r"^metric 'distinct-n:n=0': `n` of distinct-n"):
        next(score_sets(SETS, [("distinct-n", {"n": 0})]))
    with pytest.raises(InvalidInputError, match="metric 'distinct-n' has no parameter 'm'"):
        list(score_sets(SETS, ["distinct-n:m=2"]))
    with pytest.raises(UnknownMetricError, match="Did you mean 'distinct-n'"):
        list(score_sets(SETS, ["distinct"]))
    with pytest.raises(InvalidInputError, match="'distinct-n:n=2' is requested twice"):
        resolve_metrics(["distinct-n:n=2", ("distinct-n", {"n": 2})])
    with pytest.raises(InvalidInputError, match="no metric requested"):
        resolve_metrics([])
    with pytest.raises(InvalidInputError, match="`workers` must be an integer >= 1; got 0"):
        list(score_sets(SETS, ["distinct-n"], workers=0))


def test_summary_counts_nulls_and_reasons() -> None:
    summary = Summary(["distinct-n:n=1"])
    list(score_sets(SETS, ["distinct-n:n=1"], summary=summary))
    got = summary.to_dict()
    assert got["sets"] == 5
    m = got["metrics"]["distinct-n:n=1"]
    values = [4 / 6, 1 / 3, 1.0]
    mean = sum(values) / 3
    assert m["mean"] == pytest.approx(mean)
    assert m["std"] == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in values) / 2))
    assert (m["count"], m["nulls"]) == (3, 2)
    assert m["reasons"] == {"empty set": 1, "`responses[1]` must be a string; got int.": 1}
    assert m["signature"] == "distinct-n|n:1|tok:tevet|case:mixed|v:0.1.0"


def test_progress_callback_and_skip() -> None:
    calls: list[tuple[int, int | None]] = []
    recs = list(
        score_sets(
            SETS,
            ["distinct-n:n=1"],
            skip={0: "a", 2: "c"},
            progress=lambda d, t: calls.append((d, t)),
        )
    )
    assert [r["row"] for r in recs] == [1, 3, 4]
    assert calls == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
    with pytest.raises(InvalidInputError, match="cannot resume: the output has set 'zz' at row 1"):
        list(score_sets(SETS, ["distinct-n"], skip={1: "zz"}))


def _many() -> list[ResponseSet]:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    out = []
    for i in range(37):
        resp = [" ".join(words[(i + j * k) % 10] for k in range(2 + j % 4)) for j in range(i % 6)]
        out.append(ResponseSet(f"s{i % 9}", resp, label=i % 2))
    return out


def test_workers_two_equals_one() -> None:
    sets = _many()
    metrics = ["distinct-n", "distinct-n:n=2", "vendi-ngram"]
    one = list(score_sets(sets, metrics))
    two = list(score_sets(iter(sets), metrics, workers=2, chunk_size=3))
    # Same records; floats to the last few ulps (an eigensolver in another process may round
    # the last bit differently).
    assert len(two) == len(one)
    for a, b in zip(two, one, strict=True):
        assert list(a) == list(b)
        for key, value in a.items():
            if isinstance(value, float):
                assert value == pytest.approx(b[key], rel=1e-12, abs=1e-15)
            else:
                assert value == b[key]
    assert [r["row"] for r in two] == list(range(37))


# ---------------------------------------------------------------------------------- resume


def _run(sets: list[ResponseSet], out: Path, *, stop_after: int | None = None) -> None:
    """Score into ``out`` (JSONL) resuming from it, like the CLI; optionally stop midway."""
    skip, _ = completed_rows(out, columns=["distinct-n", "distinct-n:n=2"])
    with open_record_writer(out, append=True) as w:
        for i, rec in enumerate(score_sets(sets, ["distinct-n", "distinct-n:n=2"], skip=skip)):
            if stop_after is not None and i == stop_after:
                raise KeyboardInterrupt
            w.write(rec)


def test_interrupted_then_resumed_equals_uninterrupted(tmp_path: Path) -> None:
    sets = _many()
    full = tmp_path / "full.jsonl"
    _run(sets, full)
    part = tmp_path / "part.jsonl"
    with pytest.raises(KeyboardInterrupt):
        _run(sets, part, stop_after=10)
    assert len(list(read_records(part))) == 10
    with open(part, "a", encoding="utf-8") as fh:  # a write cut off mid-line
        fh.write('{"set_id": "s1", "row": 10, "dist')
    with pytest.raises(KeyboardInterrupt):
        _run(sets, part, stop_after=7)
    _run(sets, part)
    assert part.read_text(encoding="utf-8") == full.read_text(encoding="utf-8")


def test_completed_rows_checks_columns(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    out.write_text(json.dumps({"set_id": "a", "row": 0, "ttr": 0.5, "reasons": {}}) + "\n")
    with pytest.raises(InvalidInputError, match=r"o.jsonl: it holds metrics \['ttr'\] but"):
        completed_rows(out, columns=["distinct-n"])
    assert completed_rows(out, columns=["ttr"])[0] == {0: "a"}
    assert completed_rows(tmp_path / "missing.jsonl") == ({}, [])
    out.write_text(json.dumps({"set_id": "a", "ttr": 0.5}) + "\n")
    with pytest.raises(InvalidInputError, match="record 1 has no 'row' field"):
        completed_rows(out)


# ---------------------------------------------------------------------------------- per-response


def words_per_response(responses: list[str]) -> MetricResult:
    """Words per response (a response-granularity metric registered for these tests only)."""
    per = [float(len(r.split())) for r in responses]
    if not per:
        return MetricResult("test-words", None, "test-words", reason="empty set")
    return MetricResult(
        "test-words", sum(per) / len(per), "test-words", details={"per_response": per}
    )


@pytest.fixture
def length_metric() -> Iterator[str]:
    register(
        "test-words",
        family="form",
        granularity="response",
        higher_is_more_diverse=True,
        bounds=(0, None),
        citation="test",
    )(words_per_response)
    yield "test-words"
    _REGISTRY.pop("test-words")


def test_per_response_values(length_metric: str) -> None:
    recs = list(score_sets(SETS[:3], [length_metric, "distinct-n:n=1"]))
    assert recs[0]["test-words"] == 3.0
    assert recs[0]["per_response"] == {"test-words": [3.0, 3.0]}
    assert recs[2]["per_response"] == {"test-words": [2.0, 1.0]}
    assert recs[1]["per_response"] == {"test-words": []}  # null by the rule: no response
    assert recs[1]["reasons"] == {"test-words": "empty set", "distinct-n:n=1": "empty set"}


def prompt_words(responses: list[str], *, prompt: str = "") -> MetricResult:
    """Words in the prompt (a metric with a ``prompt`` parameter, for these tests only)."""
    return MetricResult("test-prompt", float(len(prompt.split())), "test-prompt")


@pytest.fixture
def prompt_metric() -> Iterator[str]:
    register(
        "test-prompt",
        family="lm",
        granularity="set",
        higher_is_more_diverse=True,
        bounds=(0, None),
        citation="test",
        params={"prompt": ""},
    )(prompt_words)
    yield "test-prompt"
    _REGISTRY.pop("test-prompt")


def test_set_prompt_is_passed_unless_fixed(prompt_metric: str) -> None:
    sets = [ResponseSet("a", ["x", "z"], prompt="one two three"), ResponseSet("b", ["y", "w"])]
    assert [r["test-prompt"] for r in score_sets(sets, [prompt_metric])] == [3.0, 0.0]
    fixed = list(score_sets(sets, ["test-prompt:prompt=four"]))
    assert [r["test-prompt:prompt=four"] for r in fixed] == [1.0, 1.0]


def test_evaluate_is_one_core_for_score_many_and_score_sets() -> None:
    """Batched (distinct-n) and per-set (ttr) plans over one chunk with a malformed set: every
    outcome equals divmeter.score on that set, or the set's error (named as asked)."""
    from divmeter.engine.batch import evaluate

    chunk = [["a b c", "a b d"], ["x", 3], [], ["one"]]
    plans = resolve_metrics(["distinct-n:n=1", "ttr"])
    for what, bad in ((None, "`responses[1]` must be a string; got int."),
                      ("sets", "`sets[1][1]` must be a string; got int.")):
        out = evaluate(chunk, plans, what=what)
        for plan, per_set in zip(plans, out, strict=True):
            assert str(per_set[1]) == bad and isinstance(per_set[1], InvalidInputError)
            for i in (0, 2, 3):
                assert per_set[i] == divmeter.score(chunk[i], plan.name, **plan.params)
