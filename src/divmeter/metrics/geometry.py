"""Embedding geometry: distance, dispersion, spread, kernel-entropy and projection measures.

Eighteen measures of how spread out a set of embedding vectors is, each first a numpy kernel
over a stack of sets (``(B, n, d)`` float64, sets of one shape scored together), registered in
the ``content`` family. A metric that needs vectors takes vectors: given texts, a backend embeds
them (``model``, MiniLM by default, one encoder pass for every set of a batch, through the
embedding cache, :mod:`divmeter.metrics.embedding`); given precomputed vectors
(``divmeter.score(X, "diameter")`` with an ``(n, d)`` array, a ``.npy`` file, a Parquet column of
lists; :mod:`divmeter.precomputed`), the kernel runs on them as given and the signature says
``emb:precomputed`` instead of the model.

Distances (``distance=``): ``cosine`` (``1 - x.y / (|x| |y|)``, the default), ``euclidean``,
``sqeuclidean``. Pair sums use the strict upper triangle (each unordered pair once).

=====================  ==========================================================================
measure                value (``D`` = pairwise distances, ``n`` vectors)
=====================  ==========================================================================
sum-pairwise-distance  ``sum_{i<j} D_ij``
hamdiv                 length of a Hamiltonian circuit through all points (greedy or Christofides)
diameter               ``max_{i<j} D_ij``
bottleneck             ``min_{i<j} D_ij``
sum-bottleneck         ``sum_i min_{j != i} D_ij`` (or the mean)
sum-diameter           ``sum_i max_{j != i} D_ij`` (or the mean)
energy                 ``-mean_{i<j} 1 / max(D_ij, eps)^gamma``
span-centroid          percentile ``p`` of the distances to the centroid
knn-distance           ``mean_i`` (distance of ``i`` to its ``k``-th nearest other point)
convex-hull-volume     volume (area in 2-D) of the convex hull of a 2-D or 3-D projection
geo-mean-std           geometric mean of the per-dimension standard deviations (ddof 1)
span-medoid            mean distance to the medoid (the point of least distance sum)
renyi-entropy          order-``alpha`` Renyi entropy of the eigenvalues of ``K / tr K``
dcscore                ``sum_i softmax_i(K_i / tau)``: the trace of the row-softmax of the kernel
log-determinant        ``log det(K / tau + eps I)``
binned-entropy         Shannon entropy of the occupancy of a grid over a 2-D projection
graph-entropy          ``sum_i H(D_i. / sum_k D_ik)`` over the complete distance graph
mst-dispersion         total edge length of the minimum spanning tree
=====================  ==========================================================================

Kernels (``kernel=``, :mod:`divmeter.metrics.kernels`): ``cosine`` (default), ``linear``,
``rbf:gamma=G``, ``laplacian:gamma=G``, ``polynomial:degree=K``, or ``precomputed`` (the input is
one ``n x n`` similarity matrix per set).

Relation to emb-diversity 0.1.0 (``tests/test_geometry.py`` checks every deterministic measure
against it to 1e-9 relative, frozen in ``tests/fixtures/geometry_peer.json``): the same formulas
under the same names with ``_`` for ``-`` (``sum_pw_dist``, ``knn``, ``geo_mean_std``,
``bins_entropy``, ``convex_hull_volume_3d``...), its ``metric``/``kernel_type``/``tau`` mapping to
``distance``/``kernel``/``tau`` (its ``rbf``/``lap``/``poly`` take ``tau`` as gamma or degree:
``kernel=rbf:gamma=T``; ``tau`` here always divides the kernel, 1 = none). Where they differ:

* defaults that need a random projection or a heavy dependency are not divmeter's defaults:
  ``hamdiv`` solves greedily (``solver=christofides`` is the peer's default, run through
  networkx as the peer does), ``convex-hull-volume`` and ``binned-entropy`` project with PCA
  (``projection=umap`` is the peer's default, through umap-learn as the peer does;
  ``projection=none`` takes 3-D / 2-D vectors as given, as the peer does for 3 columns);
* degenerate sets: a zero vector under a cosine distance or kernel is null with a reason (the
  peer raises for distances and silently treats it as orthogonal for kernels); a kernel whose
  trace is not positive is null (the peer returns 0); ``mst-dispersion`` keeps zero-length edges
  between duplicate points (the peer's scipy MST drops an edge of weight 0 as absent and so
  counts duplicates as far apart); ``log-determinant`` of a matrix that is not positive definite
  is null (the peer raises).

This module imports numpy only at module level; scipy (convex hulls), networkx (Christofides)
and umap-learn (UMAP) load inside the functions that need them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from divmeter.backends.device import DEVICE, DTYPE
from divmeter.data.model import as_texts
from divmeter.errors import InvalidInputError
from divmeter.metrics._common import undefined
from divmeter.metrics.embedding import (
    BACKEND,
    BASE_URL,
    _embed_checked,
    _sig,
    chamfer_within,
    chamfer_within_sqeuclidean,
    cosine_matrix,
    embed_texts,
    kmeans,
    normalize_rows,
    remote_clique_value,
    truncation,
)
from divmeter.metrics.kernels import (
    KERNEL_EXPECT,
    kernel_matrix,
    kernel_ok,
    parse_kernel,
    sq_distances,
)
from divmeter.metrics.reduce import diversity_from_similarity
from divmeter.params import Param, validate
from divmeter.registry import get_metric, register, register_batch, register_vectors
from divmeter.result import MetricResult, make_signature

__all__ = [
    "DISTANCES",
    "pairwise_distances",
    "pca_project",
    "geometry_values",
    "score_vectors",
    "sum_pairwise_distance",
    "hamdiv",
    "diameter",
    "bottleneck",
    "sum_bottleneck",
    "sum_diameter",
    "energy",
    "span_centroid",
    "knn_distance",
    "convex_hull_volume",
    "geo_mean_std",
    "span_medoid",
    "renyi_entropy",
    "dcscore",
    "log_determinant",
    "binned_entropy",
    "graph_entropy",
    "mst_dispersion",
]

# ---------------------------------------------------------------------------- citations

CHANDRA = ("Chandra & Halldorsson 2001, Approximation algorithms for dispersion problems "
           "(J. Algorithms 38)")
XIE = ("Xie, Xu, Ma & Mei 2023, How Much Space Has Been Explored? Measuring the Chemical Space "
       "Covered by Databases and Machine-Generated Molecules (ICLR)")
YU = ("Yu, Khadivi & Xu 2022, Can Data Diversity Enhance Learning Generalization? (COLING)")
COX = ("Cox, Wang, Abdul, von der Weth & Lim 2021, Directed Diversity: Leveraging Language "
       "Embedding Distances for Collective Creativity in Crowd Ideation (CHI)")
HU = ("Hu et al. 2024, Hamiltonian diversity: effectively measuring molecular diversity by "
      "shortest Hamiltonian circuits (J. Cheminformatics 16:94)")
ENERGY = ("Velikonivtsev, Mironov & Prokhorenkova 2024, Challenges of Generating Structurally "
          "Diverse Graphs (NeurIPS)")
YANG = ("Yang et al. 2025, Measuring Data Diversity for Instruction Tuning: A Systematic Analysis "
        "and A Reliable Metric (ACL)")
LAI = ("Lai et al. 2020, Diversity, Density, and Homogeneity: Quantitative Characteristic "
       "Metrics for Text Collections (LREC)")
RENYI = ("Sanchez Giraldo, Rao & Principe 2015, Measures of Entropy From Data Using Infinitely "
         "Divisible Kernels (IEEE Trans. Inf. Theory), matrix Renyi entropy; as RKE in Jalali, "
         "Li & Farnia 2023, An Information-Theoretic Evaluation of Generative Models in Learning "
         "Multi-modal Distributions (NeurIPS)")
DCSCORE = "Zhu et al. 2025, Measuring Diversity in Synthetic Datasets (ICML)"
LOGDET = ("Kulesza & Taskar 2012, Determinantal Point Processes for Machine Learning (Found. "
          "Trends ML); as a data diversity in Wang et al. 2024, Diversity Measurement and Subset "
          "Selection for Instruction Tuning Datasets (arXiv:2402.02318)")

# ---------------------------------------------------------------------------- parameters

#: Pairwise distances of the distance-based measures.
DISTANCES: tuple[str, ...] = ("cosine", "euclidean", "sqeuclidean")
DISTANCE = Param(str, choices=DISTANCES, default="cosine",
                 doc="pairwise distance: cosine (1 - cos), euclidean or sqeuclidean")
KERNEL = Param(str, default="cosine", predicate=kernel_ok, expect=KERNEL_EXPECT,
               doc="similarity kernel: cosine, linear, rbf:gamma=G, laplacian:gamma=G, "
               "polynomial:degree=K or precomputed (the input is one n x n matrix per set)")
REDUCE = Param(str, choices=("sum", "mean"), default="sum",
               doc="sum over points (the definition) or mean (sum / n)")
PROJECTIONS: tuple[str, ...] = ("pca", "umap", "none")
ENCODER: dict[str, Param] = {
    "model": Param(str, default="minilm", doc="sentence encoder: alias, path or name"),
    "base_url": BASE_URL, "backend": BACKEND, "device": DEVICE, "dtype": DTYPE,
}
_ENCODER_DEFAULTS = {k: p.default for k, p in ENCODER.items()}


def _seed_param() -> Param:
    return Param(int, ge=0, default=42, doc="random state of UMAP (projection=umap only)",
                 relation=lambda v, p: None if v == 42 or p.get("projection") == "umap"
                 else "applies to projection=umap only")


def _projection_param(dims_doc: str) -> Param:
    return Param(str, choices=PROJECTIONS, default="pca",
                 doc=f"how vectors become {dims_doc}: pca (deterministic), umap (umap-learn, "
                 "the peer's default) or none (vectors already that wide)")


# ---------------------------------------------------------------------------- distances

#: Pairs whose Gram-form squared distance is below this share of ``|x|^2 + |y|^2`` are
#: recomputed from explicit differences (the Gram form loses relative accuracy there).
_REFINE = 1e-3


def _upper(D: np.ndarray) -> np.ndarray:
    """The strict upper triangle of every matrix of a stack, row-major: ``(B, n(n-1)/2)``."""
    iu = np.triu_indices(D.shape[-1], 1)
    return D[:, iu[0], iu[1]]


def _mirror(D: np.ndarray) -> np.ndarray:
    """``D`` made exactly symmetric from its upper triangle, with a zero diagonal."""
    U = np.triu(D, 1)
    return U + np.swapaxes(U, -1, -2)


def _euclid_sq(X: np.ndarray) -> np.ndarray:
    sq = np.einsum("bij,bij->bi", X, X)
    D = sq_distances(X)
    near = D < _REFINE * (sq[:, :, None] + sq[:, None, :])
    b, i, j = np.nonzero(np.triu(near, 1))
    if b.size:
        diff = X[b, i] - X[b, j]
        D[b, i, j] = np.einsum("ij,ij->i", diff, diff)
    return _mirror(D)


def pairwise_distances(X: np.ndarray, distance: str = "cosine") -> np.ndarray:
    """Pairwise distances of every set of a stack ``(B, n, d) -> (B, n, n)`` (float64).

    ``cosine``: ``1 - x.y / (|x| |y|)`` with the cosine clipped to [-1, 1] (rows must be
    non-zero); ``euclidean`` / ``sqeuclidean``: from the Gram matrix, with pairs closer than
    about 3% of their norms recomputed from explicit differences, so a duplicate pair is at
    exactly 0 and near-duplicates keep full relative precision. Exactly symmetric, zero diagonal.

    Example:
        >>> X = np.array([[[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]]])
        >>> pairwise_distances(X)[0].tolist()
        [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
        >>> pairwise_distances(X, "sqeuclidean")[0, 0].tolist()
        [0.0, 2.0, 1.0]
    """
    X = np.asarray(X, dtype=np.float64)
    if distance == "cosine":
        norms = np.linalg.norm(X, axis=-1)
        G = np.matmul(X, np.swapaxes(X, -1, -2))
        G /= norms[:, :, None] * norms[:, None, :]
        np.clip(G, -1.0, 1.0, out=G)
        return _mirror(1.0 - G)
    D = _euclid_sq(X)
    if distance == "sqeuclidean":
        return D
    if distance == "euclidean":
        return np.sqrt(D, out=D)
    raise InvalidInputError(f"`distance` must be one of {', '.join(DISTANCES)}; got {distance!r}.")


def _to_point(X: np.ndarray, C: np.ndarray, distance: str) -> np.ndarray:
    """Distance of every row of each set to that set's point ``C`` (``(B, n, d), (B, d)``)."""
    if distance == "cosine":
        dot = np.einsum("bij,bj->bi", X, C)
        cos = dot / (np.linalg.norm(X, axis=-1) * np.linalg.norm(C, axis=-1)[:, None])
        return 1.0 - np.clip(cos, -1.0, 1.0)  # type: ignore[no-any-return]
    diff = X - C[:, None, :]
    sq = np.einsum("bij,bij->bi", diff, diff)
    return sq if distance == "sqeuclidean" else np.sqrt(sq)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- projections


def pca_project(X: np.ndarray, dims: int) -> np.ndarray:
    """The first ``dims`` principal-component scores of every set of a stack.

    ``U[:, :dims] * S[:dims]`` of the SVD of the centred set, signs fixed so that the largest
    entry (in absolute value) of each component is positive (scikit-learn's ``PCA`` with its
    ``full`` solver and ``svd_flip(u_based_decision=False)``: the same scores up to rounding).
    A set of fewer than ``dims`` independent directions gets zero columns.

    Example:
        >>> X = np.array([[[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [4.0, 0.0, 0.0]]])
        >>> pca_project(X, 2)[0].round(6).tolist()
        [[-2.0, 0.0], [0.0, 0.0], [2.0, 0.0]]
    """
    Xc = X - X.mean(axis=1, keepdims=True)
    U, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    k = min(dims, S.shape[-1])
    top = np.argmax(np.abs(Vt[:, :k, :]), axis=-1)
    signs = np.sign(np.take_along_axis(Vt[:, :k, :], top[:, :, None], axis=-1))[:, :, 0]
    signs[signs == 0] = 1.0
    Y = U[:, :, :k] * (S[:, None, :k] * signs[:, None, :])
    if k < dims:
        Y = np.concatenate([Y, np.zeros(Y.shape[:2] + (dims - k,))], axis=-1)
    return Y  # type: ignore[no-any-return]


def _umap_project(X: np.ndarray, dims: int, seed: int) -> np.ndarray:
    from divmeter._optional import require

    umap = require("umap", extra="umap", package="umap-learn")
    out = []
    for x in X:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its small-set and n_jobs notes, once per set
            out.append(umap.UMAP(n_components=dims, random_state=seed).fit_transform(x))
    return np.asarray(out, dtype=np.float64)


def _project(X: np.ndarray, dims: int, projection: str, seed: int) -> np.ndarray:
    if projection == "pca":
        return pca_project(X, dims)
    if projection == "umap":
        return _umap_project(X, dims, seed)
    if X.shape[-1] != dims:
        raise InvalidInputError(
            f"projection=none takes vectors that are already {dims}-dimensional; got "
            f"{X.shape[-1]} dimensions (use projection=pca or umap)."
        )
    return X


# ---------------------------------------------------------------------------- kernels per measure

Outcome = tuple[float | None, str | None, dict[str, Any]]


def _ok(values: np.ndarray, details: Sequence[dict[str, Any]] | None = None) -> list[Outcome]:
    return [(float(v), None, details[i] if details else {}) for i, v in enumerate(values)]


def _dist_kernel(reduce: Callable[[np.ndarray, Mapping[str, Any]], np.ndarray]
                 ) -> Callable[[np.ndarray, Mapping[str, Any]], list[Outcome]]:
    def run(X: np.ndarray, p: Mapping[str, Any]) -> list[Outcome]:
        return _ok(reduce(pairwise_distances(X, p["distance"]), p))

    return run


def _off_diagonal(D: np.ndarray, fill: float) -> np.ndarray:
    D = D.copy()
    idx = np.arange(D.shape[-1])
    D[:, idx, idx] = fill
    return D


def _k_sum_pairwise(D: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    return _upper(D).sum(axis=-1)  # type: ignore[no-any-return]


def _k_diameter(D: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    return _upper(D).max(axis=-1)  # type: ignore[no-any-return]


def _k_bottleneck(D: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    return _upper(D).min(axis=-1)  # type: ignore[no-any-return]


def _k_sum_bottleneck(D: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    total = _off_diagonal(D, np.inf).min(axis=-1).sum(axis=-1)
    return total / D.shape[-1] if p["reduction"] == "mean" else total  # type: ignore[no-any-return]


def _k_sum_diameter(D: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    total = _off_diagonal(D, -np.inf).max(axis=-1).sum(axis=-1)
    return total / D.shape[-1] if p["reduction"] == "mean" else total  # type: ignore[no-any-return]


def _k_energy(D: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    d = np.maximum(_upper(D), p["eps"])
    return -(1.0 / d ** p["gamma"]).mean(axis=-1)  # type: ignore[no-any-return]


def _k_knn(D: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    k = p["k"]
    kth = np.partition(_off_diagonal(D, np.inf), k - 1, axis=-1)[..., k - 1]
    return kth.mean(axis=-1)  # type: ignore[no-any-return]


def _k_graph_entropy(D: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    sums = D.sum(axis=-1, keepdims=True)
    F = np.divide(D, sums, out=np.zeros_like(D), where=sums != 0)
    local = -(F * np.log(np.clip(F, 1e-12, 1.0))).sum(axis=-1)
    return local.sum(axis=-1)  # type: ignore[no-any-return]


def _k_mst(D: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    """Prim's algorithm on every matrix of the stack at once (zero-length edges included)."""
    B, n, _ = D.shape
    rows = np.arange(B)
    in_tree = np.zeros((B, n), dtype=bool)
    in_tree[:, 0] = True
    best = D[:, 0, :].copy()
    total = np.zeros(B)
    for _ in range(n - 1):
        j = np.argmin(np.where(in_tree, np.inf, best), axis=-1)
        total += best[rows, j]
        in_tree[rows, j] = True
        np.minimum(best, D[rows, j, :], out=best)
    return total


def _k_span_medoid(X: np.ndarray, p: Mapping[str, Any]) -> list[Outcome]:
    D = pairwise_distances(X, p["distance"])
    medoid = np.argmin(D.sum(axis=-1), axis=-1)
    values = D[np.arange(D.shape[0]), :, medoid].mean(axis=-1)
    return _ok(values, [{"medoid": int(m)} for m in medoid])


def _k_hamdiv(X: np.ndarray, p: Mapping[str, Any]) -> list[Outcome]:
    D = pairwise_distances(X, p["distance"])
    if p["solver"] == "christofides":
        tours = [_christofides(d) for d in D]
    else:
        tours = _greedy_tours(D)
    out: list[Outcome] = []
    for d, tour in zip(D, tours, strict=True):
        length = 0.0
        for a, b in zip(tour[:-1], tour[1:], strict=True):
            length += float(d[a, b])
        out.append((length, None, {"tour": tour}))
    return out


def _greedy_tours(D: np.ndarray) -> list[list[int]]:
    """Nearest-neighbour circuits from point 0 (ties: the lowest index), every set at once."""
    B, n, _ = D.shape
    rows = np.arange(B)
    seen = np.zeros((B, n), dtype=bool)
    seen[:, 0] = True
    cur = np.zeros(B, dtype=np.intp)
    order = [cur]
    for _ in range(n - 1):
        cur = np.argmin(np.where(seen, np.inf, D[rows, cur, :]), axis=-1)
        seen[rows, cur] = True
        order.append(cur)
    order.append(np.zeros(B, dtype=np.intp))
    steps = np.stack(order, axis=1)
    return [list(map(int, s)) for s in steps]


def _christofides(d: np.ndarray) -> list[int]:
    """networkx's Christofides circuit on the complete graph of ``d`` (edges added i < j)."""
    from divmeter._optional import require

    nx = require("networkx", extra="embed")
    from networkx.algorithms.approximation import christofides

    n = d.shape[0]
    G = nx.Graph()
    for i in range(n):
        for j in range(i + 1, n):
            G.add_edge(i, j, weight=d[i, j])
    return [int(v) for v in christofides(G, weight="weight")]


def _k_span_centroid(X: np.ndarray, p: Mapping[str, Any]) -> list[Outcome]:
    C = X.mean(axis=1)
    if p["distance"] == "cosine":
        zero = ~np.any(C != 0, axis=-1)
    else:
        zero = np.zeros(X.shape[0], dtype=bool)
    safe = np.where(zero[:, None], 1.0, C)
    values = np.percentile(_to_point(X, safe, p["distance"]), p["percentile"], axis=-1)
    return [(None, "the centroid is the zero vector: its cosine distance is undefined "
             "(use distance=euclidean)", {}) if z else (float(v), None, {})
            for v, z in zip(values, zero, strict=True)]


def _k_geo_mean_std(X: np.ndarray, p: Mapping[str, Any]) -> list[Outcome]:
    stds = np.clip(np.std(X, axis=1, ddof=1), 1e-12, None)
    return _ok(np.exp(np.mean(np.log(stds), axis=-1)))


def _kernels(X: np.ndarray, p: Mapping[str, Any]) -> np.ndarray:
    """The measure's kernel of every set (``X`` is already the kernel for ``precomputed``)."""
    if p["kernel"] == "precomputed":
        return np.array(X, dtype=np.float64)
    return kernel_matrix(X, p["kernel"])


def _k_renyi(X: np.ndarray, p: Mapping[str, Any]) -> list[Outcome]:
    K = _kernels(X, p)
    K = 0.5 * (K + np.swapaxes(K, -1, -2))
    tr = np.trace(K, axis1=-2, axis2=-1)
    alpha, eps = float(p["alpha"]), float(p["eps"])
    out: list[Outcome] = []
    bad = ~np.isfinite(tr) | (tr <= eps)
    A = K / np.where(bad, 1.0, tr)[:, None, None]
    if abs(alpha - 2.0) <= 1e-12:
        values = -np.log(np.maximum((A * A).sum(axis=(-2, -1)), eps))
    else:
        ev = np.clip(np.linalg.eigvalsh(A), eps, 1.0)
        ev = ev / ev.sum(axis=-1, keepdims=True)
        if abs(alpha - 1.0) <= 1e-12:
            values = -(ev * np.log(ev)).sum(axis=-1)
        else:
            values = np.log(np.maximum((ev**alpha).sum(axis=-1), eps)) / (1.0 - alpha)
    for v, b in zip(values, bad, strict=True):
        out.append((None, "the kernel's trace is not positive", {}) if b else (float(v), None, {}))
    return out


def _k_dcscore(X: np.ndarray, p: Mapping[str, Any]) -> list[Outcome]:
    K = _kernels(X, p)
    if p["tau"] != 1.0:
        K = K / p["tau"]
    K = K - K.max(axis=-1, keepdims=True)
    E = np.exp(K)
    P = E / np.clip(E.sum(axis=-1, keepdims=True), 1e-12, None)
    return _ok(np.trace(P, axis1=-2, axis2=-1))


def _k_logdet(X: np.ndarray, p: Mapping[str, Any]) -> list[Outcome]:
    K = _kernels(X, p)
    if p["tau"] != 1.0:
        K = K / p["tau"]
    K = 0.5 * (K + np.swapaxes(K, -1, -2))
    A = K + p["eps"] * np.eye(K.shape[-1])
    try:
        L = np.linalg.cholesky(A)
        diag = np.diagonal(L, axis1=-2, axis2=-1)
        return _ok(2.0 * np.log(diag).sum(axis=-1))
    except np.linalg.LinAlgError:
        pass
    out: list[Outcome] = []
    for a in A:
        try:
            out.append((float(2.0 * np.log(np.diag(np.linalg.cholesky(a))).sum()), None, {}))
            continue
        except np.linalg.LinAlgError:
            pass
        sign, logdet = np.linalg.slogdet(a)
        out.append((float(logdet), None, {}) if sign > 0 else (
            None, "K / tau + eps I is not positive definite (raise eps)", {}))
    return out


def _k_binned_entropy(X: np.ndarray, p: Mapping[str, Any]) -> list[Outcome]:
    Y = _project(X, 2, p["projection"], p["seed"])
    bx, by = int(p["bins_x"]), int(p["bins_y"])
    lo, hi = Y.min(axis=1), Y.max(axis=1)
    rng = hi - lo
    cells = []
    for axis, nb in ((0, bx), (1, by)):
        pos = np.floor((Y[:, :, axis] - lo[:, None, axis]) / (rng[:, None, axis] + 1e-10) * nb)
        pos = np.where(rng[:, None, axis] <= 0, 0, pos)
        cells.append(np.clip(pos.astype(np.int64), 0, nb - 1))
    labels = cells[0] * by + cells[1]
    n = X.shape[1]
    total = bx * by
    out: list[Outcome] = []
    for lab in labels:
        counts = np.unique(lab, return_counts=True)[1]
        f = counts / n
        h = float(-np.sum(f * np.log(f)))
        details = {"occupied": int(counts.size)}
        if p["normalization"] != "none":
            denom_bins = min(n, total) if p["normalization"] == "effective" else total
            denom = math.log(denom_bins) if denom_bins > 1 else 0.0
            if total <= 1 or denom <= 0:
                h = 0.0
            else:
                h = h / denom
                if p["normalization"] == "effective":
                    h = float(np.clip(h, 0.0, 1.0))
        out.append((h, None, details))
    return out


def _k_convex_hull(X: np.ndarray, p: Mapping[str, Any]) -> list[Outcome]:
    from scipy.spatial import ConvexHull, QhullError

    Y = _project(X, int(p["dims"]), p["projection"], p["seed"])
    out: list[Outcome] = []
    for y in Y:
        try:
            out.append((float(ConvexHull(y).volume), None, {}))
        except (QhullError, ValueError):  # flat: the points span fewer than dims directions
            out.append((0.0, None, {"flat": True}))
    return out


# ---------------------------------------------------------------------------- the measure table


@dataclass(frozen=True)
class _Measure:
    """A geometry measure: its own parameters (signature order) and its stack kernel."""

    name: str
    params: Mapping[str, Param]
    run: Callable[[np.ndarray, Mapping[str, Any]], list[Outcome]]
    min_n: Callable[[Mapping[str, Any]], int] = lambda p: 2
    sig: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    #: Bytes of float64 temporaries per set, as a multiple of ``n^2`` (memory estimate).
    squares: int = 4

    def items(self, p: Mapping[str, Any]) -> dict[str, Any]:
        """The signature's fields for the resolved parameters ``p``."""
        if self.sig is not None:
            return self.sig(p)
        return {k: str(parse_kernel(p[k])) if k == "kernel" else p[k] for k in self.params}

    def cosine(self, p: Mapping[str, Any]) -> bool:
        """Whether a zero vector makes the value undefined (cosine distance or kernel)."""
        return bool(p.get("distance") == "cosine" or p.get("kernel") == "cosine")


def _proj_items(p: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    out = {k: p[k] for k in keys}
    out["projection"] = p["projection"]
    out["seed"] = p["seed"] if p["projection"] == "umap" else None
    return out


_D = {"distance": DISTANCE}
MEASURES: dict[str, _Measure] = {
    m.name: m for m in (
        _Measure("sum-pairwise-distance", _D, _dist_kernel(_k_sum_pairwise)),
        _Measure("hamdiv", {**_D, "solver": Param(
            str, choices=("greedy", "christofides"), default="greedy",
            doc="greedy nearest-neighbour circuit from point 0, or Christofides (networkx; "
            "the peer's default)")}, _k_hamdiv),
        _Measure("diameter", _D, _dist_kernel(_k_diameter)),
        _Measure("bottleneck", _D, _dist_kernel(_k_bottleneck)),
        _Measure("sum-bottleneck", {**_D, "reduction": REDUCE}, _dist_kernel(_k_sum_bottleneck)),
        _Measure("sum-diameter", {**_D, "reduction": REDUCE}, _dist_kernel(_k_sum_diameter)),
        _Measure("energy", {**_D, "gamma": Param(float, gt=0, default=1.0,
                                                  doc="exponent of the distance"),
                            "eps": Param(float, gt=0, default=1e-12,
                                         doc="floor of a distance (duplicates)")},
                 _dist_kernel(_k_energy)),
        _Measure("span-centroid", {**_D, "percentile": Param(
            float, ge=0, le=100, default=90.0, doc="percentile of the distances to the centroid")},
            _k_span_centroid, squares=0),
        _Measure("knn-distance", {**_D, "k": Param(int, ge=1, default=2,
                                                    doc="which nearest neighbour (1 = nearest)")},
                 _dist_kernel(_k_knn), min_n=lambda p: int(p["k"]) + 1),
        _Measure("convex-hull-volume", {
            "dims": Param(int, ge=2, le=3, default=3, doc="2 (area) or 3 (volume)"),
            "projection": _projection_param("2-D or 3-D points"), "seed": _seed_param()},
            _k_convex_hull, min_n=lambda p: int(p["dims"]) + 1,
            sig=lambda p: _proj_items(p, "dims"), squares=0),
        _Measure("geo-mean-std", {}, _k_geo_mean_std, squares=0),
        _Measure("span-medoid", _D, _k_span_medoid),
        _Measure("renyi-entropy", {
            "alpha": Param(float, gt=0, default=2.0, doc="order of the Renyi entropy"),
            "kernel": KERNEL,
            "eps": Param(float, gt=0, default=1e-12,
                         doc="eigenvalue floor (eigenvalues clipped to [eps, 1], renormalised)")},
            _k_renyi),
        _Measure("dcscore", {"kernel": KERNEL, "tau": Param(
            float, gt=0, default=1.0, doc="softmax temperature (the kernel is divided by it)")},
            _k_dcscore),
        _Measure("log-determinant", {
            "kernel": KERNEL,
            "tau": Param(float, gt=0, default=1.0, doc="the kernel is divided by it"),
            "eps": Param(float, gt=0, default=1e-6, doc="jitter added to the diagonal")},
            _k_logdet),
        _Measure("binned-entropy", {
            "bins_x": Param(int, ge=1, default=5, doc="grid columns"),
            "bins_y": Param(int, ge=1, default=5, doc="grid rows"),
            "normalization": Param(str, choices=("effective", "bins", "none"),
                                   default="effective",
                                   doc="divide by log(min(n, bins)) (effective), log(bins), or "
                                   "none (nats)"),
            "projection": _projection_param("2-D points"), "seed": _seed_param()},
            _k_binned_entropy,
            sig=lambda p: _proj_items(p, "bins_x", "bins_y", "normalization"), squares=0),
        _Measure("graph-entropy", _D, _dist_kernel(_k_graph_entropy), min_n=lambda p: 3),
        _Measure("mst-dispersion", _D, _dist_kernel(_k_mst)),
    )
}


# ---------------------------------------------------------------------------- scoring a batch

#: Temporaries of one stacked chunk, at most (bytes).
_CHUNK_BYTES = 32 * 2**20


def _groups(arrays: Sequence[np.ndarray]) -> list[tuple[list[int], np.ndarray]]:
    """Positions of the arrays of one shape, and their stack, in bounded chunks."""
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for i, a in enumerate(arrays):
        by_shape.setdefault(a.shape, []).append(i)
    out = []
    for shape, idx in by_shape.items():
        per = 8 * (shape[0] * shape[0] * 4 + shape[0] * shape[1])
        size = max(1, _CHUNK_BYTES // max(per, 1))
        for s in range(0, len(idx), size):
            part = idx[s : s + size]
            out.append((part, np.stack([arrays[i] for i in part])))
    return out


def _zero_row(X: np.ndarray) -> int | None:
    zero = np.flatnonzero(~np.any(X != 0, axis=1))
    return int(zero[0]) if zero.size else None


def geometry_values(name: str, arrays: Sequence[np.ndarray], params: Mapping[str, Any]
                    ) -> list[Outcome]:
    """``(value, reason, details)`` of measure ``name`` on each ``(n, d)`` array (float64),
    sets of one shape scored as one stack. ``params`` are the measure's own, resolved.

    The sets are taken as valid (the callers check: at least the measure's ``min_n`` rows, no
    zero row under a cosine distance or kernel; ``n x n`` for ``kernel="precomputed"``).

    Example:
        >>> X = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
        >>> geometry_values("diameter", [X], {"distance": "euclidean"})[0][0]
        10.0
    """
    m = MEASURES[name]
    out: list[Outcome | None] = [None] * len(arrays)
    for idx, stack in _groups(arrays):
        for i, o in zip(idx, m.run(stack, params), strict=True):
            out[i] = o
    return out  # type: ignore[return-value]


def _resolved(m: _Measure, params: Mapping[str, Any]) -> dict[str, Any]:
    own = {k: v for k, v in params.items() if k not in ENCODER}
    validate(m.name, {**m.params, **ENCODER}, params)
    return {**{k: p.default for k, p in m.params.items()}, **own}


def _check_arrays(name: str, sig: str, arrays: Sequence[np.ndarray], min_n: int, cosine: bool,
                  ) -> tuple[list[MetricResult | None], list[int]]:
    """Undefined results for the degenerate arrays, and the positions of the others."""
    from divmeter import memory

    out: list[MetricResult | None] = []
    live: list[int] = []
    for i, X in enumerate(arrays):
        n = X.shape[0]
        reason = None
        if n == 0:
            reason = "empty set"
        elif n < 2:
            reason = f"fewer than two vectors (got {n})"
        elif n < min_n:
            reason = f"needs at least {min_n} vectors; got {n}"
        elif cosine and (z := _zero_row(X)) is not None:
            reason = f"vector {z} is all zeros: its cosine is undefined"
        out.append(None if reason is None else undefined(name, sig, reason))
        if reason is None:
            memory.check(name, 4 * 8 * n * n, f"4 x a {n:,} x {n:,} matrix")
            live.append(i)
    return out, live


def _finish(name: str, sig: str, outcomes: Sequence[Outcome]) -> list[MetricResult]:
    return [MetricResult(name, v, sig, details=d) if v is not None else
            undefined(name, sig, str(r), **d) for v, r, d in outcomes]


def _reject_encoder(name: str, params: Mapping[str, Any]) -> None:
    for k, v in params.items():
        if k in ENCODER and v != _ENCODER_DEFAULTS[k]:
            raise InvalidInputError(
                f"`{k}` of {name} picks the encoder; it does not apply to precomputed vectors "
                f"(they are already embedded); got {v!r}."
            )


def score_vectors(name: str, arrays: Sequence[np.ndarray], **params: Any) -> list[MetricResult]:
    """Measure ``name`` on precomputed vectors: one ``(n, d)`` array per set (or one ``n x n``
    similarity matrix per set with ``kernel="precomputed"``), validated by the caller
    (:func:`divmeter.data.vectors.as_vectors`). Signature: ``emb:precomputed`` in place of the
    model (no ``emb`` field for precomputed kernels).

    Raises:
        InvalidInputError: A bad parameter, or an encoder parameter (``model``, ...).

    Example:
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
        >>> r = score_vectors("diameter", [X])[0]
        >>> r.value, r.signature
        (2.0, 'diameter|emb:precomputed|distance:cosine|v:0.1.0')
    """
    m = MEASURES[name]
    _reject_encoder(name, params)
    p = _resolved(m, params)
    pre = p.get("kernel") == "precomputed"
    sig = make_signature(name, emb=None if pre else "precomputed", **m.items(p))
    if pre:
        arrays = [_square(name, K) for K in arrays]
    results, live = _check_arrays(name, sig, arrays, m.min_n(p), m.cosine(p) and not pre)
    for i, r in zip(live, _finish(name, sig, geometry_values(name, [arrays[i] for i in live], p)),
                    strict=True):
        results[i] = r
    return results  # type: ignore[return-value]


def _square(name: str, K: np.ndarray) -> np.ndarray:
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise InvalidInputError(
            f"{name} with kernel=precomputed takes an n x n similarity matrix per set; got "
            f"shape {K.shape}."
        )
    return K


def _score_texts(name: str, sets: Sequence[Any], params: Mapping[str, Any]
                 ) -> list[MetricResult]:
    """Measure ``name`` on response sets: one encoder pass over every text of every set, then
    the stack kernels over the sets the rule lets through."""
    m = MEASURES[name]
    p = _resolved(m, params)
    if p.get("kernel") == "precomputed":
        raise InvalidInputError(
            f"kernel=precomputed of {name} takes similarity matrices, not texts: pass one n x n "
            "matrix per set (divmeter.score(K, ...), or a .npy of matrices)."
        )
    enc = {**_ENCODER_DEFAULTS, **{k: v for k, v in params.items() if k in ENCODER}}
    texts = [as_texts(s) for s in sets]
    sig = _sig(name, enc["model"], enc["base_url"], enc["backend"], enc["dtype"], **m.items(p))
    flat = [t for s in texts if sum(1 for t in s if t.strip()) >= 2 for t in s]
    if flat:
        embed_texts(flat, enc["model"], enc["base_url"], enc["backend"], enc["device"],
                    enc["dtype"])
    results: list[MetricResult | None] = []
    arrays: dict[int, np.ndarray] = {}
    for i, t in enumerate(texts):
        X = _embed_checked(name, sig, t, enc["model"], min_n=m.min_n(p),
                           base_url=enc["base_url"], backend=enc["backend"],
                           device=enc["device"], dtype=enc["dtype"])
        if isinstance(X, MetricResult):
            results.append(X)
        else:
            results.append(None)
            arrays[i] = np.asarray(X, dtype=np.float64)
    order = list(arrays)
    done = _finish(name, sig, geometry_values(name, [arrays[i] for i in order], p))
    for i, r in zip(order, done, strict=True):
        extra = truncation(texts[i], enc["model"], enc["base_url"], enc["backend"],
                           enc["device"], enc["dtype"])
        results[i] = replace(r, details={**r.details, **extra})
    return results  # type: ignore[return-value]


def _one(name: str, responses: Any, **params: Any) -> MetricResult:
    return _score_texts(name, [responses], params)[0]


def _register(name: str, fn: Callable[..., MetricResult], *, bounds: tuple[float | None,
              float | None], citation: str, description: str) -> None:
    """Register ``fn`` with its batched text kernel and its precomputed-vector kernel."""
    m = MEASURES[name]
    register(name, family="content", granularity="set", higher_is_more_diverse=True,
             bounds=bounds, citation=citation, params={**m.params, **ENCODER},
             description=description, extra="embed")(fn)

    def many(sets: Sequence[Sequence[str]], **params: Any) -> list[MetricResult]:
        return _score_texts(name, sets, params)

    def vectors(arrays: Sequence[np.ndarray], **params: Any) -> list[MetricResult]:
        return score_vectors(name, arrays, **params)

    for f, suffix in ((many, "many"), (vectors, "vectors")):
        f.__name__ = f.__qualname__ = f"{fn.__name__}_{suffix}"
        f.__module__ = __name__
        f.__doc__ = (f"Batched :func:`{fn.__name__}`" + (
            " (one encoder pass over every set)." if suffix == "many" else
            " on precomputed vectors (:func:`score_vectors`)."))
        globals()[f.__name__] = f
    register_batch(name)(many)
    register_vectors(name)(vectors)


# ---------------------------------------------------------------------------- the metrics
# Each function embeds the responses with ``model`` (see divmeter.metrics.embedding) and runs
# its measure; precomputed vectors go through score_vectors (divmeter.score(X, name) does).


def sum_pairwise_distance(
    responses: Sequence[str], *, distance: str = "cosine", model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """Sum of the pairwise distances of the responses' embeddings: ``sum_{i<j} d(e_i, e_j)``.

    Grows with the number of responses (``n(n-1)/2`` pairs; at most ``n(n-1)`` under the cosine
    distance). The mean is ``remote-clique`` / ``embedding-cosine`` territory.

    Args:
        responses: The response set.
        distance: ``cosine`` (default), ``euclidean`` or ``sqeuclidean``.
        model: Encoder (see :mod:`divmeter.metrics.embedding`).

    Example:
        >>> round(sum_pairwise_distance(["Same.", "Same."]).value, 6)
        0.0
    """
    return _one("sum-pairwise-distance", responses, distance=distance, model=model,
                base_url=base_url, backend=backend, device=device, dtype=dtype)


def hamdiv(
    responses: Sequence[str], *, distance: str = "cosine", solver: str = "greedy",
    model: str = "minilm", base_url: str | None = None, backend: str = "torch",
    device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """HamDiv: the length of a Hamiltonian circuit through the embeddings (Hu et al. 2024).

    The definition is the *shortest* circuit (a travelling-salesman tour), which is NP-hard;
    both solvers give an upper bound of it. ``greedy`` (default): from point 0, always the
    nearest unvisited point, then back to 0 (ties: the lowest index; networkx's ``greedy_tsp``
    gives the same circuit). ``christofides``: networkx's Christofides algorithm (within 1.5 x
    the optimum for a metric distance), the peer's default; needs networkx.

    Returns:
        MetricResult with ``details["tour"]`` (the circuit, starting and ending at 0).

    Example:
        >>> hamdiv(["Same.", "Same."]).details["tour"]
        [0, 1, 0]
    """
    return _one("hamdiv", responses, distance=distance, solver=solver, model=model,
                base_url=base_url, backend=backend, device=device, dtype=dtype)


def diameter(
    responses: Sequence[str], *, distance: str = "cosine", model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """Diameter: the largest pairwise distance of the embeddings, ``max_{i<j} d(e_i, e_j)``.

    Example:
        >>> diameter(["A cat sleeps.", "Stocks fell."]).value > 0.5
        True
    """
    return _one("diameter", responses, distance=distance, model=model, base_url=base_url,
                backend=backend, device=device, dtype=dtype)


def bottleneck(
    responses: Sequence[str], *, distance: str = "cosine", model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """Bottleneck: the smallest pairwise distance, ``min_{i<j} d(e_i, e_j)`` (0 with a duplicate).

    Example:
        >>> bottleneck(["Same.", "Same.", "Other."]).value < 1e-6
        True
    """
    return _one("bottleneck", responses, distance=distance, model=model, base_url=base_url,
                backend=backend, device=device, dtype=dtype)


def sum_bottleneck(
    responses: Sequence[str], *, distance: str = "cosine", reduction: str = "sum",
    model: str = "minilm", base_url: str | None = None, backend: str = "torch",
    device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """SumBottleneck: ``sum_i min_{j != i} d(e_i, e_j)``, each point's nearest-neighbour distance.

    ``reduction="mean"`` divides by ``n`` (then it is ``chamfer`` for the cosine distance).

    Example:
        >>> sum_bottleneck(["Same.", "Same."]).value < 1e-6
        True
    """
    return _one("sum-bottleneck", responses, distance=distance, reduction=reduction, model=model,
                base_url=base_url, backend=backend, device=device, dtype=dtype)


def sum_diameter(
    responses: Sequence[str], *, distance: str = "cosine", reduction: str = "sum",
    model: str = "minilm", base_url: str | None = None, backend: str = "torch",
    device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """SumDiameter: ``sum_i max_{j != i} d(e_i, e_j)``, each point's farthest-neighbour distance.

    Example:
        >>> sum_diameter(["Same.", "Same."]).value < 1e-6
        True
    """
    return _one("sum-diameter", responses, distance=distance, reduction=reduction, model=model,
                base_url=base_url, backend=backend, device=device, dtype=dtype)


def energy(
    responses: Sequence[str], *, distance: str = "cosine", gamma: float = 1.0,
    eps: float = 1e-12, model: str = "minilm", base_url: str | None = None,
    backend: str = "torch", device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """Energy: ``-mean_{i<j} 1 / max(d(e_i, e_j), eps)^gamma``, the (negated) mean pairwise
    energy of equal charges (Velikonivtsev et al. 2024). Always <= 0; closer to 0 = more
    diverse. A duplicate pair contributes ``eps^-gamma`` (1e12 by default) and dominates.

    Example:
        >>> energy(["A cat sleeps.", "Stocks fell."]).value < 0
        True
    """
    return _one("energy", responses, distance=distance, gamma=gamma, eps=eps, model=model,
                base_url=base_url, backend=backend, device=device, dtype=dtype)


def span_centroid(
    responses: Sequence[str], *, distance: str = "cosine", percentile: float = 90.0,
    model: str = "minilm", base_url: str | None = None, backend: str = "torch",
    device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """Span to the centroid: the ``percentile``-th percentile (numpy's linear interpolation) of
    the distances of the embeddings to their mean (Cox et al. 2021).

    Example:
        >>> span_centroid(["Same.", "Same."]).value < 1e-6
        True
    """
    return _one("span-centroid", responses, distance=distance, percentile=percentile,
                model=model, base_url=base_url, backend=backend, device=device, dtype=dtype)


def knn_distance(
    responses: Sequence[str], *, distance: str = "cosine", k: int = 2, model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """Mean distance of each embedding to its ``k``-th nearest other embedding (``k=1``: the
    nearest, which is ``sum-bottleneck:reduction=mean``). Needs ``k + 1`` responses.

    Example:
        >>> knn_distance(["Same.", "Same."]).reason
        'needs at least 3 responses; got 2'
    """
    return _one("knn-distance", responses, distance=distance, k=k, model=model,
                base_url=base_url, backend=backend, device=device, dtype=dtype)


def convex_hull_volume(
    responses: Sequence[str], *, dims: int = 3, projection: str = "pca", seed: int = 42,
    model: str = "minilm", base_url: str | None = None, backend: str = "torch",
    device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """Volume (``dims=3``) or area (``dims=2``) of the convex hull of the embeddings projected
    to ``dims`` dimensions (Yu et al. 2022). A hull of points that span fewer directions is flat:
    0 (``details["flat"]``).

    ``projection``: ``pca`` (default: the top principal components, deterministic), ``umap``
    (``umap.UMAP(n_components=dims, random_state=seed)``, the peer's default; values are not
    comparable across fits), or ``none`` (vectors already ``dims`` wide, used as given).
    Needs ``dims + 1`` responses.

    Example:
        >>> convex_hull_volume(["Same.", "Same.", "Same.", "Same."]).value
        0.0
    """
    return _one("convex-hull-volume", responses, dims=dims, projection=projection, seed=seed,
                model=model, base_url=base_url, backend=backend, device=device, dtype=dtype)


def geo_mean_std(
    responses: Sequence[str], *, model: str = "minilm", base_url: str | None = None,
    backend: str = "torch", device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """Geometric mean over dimensions of the standard deviation (ddof 1) of the embeddings
    (Lai et al. 2020). A constant dimension's 0 is floored at 1e-12, so one dead dimension
    pulls the value towards 0; the value scales with the vectors.

    Example:
        >>> geo_mean_std(["Same.", "Same."]).value
        1e-12
    """
    return _one("geo-mean-std", responses, model=model, base_url=base_url, backend=backend,
                device=device, dtype=dtype)


def span_medoid(
    responses: Sequence[str], *, distance: str = "cosine", model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """Span to the medoid: the mean distance of the embeddings to the medoid, the embedding
    whose distances to the others sum least (ties: the lowest index; the value does not depend
    on the tie) (Cox et al. 2021).

    Returns:
        MetricResult with ``details["medoid"]``.

    Example:
        >>> span_medoid(["Same.", "Same.", "Same."]).value < 1e-6
        True
    """
    return _one("span-medoid", responses, distance=distance, model=model, base_url=base_url,
                backend=backend, device=device, dtype=dtype)


def renyi_entropy(
    responses: Sequence[str], *, alpha: float = 2.0, kernel: str = "cosine", eps: float = 1e-12,
    model: str = "minilm", base_url: str | None = None, backend: str = "torch",
    device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """Renyi kernel entropy of order ``alpha``: ``log(sum_i lambda_i^alpha) / (1 - alpha)`` over
    the eigenvalues of ``A = K / tr(K)`` (``K`` symmetrised), in nats, in [0, log n].

    ``alpha = 2`` is ``-log ||A||_F^2`` (no eigendecomposition); otherwise the eigenvalues are
    clipped to ``[eps, 1]`` and renormalised first (``alpha = 1``: von Neumann entropy). With the
    cosine kernel ``exp(renyi-entropy:alpha=q)`` is ``vendi-embedding:q=q`` up to that clipping.

    Example:
        >>> renyi_entropy(["Same.", "Same."]).value < 1e-6
        True
    """
    return _one("renyi-entropy", responses, alpha=alpha, kernel=kernel, eps=eps, model=model,
                base_url=base_url, backend=backend, device=device, dtype=dtype)


def dcscore(
    responses: Sequence[str], *, kernel: str = "cosine", tau: float = 1.0,
    model: str = "minilm", base_url: str | None = None, backend: str = "torch",
    device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """DCScore: ``sum_i exp(K_ii / tau) / sum_j exp(K_ij / tau)``, the trace of the row-wise
    softmax of the kernel (Zhu et al. 2025). In [1, n]: 1 for identical responses; with the
    cosine kernel and ``tau = 1`` at most about ``n e / (n - 1 + e)``.

    Example:
        >>> round(dcscore(["Same.", "Same."]).value, 6)
        1.0
    """
    return _one("dcscore", responses, kernel=kernel, tau=tau, model=model, base_url=base_url,
                backend=backend, device=device, dtype=dtype)


def log_determinant(
    responses: Sequence[str], *, kernel: str = "cosine", tau: float = 1.0, eps: float = 1e-6,
    model: str = "minilm", base_url: str | None = None, backend: str = "torch",
    device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """Log-determinant of the kernel, ``log det(K / tau + eps I)`` (``K`` symmetrised; Cholesky,
    else the sign-checked LU determinant): the log-volume the embeddings span (Kulesza & Taskar
    2012). At most ``n log(1 + eps)`` for the cosine kernel; duplicates push it towards
    ``log eps``.

    Example:
        >>> log_determinant(["Same.", "Same."]).value < -10
        True
    """
    return _one("log-determinant", responses, kernel=kernel, tau=tau, eps=eps, model=model,
                base_url=base_url, backend=backend, device=device, dtype=dtype)


def binned_entropy(
    responses: Sequence[str], *, bins_x: int = 5, bins_y: int = 5,
    normalization: str = "effective", projection: str = "pca", seed: int = 42,
    model: str = "minilm", base_url: str | None = None, backend: str = "torch",
    device: str = "cpu", dtype: str = "float32",
) -> MetricResult:
    """Shannon entropy of the occupancy of a ``bins_x x bins_y`` grid laid over the embeddings
    projected to 2-D (Cox et al. 2021).

    Bins span each axis from its minimum to its maximum (plus 1e-10, so the maximum falls in the
    last bin); a constant axis is one bin. ``normalization``: ``effective`` (default) divides by
    ``log min(n, bins_x bins_y)`` (in [0, 1]), ``bins`` by ``log(bins_x bins_y)``, ``none``
    leaves nats. ``projection`` as in :func:`convex_hull_volume`.

    Returns:
        MetricResult with ``details["occupied"]`` (the number of non-empty bins).

    Example:
        >>> binned_entropy(["Same.", "Same."]).value
        0.0
    """
    return _one("binned-entropy", responses, bins_x=bins_x, bins_y=bins_y,
                normalization=normalization, projection=projection, seed=seed, model=model,
                base_url=base_url, backend=backend, device=device, dtype=dtype)


def graph_entropy(
    responses: Sequence[str], *, distance: str = "cosine", model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """Graph entropy of the complete distance graph: ``sum_i H_i`` with
    ``H_i = -sum_j f_ij log f_ij`` and ``f_ij = d_ij / sum_k d_ik`` (Yu et al. 2022). Each
    ``H_i <= log(n - 1)``; a point at distance 0 from all others has ``H_i = 0``. Needs 3
    responses (with 2 every ``H_i`` is 0).

    Example:
        >>> graph_entropy(["A cat sleeps.", "Stocks fell.", "Rain again."]).value > 0
        True
    """
    return _one("graph-entropy", responses, distance=distance, model=model, base_url=base_url,
                backend=backend, device=device, dtype=dtype)


def mst_dispersion(
    responses: Sequence[str], *, distance: str = "cosine", model: str = "minilm",
    base_url: str | None = None, backend: str = "torch", device: str = "cpu",
    dtype: str = "float32",
) -> MetricResult:
    """Total edge length of the minimum spanning tree of the embeddings' complete distance graph
    (Prim's algorithm; a duplicate pair is joined by an edge of length 0) (Cox et al. 2021).

    Example:
        >>> mst_dispersion(["Same.", "Same."]).value < 1e-6
        True
    """
    return _one("mst-dispersion", responses, distance=distance, model=model, base_url=base_url,
                backend=backend, device=device, dtype=dtype)


for _name, _fn, _bounds, _cite, _desc in (
    ("sum-pairwise-distance", sum_pairwise_distance, (0.0, None), f"{CHANDRA} (remote-clique, "
     f"sum form); {YU}", "Sum of the pairwise distances of the embeddings"),
    ("hamdiv", hamdiv, (0.0, None), HU,
     "Length of a Hamiltonian circuit through the embeddings (greedy or Christofides)"),
    ("diameter", diameter, (0.0, None), XIE, "Largest pairwise distance of the embeddings"),
    ("bottleneck", bottleneck, (0.0, None), f"{XIE}; {CHANDRA} (remote-edge)",
     "Smallest pairwise distance of the embeddings"),
    ("sum-bottleneck", sum_bottleneck, (0.0, None), XIE,
     "Sum of each embedding's distance to its nearest other"),
    ("sum-diameter", sum_diameter, (0.0, None), XIE,
     "Sum of each embedding's distance to its farthest other"),
    ("energy", energy, (None, 0.0), ENERGY,
     "Negated mean inverse (powered) pairwise distance of the embeddings"),
    ("span-centroid", span_centroid, (0.0, None), COX,
     "Percentile of the embeddings' distances to their centroid"),
    ("knn-distance", knn_distance, (0.0, None), YANG,
     "Mean distance of each embedding to its k-th nearest other"),
    ("convex-hull-volume", convex_hull_volume, (0.0, None), YU,
     "Volume (or area) of the convex hull of the embeddings projected to 3-D (or 2-D)"),
    ("geo-mean-std", geo_mean_std, (0.0, None), LAI,
     "Geometric mean of the per-dimension standard deviations of the embeddings"),
    ("span-medoid", span_medoid, (0.0, None), COX,
     "Mean distance of the embeddings to their medoid"),
    ("renyi-entropy", renyi_entropy, (0.0, None), RENYI,
     "Renyi entropy of order alpha of the normalised kernel's eigenvalues"),
    ("dcscore", dcscore, (1.0, None), DCSCORE,
     "Trace of the row-wise softmax of the embeddings' kernel"),
    ("log-determinant", log_determinant, (None, None), LOGDET,
     "Log-determinant of the embeddings' kernel plus a diagonal jitter"),
    ("binned-entropy", binned_entropy, (0.0, None), COX,
     "Entropy of the occupancy of a grid over the embeddings projected to 2-D"),
    ("graph-entropy", graph_entropy, (0.0, None), YU,
     "Sum of each embedding's entropy of normalised distances to the others"),
    ("mst-dispersion", mst_dispersion, (0.0, None), f"{COX}; {CHANDRA} (remote-tree)",
     "Total edge length of the embeddings' minimum spanning tree"),
):
    _register(_name, _fn, bounds=_bounds, citation=_cite, description=_desc)


# ---------------------------------------------------------------------------- the embedding
# metrics of divmeter.metrics.embedding on precomputed vectors (same numpy functions as their
# text paths, so a text's embedding given as a vector gives the text's number)


def _adapter(name: str, items: Callable[[Mapping[str, Any]], dict[str, Any]],
             value: Callable[[np.ndarray, Mapping[str, Any]], tuple[float, dict[str, Any]]],
             min_n: Callable[[Mapping[str, Any]], int] = lambda p: 2,
             cosine: Callable[[Mapping[str, Any]], bool] = lambda p: True) -> None:
    def vectors(arrays: Sequence[np.ndarray], **params: Any) -> list[MetricResult]:
        spec = get_metric(name)
        _reject_encoder(name, params)
        validate(name, spec.schema, params)
        p = {**spec.params, **params}
        pre = p.get("kernel") == "precomputed"
        sig = make_signature(name, emb=None if pre else "precomputed", **items(p))
        if pre:
            arrays = [_square(name, K) for K in arrays]
        out, live = _check_arrays(name, sig, arrays, min_n(p), cosine(p) and not pre)
        for i in live:
            try:
                v, details = value(arrays[i], p)
            except InvalidInputError as exc:
                out[i] = undefined(name, sig, str(exc))
                continue
            out[i] = MetricResult(name, v, sig, details=details)
        return out  # type: ignore[return-value]

    vectors.__name__ = vectors.__qualname__ = name.replace("-", "_") + "_vectors"
    vectors.__doc__ = f"``{name}`` on precomputed vectors (one ``(n, d)`` array per set)."
    register_vectors(name)(vectors)


def _vendi_value(X: np.ndarray, p: Mapping[str, Any]) -> tuple[float, dict[str, Any]]:
    from divmeter.metrics.vendi import vendi_from_features, vendi_from_kernel

    kernel = str(p["kernel"])
    if kernel == "cosine":
        return vendi_from_features(X, p["q"]), {}
    K = X if kernel == "precomputed" else kernel_matrix(X[None], kernel)[0]
    return vendi_from_kernel(K, p["q"]), {}


def _chamfer_value(X: np.ndarray, p: Mapping[str, Any]) -> tuple[float, dict[str, Any]]:
    D = 1.0 - cosine_matrix(X)
    np.fill_diagonal(D, np.inf)
    return chamfer_within(X), {"nearest": np.maximum(D.min(axis=1), 0.0)}


_adapter("embedding-cosine", lambda p: {"reduction": p["reduction"]},
         lambda X, p: (diversity_from_similarity(cosine_matrix(X), p["reduction"]),
                       {"similarity": cosine_matrix(X)}))
_adapter("chamfer", lambda p: {}, _chamfer_value)
_adapter("chamfer-sqeuclidean", lambda p: {"norm": "none"},
         lambda X, p: (chamfer_within_sqeuclidean(X), {}), cosine=lambda p: False)
_adapter("vendi-embedding", lambda p: {"q": p["q"], "kernel": str(parse_kernel(p["kernel"]))},
         _vendi_value, cosine=lambda p: p["kernel"] == "cosine")
_adapter("kmeans-inertia",
         lambda p: {"k": p["k"], "seed": p["seed"], "n_init": p["n_init"], "norm": "l2"},
         lambda X, p: (lambda r: (r[2], {"labels": r[0]}))(
             kmeans(normalize_rows(X), p["k"], seed=p["seed"], n_init=p["n_init"])),
         min_n=lambda p: int(p["k"]))
_adapter("remote-clique", lambda p: {"distance": p["distance"], "norm": "l2"},
         lambda X, p: (remote_clique_value(X, p["distance"]), {}))
