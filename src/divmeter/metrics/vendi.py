"""The Vendi score with order q, on any kernel or feature matrix, and on n-gram features.

The Vendi score (Friedman & Dieng 2023) of ``n`` items with a positive semi-definite similarity
kernel ``K`` (``K_ii = 1``) is the exponential of the entropy of the eigenvalues of ``K / n``,
which are non-negative and sum to ``trace(K) / n = 1``. Pasarkar & Dieng (2024) generalise the
Shannon entropy to the Renyi entropy of order ``q``; as written in the commonsense
meta-evaluation's appendix A (eq. 2)::

    VS_q = exp( log(sum_i lambda_i ** q) / (1 - q) )

with the limits ``q -> 1`` (``exp(-sum_i lambda_i log lambda_i)``, eq. 1) and ``q -> inf``
(``1 / max_i lambda_i``). ``VS_q`` is the effective number of distinct items: 1 for identical
items, ``n`` for mutually orthogonal ones, whatever ``q``.

Numerics (the same in every function here):

* Eigenvalues come from a symmetric solver (``eigvalsh``), whose absolute error is about
  ``m * eps * lambda_max`` for an ``m x m`` matrix. Eigenvalues below that tolerance (negative
  ones included) are set to 0: they are rounding noise around exact zeros of a rank-deficient
  kernel. Clipping them matters only for ``q < 1``, where ``lambda ** q`` inflates noise
  (``(1e-17) ** 0.5 = 3e-9``, times thousands of zero eigenvalues); with it, the n x n kernel path
  and the d x d dual path agree to ~1e-12 for every q.
* The eigenvalues are **not** renormalised: for a unit-diagonal kernel they already sum to 1 up
  to rounding (the clipped mass is below ``m**2 * eps``), and renormalising would silently turn a
  kernel that is not a similarity (diagonal != 1) into a number. Kernels are checked instead.
* Features are L2-normalised per row (``normalize=True``) so that ``K = X X^T`` is the cosine
  kernel. When there are more items than feature dimensions the d x d matrix ``X^T X / n``
  (same non-zero eigenvalues as ``X X^T / n``) is used, so 10,000+ items cost one d x d
  eigendecomposition.
* An all-zero feature row (an item with no features) has no similarity to anything, not even to
  itself, so the Vendi score's requirement ``k(x, x) = 1`` cannot hold: with ``normalize=True``
  :func:`vendi_from_features` rejects it. (The ``vendi-score`` package keeps such a row as a zero
  row and column of ``K``; the eigenvalues then sum to less than 1 and the number has no
  effective-count meaning.) Metrics decide what an empty item means; ``vendi-ngram`` gives
  responses with no tokens one shared "empty" feature (see :func:`vendi_ngram`).

Reference: Friedman & Dieng 2023, The Vendi Score: A Diversity Evaluation Metric for Machine
Learning (TMLR); Pasarkar & Dieng 2024, Cousins of the Vendi Score (AISTATS); as used for form
(VS-ngram) and content (VS-embed) diversity in Zhang, Peng & Bollegala, Evaluating the Evaluation
of Diversity in Commonsense Generation (appendix A).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from divmeter.backends.device import valid_device
from divmeter.core import memory
from divmeter.core.errors import InvalidInputError
from divmeter.core.memory import NO_STEPS, Steps
from divmeter.core.params import LOWERCASE, MAX_ORDER, Param, tokenizer_param
from divmeter.core.result import MetricResult, make_signature
from divmeter.engine.definition import Metric
from divmeter.engine.public import public_function, register
from divmeter.inputs.text import NgramIndex, get_tokenizer
from divmeter.metrics._common import check_positive

__all__ = [
    "vendi_from_eigenvalues",
    "vendi_from_kernel",
    "vendi_from_features",
    "feature_eigenvalues",
    "ngram_features",
    "VendiNgram",
    "vendi_ngram",
    "vendi_ngram_cost",
    "APPROX",
]

FRIEDMAN2023 = (
    "Friedman & Dieng 2023, The Vendi Score: A Diversity Evaluation Metric for Machine Learning "
    "(TMLR)"
)
PASARKAR2024 = (
    "Pasarkar & Dieng 2024, Cousins of the Vendi Score: A Family of Similarity-Based Diversity "
    "Metrics for Science and Machine Learning (AISTATS)"
)
COMMONSENSE = (
    "Zhang, Peng & Bollegala 2025, Evaluating the Evaluation of Diversity in Commonsense "
    "Generation, appendix A (VS-ngram-q)"
)

_EPS = float(np.finfo(np.float64).eps)


def _check_q(q: Any, metric: str = "the Vendi score") -> float:
    """``q`` must be a real number > 0 (``inf`` allowed)."""
    return check_positive(q, "q", metric)


def _clean_eigenvalues(eigs: np.ndarray) -> np.ndarray:
    """Zero the eigenvalues that are rounding noise (below ``m * eps * max``) or negative."""
    w = np.asarray(eigs, dtype=np.float64).ravel()
    if w.size == 0:
        return w
    top = float(w.max())
    tol = w.size * _EPS * max(top, 0.0)
    return np.where(w > tol, w, 0.0)


def _vendi_q(w: np.ndarray, q: float) -> float:
    """VS_q of cleaned (non-negative) eigenvalues; ``w`` must have a positive entry."""
    p = w[w > 0]
    if q == 1.0:
        return math.exp(float(-(p * np.log(p)).sum()))
    if math.isinf(q):
        return 1.0 / float(p.max())
    if q < 1.0:
        # log(sum p^q) / (1 - q): fine as is.
        return math.exp(math.log(float((p**q).sum())) / (1.0 - q))
    # q > 1: factor out the largest eigenvalue so p^q cannot underflow for large q.
    top = float(p.max())
    s = float(((p / top) ** q).sum())
    return math.exp((q * math.log(top) + math.log(s)) / (1.0 - q))


def vendi_from_eigenvalues(eigs: Sequence[float] | np.ndarray, q: float = 1.0) -> float:
    """Vendi score of order ``q`` from the eigenvalues of ``K / n``.

    Negative and rounding-noise eigenvalues (below ``len(eigs) * eps * max(eigs)``) are set to 0;
    the rest are used as given (not renormalised; for a unit-diagonal kernel they sum to 1).

    Args:
        eigs: Eigenvalues of ``K / n`` for a kernel ``K`` with unit diagonal.
        q: Order of the Renyi entropy, any real ``q > 0`` or ``float("inf")``; ``q = 1`` is the
            Shannon limit (the original Vendi score), ``q = inf`` gives ``1 / max(eigs)``.

    Returns:
        ``VS_q = exp(log(sum lambda**q) / (1 - q))``.

    Raises:
        InvalidInputError: If ``q <= 0``, or the eigenvalues are empty, not finite, or all zero.

    Example:
        >>> vendi_from_eigenvalues([0.5, 0.5])
        2.0
        >>> round(vendi_from_eigenvalues([0.75, 0.25], q=float("inf")), 6)
        1.333333
    """
    q = _check_q(q)
    w = np.asarray(eigs, dtype=np.float64).ravel()
    if w.size == 0:
        raise InvalidInputError("eigenvalues of the Vendi score must not be empty; got 0 values.")
    if not np.isfinite(w).all():
        raise InvalidInputError("eigenvalues of the Vendi score must be finite; got NaN or inf.")
    w = _clean_eigenvalues(w)
    if not (w > 0).any():
        raise InvalidInputError(
            "the Vendi score needs at least one positive eigenvalue; got none (all-zero kernel)."
        )
    return _vendi_q(w, q)


def _eigvalsh(a: np.ndarray) -> np.ndarray:
    return np.linalg.eigvalsh(a)


def vendi_from_kernel(K: np.ndarray, q: float = 1.0) -> float:
    """Vendi score of order ``q`` of a similarity kernel with unit diagonal.

    Args:
        K: Symmetric positive semi-definite ``n x n`` similarity matrix with ``K_ii = 1``
            (diagonal entries must lie in [0, 1]; an entry below 1 is an item that is not fully
            similar to itself, which the Vendi score is not meant for).
        q: Order, any ``q > 0`` or ``inf`` (see :func:`vendi_from_eigenvalues`).

    Returns:
        ``VS_q`` of the eigenvalues of ``K / n``.

    Raises:
        InvalidInputError: If ``K`` is not a finite, square, symmetric matrix with diagonal in
            [0, 1], or is empty, or ``q <= 0``.

    Example:
        >>> round(vendi_from_kernel(np.ones((3, 3))), 12)
        1.0
        >>> round(vendi_from_kernel(np.eye(3), q=0.5), 12)
        3.0
    """
    q = _check_q(q)
    given: Any = K
    K = np.asarray(given.toarray() if sp.issparse(given) else given, dtype=np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise InvalidInputError(f"kernel K must be a square matrix; got shape {K.shape}.")
    n = K.shape[0]
    if n == 0:
        raise InvalidInputError("kernel K must have at least one item; got a 0 x 0 matrix.")
    if not np.isfinite(K).all():
        raise InvalidInputError("kernel K must be finite; got NaN or inf entries.")
    scale = max(1.0, float(np.abs(K).max()))
    if not np.allclose(K, K.T, rtol=0.0, atol=1e-8 * scale):
        raise InvalidInputError("kernel K must be symmetric; got K != K.T.")
    diag = np.diagonal(K)
    if diag.min() < -1e-8 or diag.max() > 1.0 + 1e-8:
        raise InvalidInputError(
            "kernel K must have a unit diagonal (K_ii = k(x_i, x_i) = 1); got diagonal entries "
            f"in [{diag.min():.6g}, {diag.max():.6g}]. Normalise the kernel (K_ij / sqrt(K_ii "
            "K_jj)) or the features first."
        )
    return _vendi_q(_nonzero_or_raise(_clean_eigenvalues(_eigvalsh(K / n))), q)


def _nonzero_or_raise(w: np.ndarray) -> np.ndarray:
    if not (w > 0).any():
        raise InvalidInputError(
            "the Vendi score needs at least one positive eigenvalue; got none (all-zero kernel)."
        )
    return w


def _row_norms(X: Any) -> np.ndarray:
    if sp.issparse(X):
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    else:
        sq = np.einsum("ij,ij->i", X, X)
    return np.sqrt(sq)


def _scale_rows(X: Any, s: np.ndarray) -> Any:
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(s) @ X)
    return X * s[:, None]


def feature_eigenvalues(X: Any, *, path: str = "auto") -> tuple[np.ndarray, str]:
    """Eigenvalues of ``X X^T / n`` for a feature matrix whose rows are already unit (or zero).

    Uses the ``n x n`` kernel ``X X^T / n`` when ``n <= d`` and the ``d x d`` dual
    ``X^T X / n`` otherwise (its non-zero eigenvalues are the same). Private helpers and
    benchmarks use it; inputs are trusted.

    Args:
        X: ``n x d`` array or scipy sparse matrix (float64), rows L2-normalised.
        path: ``"auto"``, ``"kernel"`` or ``"dual"``.

    Returns:
        ``(eigenvalues, path_used)``.
    """
    n, d = X.shape
    use = path if path != "auto" else ("kernel" if n <= d else "dual")
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        G = (X @ X.T) if use == "kernel" else (X.T @ X)
        G = G.toarray()
    else:
        G = X @ X.T if use == "kernel" else X.T @ X
    return _eigvalsh(G / n), use


def vendi_from_features(X: Any, q: float = 1.0, *, normalize: bool = True,
                        device: str | None = None) -> float:
    """Vendi score of order ``q`` of items given as feature vectors, with the cosine kernel.

    ``K = X X^T`` after L2-normalising the rows, so ``K_ij`` is the cosine similarity and
    ``K_ii = 1``. With more items than dimensions (``n > d``) the eigenvalues come from the
    ``d x d`` matrix ``X^T X / n`` (the dual path), so 10,000 items of dimension 384 cost one
    384 x 384 eigendecomposition.

    Args:
        X: ``n x d`` dense array or scipy sparse matrix (e.g. n-gram counts, embeddings).
        q: Order, any ``q > 0`` or ``inf`` (see :func:`vendi_from_eigenvalues`).
        normalize: L2-normalise each row first (cosine kernel). With ``False`` the rows are used
            as given and must already have unit norm (the caller guarantees ``K_ii = 1``).
        device: ``None``/``cpu`` (numpy), or a torch device (``cuda``, ``auto``...): the Gram
            matrix and its eigenvalues are computed there in float64 when the smaller side has
            at least 256 rows (:mod:`divmeter.backends.torch_linalg`); the value agrees with
            the CPU's to rounding.

    Returns:
        ``VS_q`` of the eigenvalues of ``X X^T / n``.

    Raises:
        InvalidInputError: If ``X`` is not a finite 2-D matrix with at least one row, if
            ``normalize`` is true and a row is all zeros (an item with no features cannot have
            ``k(x, x) = 1``; drop it or give it a feature), or if ``q <= 0``.

    Example:
        >>> vendi_from_features(np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 5.0]]), q=float("inf"))
        1.5
    """
    q = _check_q(q)
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        finite = bool(np.isfinite(X.data).all())
    else:
        X = np.asarray(X, dtype=np.float64)
        finite = bool(np.isfinite(X).all()) if X.ndim == 2 else True
    if X.ndim != 2:
        raise InvalidInputError(f"features X must be a 2-D matrix (items x dims); got {X.ndim}-D.")
    if X.shape[0] == 0:
        raise InvalidInputError("features X must have at least one row (item); got 0.")
    if not finite:
        raise InvalidInputError("features X must be finite; got NaN or inf entries.")
    if normalize:
        norms = _row_norms(X)
        zero = np.flatnonzero(norms == 0)
        if zero.size:
            raise InvalidInputError(
                f"features X row {int(zero[0])} is all zeros ({zero.size} such rows): an item "
                "with no features has no cosine similarity, not even to itself, so the Vendi "
                "score is undefined for it; drop it or give it a feature."
            )
        X = _scale_rows(X, 1.0 / norms)
    from divmeter.backends import torch_linalg

    on = torch_linalg.use_device(device, min(X.shape))
    if on is not None:
        w, _ = torch_linalg.feature_eigenvalues(X, on)
    else:
        w, _ = feature_eigenvalues(X)
    return _vendi_q(_nonzero_or_raise(_clean_eigenvalues(w)), q)


def ngram_features(index: NgramIndex, n_max: int) -> tuple[sp.csr_matrix, dict[str, int]]:
    """Unit-norm n-gram feature rows whose Gram matrix is the ``vendi-ngram`` kernel.

    Row ``i`` is the concatenation over ``n = 1..n_max`` of the L2-normalised count vector of the
    n-grams of text ``i``, divided by ``sqrt(r_i)`` where ``r_i`` is the number of orders in which
    text ``i`` has at least one n-gram. When every text has n-grams of every order,
    ``r_i = n_max`` and ``Z Z^T`` is exactly the mean of the per-order cosine kernels (the paper's
    kernel, and ``vendi-score``'s ``ngram_vendi_score``). A shorter text gets a unit diagonal too:
    its similarities are cosines over the orders it has. Texts with no token at all share one
    extra "empty" feature (identical to each other, orthogonal to every other text).

    The matrix is a ``scipy.sparse.csr_matrix`` built from the (text, n-gram id, count) triples
    of :class:`~divmeter.inputs.text.NgramIndex`, so its products cost in proportion to the shared
    n-grams, not to texts x vocabulary (and use no multi-threaded BLAS, which is slow on small
    matrices when cores are shared).

    Args:
        index: The n-gram index of the texts.
        n_max: Highest order (orders ``1..n_max``).

    Returns:
        ``(Z, info)``: the ``n x D`` float64 CSR feature matrix with unit rows, and counts
        ``{"short": texts missing some order, "empty": texts with no token}``.

    Example:
        >>> idx = NgramIndex.from_tokens([["a", "b"], ["a"]])
        >>> Z, info = ngram_features(idx, 2)
        >>> np.round((Z @ Z.T).toarray(), 4).tolist(), info
        ([[1.0, 0.5], [0.5, 1.0]], {'short': 1, 'empty': 0})
    """
    rows, cols, vals, width, info = _ngram_triples(index, n_max)
    return sp.csr_matrix((vals, (rows, cols)), shape=(index.n_docs, width)), info


def _ngram_triples(
    index: NgramIndex, n_max: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, dict[str, int]]:
    """(text, feature, value) triples of :func:`ngram_features`, sorted by text then feature."""
    n = index.n_docs
    keys: list[tuple[np.ndarray, np.ndarray]] = []
    widths: list[int] = []
    base = 0
    for k in range(1, n_max + 1):
        ids, doc, m = index.order(k)
        if m == 0:
            continue
        # One key space for all orders: text-major, then order, then n-gram id.
        keys.append((doc, base + ids))
        widths.append(m)
        base += m
    if keys:
        doc_all = np.concatenate([d for d, _ in keys])
        col_all = np.concatenate([c for _, c in keys])
        key, counts = np.unique(doc_all * np.int64(base) + col_all, return_counts=True)
        d, j = np.divmod(key, np.int64(base))
    else:
        d = j = np.zeros(0, dtype=np.int64)
        counts = np.zeros(0, dtype=np.int64)
    c = counts.astype(np.float64)
    # Order of each feature column, then the squared norm of each (text, order) block.
    bounds = np.cumsum(widths)
    order = np.searchsorted(bounds, j, side="right")
    n_orders = len(widths)
    sq = np.bincount(d * n_orders + order, weights=c * c, minlength=n * n_orders)
    norms = np.sqrt(sq)
    present = (sq > 0).reshape(n, n_orders).sum(axis=1) if n_orders else np.zeros(n, np.int64)
    v = c / norms[d * n_orders + order]
    empty = present == 0
    width = base
    if empty.any():
        e = np.flatnonzero(empty)
        d = np.concatenate([d, e])
        j = np.concatenate([j, np.full(e.size, width, dtype=np.int64)])
        v = np.concatenate([v, np.ones(e.size)])
        width += 1
        present = np.where(empty, 1, present)
    v = v / np.sqrt(present[d])
    info = {"short": int(((present < n_max) & ~empty).sum()), "empty": int(empty.sum())}
    return d, j, v, width, info


def _ngram_csr(index: NgramIndex, n_max: int) -> tuple[sp.csr_matrix, dict[str, int]]:
    """:func:`ngram_features` built one order at a time (the same matrix, bit for bit).

    Only one order's occurrence arrays and one order's (text, n-gram, count) block exist at
    once, and the blocks go straight into CSR form (sorted by text, then n-gram), so the peak
    stays near the size of the result instead of several copies of every order's triples.
    """
    n = index.n_docs
    blocks: list[sp.csr_matrix] = []
    present = np.zeros(n, dtype=np.int64)
    for _, ids, doc, m in index.iter_orders(n_max):
        if m == 0:
            continue
        key, counts = np.unique(doc * np.int64(m) + ids, return_counts=True)
        d, j = np.divmod(key, np.int64(m))
        del key
        c = counts.astype(np.float64)
        sq = np.bincount(d, weights=c * c, minlength=n)
        present += sq > 0
        c /= np.sqrt(sq)[d]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(d, minlength=n), out=indptr[1:])
        blocks.append(sp.csr_matrix((c, j.astype(np.int32), indptr), shape=(n, m)))
        del d, j, c, counts
    empty = present == 0
    if empty.any():
        e = np.flatnonzero(empty)
        blocks.append(sp.csr_matrix((np.ones(e.size), (e, np.zeros(e.size, np.int64))),
                                    shape=(n, 1)))
        present[e] = 1
    Z = sp.csr_matrix(sp.hstack(blocks, format="csr"))
    blocks.clear()
    Z.data /= np.repeat(np.sqrt(present), np.diff(Z.indptr))
    info = {"short": int(((present < n_max) & ~empty).sum()), "empty": int(empty.sum())}
    return Z, info


# Above this many (text, text) products, the Gram matrix goes through scipy.sparse instead.
_PAIR_LIMIT = 2_000_000


def _gram_from_triples(
    rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n: int
) -> np.ndarray | None:
    """``Z Z^T`` (n x n, dense) from the triples of a sparse ``Z``, by pairing entries per column.

    Returns ``None`` when the number of pairs exceeds ``_PAIR_LIMIT`` (caller uses scipy).
    """
    order = np.argsort(cols, kind="stable")
    c, r, v = cols[order], rows[order], vals[order]
    new = np.empty(c.size, dtype=bool)
    new[:1] = True
    np.not_equal(c[1:], c[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    sizes = np.diff(starts, append=c.size)
    if int((sizes * sizes).sum()) > _PAIR_LIMIT:
        return None
    gsz = np.repeat(sizes, sizes)  # size of the column group of each entry
    gst = np.repeat(starts, sizes)  # start of that group
    left = np.repeat(np.arange(c.size), gsz)
    first = np.cumsum(gsz) - gsz
    right = np.repeat(gst, gsz) + (np.arange(left.size) - np.repeat(first, gsz))
    K = np.bincount(r[left] * n + r[right], weights=v[left] * v[right], minlength=n * n)
    return K.reshape(n, n)


# --------------------------------------------------------------------------------------------
# Large sets: exact with bounded memory, or a named approximation


#: Sets with more responses than this take the bounded exact path below (duplicate responses
#: merged, the smaller of the kernel and the dual, the Gram matrix built in row blocks);
#: smaller sets keep the original path, so their values are unchanged bit for bit.
_LARGE = 2000

#: Approximation modes of ``vendi-ngram`` (``none`` = exact).
APPROX = ("none", "nystroem", "slq")


def _merge_duplicate_rows(Z: sp.csr_matrix) -> sp.csr_matrix:
    """Replace the ``m`` copies of a row ``z`` by one row ``sqrt(m) z``.

    ``Z^T Z = sum_i z_i z_i^T`` is unchanged, so ``Z Z^T / n`` keeps its non-zero eigenvalues
    (exact, with ``n`` the original number of rows).
    """
    Z.sort_indices()
    seen: dict[bytes, int] = {}
    keep: list[int] = []
    mult: list[int] = []
    ptr, ind, val = Z.indptr, Z.indices, Z.data
    for i in range(Z.shape[0]):
        a, b = ptr[i], ptr[i + 1]
        key = ind[a:b].tobytes() + val[a:b].tobytes()
        u = seen.setdefault(key, len(keep))
        if u == len(keep):
            keep.append(i)
            mult.append(1)
        else:
            mult[u] += 1
    if len(keep) == Z.shape[0]:
        return Z
    return sp.csr_matrix(sp.diags(np.sqrt(np.asarray(mult, dtype=np.float64))) @ Z[keep])


def _merge_single_columns(Z: sp.csr_matrix) -> sp.csr_matrix:
    """Merge the columns that have one non-zero entry (n-grams of one row only) per row.

    Such columns add ``v^2`` to ``(Z Z^T)_ii`` and nothing else, so one column
    ``sqrt(sum v^2) e_i`` per row gives the same ``Z Z^T`` (exact) with far fewer columns,
    which makes the ``D x D`` dual usable more often.
    """
    n, width = Z.shape
    df = np.bincount(Z.indices, minlength=width)
    single = df[Z.indices] == 1
    if not single.any():
        return Z
    row = np.repeat(np.arange(n), np.diff(Z.indptr))
    shared = np.flatnonzero(df > 1)
    remap = np.full(width, -1, dtype=np.int64)
    remap[shared] = np.arange(shared.size)
    sq = np.bincount(row[single], weights=Z.data[single] ** 2, minlength=n)
    own = np.flatnonzero(sq > 0)
    rows = np.concatenate([row[~single], own])
    cols = np.concatenate([remap[Z.indices[~single]], shared.size + np.arange(own.size)])
    vals = np.concatenate([Z.data[~single], np.sqrt(sq[own])])
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, shared.size + own.size))


#: Columns shared by at least this many rows go into a dense block multiplied with BLAS: one
#: such column costs ``df^2`` sparse products (about 40 ns each in scipy) against ``2 m^2`` dense
#: flops (about 2.5 ms at m = 10,000), which break even near 200.
_DENSE_DF = 200


def _split_columns(A: sp.csr_matrix) -> tuple[np.ndarray, sp.csr_matrix]:
    """``A`` as a dense block of its most shared columns (``df >= _DENSE_DF``, at most
    ``4 * BLOCK_BYTES`` of them) and a sparse rest, so that ``A A^T = D D^T + R R^T``."""
    from divmeter.core.memory import BLOCK_BYTES

    m, d = A.shape
    df = np.bincount(A.indices, minlength=d)
    top = np.argsort(-df, kind="stable")[: max(0, 4 * BLOCK_BYTES // (8 * max(m, 1)))]
    dense = np.sort(top[df[top] >= _DENSE_DF])
    slot = np.full(d, -1, dtype=np.int64)
    slot[dense] = np.arange(dense.size)
    row = np.repeat(np.arange(m), np.diff(A.indptr))
    col = slot[A.indices]
    sel = col >= 0
    D = np.zeros((m, dense.size))
    D[row[sel], col[sel]] = A.data[sel]
    keep = ~sel
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(row[keep], minlength=m), out=indptr[1:])
    R = sp.csr_matrix((A.data[keep], A.indices[keep], indptr), shape=(m, d))
    return D, R


def _gram_blocks(A: sp.csr_matrix, dtype: Any = np.float64,
                 deflate: tuple[np.ndarray, np.ndarray] | None = None,
                 steps: Steps = NO_STEPS) -> np.ndarray:
    """The lower triangle of ``A A^T`` (minus ``V diag(vals) V^T`` when ``deflate = (vals,
    V)``), built in float64 row blocks of at most ``BLOCK_BYTES`` (no sparse n x n copy) and
    stored as ``dtype``: the most shared columns by a dense product, the rest by a sparse one.
    Rows ``a:b`` are computed against rows ``:b`` only (half the products); the entries above
    the diagonal are left unset, for :func:`~divmeter.core.linalg.eigvalsh_inplace`. ``steps`` is
    told the rows done after each block (progress only)."""
    from divmeter.core.memory import BLOCK_BYTES

    m = A.shape[0]
    G = np.empty((m, m), dtype=dtype)
    D, R = _split_columns(A)
    RT = sp.csc_matrix(R.T)
    step = max(1, BLOCK_BYTES // (8 * max(m, 1)))
    steps.stage("Gram rows", m)
    for a in range(0, m, step):
        b = min(a + step, m)
        block = (R[a:b] @ RT[:, :b]).toarray()
        if D.shape[1]:
            block += D[a:b] @ D[:b].T
        if deflate is not None:
            vals, vecs = deflate
            block -= (vecs[a:b] * vals) @ vecs[:b].T
        G[a:b, :b] = block
        steps(b)
    steps.stage(f"eigenvalues of a {m:,} x {m:,} matrix")
    return G


def _reduced_features(Z: sp.csr_matrix) -> tuple[sp.csr_matrix, str]:
    """Exact reduction of ``Z`` (duplicate rows, single-row columns) and the smaller side."""
    Zr = _merge_single_columns(_merge_duplicate_rows(Z))
    return Zr, ("kernel" if Zr.shape[0] <= Zr.shape[1] else "dual")


#: ``dtype`` of the exact path: the matrix that is decomposed (see :func:`vendi_ngram`).
DTYPES = ("float64", "float32")

#: dtype=float32: the largest eigenpairs computed in float64 and deflated before rounding.
_DEFLATE = 8

#: dtype=float32: groups of fewer responses than this are decomposed in float64 (cheap).
_FLOAT32_MIN = 400


def vendi_ngram_bytes(Zr: sp.csr_matrix, path: str, dtype: str = "float64") -> tuple[int, str]:
    """Bytes of the dense matrix the exact large-set path decomposes, and what it is."""
    m = Zr.shape[0] if path == "kernel" else Zr.shape[1]
    size = np.dtype(dtype).itemsize
    kind = f"{dtype} {path}" if dtype != "float64" else path
    return size * m * m, f"a {m:,} x {m:,} {kind} matrix"


def _gram_operator(A: sp.csr_matrix, scale: float = 1.0) -> tuple[Any, Any]:
    """``A A^T / scale`` as a scipy ``LinearOperator`` (two sparse products per vector, no
    ``m x m`` matrix), and its product function."""
    from scipy.sparse.linalg import LinearOperator

    m = A.shape[0]
    AT = sp.csr_matrix(A.T)

    def matvec(x: np.ndarray) -> np.ndarray:
        return np.asarray(A @ (AT @ x)) / scale

    return LinearOperator((m, m), matvec=matvec, matmat=matvec, dtype=np.float64), matvec


def _top_pairs(A: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest eigenpairs of ``A A^T`` in float64 (ARPACK to machine precision)."""
    from scipy.sparse.linalg import eigsh

    op, _ = _gram_operator(A)
    vals, vecs = eigsh(op, k=k, which="LA", tol=0.0,
                       v0=np.random.default_rng(0).standard_normal(A.shape[0]))
    return vals, vecs


def _group_eigenvalues(A: sp.csr_matrix, dtype: str, device: str | None = None,
                       steps: Steps = NO_STEPS) -> np.ndarray:
    """Eigenvalues of ``A A^T`` (dense, decomposed in place).

    ``float32`` (for groups of at least ``_FLOAT32_MIN`` rows): the ``_DEFLATE`` largest
    eigenpairs are found in float64 (ARPACK, to machine precision) and subtracted in float64
    before the matrix is rounded to float32, so the rounding errs in proportion to the next
    eigenvalue instead of the largest (on n-gram kernels the largest carries the words every
    response shares and is 30 to 90 times the next). The ``_DEFLATE`` eigenvalues of smallest
    magnitude of the deflated matrix (the removed directions, now near 0) are dropped and the
    float64 ones put back. The float32 solver shifts every eigenvalue by about the same small
    amount (their sum misses the trace by ~1e-7 relative on these kernels); the trace of the
    deflated matrix is known exactly in float64, so that common shift is removed. Measured
    against float64 on Tevet-built corpora (``benchmarks/results_bench_vendi_scale.md``).
    """
    from divmeter.core.linalg import eigvalsh_inplace

    m = A.shape[0]
    if device is not None:  # Gram matrix and eigenvalues on a torch device (issue 23)
        from divmeter.backends import torch_linalg

        return torch_linalg.gram_eigenvalues(A, device, dtype)
    if dtype == "float64" or m < _FLOAT32_MIN:
        return eigvalsh_inplace(_gram_blocks(A, steps=steps))
    from scipy.sparse.linalg import ArpackNoConvergence

    try:
        vals, vecs = _top_pairs(A, _DEFLATE)
    except ArpackNoConvergence:  # (not seen on n-gram kernels) float64 is exact anyway
        return eigvalsh_inplace(_gram_blocks(A, steps=steps))
    trace = float(A.multiply(A).sum()) - float(vals.sum())
    w = eigvalsh_inplace(_gram_blocks(A, np.float32, (vals, vecs), steps)).astype(np.float64)
    w = w[np.sort(np.argsort(np.abs(w), kind="stable")[_DEFLATE:])]
    w += (trace - w.sum()) / w.size
    return np.concatenate((w, vals))


def _exact_large(holder: list[sp.csr_matrix], n: int, dtype: str = "float64",
                 device: str | None = None) -> tuple[np.ndarray, str]:
    """Eigenvalues of ``Z Z^T / n`` by the bounded exact path (memory-checked first); ``Z`` is
    taken out of ``holder`` so that it is freed once reduced. ``device``: a torch device for
    the groups of at least ``DEVICE_MIN_ITEMS`` rows (:mod:`divmeter.backends.torch_linalg`)."""
    Zr, path = _reduced_features(holder.pop())
    needed, what = vendi_ngram_bytes(Zr, path, dtype)
    hint = ("use vendi-ngram:dtype=float32 (half the memory) or vendi-ngram:approx=slq"
            if dtype == "float64" else "use vendi-ngram:approx=slq")
    memory.check("vendi-ngram", needed, what, hint=hint)
    m = Zr.shape[0] if path == "kernel" else Zr.shape[1]
    steps = memory.announce(vendi_ngram_cost(n, m, what, needed))
    A = Zr if path == "kernel" else sp.csr_matrix(Zr.T)
    del Zr
    parts: list[np.ndarray] = []
    blocks = _components(A)
    single = [b[0] for b in blocks if b.size == 1]  # a 1 x 1 block: its squared row norm
    if single:
        parts.append(np.asarray(A[single].multiply(A[single]).sum(axis=1)).ravel())
    for block in (b for b in blocks if b.size > 1):
        on = device if device is not None and block.size >= _device_min() else None
        parts.append(_group_eigenvalues(A[block], dtype, on, steps))
    return np.concatenate(parts) / n, path


def _device_min() -> int:
    from divmeter.backends.torch_linalg import DEVICE_MIN_ITEMS

    return DEVICE_MIN_ITEMS


def _components(A: sp.csr_matrix) -> list[np.ndarray]:
    """Row groups of ``A`` that share no column with each other: ``A A^T`` is block diagonal
    over them, so its eigenvalues are the union of the blocks' (exact, and far cheaper when
    responses fall into groups with no n-gram in common)."""
    from scipy.sparse.csgraph import connected_components

    m, d = A.shape
    if m and int(np.bincount(A.indices, minlength=d).max(initial=0)) == m:
        return [np.arange(m)]  # a column every row has: one group (no graph needed)
    pattern = sp.csr_matrix((np.ones(A.nnz), A.indices, A.indptr), shape=(m, d))
    graph = sp.bmat([[None, pattern], [pattern.T, None]], format="csr")
    count, labels = connected_components(graph, directed=False)
    if count == 1:
        return [np.arange(m)]
    rows = labels[:m]
    order = np.argsort(rows, kind="stable")
    cuts = np.flatnonzero(np.diff(rows[order])) + 1
    return [g for g in np.split(order, cuts) if g.size]


def _nystroem(Z: sp.csr_matrix, k: int, seed: int) -> np.ndarray:
    """Eigenvalues of the Nystroem approximation ``C W^+ C^T`` of ``K = Z Z^T``, summing to 1.

    ``k`` landmark rows ``L`` are drawn uniformly without replacement (``seed``);
    ``W = Z_L Z_L^T``, ``C = Z Z_L^T``. The non-zero eigenvalues of ``C W^+ C^T`` are those of
    ``W^{+1/2} C^T C W^{+1/2}`` (``k x k``); ``C^T C`` is accumulated in row blocks, so the
    memory is ``O(k^2 + k B)``. The approximation is the Gram matrix of the rows projected on
    the span of the landmarks; the part of each row outside that span is lost, so the
    eigenvalues are renormalised to sum to 1 (rather than divided by ``n``).
    """
    n = Z.shape[0]
    k = min(k, n)
    landmarks = np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False))
    ZL = sp.csc_matrix(Z[landmarks].T)
    step = max(1, memory.BLOCK_BYTES // (8 * k))
    CtC = np.zeros((k, k))
    for a in range(0, n, step):
        C = (Z[a : a + step] @ ZL).toarray()
        CtC += C.T @ C
    W = (Z[landmarks] @ ZL).toarray()
    wv, U = np.linalg.eigh(W)
    tol = k * _EPS * max(float(wv.max()), 0.0)
    keep = wv > tol
    P = U[:, keep] / np.sqrt(wv[keep])
    M = P.T @ CtC @ P
    w = np.linalg.eigvalsh((M + M.T) / 2.0)
    w = np.clip(w, 0.0, None)
    return np.asarray(w / w.sum())


#: Below this many rows SLQ decomposes the matrix exactly (the estimate would cost more).
_SLQ_DENSE = 200


def _slq(Z: sp.csr_matrix, n: int, probes: int, steps: int, seed: int
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Deflated stochastic Lanczos quadrature of ``A = Z Z^T / n``.

    The ``probes`` largest eigenvalues of ``A`` are computed exactly (Lanczos, ARPACK) and
    deflated: they carry the responses' shared content, and left in they dominate the variance
    of the trace estimate. On the rest, ``probes`` Rademacher vectors (``seed``) projected off
    the top eigenvectors each run ``steps`` Lanczos steps (all probes in lockstep: each step is
    two sparse-times-dense products, no reorthogonalisation). For a probe ``v`` with
    tridiagonal ``T = U diag(theta) U^T``, ``v^T f(A) v ~ |v|^2 sum_j U_0j^2 f(theta_j)``
    (Gauss quadrature; Ubaru, Chen & Saad 2017), and the trace of ``f`` on the deflated part is
    the mean over probes (Hutchinson). Memory ``O(nnz(Z) + n probes)``.

    Returns:
        ``(top, theta, tau)``: the exact top eigenvalues, the ``probes x m`` Ritz values (clipped
        at 0) and their weights ``|v|^2 U_0j^2`` (each row sums to ``|v|^2``).
    """
    from scipy.sparse.linalg import eigsh

    dim = Z.shape[0]  # rows of Z (after merging duplicates: fewer than n)
    if dim <= max(_SLQ_DENSE, 2 * probes + 2):
        w = _eigvalsh((Z @ sp.csr_matrix(Z.T)).toarray() / n)
        return np.clip(w, 0.0, None), np.zeros((0, 1)), np.zeros((0, 1))
    op, matvec = _gram_operator(Z, n)
    v0 = np.random.default_rng(seed).standard_normal(dim)
    top, vec = eigsh(op, k=probes, which="LA", v0=v0)

    def deflate(x: np.ndarray) -> np.ndarray:
        return np.asarray(x - vec @ (vec.T @ x))

    rng = np.random.default_rng(seed)
    cur = deflate(rng.choice(np.array([-1.0, 1.0]), size=(dim, probes)))
    size = np.einsum("ij,ij->j", cur, cur)
    cur /= np.sqrt(size)
    prev = np.zeros_like(cur)
    alpha = np.zeros((steps, probes))
    beta = np.zeros((steps, probes))
    b_prev = np.zeros(probes)
    m = steps
    for j in range(steps):
        w = deflate(matvec(cur))
        a = np.einsum("ij,ij->j", w, cur)
        w -= cur * a + prev * b_prev
        b = np.sqrt(np.einsum("ij,ij->j", w, w))
        alpha[j], beta[j] = a, b
        if (b <= 1e-12 * max(float(np.abs(alpha[: j + 1]).max()), _EPS)).any():
            m = j + 1  # an invariant subspace for some probe: its quadrature is exact here
            break
        prev, cur, b_prev = cur, w / b, b
    theta = np.zeros((probes, m))
    tau = np.zeros((probes, m))
    for p in range(probes):
        T = np.diag(alpha[:m, p]) + np.diag(beta[: m - 1, p], 1) + np.diag(beta[: m - 1, p], -1)
        th, U = np.linalg.eigh(T)
        theta[p], tau[p] = np.clip(th, 0.0, None), size[p] * U[0] ** 2
    return np.clip(top, 0.0, None), theta, tau


def _slq_vendi(top: np.ndarray, theta: np.ndarray, tau: np.ndarray, q: float) -> float:
    """``VS_q`` from :func:`_slq`: the exact top eigenvalues plus the quadrature of the rest
    (``q = inf``: the largest eigenvalue, exact)."""
    if math.isinf(q):
        return 1.0 / float(max(top.max(), theta.max(initial=0.0)))

    def f(x: np.ndarray) -> np.ndarray:
        pos = x > 0
        safe = np.where(pos, x, 1.0)
        return np.where(pos, -x * np.log(safe) if q == 1.0 else safe**q, 0.0)

    total = float(f(top).sum()) + (float((tau * f(theta)).sum(axis=1).mean())
                                   if theta.size else 0.0)
    if q == 1.0:
        return math.exp(total)
    return math.exp(math.log(total) / (1.0 - q))


def _nystroem_bytes(n: int, k: int) -> tuple[int, str]:
    from divmeter.core.memory import BLOCK_BYTES

    k = min(k, n)
    return 8 * 4 * k * k + 2 * BLOCK_BYTES, f"{k:,} x {k:,} Nystroem matrices"


#: Which approximate mode each of its size parameters belongs to, and their defaults.
_APPROX_PARAMS = {"k": (("nystroem",), 1000), "probes": (("slq",), 16), "steps": (("slq",), 30),
                  "seed": (("nystroem", "slq"), 0), "dtype": (("none",), "float64"),
                  "device": (("none",), "cpu")}


def _approx_relation(name: str) -> Any:
    """A parameter of the approximate modes set while another mode (or exact) is chosen would be
    silently ignored: it is an error instead (``relation`` of
    :class:`~divmeter.core.params.Param`)."""
    modes, default = _APPROX_PARAMS[name]

    def rel(value: Any, p: Any) -> str | None:
        if value == default or p["approx"] in modes:
            return None
        return (f"applies to approx={' or '.join(modes)} only; got {name}={value!r} with "
                f"approx={p['approx']!r}.")

    return rel


@register
class VendiNgram(Metric):
    """Vendi score of order ``q`` of a response set with an n-gram cosine kernel (VS-ngram-q).

    The kernel is the mean over ``n = 1..n_max`` of the cosine similarities of the responses'
    n-gram count vectors (``K = mean_n X_n X_n^T`` with L2-normalised rows), and
    ``VS_q = exp(H_q(eigenvalues of K / n))`` with the Renyi entropy of order ``q`` (the
    commonsense meta-evaluation, appendix A, eq. 1 and 2; see the module docstring for q = 1
    and q = inf). The value is the effective number of distinct responses: 1 for identical
    responses, ``n`` when no two share any n-gram.

    Short responses: the paper's kernel has ``K_ii = 1`` only when response ``i`` has n-grams of
    every order. A response with fewer than ``n_max`` tokens lacks some orders; here its
    similarities are the cosines over the orders it has (its row of the concatenated per-order
    features is renormalised), so ``K_ii = 1`` and identical short responses still score 1.
    The ``vendi-score`` package (``text_utils.ngram_vendi_score``, v0.0.3) leaves those
    orders as zero rows instead (``K_ii < 1``, eigenvalues summing to less than 1), which gives,
    e.g., 1.41 for a single one-word response; the two agree whenever every response has at
    least ``n_max`` tokens. Responses with no token share one "empty" feature (identical to each
    other, orthogonal to the rest). ``vendi-score`` also ignores ``q`` in ``ngram_vendi_score``
    (it always computes q = 1); here ``q`` is honoured.

    Exact computation (``approx="none"``): eigenvalues come from the ``n x n`` kernel, or from
    the ``D x D`` dual ``Z^T Z / n`` when there are more responses than distinct n-grams
    (``D``). Above 2,000 responses the bounded path is taken, still exact: the ``m`` copies of
    a duplicate response become one feature row scaled by ``sqrt(m)``, the n-grams of a single
    response are merged into one feature per response (both leave the non-zero eigenvalues
    unchanged), groups of responses sharing no n-gram with the rest are decomposed apart (the
    kernel is block diagonal), and the lower triangle of the smaller of kernel and dual is built
    in row blocks (the most shared n-grams by a dense product) and decomposed in place by
    LAPACK's two-stage solver (:mod:`divmeter.core.linalg`). The features are built one n-gram order
    at a time, so their peak stays near the size of the feature matrix.

    Its size is checked against the memory limit first (:mod:`divmeter.core.memory`); above it a
    :class:`~divmeter.core.memory.MemoryLimitError` names the estimate and ``--max-memory``.
    The size is known once the set's feature matrix (linear in its n-grams) is built, so the
    metric checks it and announces the set's cost (:func:`vendi_ngram_cost`) itself, set by set
    (each named in the note), and reports its progress over the Gram rows and the eigenvalue
    stage.

    ``dtype="float32"`` (signature ``dtype:float32``) decomposes that matrix in float32: half
    the memory, and 33-45 s instead of 65 s at 10,000 documents of 200 words here. The 8
    largest eigenpairs are computed in float64 (ARPACK) and deflated before rounding, and the
    common shift of the float32 eigenvalues is removed with the exact trace, which keeps the
    value within about 1e-7 relative of float64 (measured at 3,000 and 10,000 documents of 200
    words and on short Tevet responses: ``benchmarks/results_bench_vendi_scale.md``;
    ``tests/test_vendi_scale.py`` checks 1e-6 for q = 0.5, 1, 2 and inf). Groups of fewer than
    400 responses are decomposed in float64.
    Every order ``q`` is a function of the same eigenvalues, so all work on every path.

    Approximate computation, for sets too large for the exact path (the signature says which):

    * ``approx="slq"`` (``approx:slq|probes:P|steps:M|seed:S``): deflated stochastic Lanczos
      quadrature on the sparse features: the ``P`` largest eigenvalues exactly (ARPACK), the
      trace of ``f`` over the rest from ``P`` Rademacher probes and ``M`` Lanczos steps
      (memory ``O(nnz + n P)``, time ``O(nnz P M)``); ``f(lambda) = -lambda log lambda`` for
      q = 1 and ``lambda^q`` otherwise, then exponentiated; ``q = inf`` is exact. Sets of at
      most 200 distinct responses are decomposed exactly. Measured on 5,000 and 10,000
      documents of 200 words (``benchmarks/results_bench_vendi_scale.md``): q = inf exact to
      1e-12, q = 0.5 within 0.3%, q = 1 within about 1% (P = 16 or 32, M = 30); on 233 short
      random responses q = 1 was 5% off (``tests/test_memory.py``): raise ``probes`` there.
    * ``approx="nystroem"`` (``approx:nystroem|k:K|seed:S``): the Nystroem approximation of
      the kernel from ``k`` landmark responses drawn uniformly with ``seed``, its eigenvalues
      renormalised to sum to 1; ``O(k^2)`` memory. It keeps what the responses share with the
      landmarks and drops the rest, so ``VS_q <= k`` and it suits redundant sets (score well
      below ``k``); on diverse sets it underestimates badly (see the benchmark).

    Args:
        responses: The response set.
        q: Order of the Renyi entropy: any real ``q > 0`` or ``inf`` (0.5, 1 and inf in the
            paper).
        n_max: Highest n-gram order of the kernel (orders ``1..n_max``).
        tokenizer: ``tevet``, ``whitespace`` or ``word``.
        lowercase: Lowercase before tokenizing.
        approx: ``none`` (exact), ``slq`` or ``nystroem`` (approximate, for very large sets).
        k: Number of landmark responses of ``approx="nystroem"``.
        probes: Random probe vectors of ``approx="slq"``.
        steps: Lanczos steps per probe of ``approx="slq"``.
        seed: Seed of the landmarks or probes of the approximate modes.
        dtype: ``float64`` (default) or ``float32``: precision of the exact decomposition
            (exact mode only).
        device: ``cpu`` (default: the numpy/LAPACK path), ``auto``, ``cuda``, ``cuda:N`` or
            ``mps``: the exact path's Gram matrices and eigenvalues are computed there with
            torch, for groups of at least 256 responses (smaller ones stay on the CPU), in
            ``dtype``. float64 agrees with the CPU to rounding (checked to 1e-9 relative), so
            the device is not in the signature (exact mode only).
            (Each of ``k``, ``probes``, ``steps``, ``seed`` set to a non-default value under
            another mode is an error, not silently ignored.)

    Returns:
        MetricResult with ``details``: ``eigenvalues`` (positive eigenvalues of ``K / n``,
        descending; VS for another q is :func:`vendi_from_eigenvalues` of them), ``path``
        (``kernel``, ``dual``, ``nystroem`` or ``slq``; for ``slq`` the eigenvalues are the
        exactly computed top ones, ``details["ritz"]`` and ``details["weights"]`` the
        quadrature nodes and weights of each probe),
        ``n_short`` and ``n_empty`` (responses missing some order / with no token). ``value``
        is ``None`` for an empty set or when no response has a token.

    Raises:
        InvalidInputError: If ``q <= 0``, ``n_max < 1``, ``approx`` is not a known mode, a size
            parameter is out of range or set under another mode, or the responses are not a
            list of strings.
        MemoryLimitError: If the exact matrix would exceed the memory limit.

    Example:
        >>> r = vendi_ngram(["the cat sat down", "the cat sat down", "a dog ran off"])
        >>> round(r.value, 6)
        1.889882
        >>> r.signature
        'vendi-ngram|q:1|n:1..4|tok:tevet|case:mixed|v:0.1.0'
        >>> vendi_ngram(["a b", "c d"], approx="nystroem", k=2).signature
        'vendi-ngram|q:1|n:1..4|tok:tevet|case:mixed|approx:nystroem|k:2|seed:0|v:0.1.0'
    """

    name = "vendi-ngram"
    family = "form"
    granularity = "set"
    higher_is_more_diverse = True
    bounds = (1.0, None)
    citation = f"{FRIEDMAN2023}; order q: {PASARKAR2024}; n-gram kernel as in {COMMONSENSE}"
    description = ("Vendi score of order q (effective number of distinct responses) with the "
                   "mean per-order n-gram cosine kernel, n=1..n_max")
    params = {
        "q": Param(float, gt=0, default=1.0, doc="order of the Vendi score (inf allowed)"),
        "n_max": Param(int, ge=1, le=MAX_ORDER, default=4,
                       doc="kernel over n-gram orders 1..n_max"),
        "tokenizer": tokenizer_param("tevet"), "lowercase": LOWERCASE,
        "approx": Param(str, choices=APPROX, default="none",
                        doc="none (exact), slq or nystroem (approximate, large sets)"),
        "k": Param(int, ge=1, cap=10**6, default=1000, doc="landmarks of approx=nystroem",
                   relation=_approx_relation("k")),
        "probes": Param(int, ge=1, cap=10**4, default=16, doc="random probes of approx=slq",
                        relation=_approx_relation("probes")),
        "steps": Param(int, ge=2, cap=10**4, default=30, doc="Lanczos steps of approx=slq",
                       relation=_approx_relation("steps")),
        "seed": Param(int, ge=0, default=0, doc="seed of approx=nystroem or slq",
                      relation=_approx_relation("seed")),
        "dtype": Param(str, choices=DTYPES, default="float64",
                       doc="precision of the exact eigenvalues (float32: half the memory, "
                       "faster on large sets, within 1e-7 of float64 as measured)",
                       relation=_approx_relation("dtype")),
        "device": Param(str, default="cpu", predicate=valid_device,
                        expect="one of auto, cpu, cuda, cuda:N, mps",
                        doc="where the exact Gram matrix and eigenvalues are computed "
                        "(torch; float64 agrees with the CPU to rounding, so not in the "
                        "signature)", relation=_approx_relation("device"), runtime=True),
    }
    #: Scored set by set: the cost note and the progress of a large set name the set.
    batched = False

    def setup(self) -> None:
        p = self.p
        self.q = float(p["q"])
        self.n_max: int = p["n_max"]
        self.approx: str = p["approx"]
        self.tok = get_tokenizer(p["tokenizer"], p["lowercase"])

    def signature(self) -> str:
        p, nys, slq = self.p, self.approx == "nystroem", self.approx == "slq"
        return make_signature(
            "vendi-ngram", q=self.q, n=f"1..{self.n_max}", tok=self.tok.name,
            case=self.tok.case, approx=self.approx if nys or slq else None,
            k=p["k"] if nys else None, probes=p["probes"] if slq else None,
            steps=p["steps"] if slq else None, seed=p["seed"] if nys or slq else None,
            dtype=p["dtype"] if p["dtype"] != "float64" else None)

    def score(self, sets: Sequence[Any], context: Any = None) -> list[MetricResult]:
        return [self._one(s) for s in sets]

    def _one(self, texts: Sequence[str]) -> MetricResult:
        if not texts:
            return self.result(None, "empty set")
        idx = NgramIndex.from_texts(list(texts), self.tok)
        if idx.tokens.size == 0:
            return self.result(None, "no tokens in any response")
        p, q, n_max = self.p, self.q, self.n_max
        dtype, k, probes = p["dtype"], p["k"], p["probes"]
        nys, slq = self.approx == "nystroem", self.approx == "slq"
        n = idx.n_docs
        from divmeter.backends.torch_linalg import use_device

        on = use_device(p["device"], n)
        if slq or nys or n > _LARGE or dtype != "float64" or on is not None:
            # Large or approximate: the features are built one order at a time and only the
            # feature matrix is kept (the holder list lets _exact_large drop it once reduced).
            Z, info = _ngram_csr(idx, n_max)
            del idx
        if slq:
            memory.check("vendi-ngram", 8 * n * probes * 4, f"{probes} Lanczos vectors of {n:,}")
            Zr = _merge_single_columns(_merge_duplicate_rows(Z))
            memory.announce(vendi_ngram_cost(
                n, Zr.shape[0], f"{probes} Lanczos vectors of {n:,}", 8 * n * probes * 4,
                approx="slq", probes=probes, steps=p["steps"], nnz=Zr.nnz))
            top, theta, tau = _slq(Zr, n, probes, p["steps"], p["seed"])
            details = {"eigenvalues": np.sort(top[top > 0])[::-1], "ritz": theta,
                       "weights": tau, "path": "slq", "n_short": info["short"],
                       "n_empty": info["empty"]}
            return self.result(_slq_vendi(top, theta, tau, q), details=details)
        if nys:
            memory.check("vendi-ngram", *_nystroem_bytes(n, k))
            needed, what = _nystroem_bytes(n, k)
            memory.announce(vendi_ngram_cost(n, min(k, n), what, needed, approx="nystroem"))
            w, path = _nystroem(Z, k, p["seed"]), "nystroem"
        elif n > _LARGE or dtype != "float64" or on is not None:
            holder = [Z]
            del Z
            w, path = _exact_large(holder, n, dtype, on)
        else:
            rows, cols, vals, width, info = _ngram_triples(idx, n_max)
            m = min(n, width)  # the kernel, its copy divided by n, and the solver's copy
            memory.check("vendi-ngram", 3 * 8 * m * m, f"3 x a {m:,} x {m:,} matrix",
                         hint="use vendi-ngram:approx=slq")
            memory.announce(vendi_ngram_cost(n, m, f"3 x a {m:,} x {m:,} matrix",
                                             3 * 8 * m * m))
            K = _gram_from_triples(rows, cols, vals, n) if n <= width else None
            if K is not None:
                w, path = _eigvalsh(K / n), "kernel"
            else:
                Z = sp.csr_matrix((vals, (rows, cols)), shape=(n, width))
                w, path = feature_eigenvalues(Z)
        w = _clean_eigenvalues(w)
        details = {
            "eigenvalues": np.sort(w[w > 0])[::-1],
            "path": path,
            "n_short": info["short"],
            "n_empty": info["empty"],
        }
        return self.result(_vendi_q(w, q), details=details)


vendi_ngram = public_function(VendiNgram)


#: Rough single-core seconds (measured on the project's 2-core machine; ``benchmarks/
#: bench_cost.py`` checks the estimates against measured times): per entry of the Gram matrix
#: built (lower triangle), per ``m^3`` of the eigenvalue solver and per row of it (its fixed
#: cost per row, which dominates below about 5,000 rows on the shared machine), per
#: multiply-add of the Nystroem and SLQ products.
GRAM_ENTRY_SECONDS = 1e-7
EIGEN_CUBE_SECONDS = 1e-10
EIGEN_ROW_SECONDS = 1e-3
SPARSE_SECONDS = 3e-9


def vendi_ngram_cost(n: int, m: int, what: str, needed: int, *, approx: str = "none",
                     probes: int = 16, steps: int = 30, nnz: int = 0) -> memory.Cost:
    """The cost of vendi-ngram on ``n`` responses whose decomposed matrix is ``m x m`` (exact:
    the Gram matrix built in row blocks, then the eigenvalue solver; ``approx="slq"``:
    ``probes x steps`` sparse products over ``nnz`` features; ``nystroem``: ``n x m`` products).

    Example:
        >>> from divmeter.core.memory import format_seconds
        >>> c = vendi_ngram_cost(20_000, 20_000, "a 20,000 x 20,000 kernel matrix", 8 * 20_000**2)
        >>> c.pairs, format_seconds(c.seconds)
        (200010000, '14.0 min')
    """
    if approx == "slq":  # Lanczos for the top pairs (about 30 products) and the probes' steps
        pairs = 0
        seconds = 2 * probes * (steps + 30) * max(nnz, n) * SPARSE_SECONDS
        cheaper = "fewer probes or steps"
    elif approx == "nystroem":  # C = Z Z_L^T in blocks, C^T C, and two k x k solvers
        pairs = n * m
        seconds = (2 * pairs * GRAM_ENTRY_SECONDS + n * m * m * memory.FLOP_SECONDS / 4
                   + 2 * (m**3 * EIGEN_CUBE_SECONDS + m * EIGEN_ROW_SECONDS))
        cheaper = "fewer landmarks (k)"
    else:
        pairs = m * (m + 1) // 2
        seconds = (pairs * GRAM_ENTRY_SECONDS + m**3 * EIGEN_CUBE_SECONDS
                   + m * EIGEN_ROW_SECONDS)
        cheaper = "use vendi-ngram:approx=slq (or approx=nystroem)"
    name = "vendi-ngram" + (f" (approx={approx})" if approx != "none" else "")
    return memory.Cost(name, n, needed, what, pairs, seconds, cheaper)
