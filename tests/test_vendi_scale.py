"""n-gram Vendi on large sets (issue 13): features built order by order, the two-stage LAPACK
eigenvalue solver, and the ``dtype=float32`` exact path.

* ``NgramIndex.from_texts`` (tokenized in chunks) and ``NgramIndex.iter_orders`` (one order
  held at a time) give the ids of ``from_tokens`` / ``order``; the order-by-order feature matrix
  equals :func:`~divmeter.metrics.vendi.ngram_features` bit for bit.
* ``linalg.eigvalsh_inplace`` (LAPACK ``?syevd_2stage`` through scipy's OpenBLAS, or scipy's
  ``evr`` where that is missing) gives numpy's eigenvalues on both routes.
* ``dtype=float32`` (float64 deflation of the top eigenpairs, float32 decomposition of the
  rest, trace-corrected) stays within 1e-6 relative of float64 for q = 0.5, 1, 2 and inf (the
  orders of the commonsense meta-evaluation, appendix A, eq. 1-2, plus q = 2); its signature
  says ``dtype:float32``, and it is refused with an approximate mode.
"""

from __future__ import annotations

import numpy as np
import pytest

import divmeter
from divmeter.core import linalg
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.text import NgramIndex, get_tokenizer
from divmeter.metrics import vendi

INF = float("inf")


def _texts(n: int, seed: int = 0, vocab: int = 300) -> list[str]:
    """``n`` responses of 0-60 words from a Zipf-like vocabulary, some duplicated or empty."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(vocab)])
    p = 1.0 / np.arange(1, vocab + 1)
    p /= p.sum()
    out = [" ".join(rng.choice(words, size=int(rng.integers(0, 60)), p=p)) for _ in range(n)]
    return out + out[:7] + ["", "   ", "w1."]


@pytest.mark.parametrize("tokenizer", ["tevet", "whitespace"])
def test_chunked_index_equals_whole(tokenizer: str) -> None:
    texts = _texts(120, seed=1)
    tok = get_tokenizer(tokenizer)
    whole = NgramIndex.from_tokens(tok.many(texts))
    chunked = NgramIndex.from_texts(texts, tok, chunk=17)
    assert chunked.tokens.tolist() == whole.tokens.tolist()
    assert chunked.lengths.tolist() == whole.lengths.tolist()
    assert chunked.vocab_size == whole.vocab_size
    for n, ids, doc, m in chunked.iter_orders(7):
        ids2, doc2, m2 = whole.order(n)
        assert (ids.tolist(), doc.tolist(), m) == (ids2.tolist(), doc2.tolist(), m2)
    empty = NgramIndex.from_texts([], tok)
    assert (empty.n_docs, empty.vocab_size) == (0, 0)


@pytest.mark.parametrize("n_max", [1, 2, 4, 9])
def test_features_by_order_equal_triples(n_max: int) -> None:
    """Same rows, columns and values (==, not approx), short and empty texts included."""
    idx = NgramIndex.from_tokens(get_tokenizer("tevet").many(_texts(150, seed=2)))
    a, info_a = vendi.ngram_features(idx, n_max)
    b, info_b = vendi._ngram_csr(idx, n_max)
    a.sort_indices()
    b.sort_indices()
    assert info_a == info_b and info_a["empty"] == 2
    assert a.shape == b.shape
    assert a.indptr.tolist() == b.indptr.tolist()
    assert a.indices.tolist() == b.indices.tolist()
    assert a.data.tolist() == b.data.tolist()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("two_stage", [True, False])
def test_eigvalsh_inplace(monkeypatch: pytest.MonkeyPatch, dtype: type, order: str,
                          two_stage: bool) -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 40))
    a = x @ x.T / 300
    ref = np.linalg.eigvalsh(a)
    if not two_stage:  # the scipy fallback (as where scipy's OpenBLAS lacks the routine)
        monkeypatch.setitem(linalg._cache, str(np.dtype(dtype)), None)
    given = np.array(a, dtype=dtype, order=order)
    given[np.triu_indices(300, 1)] = np.nan  # only the lower triangle is read
    got = linalg.eigvalsh_inplace(given)
    assert got.dtype == dtype and got.shape == (300,)
    tol = 1e-13 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol * float(ref.max()))
    if not two_stage:
        assert linalg.solver_name(dtype) == "syevr"


@pytest.mark.parametrize("q", [0.5, 1.0, 2.0, INF])
def test_float32_within_a_millionth(q: float) -> None:
    """620 responses (one group above ``_FLOAT32_MIN``: the deflated float32 path)."""
    texts = _texts(610, seed=3)
    exact = divmeter.score(texts, "vendi-ngram", q=q)
    half = divmeter.score(texts, "vendi-ngram", q=q, dtype="float32")
    assert half.details["path"] == exact.details["path"] == "kernel"
    assert half.value == pytest.approx(exact.value, rel=1e-6)
    assert half.value != exact.value  # a float32 computation, not the float64 one again
    assert exact.signature == f"vendi-ngram|q:{q:g}|n:1..4|tok:tevet|case:mixed|v:0.1.0"
    assert half.signature == (
        f"vendi-ngram|q:{q:g}|n:1..4|tok:tevet|case:mixed|dtype:float32|v:0.1.0")


@pytest.mark.parametrize("q", [0.5, 1.0, INF])
def test_float32_closed_forms(q: float) -> None:
    """Identical responses -> 1; responses sharing no n-gram -> n (one-row groups)."""
    assert divmeter.score(["the cat sat"] * 500, "vendi-ngram", q=q,
                          dtype="float32").value == pytest.approx(1.0, rel=1e-12)
    ortho = [f"w{i}" for i in range(450)]
    assert divmeter.score(ortho, "vendi-ngram", q=q, dtype="float32").value == pytest.approx(
        450.0, rel=1e-12)


def test_float32_refused_with_an_approximation() -> None:
    with pytest.raises(InvalidInputError) as err:
        divmeter.score(["a b", "c d"], "vendi-ngram", approx="slq", dtype="float32")
    assert str(err.value) == ("`dtype` of vendi-ngram applies to approx=none only; got "
                              "dtype='float32' with approx='slq'.")
    with pytest.raises(InvalidInputError, match="`dtype` of vendi-ngram must be one of "
                                                "float64, float32; got 'float16'"):
        divmeter.score(["a b", "c d"], "vendi-ngram", dtype="float16")


def test_groups_sharing_no_ngram_are_split() -> None:
    """Rows sharing no column fall into separate groups (the kernel is block diagonal); a
    column every row has makes one group; the value is the same either way."""
    import scipy.sparse as sp

    A = sp.csr_matrix(np.array([[1.0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 2],
                                [0, 0, 1, 1]]))
    assert [g.tolist() for g in vendi._components(A)] == [[0, 1], [2, 3, 4]]
    B = sp.csr_matrix(sp.hstack([A, sp.csr_matrix(np.ones((5, 1)))]))
    assert [g.tolist() for g in vendi._components(B)] == [[0, 1, 2, 3, 4]]
    texts = ["a b c", "a b d", "x y z", "x y", "p q r s"] * 3 + [f"u{i}" for i in range(5)]
    for q in (0.5, 1.0, INF):
        small = divmeter.score(texts, "vendi-ngram", q=q).value
        assert divmeter.score(texts, "vendi-ngram", q=q, dtype="float32").value == (
            pytest.approx(small, rel=1e-12))  # groups under 400 rows stay float64
