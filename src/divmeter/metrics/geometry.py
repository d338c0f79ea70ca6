"""Embedding geometry: distance, dispersion, spread, kernel-entropy and projection measures.

Eighteen measures of how spread out a set of embedding vectors is, each first a numpy kernel
over a stack of sets (``(B, n, d)`` float64, sets of one shape scored together), registered in
the ``content`` family. A metric that needs vectors takes vectors: given texts, a backend embeds
them (``model``, MiniLM by default, one encoder pass for every set of a batch, through the
embedding cache, :mod:`divmeter.metrics.embedding`); given precomputed vectors
(``divmeter.score(X, "diameter")`` with an ``(n, d)`` array, a ``.npy`` file, a Parquet column of
lists; :mod:`divmeter.engine.precomputed`), the kernel runs on them as given and the signature says
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
kth-neighbor-distance           ``mean_i`` (distance of ``i`` to its ``k``-th nearest other point)
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

The peer's ``mean_pw_dist``, ``chamfer_dist`` and ``cluster_inertia`` are
``remote-clique:norm=none``, ``chamfer`` with a ``distance`` and ``kmeans-inertia:norm=none`` of
:mod:`divmeter.metrics.embedding` (``tests/test_embedding_peer.py``).

Each measure is one definition, a subclass of :class:`Geometry` (itself a
:class:`~divmeter.metrics.embedding.VectorMetric`: texts encoded, then the measure on the
vectors): its facts, its own parameters beside the encoder's, its smallest set, its signature
fields and its kernel over a chunk of sets of one shape (``run``).

This module imports numpy only at module level; scipy (convex hulls), networkx (Christofides)
and umap-learn (UMAP) load inside the functions that need them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from divmeter.core.errors import InvalidInputError
from divmeter.core.params import Param
from divmeter.core.result import MetricResult
from divmeter.engine.public import public_function, register
from divmeter.engine.registry import get_metric
from divmeter.metrics.embedding import ENCODER, VectorMetric, _degenerate, _not_square
from divmeter.metrics.kernels import (
    KERNEL_EXPECT,
    gram_kernel,
    kernel_matrix,
    kernel_ok,
    parse_kernel,
    sq_distances,
)

__all__ = [
    "DISTANCES",
    "Geometry",
    "MEASURES",
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
               alternative="rbf:gamma=0.5",
               doc="similarity kernel: cosine, linear, rbf:gamma=G, laplacian:gamma=G, "
               "polynomial:degree=K or precomputed (the input is one n x n matrix per set)")
REDUCE = Param(str, choices=("sum", "mean"), default="sum",
               doc="sum over points (the definition) or mean (sum / n)")
PROJECTIONS: tuple[str, ...] = ("pca", "umap", "none")


def _seed_param() -> Param:
    return Param(int, ge=0, le=2**32 - 1, default=42,
                 doc="random state of UMAP (projection=umap only)",
                 relation=lambda v, p: None if v == 42 or p.get("projection") == "umap"
                 else "applies to projection=umap only")


def _projection_param(dims_doc: str) -> Param:
    return Param(str, choices=PROJECTIONS, default="pca",
                 doc=f"how vectors become {dims_doc}: pca (deterministic), umap (umap-learn, "
                 "the peer's default) or none (vectors already that wide)")


# ---------------------------------------------------------------------------- shared pieces


#: The largest set whose ``n x n`` Gram matrix the linear measures build (128 MB): above,
#: span-centroid, the PCA of binned-entropy and convex-hull-volume, and the squared norms work
#: on the ``n x d`` vectors (linear memory; below, the Gram route, whose numbers are kept).
GRAM_MAX = 4096


class _Stack:
    """A chunk of sets of one shape ``(n, d)`` and the pieces several measures build on, each
    computed once: the stacked vectors ``X`` ``(B, n, d)``, the Gram matrices ``X X^T`` and the
    squared row norms.

    The Gram matrices are computed set by set from the given arrays (a symmetric rank-k update
    per set, on data that fits in cache), so measures that need only them never copy the
    vectors into a stack; ``X`` is stacked on first use.
    """

    def __init__(self, arrays: Sequence[np.ndarray] | np.ndarray) -> None:
        self.arrays = arrays
        self._X: np.ndarray | None = arrays if isinstance(arrays, np.ndarray) else None
        self._sq: np.ndarray | None = None
        self._gram: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.arrays)

    @property
    def X(self) -> np.ndarray:
        """The vectors, ``(B, n, d)``."""
        if self._X is None:
            self._X = np.stack(list(self.arrays))
        return self._X

    @property
    def gram(self) -> np.ndarray:
        """``X X^T`` of every set, ``(B, n, n)`` (do not modify)."""
        if self._gram is None:
            B, (n, _) = len(self.arrays), self.arrays[0].shape
            G = np.empty((B, n, n))
            for b, x in enumerate(self.arrays):
                np.matmul(x, x.T, out=G[b])
            self._gram = G
        return self._gram

    @property
    def sq(self) -> np.ndarray:
        """``|x_i|^2`` of every row, ``(B, n)`` (the Gram diagonal; for a set above
        :data:`GRAM_MAX` whose Gram matrix is not built, from the vectors)."""
        if self._sq is None:
            if self._gram is None and self.arrays[0].shape[0] > GRAM_MAX:
                self._sq = np.einsum("bij,bij->bi", self.X, self.X)
            else:
                self._sq = np.diagonal(self.gram, axis1=-2, axis2=-1).copy()
        return self._sq

    def subset(self, keep: Sequence[int]) -> _Stack:
        """The sets at positions ``keep``."""
        out = _Stack([self.arrays[b] for b in keep])
        if self._gram is not None:
            out._gram = self._gram[list(keep)]
        return out


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


def _distances(S: _Stack, distance: str) -> np.ndarray:
    if distance == "cosine":
        norms = np.sqrt(S.sq)
        G = S.gram / (norms[:, :, None] * norms[:, None, :])
        np.clip(G, -1.0, 1.0, out=G)
        return _mirror(1.0 - G)
    if distance not in DISTANCES:
        raise InvalidInputError(
            f"`distance` must be one of {', '.join(DISTANCES)}; got {distance!r}."
        )
    sq = S.sq
    D = sq_distances(S.gram, gram=S.gram, sq=sq)
    near = D < _REFINE * (sq[:, :, None] + sq[:, None, :])
    for b, i, j in zip(*np.nonzero(np.triu(near, 1)), strict=True):
        diff = S.arrays[b][i] - S.arrays[b][j]
        D[b, i, j] = float(diff @ diff)
    D = _mirror(D)
    return D if distance == "sqeuclidean" else np.sqrt(D, out=D)


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
    return _distances(_Stack(np.asarray(X, dtype=np.float64)), distance)


def _to_point(S: _Stack, C: np.ndarray, distance: str) -> np.ndarray:
    """Distance of every row of each set to that set's point ``C`` (``(B, n, d), (B, d)``)."""
    X = S.X
    if distance == "cosine":
        dot = np.einsum("bij,bj->bi", X, C)
        cos = dot / (np.sqrt(S.sq) * np.sqrt(np.einsum("bj,bj->b", C, C))[:, None])
        return 1.0 - np.clip(cos, -1.0, 1.0)  # type: ignore[no-any-return]
    diff = X - C[:, None, :]
    sq = np.einsum("bij,bij->bi", diff, diff)
    return sq if distance == "sqeuclidean" else np.sqrt(sq)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- projections


