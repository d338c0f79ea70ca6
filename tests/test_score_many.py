"""divmeter.score_many: batched scoring equals per-set scoring, bit for bit, for every core form
metric; degenerate sets inside a batch get the per-set null and reason."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from divmeter import InvalidInputError, ResponseSet, UnknownMetricError, score, score_many
from divmeter.core.result import MetricResult
from divmeter.engine.batch import score_sets
from divmeter.engine.public import register, register_batch
from divmeter.engine.registry import _REGISTRY, get_metric, list_metrics
from divmeter.metrics import ngram as lexical
from divmeter.testing import formula
from exact import same

WORDS = "the a cat dog sat ran on under mat park green old new big small and".split()


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def _mixed_batch() -> list[list[str]]:
    """Ordinary sets around degenerate ones: empty set, one response, empty strings, texts of
    only dots and newlines (no Tevet token), texts shorter than n, repeated responses, case and
    punctuation, non-ASCII, a NUL character (the per-text tokenizing path)."""
    rng = random.Random(7)
    sets: list[list[str]] = [[_text(rng, 0, 12) for _ in range(rng.randint(2, 6))]
                             for _ in range(12)]
    degenerate: list[list[str]] = [
        [],
        ["only one response here"],
        [""],
        ["", ""],
        ["", " . \n", "..."],
        ["a", "b"],
        ["a b", "a b", "a b"],
        ["The cat. The\nCat sat", "the CAT sat.", "THE cat  sat"],
        ["ÉTÉ à Paris", "été à paris", "Σ ΑΣ σς"],
        ["tab\tseparated words", "non\u00a0breaking space", "x  y   z"],
        ["nul\x00inside a word", "a \x00 b", "\x00"],
        ["a b c d e f g h", "a b c d e f g h i", "b c d e f"],
    ]
    sets.append([_text(rng, 45, 70) for _ in range(3)])  # long enough for HD-D's 42 tokens
    out = []
    for i, s in enumerate(sets):
        out.append(s)
        out.append(degenerate[i % len(degenerate)])
    return out + degenerate


MIXED = _mixed_batch()

#: Core form metrics (no optional extra).
CORE_FORM = [s.name for s in list_metrics("form") if s.extra is None]


def _assert_same_results(got: list[MetricResult], sets: list[Any], metric: str,
                         kernel: bool = False, **params: Any) -> None:
    """``got`` equals :func:`score` on each set, or (``kernel``: ``got`` came from the metric's
    formula on many sets, which the engine's rule for degenerate sets does not pass) the
    formula on each set alone."""
    assert len(got) == len(sets)
    for i, (g, s) in enumerate(zip(got, sets, strict=True)):
        want = formula(metric, s, **params) if kernel else score(s, metric, **params)
        where = f"{metric} {params} set {i}: {s!r}"
        assert g.metric == want.metric, where
        assert g.value == want.value or (g.value is None and want.value is None), where
        assert type(g.value) is type(want.value), where
        assert g.reason == want.reason, where
        assert g.signature == want.signature, where
        assert same(dict(g.details), dict(want.details)), where


def test_every_core_form_metric_is_covered() -> None:
    assert {"distinct-n", "entropy-n", "ead", "ngram-diversity", "self-repetition",
            "ngram-cosine", "compression-ratio", "self-bleu", "ttr"} <= set(CORE_FORM)


@pytest.mark.parametrize("metric", CORE_FORM)
def test_score_many_equals_score_on_mixed_batch(metric: str) -> None:
    got = score_many(MIXED, metric)
    _assert_same_results(got, MIXED, metric)
    assert any(r.value is None for r in got)  # the batch does hold degenerate sets
    assert any(r.value is not None for r in got)


BATCHED_VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("distinct-n", {"n": 1}),
    ("distinct-n", {"n": 3, "tokenizer": "whitespace"}),
    ("distinct-n", {"n_max": 3, "tokenizer": "word", "lowercase": True}),
    ("distinct-n", {"n": 9}),  # longer than most texts: orders with no n-gram count 0
    ("entropy-n", {"base": 2}),
    ("entropy-n", {"n": 2, "base": 10, "lowercase": True}),
    ("entropy-n", {"n_max": 2, "base": "bits", "tokenizer": "word"}),
    ("ead", {"vocab_size": 7}),
    ("ead", {"n": 2, "tokenizer": "whitespace"}),
    ("ngram-diversity", {"n_max": 2}),
    ("ngram-diversity", {"tokenizer": "tevet", "lowercase": True}),
    ("self-repetition", {"n": 1}),
    ("self-repetition", {"n": 2, "tokenizer": "tevet"}),
    ("self-repetition", {"n": 3, "tokenizer": "word", "lowercase": True}),
    ("ngram-cosine", {"n": 1}),
    ("ngram-cosine", {"n_max": 3, "reduction": "one-minus-mean", "tokenizer": "word"}),
    ("ngram-cosine", {"n": 6, "lowercase": True}),  # most texts shorter: similarity 0
]


@pytest.mark.parametrize(("metric", "params"), BATCHED_VARIANTS,
                         ids=[f"{m}-{i}" for i, (m, _) in enumerate(BATCHED_VARIANTS)])
def test_batched_variants_equal_per_set(metric: str, params: dict[str, Any]) -> None:
    _assert_same_results(score_many(MIXED, metric, **params), MIXED, metric, **params)


def test_batched_metrics_are_registered() -> None:
    batched = {s.name for s in list_metrics() if s.definition.batched}
    assert batched >= {"distinct-n", "entropy-n", "ead", "ngram-diversity", "self-repetition",
                       "ngram-cosine"}
    # the response-level metrics score every set with their one many-set formula too
    assert batched >= {"ttr", "mattr", "pattr", "response-compression", "mtld", "hdd", "length"}
    # compression-ratio compresses each set on its own, in the same one call
    sets = [["a b a b", "c d"], ["x y z", "x y z", "x"], []]
    assert [r.value for r in score_many(sets, "compression-ratio")] == [
        score(s, "compression-ratio").value for s in sets]


def test_hand_checked_values_inside_a_batch() -> None:
    got = score_many([["a b a b", "a b c"], [], ["..", "..."], ["x x x", "x"], ["x x x"]],
                     "distinct-n", n=2)
    assert [r.value for r in got] == [0.6, None, None, 0.5, None]
    assert [r.reason for r in got] == [None, "empty set", "no tokens in any response", None,
                                       "fewer than two non-blank responses (got 1)"]
    assert got[0].details == {"per_n": {2: 0.6}}
    ent = score_many([["a b", "a c"], ["a b", "c d"]], "entropy-n", n=1, base=2)
    assert [r.value for r in ent] == [1.5, 2.0]
    rep = score_many([["a b c", "a b d", "x y"], ["one"]], "self-repetition", n=2)
    assert rep[0].value == pytest.approx(2 * math.log(2) / 3, rel=1e-15)
    assert rep[0].details["per_response"] == [math.log(2), math.log(2), 0.0]
    assert (rep[1].value, rep[1].reason) == (
        None, "fewer than two non-blank responses (got 1)")
    assert rep[1].signature == "self-repetition|n:2|log:ln|tok:whitespace|case:mixed|v:0.1.0"


def test_wide_sets_take_the_compact_and_per_set_paths() -> None:
    # A set of 6,000 words: first-occurrence indices are too wide for 5-gram keys next to the
    # other sets, so ids are compacted to ranks. A set of 6,000 *distinct* tokens is too wide
    # even alone (6000**5 >= 2**62): it is scored by the per-set function (interned ids).
    rng = random.Random(3)
    long_set = [_text(rng, 1000, 1000) for _ in range(6)]
    distinct = [" ".join(f"w{i}" for i in range(j, 6000, 3)) for j in range(3)]
    many = [_text(rng, 0, 8) for _ in range(70)]  # > 64 responses: ngram-cosine per set
    sets = [*MIXED[:6], long_set, *MIXED[6:10], distinct, *MIXED[10:14], many]
    for metric in ("distinct-n", "entropy-n", "ead", "ngram-cosine"):
        _assert_same_results(score_many(sets, metric), sets, metric)
    _assert_same_results(score_many(sets, "ngram-diversity", n_max=5), sets,
                         "ngram-diversity", n_max=5)
    _assert_same_results(score_many(sets, "self-repetition", n=5), sets, "self-repetition", n=5)
    st = lexical._encode_sets(sets, lexical.get_tokenizer("tevet"), 5)
    groups = list(lexical._fit_groups(st, 5))
    assert (11, 12, True) in groups  # the 6,000-type set alone, per-set path
    assert sum(b - a for a, b, _ in groups) == len(sets)


def test_input_kinds_and_inline_parameters() -> None:
    rsets = [ResponseSet("a", ["a b c", "a b d"]), ResponseSet("b", [])]
    tuples = [("a b c", "a b d"), ()]
    assert score_many(rsets, "distinct-n:n=1") == score_many(tuples, "distinct-n", n=1)
    assert [r.value for r in score_many(iter(tuples), "ttr")] == [
        score(t, "ttr").value for t in tuples]
    assert score_many([], "distinct-n") == []


def test_errors() -> None:
    with pytest.raises(InvalidInputError, match=r"^`sets\[1\]\[0\]` must be a string; got int\."):
        score_many([["a"], [3]], "distinct-n")
    with pytest.raises(InvalidInputError, match=r"^`sets\[0\]` must be a list of strings; got a "
                                                r"single str"):
        score_many(["a b c"], "ttr")
    with pytest.raises(InvalidInputError, match=r"`n` of distinct-n must be an integer >= 1; "
                                                r"got 0\."):
        score_many([["a b"]], "distinct-n", n=0)
    with pytest.raises(InvalidInputError, match="metric 'ead' has no parameter 'm'"):
        score_many([["a b"]], "ead:m=2")
    with pytest.raises(UnknownMetricError, match="Did you mean 'distinct-n'"):
        score_many([["a b"]], "distinct")


CALLS: list[int] = []


def _demo(responses: list[str]) -> MetricResult:
    return MetricResult("demo-batched", float(len(responses)), "demo-batched|v:0")


def _demo_many(sets: list[list[str]]) -> list[MetricResult]:
    CALLS.append(len(sets))
    return [_demo(s) for s in sets]


def test_register_batch_attaches_a_batched_implementation() -> None:
    with pytest.raises(ValueError, match="'no-such-metric' is not registered"):
        register_batch("no-such-metric")(_demo_many)
    register("demo-batched", family="form", granularity="set", higher_is_more_diverse=True,
             bounds=(0, None), citation="none")(_demo)
    try:
        assert not get_metric("demo-batched").definition.batched
        register_batch("demo-batched")(_demo_many)
        assert get_metric("demo-batched").definition.batched
        got = score_many([["a", "c"], ["a", "b", "c"], []], "demo-batched")
        assert [r.value for r in got] == [2.0, 3.0, None]  # []: null by the rule, not scored
        assert CALLS == [2]  # one call for the whole list (the sets the rule lets through)
    finally:
        _REGISTRY.pop("demo-batched")


def test_score_sets_uses_batches_with_identical_records() -> None:
    sets = [ResponseSet(f"s{i}", list(s)) for i, s in enumerate(MIXED)]
    sets.insert(5, ResponseSet("bad", ["fine", 3]))  # type: ignore[list-item]
    metrics = ["distinct-n", "entropy-n:base=2", "self-repetition:n=2", "ttr"]
    recs = list(score_sets(sets, metrics, chunk_size=4, with_signatures=True))
    assert [r["row"] for r in recs] == list(range(len(sets)))
    for s, rec in zip(sets, recs, strict=True):
        if s.set_id == "bad":
            assert rec["distinct-n"] is None
            assert rec["reasons"]["distinct-n"] == "`responses[1]` must be a string; got int."
            assert rec["reasons"]["self-repetition:n=2"] == rec["reasons"]["distinct-n"]
            continue
        for col, (name, params) in zip(
            metrics, [("distinct-n", {}), ("entropy-n", {"base": 2}),
                      ("self-repetition", {"n": 2}), ("ttr", {})], strict=True):
            want = score(s.responses, name, **params)
            assert rec[col] == want.value, (col, s)
            assert rec["signatures"][col] == want.signature
            if want.value is None:
                assert rec["reasons"][col] == want.reason


def test_an_immutable_batch_is_tokenized_once_per_tokenizer() -> None:
    # divmeter.engine.batch passes each chunk as one tuple of tuples to every batched metric
    rng = random.Random(5)
    long_set = tuple(_text(rng, 1000, 1000) for _ in range(6))  # forces compaction at n = 5
    frozen = tuple(tuple(s) for s in MIXED) + (long_set,)
    tevet = lexical.get_tokenizer("tevet")
    first = lexical._interned(frozen, tevet)
    assert lexical._interned(frozen, tevet) is first
    assert lexical._interned(frozen, lexical.get_tokenizer("tevet", True)) is not first
    as_lists = [list(s) for s in frozen]
    assert lexical._interned(as_lists, tevet) is not lexical._interned(as_lists, tevet)
    # shared interning, compacted or not, never changes a result
    runs = [("distinct-n", {}), ("ngram-cosine", {}), ("entropy-n", {"n": 2}), ("ead", {}),
            ("distinct-n", {"n": 1}), ("ngram-diversity", {}), ("self-repetition", {"n": 2})]
    got = []
    for metric, params in runs:  # the metrics of one batch in turn, as the engine runs them
        got.append(get_metric(metric).plan(params).score(frozen))
        assert lexical._interned(frozen, tevet) is first  # tokenized once for all of them
    for (metric, params), results in zip(runs, got, strict=True):
        _assert_same_results(results, list(frozen), metric, kernel=True, **params)


def test_on_error_null_gives_a_null_with_the_reason_and_goes_on() -> None:
    sets = [["a b", "a c"], ["a", 3], "a b"]
    got = score_many(sets, "distinct-n:n=1", on_error="null")
    assert got[0] == score(["a b", "a c"], "distinct-n:n=1")
    assert got[1] == MetricResult("distinct-n", None, "",
                                  reason="`sets[1][1]` must be a string; got int.")
    assert got[2].value is None and got[2].reason is not None
    assert got[2].reason.startswith("`sets[2]` must be a list of strings; got a single str.")
    with pytest.raises(InvalidInputError, match=r"^`sets\[1\]\[1\]` must be a string; got int\."):
        score_many(sets, "distinct-n:n=1")
    with pytest.raises(InvalidInputError, match="`on_error` must be one of raise, null; got 'x'"):
        score_many(sets, "distinct-n", on_error="x")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="`n` of distinct-n must be an integer >= 1"):
        score_many(sets, "distinct-n", on_error="null", n=0)  # parameters raise either way


def _renamed_many(sets: list[list[str]]) -> list[MetricResult]:
    return [_demo(s) for s in sets]


def test_a_batch_target_bound_under_another_name_still_resolves() -> None:
    """The registry stores the callables, so a batched function whose module name differs from
    its __qualname__ (the kmeans-inertia case) cannot break the batch path."""
    renamed = _renamed_many
    renamed.__qualname__ = "no_such_attribute"
    register("demo-renamed", family="form", granularity="set", higher_is_more_diverse=True,
             bounds=(0, None), citation="none")(_demo)
    try:
        assert register_batch("demo-renamed")(renamed) is renamed
        assert [r.value for r in score_many([["a", "c"], ["a", "b", "c"]], "demo-renamed")
                ] == [2.0, 3.0]
        with pytest.raises(ValueError, match="batch target of 'demo-renamed' is not callable"):
            register_batch("demo-renamed")(3)  # type: ignore[arg-type]
    finally:
        _REGISTRY.pop("demo-renamed")
        renamed.__qualname__ = "_renamed_many"

