"""The many-set path of the embedding metrics (``score_many`` / ``divmeter score``): every
result equal (``==``, not approximately) to the single-set call's on the same vectors, for sets
of mixed sizes with degenerate ones among them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import divmeter
from divmeter.metrics import embedding as E
from divmeter.metrics.reduce import mean_pairwise

BASE = ["A cat sleeps on the sofa.", "The train is late again.", "Prices fell sharply today.",
        "My grandmother bakes bread.", "The cat is asleep on the couch.", "It rained all day.",
        "Stocks rose after the report.", "A dog barks at the mailman.", "We missed the bus.",
        "The soup was too salty."]
# sizes 2..10 and a wide one, an empty set, one response, blank responses, duplicates, texts
# shared between sets (deduplicated in the many-set path)
SETS: list[list[str]] = [
    BASE[:2], BASE[1:4], [], ["only one"], ["", "  \t"], ["a real one", ""], BASE[:5],
    BASE[3:8], [BASE[0]] * 3, BASE, BASE[2:9], BASE[:2] + [BASE[0]], BASE[5:10],
    BASE[:4] + ["a response longer than the window " * 60],  # details["truncated"] == 1
    [f"Response number {i} about topic {i % 7}." for i in range(40)],
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    return bool(a == b)


def _assert_identical(many: list[Any], one: list[Any], what: str) -> None:
    assert len(many) == len(one)
    for k, (m, o) in enumerate(zip(many, one, strict=True)):
        where = f"{what}, set {k}"
        assert (m.metric, m.value, m.signature, m.reason) == (o.metric, o.value, o.signature,
                                                                o.reason), where
        assert m.details.keys() == o.details.keys(), where
        for key in m.details:
            assert _same(m.details[key], o.details[key]), f"{where}: details[{key!r}]"


@pytest.mark.embed
@pytest.mark.parametrize("metric", [
    "embedding-cosine", "embedding-cosine:reduction=one-minus-mean", "chamfer",
    "remote-clique", "remote-clique:distance=cosine", "chamfer-sqeuclidean",
    "vendi-embedding", "vendi-embedding:q=inf", "kmeans-inertia",
])
def test_score_many_equals_single_set_calls(metric: str) -> None:
    many = divmeter.score_many(SETS, metric)  # embeds every text once (the cache holds them)
    one = [divmeter.score(s, metric) for s in SETS]
    _assert_identical(many, one, metric)
    assert sum(r.value is None for r in many) == 4  # [], one response, two blank, one blank
    assert all(r.value is not None for r in many[6:])
    assert [r.details["truncated"] for r in many[13:]] == [1, 0]


@pytest.mark.embed
def test_onnx_backend_many_equals_single_set_calls() -> None:
    pytest.importorskip("onnxruntime")
    sets = SETS[:4] + SETS[12:14]
    for metric in ("embedding-cosine:backend=onnx", "chamfer:backend=onnx"):
        many = divmeter.score_many(sets, metric)
        _assert_identical(many, [divmeter.score(s, metric) for s in sets], metric)
        assert many[5].details["truncated"] == 1


@pytest.mark.embed
def test_the_formula_on_many_sets_and_glove_zero_vectors() -> None:
    """The definition's formula on many sets in one call (no rule applied before it: its own
    reasons for the degenerate sets) equals the public function on each set."""
    sets = SETS[:2] + SETS[6:8] + [["the cat", "qzxqzxq vbnvbnq"],
                                   ["the cat sat", "a dog ran", "the dog"]]
    for name, single in (("embedding-cosine", E.embedding_cosine), ("chamfer", E.chamfer),
                         ("remote-clique", E.remote_clique)):
        for model in ("minilm", "glove"):
            got = divmeter.get_metric(name).plan({"model": model}).score(
                tuple(tuple(s) for s in sets))
            want = [single(s, model=model) for s in sets]
            _assert_identical(got, want, f"{name} {model}")
    formula = divmeter.get_metric("embedding-cosine").plan({"model": "glove"})
    both = formula.score((("the cat", "qzxqzxq vbnvbnq"), ("the cat sat", "a dog ran")))
    assert both[0].value is None and both[0].reason.startswith("response 1 has a zero embedding")
    assert "truncated" not in both[1].details
    degenerate = formula.score(((), ("only one",), ("", " ")))
    assert [r.reason for r in degenerate] == ["empty set", "needs at least 2 responses; got 1",
                                              "fewer than two non-blank responses (got 0)"]


def test_stacked_cosine_is_the_single_set_cosine_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    for d in (7, 50, 384, 768):
        for n in (2, 3, 5, 8, 9, 17, 33, 130):
            X = rng.standard_normal((6, n, d)).astype(np.float32)
            U, S = E._cosine_stack(np.asarray(X, dtype=np.float64))
            iu = np.triu_indices(n, 1)
            pairs = S[:, iu[0], iu[1]]
            for b in range(len(X)):
                assert np.array_equal(U[b], E.normalize_rows(X[b])), (d, n, b)
                assert np.array_equal(S[b], E.cosine_matrix(X[b])), (d, n, b)
                assert E._row_mean(pairs[b]) == mean_pairwise(S[b]), (d, n, b)
                assert E._row_mean(U[b, :, 0]) == float(U[b, :, 0].mean()), (d, n, b)


def test_stacks_are_cut_to_stay_in_cache() -> None:
    assert E._STACK_FLOATS // (5 * 384) == 17  # 2,000 sets of 5 MiniLM vectors: 118 stacks
