"""Tests of the Vendi score: closed forms, q, kernel vs dual path, n-gram kernel, parity.

Parity values come from ``tests/fixtures/vendi_reference.json``, frozen from the `vendi-score`
package (v0.0.3) by ``tests/fixtures/make_vendi_fixtures.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import divmeter
from divmeter.core.degenerate import degenerate_reason
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.text import NgramIndex
from divmeter.metrics.vendi import (
    feature_eigenvalues,
    ngram_features,
    vendi_from_eigenvalues,
    vendi_from_features,
    vendi_from_kernel,
    vendi_ngram,
)
from divmeter.testing import formula

FIXTURES = Path(__file__).resolve().parent / "fixtures"
INF = float("inf")
QS = [0.5, 1.0, 2.0, INF, 0.1, 7.5]
# VS_1 of two clusters of sizes 2 and 1 (eigenvalues 2/3, 1/3).
TWO_TO_ONE = math.exp(-(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3)))
REF = json.loads((FIXTURES / "vendi_reference.json").read_text(encoding="utf-8"))


def _q(key: str) -> float:
    return INF if key == "inf" else float(key)


# ---------------------------------------------------------------------------------------------
# Core numerics: closed forms


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("n", [1, 2, 5, 40])
def test_identical_items_give_one(q: float, n: int) -> None:
    assert vendi_from_kernel(np.ones((n, n)), q) == pytest.approx(1.0, abs=1e-12)
    X = np.tile([[0.3, -1.2, 2.0]], (n, 1))
    assert vendi_from_features(X, q) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("n", [1, 3, 17])
def test_orthonormal_items_give_n(q: float, n: int) -> None:
    rng = np.random.default_rng(n)
    Q, _ = np.linalg.qr(rng.normal(size=(30, n)))  # 30-d, n orthonormal columns
    assert vendi_from_features(Q.T, q) == pytest.approx(n, rel=1e-12)
    assert vendi_from_kernel(np.eye(n), q) == pytest.approx(n, rel=1e-12)


@pytest.mark.parametrize(
    ("eigs", "q", "expected"),
    [
        # two clusters of sizes 3 and 1 of identical items: eigenvalues 3/4, 1/4
        ([0.75, 0.25], 1.0, math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))),
        ([0.75, 0.25], 2.0, 1.0 / (0.75**2 + 0.25**2)),  # 1.6
        ([0.75, 0.25], 0.5, (math.sqrt(0.75) + math.sqrt(0.25)) ** 2),  # Renyi-1/2
        ([0.75, 0.25], INF, 4.0 / 3.0),
        ([0.75, 0.25, -1e-18], 1.0, math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))),
        ([0.5, 0.5, 0.0, 0.0], 3.0, 2.0),
    ],
)
def test_eigenvalue_formula_by_hand(eigs: list[float], q: float, expected: float) -> None:
    assert vendi_from_eigenvalues(eigs, q) == pytest.approx(expected, rel=1e-12)


def test_two_clusters_kernel_by_hand() -> None:
    # Items 0,1,2 identical, item 3 orthogonal: K/n has eigenvalues 3/4 and 1/4.
    K = np.zeros((4, 4))
    K[:3, :3] = 1.0
    K[3, 3] = 1.0
    assert vendi_from_kernel(K, INF) == pytest.approx(4 / 3, rel=1e-12)
    assert vendi_from_kernel(K, 2.0) == pytest.approx(1.6, rel=1e-12)


def test_q_changes_value_and_is_monotone() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 8)) + 1.0
    vals = [vendi_from_features(X, q) for q in (0.1, 0.5, 1.0, 2.0, 7.5, INF)]
    assert len(set(vals)) == len(vals)
    # Renyi entropy is non-increasing in q, so VS_q is too.
    assert all(a > b for a, b in zip(vals, vals[1:], strict=False))
    # Near-limits approach the q=1 and q=inf values.
    assert vendi_from_features(X, 1.0 + 1e-7) == pytest.approx(vals[2], rel=1e-5)
    assert vendi_from_features(X, 1e4) == pytest.approx(vals[-1], rel=1e-3)


def test_large_q_does_not_underflow() -> None:
    assert vendi_from_eigenvalues([0.5, 0.5], 5000.0) == pytest.approx(2.0, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# Kernel path == dual path, order invariance, sparse == dense


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize(("n", "d"), [(60, 7), (150, 30), (20, 50)])
def test_kernel_path_equals_dual_path(q: float, n: int, d: int) -> None:
    rng = np.random.default_rng(n * d)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    wk, pk = feature_eigenvalues(X, path="kernel")
    wd, pd = feature_eigenvalues(X, path="dual")
    assert (pk, pd) == ("kernel", "dual")
    a, b = vendi_from_eigenvalues(wk, q), vendi_from_eigenvalues(wd, q)
    assert a == pytest.approx(b, rel=1e-9, abs=1e-9)
    assert vendi_from_kernel(X @ X.T, q) == pytest.approx(b, rel=1e-9)
    assert vendi_from_features(X, q) == pytest.approx(b, rel=1e-9)


@pytest.mark.parametrize("q", [0.1, 0.5, 1.0, 2.0, INF])
def test_kernel_path_equals_dual_path_low_rank(q: float) -> None:
    # Rank-5 features: the n x n kernel has n - 5 eigenvalues that are rounding noise; without
    # zeroing them, q < 1 would inflate them and the two paths would disagree.
    rng = np.random.default_rng(11)
    X = rng.normal(size=(200, 5)) @ rng.normal(size=(5, 60))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    a = vendi_from_eigenvalues(feature_eigenvalues(X, path="kernel")[0], q)
    b = vendi_from_eigenvalues(feature_eigenvalues(X, path="dual")[0], q)
    assert a == pytest.approx(b, rel=1e-12)
    assert 1.0 < b <= 5.0 + 1e-9


def test_order_of_items_does_not_matter() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(25, 6))
    perm = rng.permutation(25)
    for q in (0.5, 1.0, INF):
        expected = vendi_from_features(X, q)
        assert vendi_from_features(X[perm], q) == pytest.approx(expected, rel=1e-10)


def test_sparse_equals_dense_and_scale_invariance() -> None:
    rng = np.random.default_rng(4)
    X = rng.poisson(0.3, size=(30, 50)).astype(float)
    X[:, 0] += 1.0  # no zero rows
    dense = vendi_from_features(X, 0.5)
    assert vendi_from_features(sp.csr_matrix(X), 0.5) == pytest.approx(dense, rel=1e-10)
    assert vendi_from_features(X * rng.uniform(0.1, 9, size=(30, 1)), 0.5) == pytest.approx(
        dense, rel=1e-10
    )
    # normalize=False uses the rows as given: unit rows give the same value.
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    assert vendi_from_features(Xn, 0.5, normalize=False) == pytest.approx(dense, rel=1e-10)


def test_many_items_dual_path_matches_small_kernel_value() -> None:
    # 4,000 items that are copies of 3 orthonormal vectors in proportions 1/2, 1/4, 1/4.
    basis = np.eye(3, 64)
    X = np.repeat(basis, [2000, 1000, 1000], axis=0)
    assert vendi_from_features(X, 1.0) == pytest.approx(2 ** 1.5, rel=1e-10)
    assert vendi_from_features(X, INF) == pytest.approx(2.0, rel=1e-10)


# ---------------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize("q", [0, -1, 0.0, float("nan"), "1", True])
def test_bad_q_is_an_error(q: object) -> None:
    with pytest.raises(InvalidInputError, match=r"`q` of the Vendi score must be a number > 0"):
        vendi_from_kernel(np.eye(2), q)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"`q` of vendi-ngram must be a number > 0"):
        vendi_ngram(["a b", "c d"], q=q)  # type: ignore[arg-type]


def test_zero_feature_row_is_an_error() -> None:
    X = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    with pytest.raises(InvalidInputError, match="row 1 is all zeros"):
        vendi_from_features(X)
    with pytest.raises(InvalidInputError, match="row 1 is all zeros"):
        vendi_from_features(sp.csr_matrix(X))


@pytest.mark.parametrize(
    ("K", "match"),
    [
        (np.ones((2, 3)), "must be a square matrix"),
        (np.zeros((0, 0)), "at least one item"),
        (np.array([[1.0, 0.2], [0.3, 1.0]]), "must be symmetric"),
        (np.array([[2.0, 0.0], [0.0, 2.0]]), "must have a unit diagonal"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), "must be finite"),
        (np.zeros((2, 2)), "at least one positive eigenvalue"),
    ],
)
def test_bad_kernel_is_an_error(K: np.ndarray, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        vendi_from_kernel(K)


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.zeros((0, 3)), "at least one row"),
        (np.ones(3), "must be a 2-D matrix"),
        (np.array([[1.0, np.inf]]), "must be finite"),
    ],
)
def test_bad_features_are_an_error(X: np.ndarray, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        vendi_from_features(X)


def test_bad_eigenvalues_are_an_error() -> None:
    with pytest.raises(InvalidInputError, match="must not be empty"):
        vendi_from_eigenvalues([])
    with pytest.raises(InvalidInputError, match="at least one positive eigenvalue"):
        vendi_from_eigenvalues([0.0, -1e-20])


# ---------------------------------------------------------------------------------------------
# Parity with vendi-score 0.0.3 (frozen)


@pytest.mark.parametrize("case", range(len(REF["score_K"])))
def test_parity_score_K(case: int) -> None:
    entry = REF["score_K"][case]
    K = np.array(entry["K"])
    n = K.shape[0]
    rank_deficient = np.linalg.matrix_rank(K) < n
    for key, expected in entry["values"].items():
        q = _q(key)
        ours = vendi_from_kernel(K, q)
        if q < 1 and rank_deficient:
            # The package keeps the rounding-noise eigenvalues (~1e-17; their signs and sizes
            # depend on the LAPACK build) of a rank-deficient kernel, and for q < 1 lambda**q
            # inflates them (1e-17 ** 0.5 ~ 3e-9). divmeter's contract (vendi.py, "Numerics"):
            # eigenvalues below m * eps * lambda_max are 0, so its value is VS_q of the kernel's
            # rank-r spectrum, and it differs from the package's only by what noise below that
            # tolerance can add: (sum lambda**q) grows by at most (n - r) * tol**q.
            w = np.linalg.eigvalsh(K / n)
            r = int(np.linalg.matrix_rank(K))
            mass = float((w[-r:] ** q).sum())
            assert ours == pytest.approx(mass ** (1 / (1 - q)), rel=1e-12), key
            tol = n * np.finfo(np.float64).eps * w[-1]
            assert ours < expected <= (mass + (n - r) * tol**q) ** (1 / (1 - q)), key
            assert ours == pytest.approx(expected, rel=1e-6), key
        else:
            assert ours == pytest.approx(expected, rel=1e-9), key


@pytest.mark.parametrize("case", range(len(REF["score_dual"])))
def test_parity_score_dual(case: int) -> None:
    entry = REF["score_dual"][case]
    X = np.array(entry["X"])
    for key, expected in entry["values"].items():
        assert vendi_from_features(X, _q(key)) == pytest.approx(expected, rel=1e-9), key


def test_parity_score_X_q1_and_package_ignores_q() -> None:
    entry = REF["score_X"][0]
    X = np.array(entry["X"])
    vals = entry["values"]
    assert vendi_from_features(X, 1.0) == pytest.approx(vals["1"], rel=1e-9)
    # The package's score_X passes q=1 on whatever q it is given; divmeter honours q.
    assert vals["0.5"] == vals["1"] == vals["inf"]
    assert vendi_from_features(X, 0.5) > vals["1"] > vendi_from_features(X, INF)


@pytest.mark.parametrize("case", [i for i, e in enumerate(REF["ngram"]) if e["kind"] == "long"])
def test_parity_ngram_vendi_score(case: int) -> None:
    entry = REF["ngram"][case]
    res = vendi_ngram(entry["responses"], tokenizer="whitespace")
    assert res.details["n_short"] == 0
    assert res.value == pytest.approx(entry["value"], rel=1e-9)


@pytest.mark.parametrize("case", [i for i, e in enumerate(REF["ngram"]) if e["kind"] == "short"])
def test_short_responses_differ_from_package_by_design(case: int) -> None:
    entry = REF["ngram"][case]
    res = vendi_ngram(entry["responses"], tokenizer="whitespace")
    assert res.details["n_short"] > 0
    assert res.value != pytest.approx(entry["value"], rel=1e-6)


def test_package_zero_row_kernel_reproduced_for_short_set() -> None:
    # What the package computes on ["cat", "cat dog sat on", "the"] (zero rows, K_ii < 1),
    # rebuilt here by hand, equals the frozen value: the difference is only the definition.
    entry = next(e for e in REF["ngram"] if e["responses"] == ["cat", "cat dog sat on", "the"])
    c = 1 / 2  # cosine of unigram vectors of "cat" and "cat dog sat on"
    K = np.array([[1, c, 0], [c, 4, 0], [0, 0, 1]]) / 4
    K[1, 1] = 1.0
    w = np.linalg.eigvalsh(K / 3)
    w = w[w > 0]
    assert math.exp(-(w * np.log(w)).sum()) == pytest.approx(entry["value"], rel=1e-12)


# ---------------------------------------------------------------------------------------------
# vendi-ngram


def test_vendi_ngram_by_hand_and_signature() -> None:
    # Two identical responses and one sharing no n-gram: eigenvalues 2/3, 1/3.
    res = divmeter.score(["the cat sat down", "the cat sat down", "a dog ran off"], "vendi-ngram")
    h = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert res.value == pytest.approx(math.exp(h), rel=1e-12)
    assert res.signature == "vendi-ngram|q:1|n:1..4|tok:tevet|case:mixed|v:0.1.0"
    assert res.details["path"] == "kernel"
    np.testing.assert_allclose(res.details["eigenvalues"], [2 / 3, 1 / 3], rtol=1e-12)
    inf = divmeter.score(["the cat sat down"] * 2 + ["a dog ran off"], "vendi-ngram", q=INF)
    assert inf.value == pytest.approx(1.5, rel=1e-12)
    assert inf.signature == "vendi-ngram|q:inf|n:1..4|tok:tevet|case:mixed|v:0.1.0"


def test_vendi_ngram_partial_overlap_by_hand() -> None:
    # "a b" vs "a c", n_max=2: unigram cosine 1/2, bigram cosine 0 -> K_12 = 1/4.
    res = vendi_ngram(["a b", "a c"], n_max=2, q=2.0)
    # eigenvalues of K/2: (1 +- 1/4)/2 -> VS_2 = 1 / sum(l^2)
    lam = np.array([1.25, 0.75]) / 2
    assert res.value == pytest.approx(1 / (lam**2).sum(), rel=1e-12)
    assert res.signature == "vendi-ngram|q:2|n:1..2|tok:tevet|case:mixed|v:0.1.0"


def test_vendi_ngram_every_q_and_param_changes_value() -> None:
    texts = [
        "the old man walked his dog",
        "the old man walked his cat",
        "a young girl painted the red barn",
        "rain fell on the quiet city",
    ]
    vals = {q: vendi_ngram(texts, q=q).value for q in (0.5, 1.0, 2.0, INF, 3.3)}
    assert len(set(vals.values())) == len(vals)
    assert vendi_ngram(texts, n_max=1).value != vals[1.0]
    up = [t.upper() if i % 2 else t for i, t in enumerate(texts)]
    assert vendi_ngram(up, lowercase=True).value == pytest.approx(vals[1.0], rel=1e-12)
    assert vendi_ngram(up).value != pytest.approx(vals[1.0], rel=1e-6)


def test_vendi_ngram_identical_and_disjoint_sets() -> None:
    for q in (0.5, 1.0, INF):
        assert vendi_ngram(["a b c d e"] * 6, q=q).value == pytest.approx(1.0, abs=1e-12)
        assert vendi_ngram(["a", "a"], q=q).value == pytest.approx(1.0, abs=1e-12)
        disjoint = [f"w{i} x{i} y{i} z{i} v{i}" for i in range(7)]
        assert vendi_ngram(disjoint, q=q).value == pytest.approx(7.0, rel=1e-12)


def test_vendi_ngram_order_invariant_and_dual_path() -> None:
    # Many repeated short responses: more responses than distinct n-grams -> dual path.
    texts = ["a b", "b c", "a b", "c a", "a b c", "b c"] * 10
    res = vendi_ngram(texts, q=0.5)
    assert res.details["path"] == "dual"
    Z, _ = ngram_features(NgramIndex.from_tokens([t.split() for t in texts]), 4)
    wk, _ = feature_eigenvalues(Z, path="kernel")
    assert vendi_from_eigenvalues(wk, 0.5) == pytest.approx(res.value, rel=1e-9)
    rev = vendi_ngram(texts[::-1], q=0.5)
    assert rev.value == pytest.approx(res.value, rel=1e-10)


def test_ngram_features_kernel_is_mean_of_per_order_cosines() -> None:
    texts = ["the cat sat on the mat", "the dog sat", "bird", "", "the cat sat on the mat"]
    Z, info = ngram_features(NgramIndex.from_tokens([t.split() for t in texts]), 2)
    assert sp.issparse(Z) and info == {"short": 1, "empty": 1}
    K = (Z @ Z.T).toarray()
    # texts 0 and 1: unigram cosine 3/sqrt(8*3) ("the" x2 . "the" + "sat"), bigram cosine 0.
    c1 = 3 / math.sqrt(8 * 3)
    assert K[0, 1] == pytest.approx(c1 / 2, rel=1e-12)
    # "bird" has no bigram but still K_ii = 1; "" shares the empty feature only with itself.
    np.testing.assert_allclose(np.diag(K), 1.0, rtol=1e-12)
    assert K[3, 3] == 1.0 and K[3, :3].sum() == 0.0 and K[0, 4] == pytest.approx(1.0)


def test_pair_gram_equals_scipy_gram(monkeypatch: pytest.MonkeyPatch) -> None:
    import divmeter.metrics.vendi as vendi_mod

    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(12)]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 9)))) for _ in range(15)]
    idx = NgramIndex.from_tokens([t.split() for t in texts])
    rows, cols, vals, width, _ = vendi_mod._ngram_triples(idx, 3)
    K = vendi_mod._gram_from_triples(rows, cols, vals, len(texts))
    Z, _ = ngram_features(idx, 3)
    assert K is not None
    np.testing.assert_allclose(K, (Z @ Z.T).toarray(), rtol=0, atol=1e-14)
    fast = vendi_ngram(texts, n_max=3, q=0.5)
    monkeypatch.setattr(vendi_mod, "_PAIR_LIMIT", 0)  # force the scipy.sparse Gram
    assert vendi_mod._gram_from_triples(rows, cols, vals, len(texts)) is None
    assert vendi_ngram(texts, n_max=3, q=0.5).value == pytest.approx(fast.value, rel=1e-12)


@pytest.mark.parametrize(
    ("responses", "expected", "reason"),
    [
        ([], None, "empty set"),
        (["", "", ""], None, "no tokens in any response"),
        (["just one response here"], 1.0, None),
        (["a"], 1.0, None),  # vendi-score: 1.41 (zero rows for missing orders)
        (["a", "b", "a"], TWO_TO_ONE, None),
        (["", "", "a b c d e"], TWO_TO_ONE, None),  # empty responses are identical to each other
    ],
)
def test_vendi_ngram_degenerate_sets(
    responses: list[str], expected: float | None, reason: str | None
) -> None:
    """The kernel's documented value on each set; the public function gives the rule's null
    where the set has fewer than two non-blank responses (as divmeter.score does)."""
    res = formula(vendi_ngram, responses)
    if expected is None:
        assert res.value is None and res.reason == reason
    else:
        assert res.value == pytest.approx(expected, rel=1e-12)
    public = vendi_ngram(responses)
    rule = degenerate_reason(responses)
    if rule is None:
        assert (public.value, public.reason) == (res.value, res.reason)
    else:
        assert (public.value, public.reason, public.signature) == (None, rule, res.signature)


def test_vendi_ngram_counts_short_and_empty() -> None:
    res = vendi_ngram(["", "a b", "a b c d"])
    assert (res.details["n_short"], res.details["n_empty"]) == (1, 1)


def test_vendi_ngram_bad_params() -> None:
    with pytest.raises(InvalidInputError, match=r"`n_max` of vendi-ngram must be an integer >= 1"):
        vendi_ngram(["a"], n_max=0)
    with pytest.raises(InvalidInputError, match="list of strings; got a single str"):
        vendi_ngram("a b c")  # type: ignore[arg-type]