_EPS = float(np.finfo(np.float64).eps)


def _pca(S: _Stack, dims: int) -> np.ndarray:
    """The first ``dims`` principal-component scores of every set of a stack.

    The scores ``U_k s_k`` of the SVD of the centred set come from the eigenpairs of its
    centred Gram matrix ``H X X^T H`` (``n x n``: no pass over the ``d`` dimensions but the
    Gram product itself). A component's sign makes its loading of largest magnitude positive
    (scikit-learn's ``PCA``, ``svd_flip(u_based_decision=False)``), so the scores are
    scikit-learn's up to rounding. Eigenvalues below ``100 n eps`` of the largest (where the
    Gram form cannot resolve a singular value) count as 0: such a component scores 0.
    """
    if S.arrays[0].shape[0] > GRAM_MAX:  # a large set: from the d x d covariance instead
        return _pca_linear(S, dims)
    G = S.gram
    n = G.shape[-1]
    rows = G.mean(axis=-1, keepdims=True)
    Gc = G - rows - np.swapaxes(rows, -1, -2) + rows.mean(axis=-2, keepdims=True)
    Gc = 0.5 * (Gc + np.swapaxes(Gc, -1, -2))
    w, V = np.linalg.eigh(Gc)
    k = min(dims, n)
    w, V = w[:, ::-1][:, :k], V[:, :, ::-1][:, :, :k]
    floor = 100 * n * _EPS * np.maximum(w[:, :1], 0.0)
    s = np.sqrt(np.where(w > floor, w, 0.0))
    # loadings X_c^T v / s = X^T v / s, as v is orthogonal to the ones vector
    load = np.stack([v.T @ x for v, x in zip(V, S.arrays, strict=True)])
    top = np.argmax(np.abs(load), axis=-1)
    signs = np.sign(np.take_along_axis(load, top[:, :, None], axis=-1))[:, :, 0]
    signs[signs == 0] = 1.0
    Y = V * (s * signs)[:, None, :]
    if k < dims:
        Y = np.concatenate([Y, np.zeros(Y.shape[:2] + (dims - k,))], axis=-1)
    return Y  # type: ignore[no-any-return]


def _pca_linear(S: _Stack, dims: int) -> np.ndarray:
    """:func:`_pca` of sets above :data:`GRAM_MAX`: the loadings from the eigenpairs of the
    centred ``d x d`` scatter matrix, the scores ``X_c`` times them (linear in ``n``; the same
    components, signs and zero floor)."""
    out = []
    for x in S.arrays:
        n, d = x.shape
        xc = x - x.mean(axis=0)
        w, L = np.linalg.eigh(xc.T @ xc)
        k = min(dims, n, d)
        w, L = w[::-1][:k], L[:, ::-1][:, :k]
        floor = 100 * n * _EPS * max(float(w[0]), 0.0) if k else 0.0
        top = np.argmax(np.abs(L), axis=0)
        signs = np.sign(L[top, np.arange(k)])
        signs[signs == 0] = 1.0
        y = (xc @ L) * signs * (w > floor)
        if k < dims:
            y = np.concatenate([y, np.zeros((n, dims - k))], axis=-1)
        out.append(y)
    return np.stack(out)


def pca_project(X: np.ndarray, dims: int) -> np.ndarray:
    """The first ``dims`` principal-component scores of every set of a stack ``(B, n, d)``
    (see :func:`_pca`: scikit-learn's ``PCA(dims).fit_transform`` up to rounding). A set
    spanning fewer than ``dims`` directions gets zero columns.

    Example:
        >>> X = np.array([[[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [4.0, 0.0, 0.0]]])
        >>> pca_project(X, 2)[0].round(6).tolist()
        [[-2.0, 0.0], [0.0, 0.0], [2.0, 0.0]]
    """
    return _pca(_Stack(np.asarray(X, dtype=np.float64)), dims)


