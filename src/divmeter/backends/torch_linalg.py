"""Kernel and pairwise linear algebra on a torch device (issue 23): Gram matrices, eigenvalues,
cosine and distance matrices, BERTScore's greedy matching.

The metrics keep their numpy code as the CPU path (its numbers never change). When a metric is
given a device other than ``cpu`` (``device="cuda"``, or ``auto`` on a machine with CUDA) and
its set is large enough for the device to pay off (:data:`DEVICE_MIN_ITEMS` items; below that a
kernel launch and two copies cost more than the numpy work), the same quantities are computed
here with torch, in float64 by default: the numbers then agree with the CPU's to float64
rounding (about 1e-12 relative and below; the tests check 1e-9), so the device is not part of a
signature. ``dtype="float32"`` of ``vendi-ngram`` is the same named variant as on the CPU (the
top eigenpairs in float64, deflated before rounding, the common shift removed with the exact
trace), with the same signature field.

Every function here also runs with ``device="cpu"`` through torch, which is how the tests check
these code paths against the numpy ones on machines without a GPU. torch is imported inside the
functions (``divmeter[embed]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from divmeter.core._optional import require

__all__ = [
    "DEVICE_MIN_ITEMS",
    "use_device",
    "torch_device",
    "sparse_gram",
    "gram_eigenvalues",
    "feature_eigenvalues",
    "cosine_matrix",
    "sqeuclidean_nearest",
    "pair_distances_mean",
    "bertscore_matrices",
]

#: Sets with fewer items than this stay on the numpy path even when a device is given.
DEVICE_MIN_ITEMS = 256

#: Checks only (tests, ``bench_gpu.py --cpu-check``): ``device="cpu"`` also takes the torch
#: code, so that it runs on machines without a GPU.
CPU_THROUGH_TORCH = False

#: Bytes of one dense block of the sparse Gram product (see :func:`sparse_gram`).
_BLOCK_BYTES = 1 << 30

#: dtype=float32: eigenpairs deflated in float64 before rounding (as on the CPU path).
_DEFLATE = 8


def _torch() -> Any:
    return require("torch", extra="embed")


def torch_device(device: str) -> str:
    """The torch device string of a divmeter ``device`` (``auto`` resolved, availability
    checked; see :func:`divmeter.backends.device.resolve_device`)."""
    from divmeter.backends.device import resolve_device

    return resolve_device(device)


def use_device(device: str | None, n: int, minimum: int | None = None) -> str | None:
    """The torch device to compute a set of ``n`` items on, or ``None`` for the numpy path
    (``device`` is ``cpu``/``None``, resolves to the CPU, or the set is below ``minimum``,
    default :data:`DEVICE_MIN_ITEMS`).

    Example:
        >>> use_device("cpu", 10_000) is None
        True
    """
    if device is None or n < (DEVICE_MIN_ITEMS if minimum is None else minimum):
        return None
    if device == "cpu":
        return "cpu" if CPU_THROUGH_TORCH else None
    dev = torch_device(device)
    return None if dev == "cpu" and not CPU_THROUGH_TORCH else dev


def _csr_tensor(A: sp.csr_matrix, dev: str, dtype: Any) -> Any:
    import warnings

    torch = _torch()
    A = sp.csr_matrix(A)
    with warnings.catch_warnings():  # "sparse CSR support is in beta" (it is used as documented)
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            torch.as_tensor(A.indptr.astype(np.int64)),
            torch.as_tensor(A.indices.astype(np.int64)),
            torch.as_tensor(A.data, dtype=dtype), size=A.shape, check_invariants=False).to(dev)


def sparse_gram(A: Any, device: str = "cpu", dtype: str = "float64") -> Any:
    """``A A^T`` as a dense symmetric torch matrix on ``device`` (``A``: scipy sparse or dense,
    ``m x d``), accumulated in ``dtype``.

    Sparse ``A``: the rows ``a:b`` of ``A`` are scattered into a dense ``d x (b - a)`` block on
    the device and ``G[:, a:b] = A @ block`` is one sparse-times-dense product (cuSPARSE on a
    GPU), blocks of at most ``_BLOCK_BYTES``; the result is symmetrised (``(G + G^T) / 2``, a
    no-op up to rounding) so that every solver sees the same triangle.
    """
    torch = _torch()
    tdt = getattr(torch, dtype)
    dev = torch_device(device)
    if not sp.issparse(A):
        X = torch.as_tensor(np.asarray(A), dtype=tdt, device=dev)
        return X @ X.T
    A = sp.csr_matrix(A)
    m, d = A.shape
    G = torch.empty((m, m), dtype=tdt, device=dev)
    if m == 0:
        return G
    As = _csr_tensor(A, dev, tdt)
    rows = torch.as_tensor(np.repeat(np.arange(m), np.diff(A.indptr)), device=dev)
    cols = torch.as_tensor(A.indices.astype(np.int64), device=dev)
    vals = torch.as_tensor(A.data, dtype=tdt, device=dev)
    ptr = A.indptr
    step = max(1, min(m, _BLOCK_BYTES // (8 * max(d, 1))))
    block = torch.zeros((d, step), dtype=tdt, device=dev)
    for a in range(0, m, step):
        b = min(a + step, m)
        lo, hi = int(ptr[a]), int(ptr[b])
        block.zero_()
        block[cols[lo:hi], rows[lo:hi] - a] = vals[lo:hi]
        G[:, a:b] = As @ block[:, : b - a]
    del block
    G = (G + G.T) / 2
    return G


def _top_pairs(G: Any, k: int, iters: int = 200) -> tuple[Any, Any] | None:
    """The ``k`` largest eigenpairs of the symmetric PSD ``G`` (float64) by block subspace
    iteration with Rayleigh-Ritz on ``2k`` vectors; ``None`` if the residuals do not reach
    ``1e-12 * lambda_max`` (the caller then decomposes in float64)."""
    torch = _torch()
    m = G.shape[0]
    p = min(m, 2 * k)
    gen = torch.Generator(device="cpu").manual_seed(0)
    Y = torch.randn((m, p), generator=gen, dtype=G.dtype).to(G.device)
    Q, _ = torch.linalg.qr(Y)
    for it in range(iters):
        Q, _ = torch.linalg.qr(G @ Q)
        if it % 10 == 9:
            T = Q.T @ G @ Q
            w, U = torch.linalg.eigh((T + T.T) / 2)
            vals, vecs = w[-k:], Q @ U[:, -k:]
            res = torch.linalg.vector_norm(G @ vecs - vecs * vals, dim=0)
            if float(res.max()) <= 1e-12 * max(float(w[-1]), 1e-300) * max(1.0, m ** 0.5):
                return vals, vecs
    return None


def gram_eigenvalues(A: Any, device: str = "cpu", dtype: str = "float64") -> np.ndarray:
    """Eigenvalues (ascending, float64 numpy) of ``A A^T`` computed on ``device``.

    ``float64``: ``torch.linalg.eigvalsh`` of the float64 Gram matrix. ``float32``: the
    ``vendi-ngram`` float32 variant (matrices of at least 400 rows): the ``_DEFLATE`` largest
    eigenpairs in float64 (subspace iteration on the device), subtracted in float64 before the
    matrix is rounded to float32; the ``_DEFLATE`` eigenvalues of smallest magnitude of the
    deflated matrix are dropped, the float64 ones put back, and the common shift of the float32
    eigenvalues removed with the exact trace (the CPU path's recipe, with the top pairs from the
    Gram matrix instead of ARPACK). If the top pairs do not converge, float64 is used (exact).
    """
    torch = _torch()
    G = sparse_gram(A, device, "float64")
    m = G.shape[0]
    if dtype == "float64" or m < 400:
        w = torch.linalg.eigvalsh(G)
        return np.asarray(w.cpu().numpy(), dtype=np.float64)
    top = _top_pairs(G, _DEFLATE)
    if top is None:
        return np.asarray(torch.linalg.eigvalsh(G).cpu().numpy(), dtype=np.float64)
    vals, vecs = top
    trace = float(torch.diagonal(G).sum()) - float(vals.sum())
    G -= (vecs * vals) @ vecs.T
    G32 = G.to(torch.float32)
    del G
    w = torch.linalg.eigvalsh(G32).double().cpu().numpy()
    del G32
    w = w[np.sort(np.argsort(np.abs(w), kind="stable")[_DEFLATE:])]
    w += (trace - w.sum()) / w.size
    return np.concatenate((w, vals.cpu().numpy()))


def feature_eigenvalues(X: Any, device: str = "cpu") -> tuple[np.ndarray, str]:
    """Eigenvalues of ``X X^T / n`` (rows of ``X`` already unit) on ``device``: the ``n x n``
    kernel when ``n <= d``, else the ``d x d`` dual (as :func:`divmeter.metrics.vendi.
    feature_eigenvalues`). Returns ``(eigenvalues, path)``."""
    torch = _torch()
    n, d = X.shape
    use = "kernel" if n <= d else "dual"
    if sp.issparse(X):
        Xs = sp.csr_matrix(X)
        G = sparse_gram(Xs if use == "kernel" else sp.csr_matrix(Xs.T), device)
    else:
        T = torch.as_tensor(np.asarray(X, dtype=np.float64), device=torch_device(device))
        G = T @ T.T if use == "kernel" else T.T @ T
    w = torch.linalg.eigvalsh(G / n)
    return np.asarray(w.cpu().numpy(), dtype=np.float64), use


def _unit_rows(X: np.ndarray, dev: str) -> Any:
    torch = _torch()
    T = torch.as_tensor(np.asarray(X, dtype=np.float64), device=dev)
    norms = torch.linalg.vector_norm(T, dim=1, keepdim=True)
    return torch.where(norms > 0, T / torch.where(norms > 0, norms, 1.0), 0.0)


def cosine_matrix(X: np.ndarray, device: str = "cpu") -> np.ndarray:
    """Pairwise cosines of the rows (float64, clipped to [-1, 1]; a zero row has cosine 0), as
    :func:`divmeter.metrics.embedding.cosine_matrix`, computed on ``device``."""
    U = _unit_rows(X, torch_device(device))
    return np.asarray((U @ U.T).clamp_(-1.0, 1.0).cpu().numpy())


def _row_blocks(n: int, width: int, budget: int = 1 << 27) -> range:
    return range(0, n, max(1, budget // max(1, n * width)))


def sqeuclidean_nearest(X: np.ndarray, device: str = "cpu") -> np.ndarray:
    """``min_{j != i} ||x_i - x_j||^2`` of every row (explicit differences, float64), as
    :func:`divmeter.metrics.embedding._sqeuclidean_nearest`, on ``device``."""
    torch = _torch()
    T = torch.as_tensor(np.asarray(X, dtype=np.float64), device=torch_device(device))
    n, d = T.shape
    out = torch.empty(n, dtype=T.dtype, device=T.device)
    step = _row_blocks(n, d).step
    for a in range(0, n, step):
        b = min(a + step, n)
        D = ((T[a:b, None, :] - T[None, :, :]) ** 2).sum(-1)
        D[torch.arange(b - a, device=T.device), torch.arange(a, b, device=T.device)] = np.inf
        out[a:b] = D.min(dim=1).values
    return np.asarray(out.cpu().numpy())


def pair_distances_mean(X: np.ndarray, distance: str = "euclidean", device: str = "cpu"
                        ) -> float:
    """Mean over pairs ``i < j`` of the distance of the L2-normalised rows (``euclidean``:
    ``||u_i - u_j||`` from explicit differences; ``cosine``: ``1 - cos``), as
    :func:`divmeter.metrics.embedding.remote_clique_value`, on ``device``."""
    torch = _torch()
    U = _unit_rows(X, torch_device(device))
    n, d = U.shape
    total = torch.zeros((), dtype=U.dtype, device=U.device)
    if distance == "cosine":
        S = (U @ U.T).clamp_(-1.0, 1.0)
        total = (1.0 - S).triu(1).sum()
    else:
        step = _row_blocks(n, d).step
        for a in range(0, n, step):
            b = min(a + step, n)
            D = torch.linalg.vector_norm(U[a:b, None, :] - U[None, :, :], dim=-1)
            keep = torch.arange(n, device=U.device)[None, :] > torch.arange(
                a, b, device=U.device)[:, None]
            total += D[keep].sum()
    return float(total) / (n * (n - 1) / 2)


def bertscore_matrices(token_vecs: Sequence[np.ndarray],
                       weights: Sequence[np.ndarray] | None = None,
                       device: str = "cpu") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BERTScore ``(P, R, F)`` of every ordered pair, as :func:`divmeter.metrics.embedding.
    bertscore_matrices`, with the greedy matching of all pairs batched on ``device`` (float64;
    texts padded to the longest, padded reference tokens masked out of the max, padded
    candidate tokens weighted 0)."""
    torch = _torch()
    dev = torch_device(device)
    n = len(token_vecs)
    lens = [len(v) for v in token_vecs]
    L = max(lens)
    dim = token_vecs[0].shape[1]
    X = np.zeros((n, L, dim))
    W = np.zeros((n, L))
    for i, v in enumerate(token_vecs):
        X[i, : lens[i]] = v
        w = np.ones(lens[i]) if weights is None else np.asarray(weights[i], dtype=np.float64)
        W[i, : lens[i]] = w / w.sum()
    T = torch.as_tensor(X, device=dev)
    norms = torch.linalg.vector_norm(T, dim=-1, keepdim=True)
    U = torch.where(norms > 0, T / torch.where(norms > 0, norms, 1.0), 0.0)
    Wt = torch.as_tensor(W, device=dev)
    valid = torch.as_tensor(np.arange(L)[None, :] < np.asarray(lens)[:, None], device=dev)
    P = torch.empty((n, n), dtype=U.dtype, device=dev)
    step = max(1, (1 << 27) // max(1, n * L * L))
    for a in range(0, n, step):
        b = min(a + step, n)
        S = torch.einsum("itd,jsd->ijts", U[a:b], U)
        S = S.masked_fill(~valid[None, :, None, :], -np.inf)
        best = S.max(dim=-1).values  # (b-a, n, L): best reference token for each candidate
        best = torch.where(valid[a:b, None, :], best, 0.0)
        P[a:b] = (best * Wt[a:b, None, :]).sum(-1)
    Pn = P.cpu().numpy()
    np.fill_diagonal(Pn, np.nan)
    R = Pn.T.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        F = 2 * Pn * R / (Pn + R)
    return Pn, R, F