def _umap_project(X: np.ndarray, dims: int, seed: int) -> np.ndarray:
    from divmeter.core._optional import require

    umap = require("umap", extra="umap", package="umap-learn")
    out = []
    for x in X:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its small-set and n_jobs notes, once per set
            try:
                out.append(umap.UMAP(n_components=dims, random_state=seed).fit_transform(x))
            except Exception as exc:  # umap-learn's own errors (tiny or degenerate sets)
                raise InvalidInputError(f"UMAP could not project this set: {exc}") from None
    return np.asarray(out, dtype=np.float64)


def _project(S: _Stack, dims: int, projection: str, seed: int) -> np.ndarray:
    if projection == "pca":
        return _pca(S, dims)
    if projection == "umap":
        return _umap_project(S.X, dims, seed)
    if S.X.shape[-1] != dims:
        raise InvalidInputError(
            f"projection=none takes vectors that are already {dims}-dimensional; got "
            f"{S.X.shape[-1]} dimensions (use projection=pca or umap)."
        )
    return S.X
# ---------------------------------------------------------------------------- kernels per measure

#: ``(value, reason, details)``; the reason of a malformed set is its InvalidInputError.
Outcome = tuple[float | None, "str | InvalidInputError | None", dict[str, Any]]


def _ok(values: np.ndarray, details: Sequence[dict[str, Any]] | None = None) -> list[Outcome]:
    return [(float(v), None, details[i] if details else {}) for i, v in enumerate(values)]


def _dist_kernel(reduce: Callable[[np.ndarray, Mapping[str, Any]], np.ndarray]
                 ) -> Callable[[_Stack, Mapping[str, Any]], list[Outcome]]:
    def run(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
        return _ok(reduce(_distances(S, p["distance"]), p))

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


def _k_span_medoid(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
    D = _distances(S, p["distance"])
    medoid = np.argmin(D.sum(axis=-1), axis=-1)
    values = D[np.arange(D.shape[0]), :, medoid].mean(axis=-1)
    return _ok(values, [{"medoid": int(m)} for m in medoid])


def _k_hamdiv(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
    D = _distances(S, p["distance"])
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
    from divmeter.core._optional import require

    nx = require("networkx", extra="embed")
    from networkx.algorithms.approximation import christofides

    n = d.shape[0]
    G = nx.Graph()
    for i in range(n):
        for j in range(i + 1, n):
            G.add_edge(i, j, weight=d[i, j])
    return [int(v) for v in christofides(G, weight="weight")]


def _k_span_centroid(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
    """Distances to the centroid ``c`` from the Gram matrix (``x_i . c`` is the mean of row
    ``i``, ``|c|^2`` the mean of all); a set whose centroid or some distance is small next to
    the norms (where that form cancels) is computed from the vectors."""
    dist = p["distance"]
    if S.arrays[0].shape[0] > GRAM_MAX:  # a large set: from the vectors, in linear memory
        return _span_centroid_linear(S, p)
    G, sq = S.gram, S.sq
    r = G.mean(axis=-1)
    cc = r.mean(axis=-1)
    exact = cc < 1e-6 * sq.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if dist == "cosine":
            d = 1.0 - np.clip(r / (np.sqrt(sq) * np.sqrt(cc)[:, None]), -1.0, 1.0)
        else:
            d = sq - 2.0 * r + cc[:, None]
            exact |= (d < 1e-3 * sq).any(axis=-1)
            d = np.maximum(d, 0.0) if dist == "sqeuclidean" else np.sqrt(np.maximum(d, 0.0))
    zero = np.zeros(len(S), dtype=bool)
    for b in np.flatnonzero(exact):
        x = S.arrays[int(b)]
        c = x.mean(axis=0)
        if dist == "cosine" and not np.any(c != 0):
            zero[b] = True
            continue
        d[b] = _to_point(_Stack(x[None]), c[None], dist)[0]
    values = np.percentile(d, p["percentile"], axis=-1)
    return [(None, "the centroid is the zero vector: its cosine distance is undefined "
             "(use distance=euclidean)", {}) if z else (float(v), None, {})
            for v, z in zip(values, zero, strict=True)]


def _span_centroid_linear(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
    """:func:`_k_span_centroid` of sets above :data:`GRAM_MAX`: the distances to the centroid
    computed from the vectors (no ``n x n`` matrix)."""
    C = S.X.mean(axis=1)
    zero = ~np.any(C != 0, axis=-1) if p["distance"] == "cosine" else np.zeros(len(S), bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = _to_point(S, C, p["distance"])
    values = np.percentile(d, p["percentile"], axis=-1)
    return [(None, "the centroid is the zero vector: its cosine distance is undefined "
             "(use distance=euclidean)", {}) if z else (float(v), None, {})
            for v, z in zip(values, zero, strict=True)]


def _k_geo_mean_std(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
    n, d = S.arrays[0].shape
    ss = np.empty((len(S), d))
    with np.errstate(invalid="ignore", over="ignore"):
        for b, x in enumerate(S.arrays):  # np.std(x, axis=0, ddof=1)'s operations, per set
            c = x - x.mean(axis=0)
            c *= c
            c.sum(axis=0, out=ss[b])
        stds = np.clip(np.sqrt(ss / (n - 1)), 1e-12, None)
        out = _ok(np.exp(np.mean(np.log(stds), axis=-1)))
    for i in np.flatnonzero(~np.isfinite(ss).all(axis=-1)):  # NaN and inf reach the sums
        bad = _nonfinite(S.arrays[int(i)])
        if bad is not None:
            out[int(i)] = (None, bad, {})
    return out


def _nonfinite(x: np.ndarray) -> InvalidInputError | None:
    """The input error of a set with a row holding NaN or an infinity, else ``None``."""
    rows = np.flatnonzero(~np.isfinite(x).all(axis=-1))
    return InvalidInputError(f"`vectors` row {int(rows[0])} holds NaN or an infinity.") \
        if rows.size else None


def _kernels(S: _Stack, p: Mapping[str, Any]) -> np.ndarray:
    """The measure's kernel of every set (``X`` is already the kernel for ``precomputed``)."""
    if p["kernel"] == "precomputed":
        return np.array(S.X, dtype=np.float64)
    k = parse_kernel(p["kernel"])
    if k.name == "laplacian":
        return kernel_matrix(S.X, k)
    return gram_kernel(S.gram, S.sq, S.arrays[0].shape[-1], k)


def _k_renyi(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
    K = _kernels(S, p)
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


def _k_dcscore(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
    K = _kernels(S, p)
    if p["tau"] != 1.0:
        K = K / p["tau"]
    K = K - K.max(axis=-1, keepdims=True)
    E = np.exp(K)
    P = E / np.clip(E.sum(axis=-1, keepdims=True), 1e-12, None)
    return _ok(np.trace(P, axis1=-2, axis2=-1))


def _k_logdet(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
    K = _kernels(S, p)
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


def _k_binned_entropy(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
    Y = _project(S, 2, p["projection"], p["seed"])
    bx, by = int(p["bins_x"]), int(p["bins_y"])
    B, n = Y.shape[:2]
    lo, rng = Y.min(axis=1), Y.max(axis=1) - Y.min(axis=1)
    cells = []
    for axis, nb in ((0, bx), (1, by)):
        pos = np.floor((Y[:, :, axis] - lo[:, None, axis]) / (rng[:, None, axis] + 1e-10) * nb)
        pos = np.where(rng[:, None, axis] <= 0, 0.0, pos)
        cells.append(np.clip(pos.astype(np.int64), 0, nb - 1))
    total = bx * by
    labels = cells[0] * by + cells[1] + (np.arange(B) * total)[:, None]
    counts = np.bincount(labels.ravel(), minlength=B * total).reshape(B, total)
    f = counts / n
    terms = f * np.log(np.where(counts > 0, f, 1.0))
    h = -terms.sum(axis=-1)
    if p["normalization"] != "none":
        denom_bins = min(n, total) if p["normalization"] == "effective" else total
        denom = float(np.log(denom_bins))
        if total <= 1 or denom <= 0:
            h = np.zeros(B)
        else:
            h = h / denom
            if p["normalization"] == "effective":
                h = np.clip(h, 0.0, 1.0)
    occupied = (counts > 0).sum(axis=-1)
    return _ok(h + 0.0, [{"occupied": int(o)} for o in occupied])  # -0.0 (one bin) -> 0.0


def _k_convex_hull(S: _Stack, p: Mapping[str, Any]) -> list[Outcome]:
    from scipy.spatial import ConvexHull, QhullError

    bad = [_nonfinite(x) for x in S.arrays]
    if any(b is not None for b in bad):
        ok = [i for i, b in enumerate(bad) if b is None]
        done = iter(_k_convex_hull(S.subset(ok), p) if ok else [])
        return [(None, b, {}) if b is not None else next(done) for b in bad]
    Y = _project(S, int(p["dims"]), p["projection"], p["seed"])
    out: list[Outcome] = []
    for y in Y:
        try:
            out.append((float(ConvexHull(y).volume), None, {}))
        except (QhullError, ValueError):  # flat: the points span fewer than dims directions
            out.append((0.0, None, {"flat": True}))
    return out


# ---------------------------------------------------------------------------- the definitions


class Geometry(VectorMetric):
    """The definition of a geometry measure: its own parameters (signature order, before the
    encoder's), its kernel over a chunk of sets of one shape (:attr:`run`, scored by
    :func:`geometry_values`), its smallest set (:meth:`min_n`) and its signature fields
    (:meth:`fields`). Texts are encoded as for every :class:`VectorMetric`; the measure runs on
    the vectors, or on precomputed vectors as given."""

    bounds: ClassVar[tuple[float | None, float | None]] = (0.0, None)
    #: ``n x n`` float64 temporaries per set (the cost: a memory estimate and a rough time).
    squares = 4
    matrix = "distance or kernel"
    #: Whether the measure builds on the Gram matrices (then the check for NaN and infinities
    #: reads their diagonal; a measure that does not checks its own values instead).
    gram: ClassVar[bool] = True
    #: The measure on a chunk of sets of one shape: one outcome per set (a staticmethod).
    run: ClassVar[staticmethod[[_Stack, Mapping[str, Any]], list[Outcome]]]

    @staticmethod
    def min_n(p: Mapping[str, Any]) -> int:
        """The fewest vectors the measure takes with parameters ``p``."""
        return 2

    @classmethod
    def measure_params(cls) -> dict[str, Param]:
        """The measure's own parameters (the encoder's left out), in signature order."""
        return {k: v for k, v in cls.params.items() if k not in ENCODER}

    @classmethod
    def fields(cls, p: Mapping[str, Any]) -> dict[str, Any]:
        """The signature's fields for the resolved parameters ``p``."""
        return {k: str(parse_kernel(p[k])) if k == "kernel" else p[k]
                for k in cls.measure_params()}

    @staticmethod
    def cosine(p: Mapping[str, Any]) -> bool:
        """Whether a zero vector makes the value undefined (cosine distance or kernel)."""
        return bool(p.get("distance") == "cosine" or p.get("kernel") == "cosine")

    def items(self) -> dict[str, Any]:
        return self.fields(self.p)

    def min_items(self) -> int:
        return self.min_n(self.p)

    def zero_undefined(self) -> bool:
        return self.cosine(self.p)

    def compute(self, src: Any) -> None:
        """The measure on the encoded sets the text path lets through (an error of finite
        vectors is the call's: raised)."""
        live = list(src.live)
        outcomes = geometry_values(self.name, [np.asarray(src.vectors(i), dtype=np.float64)
                                               for i in live], self.p)
        for i, (value, why, details) in zip(live, outcomes, strict=True):
            if isinstance(why, InvalidInputError):
                raise why
            src.results[i] = src.result(i, value, details, reason=why)

    def vectors(self, arrays: Sequence[Any]) -> list[MetricResult]:
        """The measure on precomputed vectors as given (one ``n x n`` similarity matrix per set
        with ``kernel="precomputed"``): a malformed set (a row holding NaN or an infinity, a
        kernel that is not square) gets its InvalidInputError as its outcome."""
        sig = self.vector_signature()
        out: list[MetricResult | InvalidInputError | None] = [
            _not_square(self.name, K) if self.precomputed else None for K in arrays]
        live = [i for i, o in enumerate(out) if o is None]
        done = _finish(self.name, sig, geometry_values(self.name, [arrays[i] for i in live],
                                                       self.p))
        for i, r in zip(live, done, strict=True):
            out[i] = r
        return out  # type: ignore[return-value]


def _proj_items(p: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    out = {k: p[k] for k in keys}
    out["projection"] = p["projection"]
    out["seed"] = p["seed"] if p["projection"] == "umap" else None
    return out


_D = {"distance": DISTANCE}


# ---------------------------------------------------------------------------- scoring a batch

#: Bytes of one stacked chunk (inputs and temporaries), at most: small enough to stay in cache
#: while every pass of a measure runs over it.
_CHUNK_BYTES = 4 * 2**20


def _chunks(arrays: Sequence[np.ndarray], idx: Sequence[int]
            ) -> Iterator[tuple[list[int], _Stack]]:
    """The arrays at ``idx`` (all of one shape ``(n, d)``) in chunks of bounded size."""
    n, d = arrays[idx[0]].shape
    size = max(1, _CHUNK_BYTES // (8 * (n * d + 6 * n * n)))
    for s in range(0, len(idx), size):
        part = list(idx[s : s + size])
        yield part, _Stack([arrays[i] for i in part])


def _bad_sets(S: _Stack, cosine: bool, pre: bool) -> dict[int, str | InvalidInputError]:
    """``{b: why}`` for the sets of the chunk that cannot be scored: a row holding NaN or an
    infinity (an input error; found in the squared norms, which such a row makes non-finite),
    an all-zero row under a cosine (undefined), or a non-finite precomputed kernel."""
    out: dict[int, str | InvalidInputError] = {}
    if pre:
        for b, K in enumerate(S.arrays):
            if not np.isfinite(K).all():
                out[b] = InvalidInputError("the similarity matrix holds NaN or an infinity.")
        return out
    sq = S.sq
    for b, i in np.argwhere(~np.isfinite(sq)):
        if int(b) not in out and not np.isfinite(S.arrays[b][i]).all():
            out[int(b)] = InvalidInputError(f"`vectors` row {int(i)} holds NaN or an infinity.")
    if cosine:
        for b, i in np.argwhere(sq == 0):
            if int(b) not in out:
                exact = not np.any(S.arrays[b][i] != 0)
                out[int(b)] = (f"vector {int(i)} is all zeros: its cosine is undefined" if exact
                               else f"vector {int(i)} is too small to normalise")
    return out


def geometry_values(name: str, arrays: Sequence[np.ndarray], params: Mapping[str, Any], *,
                    cosine: bool | None = None) -> list[Outcome]:
    """``(value, reason, details)`` of measure ``name`` on each ``(n, d)`` float64 array, sets
    of one shape scored together in cache-sized chunks. ``params`` are the measure's own,
    resolved (every one given); with ``kernel="precomputed"`` the arrays are ``n x n`` kernels.

    A set too small for the measure, or with a zero vector under a cosine distance or kernel
    (``cosine``: by default from ``params``), gets a reason instead of a value; a set holding
    NaN or an infinity gets an :class:`~divmeter.core.errors.InvalidInputError` as its reason.

    Example:
        >>> X = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
        >>> geometry_values("diameter", [X], {"distance": "euclidean"})[0][0]
        10.0
        >>> geometry_values("diameter", [X[:1]], {"distance": "euclidean"})[0][1]
        'fewer than two vectors (got 1)'
    """
    from divmeter.core import memory

    m = MEASURES[name]
    check_zero = (m.cosine(params) if cosine is None else cosine) and (
        params.get("kernel") != "precomputed")
    min_n = m.min_n(params)
    out: list[Outcome | None] = [None] * len(arrays)
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for i, a in enumerate(arrays):
        why = _degenerate(a.shape[0], min_n)
        if why is None:
            by_shape.setdefault(a.shape, []).append(i)
        else:
            out[i] = (None, why, {})
    for (n, _), idx in by_shape.items():
        if m.squares:  # the measure's own temporaries (a linear one has none of n x n)
            memory.check(name, m.squares * 8 * n * n, f"{m.squares} x a {n:,} x {n:,} matrix")
        for part, S in _chunks(arrays, idx):
            bad = _bad_sets(S, check_zero, params.get("kernel") == "precomputed") \
                if m.gram else {}
            if bad:
                keep = [b for b in range(len(part)) if b not in bad]
                for b, bad_why in bad.items():
                    out[part[b]] = (None, bad_why, {})
                part = [part[b] for b in keep]
                if not part:
                    continue
                S = S.subset(keep)
            for i, o in zip(part, _run_chunk(m, S, params), strict=True):
                out[i] = o
    return out  # type: ignore[return-value]


def _run_chunk(m: type[Geometry], S: _Stack, params: Mapping[str, Any]) -> list[Outcome]:
    """``m`` on a chunk; a set the measure refuses (a projection that cannot run on it) gets
    the error as its outcome, the others their values."""
    try:
        return m.run(S, params)
    except InvalidInputError as exc:
        if len(S) == 1:
            return [(None, exc, {})]
    return [o for b in range(len(S)) for o in _run_chunk(m, S.subset([b]), params)]


def _finish(name: str, sig: str, outcomes: Sequence[Outcome]
            ) -> list[MetricResult | InvalidInputError]:
    return [MetricResult(name, v, sig, details=d) if v is not None else
            r if isinstance(r, InvalidInputError) else
            MetricResult(name, None, sig, reason=r, details=d) for v, r, d in outcomes]


def score_vectors(name: str, arrays: Sequence[np.ndarray], **params: Any
                  ) -> list[MetricResult | InvalidInputError]:
    """Metric ``name`` (a measure of this module, or any metric that takes vectors) on
    precomputed vectors: one ``(n, d)`` float64 array per set (or one ``n x n`` similarity matrix
    per set with ``kernel="precomputed"``), shaped by the caller
    (:func:`divmeter.inputs.data.vectors.as_vectors`): the metric's
    :meth:`~divmeter.metrics.embedding.VectorMetric.vectors`. Signature: ``emb:precomputed`` in
    place of the model (no ``emb`` field for a precomputed kernel).

    Returns:
        One result per set; a malformed set (a row holding NaN or an infinity, a kernel that is
        not square) gets its :class:`~divmeter.core.errors.InvalidInputError` instead (as
        :func:`divmeter.engine.batch.evaluate` reports a malformed set).

    Raises:
        InvalidInputError: A bad parameter, or an encoder parameter (``model``, ...).

    Example:
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
        >>> r = score_vectors("diameter", [X])[0]
        >>> r.value, r.signature
        (2.0, 'diameter|emb:precomputed|distance:cosine|v:0.1.0')
    """
    metric = get_metric(name).plan(params)
    conflict = metric.encoder_conflict()
    if conflict is not None:
        raise conflict
    out: list[MetricResult | InvalidInputError] = list(metric.vectors(arrays))
    return out


# ---------------------------------------------------------------------------- the metrics
# One definition each: texts are embedded with ``model`` (divmeter.metrics.embedding) and the
# measure runs on the vectors; precomputed vectors go to the measure as given
# (divmeter.score(X, name)).


@register
class SumPairwiseDistance(Geometry):
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

    name = "sum-pairwise-distance"
    citation = f"{CHANDRA} (remote-clique, sum form); {YU}"
    description = "Sum of the pairwise distances of the embeddings"
    params = {**_D, **ENCODER}
    run = staticmethod(_dist_kernel(_k_sum_pairwise))


sum_pairwise_distance = public_function(SumPairwiseDistance)


@register
class HamDiv(Geometry):
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

    name = "hamdiv"
    citation = HU
    description = "Length of a Hamiltonian circuit through the embeddings (greedy or Christofides)"
    params = {**_D, "solver": Param(
        str, choices=("greedy", "christofides"), default="greedy",
        doc="greedy nearest-neighbour circuit from point 0, or Christofides (networkx; the "
        "peer's default)"), **ENCODER}
    run = staticmethod(_k_hamdiv)
    #: the greedy circuit starts at the first response: the order matters
    order_invariant = False


hamdiv = public_function(HamDiv)


@register
class Diameter(Geometry):
    """Diameter: the largest pairwise distance of the embeddings, ``max_{i<j} d(e_i, e_j)``.

    Example:
        >>> diameter(["A cat sleeps.", "Stocks fell."]).value > 0.5
        True
    """

    name = "diameter"
    citation = XIE
    description = "Largest pairwise distance of the embeddings"
    params = {**_D, **ENCODER}
    run = staticmethod(_dist_kernel(_k_diameter))


diameter = public_function(Diameter)


@register
class Bottleneck(Geometry):
    """Bottleneck: the smallest pairwise distance, ``min_{i<j} d(e_i, e_j)`` (0 with a duplicate).

    Example:
        >>> bottleneck(["Same.", "Same.", "Other."]).value < 1e-6
        True
    """

    name = "bottleneck"
    citation = f"{XIE}; {CHANDRA} (remote-edge)"
    description = "Smallest pairwise distance of the embeddings"
    params = {**_D, **ENCODER}
    run = staticmethod(_dist_kernel(_k_bottleneck))


bottleneck = public_function(Bottleneck)


@register
class SumBottleneck(Geometry):
    """SumBottleneck: ``sum_i min_{j != i} d(e_i, e_j)``, each point's nearest-neighbour distance.

    ``reduction="mean"`` divides by ``n`` (then it is ``chamfer`` for the cosine distance).

    Example:
        >>> sum_bottleneck(["Same.", "Same."]).value < 1e-6
        True
    """

    name = "sum-bottleneck"
    citation = XIE
    description = "Sum of each embedding's distance to its nearest other"
    params = {**_D, "reduction": REDUCE, **ENCODER}
    run = staticmethod(_dist_kernel(_k_sum_bottleneck))


sum_bottleneck = public_function(SumBottleneck)


@register
class SumDiameter(Geometry):
    """SumDiameter: ``sum_i max_{j != i} d(e_i, e_j)``, each point's farthest-neighbour distance.

    Example:
        >>> sum_diameter(["Same.", "Same."]).value < 1e-6
        True
    """

    name = "sum-diameter"
    citation = XIE
    description = "Sum of each embedding's distance to its farthest other"
    params = {**_D, "reduction": REDUCE, **ENCODER}
    run = staticmethod(_dist_kernel(_k_sum_diameter))


sum_diameter = public_function(SumDiameter)


@register
class Energy(Geometry):
    """Energy: ``-mean_{i<j} 1 / max(d(e_i, e_j), eps)^gamma``, the (negated) mean pairwise
    energy of equal charges (Velikonivtsev et al. 2024). Always <= 0; closer to 0 = more
    diverse. A duplicate pair contributes ``eps^-gamma`` (1e12 by default) and dominates.

    Example:
        >>> energy(["A cat sleeps.", "Stocks fell."]).value < 0
        True
    """

    name = "energy"
    bounds = (None, 0.0)
    citation = ENERGY
    description = "Negated mean inverse (powered) pairwise distance of the embeddings"
    params = {**_D, "gamma": Param(float, gt=0, default=1.0, doc="exponent of the distance"),
              "eps": Param(float, gt=0, default=1e-12, doc="floor of a distance (duplicates)"),
              **ENCODER}
    run = staticmethod(_dist_kernel(_k_energy))


energy = public_function(Energy)


@register
class SpanCentroid(Geometry):
    """Span to the centroid: the ``percentile``-th percentile (numpy's linear interpolation) of
    the distances of the embeddings to their mean (Cox et al. 2021).

    Example:
        >>> span_centroid(["Same.", "Same."]).value < 1e-6
        True
    """

    name = "span-centroid"
    citation = COX
    description = "Percentile of the embeddings' distances to their centroid"
    params = {**_D, "percentile": Param(float, ge=0, le=100, default=90.0,
                                        doc="percentile of the distances to the centroid"),
              **ENCODER}
    run = staticmethod(_k_span_centroid)
    squares = 0


span_centroid = public_function(SpanCentroid)


@register
class KthNeighborDistance(Geometry):
    """Mean distance of each embedding to its ``k``-th nearest other embedding (``k=1``: the
    nearest, which is ``sum-bottleneck:reduction=mean``). Needs ``k + 1`` responses.

    Example:
        >>> knn_distance(["Same.", "Same."]).reason
        'needs at least 3 responses; got 2'
    """

    name = "kth-neighbor-distance"
    citation = YANG
    description = "Mean distance of each embedding to its k-th nearest other"
    params = {**_D, "k": Param(int, ge=1, cap=10**7, default=2,
                                 doc="which nearest neighbour (1 = nearest)"),
              **ENCODER}
    run = staticmethod(_dist_kernel(_k_knn))

    @staticmethod
    def min_n(p: Mapping[str, Any]) -> int:
        return int(p["k"]) + 1


knn_distance = public_function(KthNeighborDistance)


@register
class ConvexHullVolume(Geometry):
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

    name = "convex-hull-volume"
    citation = YU
    description = "Volume (or area) of the convex hull of the embeddings projected to 3-D (or 2-D)"
    params = {"dims": Param(int, ge=2, le=3, default=3, doc="2 (area) or 3 (volume)"),
              "projection": _projection_param("2-D or 3-D points"), "seed": _seed_param(),
              **ENCODER}
    run = staticmethod(_k_convex_hull)
    squares = 0
    gram = False

    @staticmethod
    def min_n(p: Mapping[str, Any]) -> int:
        return max(int(p["dims"]) + 1, 4 if p["projection"] == "umap" else 0)

    @classmethod
    def fields(cls, p: Mapping[str, Any]) -> dict[str, Any]:
        return _proj_items(p, "dims")


convex_hull_volume = public_function(ConvexHullVolume)


@register
class GeoMeanStd(Geometry):
    """Geometric mean over dimensions of the standard deviation (ddof 1) of the embeddings
    (Lai et al. 2020). A constant dimension's 0 is floored at 1e-12, so one dead dimension
    pulls the value towards 0; the value scales with the vectors.

    Example:
        >>> geo_mean_std(["Same.", "Same."]).value < 1e-11
        True
    """

    name = "geo-mean-std"
    citation = LAI
    description = "Geometric mean of the per-dimension standard deviations of the embeddings"
    params = dict(ENCODER)
    run = staticmethod(_k_geo_mean_std)
    squares = 0
    gram = False


geo_mean_std = public_function(GeoMeanStd)


@register
class SpanMedoid(Geometry):
    """Span to the medoid: the mean distance of the embeddings to the medoid, the embedding
    whose distances to the others sum least (ties: the lowest index; the value does not depend
    on the tie) (Cox et al. 2021).

    Returns:
        MetricResult with ``details["medoid"]``.

    Example:
        >>> span_medoid(["Same.", "Same.", "Same."]).value < 1e-6
        True
    """

    name = "span-medoid"
    citation = COX
    description = "Mean distance of the embeddings to their medoid"
    params = {**_D, **ENCODER}
    run = staticmethod(_k_span_medoid)


span_medoid = public_function(SpanMedoid)


@register
class RenyiEntropy(Geometry):
    """Renyi kernel entropy of order ``alpha``: ``log(sum_i lambda_i^alpha) / (1 - alpha)`` over
    the eigenvalues of ``A = K / tr(K)`` (``K`` symmetrised), in nats, in [0, log n].

    ``alpha = 2`` is ``-log ||A||_F^2`` (no eigendecomposition); otherwise the eigenvalues are
    clipped to ``[eps, 1]`` and renormalised first (``alpha = 1``: von Neumann entropy). With the
    cosine kernel ``exp(renyi-entropy:alpha=q)`` is ``vendi-embedding:q=q`` up to that clipping.

    Example:
        >>> renyi_entropy(["Same.", "Same."]).value < 1e-6
        True
    """

    name = "renyi-entropy"
    citation = RENYI
    description = "Renyi entropy of order alpha of the normalised kernel's eigenvalues"
    params = {"alpha": Param(float, gt=0, default=2.0, doc="order of the Renyi entropy"),
              "kernel": KERNEL,
              "eps": Param(float, gt=0, default=1e-12,
                           doc="eigenvalue floor (eigenvalues clipped to [eps, 1], renormalised)"),
              **ENCODER}
    run = staticmethod(_k_renyi)


renyi_entropy = public_function(RenyiEntropy)


@register
class DCScore(Geometry):
    """DCScore: ``sum_i exp(K_ii / tau) / sum_j exp(K_ij / tau)``, the trace of the row-wise
    softmax of the kernel (Zhu et al. 2025). In [1, n]: 1 for identical responses; with the
    cosine kernel and ``tau = 1`` at most about ``n e / (n - 1 + e)``.

    Example:
        >>> round(dcscore(["Same.", "Same."]).value, 6)
        1.0
    """

    name = "dcscore"
    bounds = (1.0, None)
    citation = DCSCORE
    description = "Trace of the row-wise softmax of the embeddings' kernel"
    params = {"kernel": KERNEL,
              "tau": Param(float, gt=0, default=1.0,
                           doc="softmax temperature (the kernel is divided by it)"),
              **ENCODER}
    run = staticmethod(_k_dcscore)


dcscore = public_function(DCScore)


@register
class LogDeterminant(Geometry):
    """Log-determinant of the kernel, ``log det(K / tau + eps I)`` (``K`` symmetrised; Cholesky,
    else the sign-checked LU determinant): the log-volume the embeddings span (Kulesza & Taskar
    2012). At most ``n log(1 + eps)`` for the cosine kernel; duplicates push it towards
    ``log eps``.

    Example:
        >>> log_determinant(["Same.", "Same."]).value < -10
        True
    """

    name = "log-determinant"
    bounds = (None, None)
    citation = LOGDET
    description = "Log-determinant of the embeddings' kernel plus a diagonal jitter"
    params = {"kernel": KERNEL,
              "tau": Param(float, gt=0, default=1.0, doc="the kernel is divided by it"),
              "eps": Param(float, gt=0, default=1e-6, doc="jitter added to the diagonal"),
              **ENCODER}
    run = staticmethod(_k_logdet)


log_determinant = public_function(LogDeterminant)


@register
class BinnedEntropy(Geometry):
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

    name = "binned-entropy"
    citation = COX
    description = "Entropy of the occupancy of a grid over the embeddings projected to 2-D"
    params = {"bins_x": Param(int, ge=1, cap=1000, default=5, doc="grid columns"),
              "bins_y": Param(int, ge=1, cap=1000, default=5, doc="grid rows"),
              "normalization": Param(str, choices=("effective", "bins", "none"),
                                     default="effective",
                                     doc="divide by log(min(n, bins)) (effective), log(bins), or "
                                     "none (nats)"),
              "projection": _projection_param("2-D points"), "seed": _seed_param(), **ENCODER}
    run = staticmethod(_k_binned_entropy)
    squares = 0

    @staticmethod
    def min_n(p: Mapping[str, Any]) -> int:
        return 4 if p["projection"] == "umap" else 2

    @classmethod
    def fields(cls, p: Mapping[str, Any]) -> dict[str, Any]:
        return _proj_items(p, "bins_x", "bins_y", "normalization")


binned_entropy = public_function(BinnedEntropy)


@register
class GraphEntropy(Geometry):
    """Graph entropy of the complete distance graph: ``sum_i H_i`` with
    ``H_i = -sum_j f_ij log f_ij`` and ``f_ij = d_ij / sum_k d_ik`` (Yu et al. 2022). Each
    ``H_i <= log(n - 1)``; a point at distance 0 from all others has ``H_i = 0``. Needs 3
    responses (with 2 every ``H_i`` is 0).

    Example:
        >>> graph_entropy(["A cat sleeps.", "Stocks fell.", "Rain again."]).value > 0
        True
    """

    name = "graph-entropy"
    citation = YU
    description = "Sum of each embedding's entropy of normalised distances to the others"
    params = {**_D, **ENCODER}
    run = staticmethod(_dist_kernel(_k_graph_entropy))

    @staticmethod
    def min_n(p: Mapping[str, Any]) -> int:
        return 3


graph_entropy = public_function(GraphEntropy)


@register
class MSTDispersion(Geometry):
    """Total edge length of the minimum spanning tree of the embeddings' complete distance graph
    (Prim's algorithm; a duplicate pair is joined by an edge of length 0) (Cox et al. 2021).

    Example:
        >>> mst_dispersion(["Same.", "Same."]).value < 1e-6
        True
    """

    name = "mst-dispersion"
    citation = f"{COX}; {CHANDRA} (remote-tree)"
    description = "Total edge length of the embeddings' minimum spanning tree"
    params = {**_D, **ENCODER}
    run = staticmethod(_dist_kernel(_k_mst))


mst_dispersion = public_function(MSTDispersion)


#: Every geometry measure's definition, by name.
MEASURES: dict[str, type[Geometry]] = {m.name: m for m in (
    SumPairwiseDistance, HamDiv, Diameter, Bottleneck, SumBottleneck, SumDiameter, Energy,
    SpanCentroid, KthNeighborDistance, ConvexHullVolume, GeoMeanStd, SpanMedoid, RenyiEntropy,
    DCScore, LogDeterminant, BinnedEntropy, GraphEntropy, MSTDispersion,
)}
