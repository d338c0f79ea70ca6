"""Similarity kernels over stacks of vectors, named by one small grammar.

A kernel is written ``NAME[:key=value[:key=value]]`` (the same string in Python, on the command
line and in a signature, ``kernel:rbf:gamma=0.5``):

* ``cosine``: ``K_ij = u_i . u_j`` on L2-normalised rows (unit diagonal);
* ``linear``: ``K_ij = x_i . x_j`` on the vectors as given;
* ``rbf:gamma=G``: ``exp(-G ||x_i - x_j||^2)`` (``G > 0`` required: there is no silent default);
* ``laplacian:gamma=G``: ``exp(-G ||x_i - x_j||_1)``;
* ``polynomial:degree=K[:gamma=G][:coef0=C]``: ``(G x_i . x_j + C)^K`` with ``G = 1/d`` and
  ``C = 1`` unless given (scikit-learn's defaults, so ``polynomial:degree=3`` is its
  ``polynomial_kernel(X, degree=3)``);
* ``precomputed``: the input is already an ``n x n`` similarity matrix.

Every function takes a stack ``(B, n, d)`` of ``B`` sets of ``n`` vectors and returns ``(B, n,
n)``; a set scored alone is a stack of one, so a set's kernel does not depend on the sets it is
batched with. ``rbf`` forms squared distances as ``|x|^2 + |y|^2 - 2 x.y`` clipped at 0 with an
exact zero diagonal (scikit-learn's ``euclidean_distances``), the form the kernel-based peers use.

Only numpy is imported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from divmeter.core.errors import InvalidInputError

__all__ = [
    "KERNELS",
    "Kernel",
    "parse_kernel",
    "kernel_ok",
    "kernel_matrix",
    "unit_rows",
    "gram_kernel",
    "KERNEL_EXPECT",
]

#: Kernel names of the grammar.
KERNELS: tuple[str, ...] = ("cosine", "linear", "rbf", "laplacian", "polynomial", "precomputed")
#: What a valid kernel string is, as error messages say it.
KERNEL_EXPECT = (
    "a kernel: cosine, linear, rbf:gamma=G, laplacian:gamma=G, "
    "polynomial:degree=K[:gamma=G][:coef0=C] or precomputed"
)

_KEYS: dict[str, dict[str, bool]] = {  # allowed keys -> required?
    "cosine": {},
    "linear": {},
    "precomputed": {},
    "rbf": {"gamma": True},
    "laplacian": {"gamma": True},
    "polynomial": {"degree": True, "gamma": False, "coef0": False},
}


@dataclass(frozen=True)
class Kernel:
    """A parsed kernel: ``name`` and its settings (``gamma=None``: ``1/d`` for polynomial)."""

    name: str
    gamma: float | None = None
    degree: int | None = None
    coef0: float = 1.0

    def __str__(self) -> str:
        """The canonical spelling (the signature's ``kernel:`` value).

        Example:
            >>> str(parse_kernel("polynomial:degree=3"))
            'polynomial:degree=3:gamma=1/d:coef0=1'
        """
        if self.name in ("rbf", "laplacian"):
            return f"{self.name}:gamma={_num(self.gamma)}"
        if self.name == "polynomial":
            g = "1/d" if self.gamma is None else _num(self.gamma)
            return f"polynomial:degree={self.degree}:gamma={g}:coef0={_num(self.coef0)}"
        return self.name


def _num(x: float | None) -> str:
    assert x is not None
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def parse_kernel(spec: str | Kernel) -> Kernel:
    """Parse ``NAME[:key=value...]`` (see the module docstring).

    Raises:
        InvalidInputError: Unknown name or key, a missing or bad value.

    Example:
        >>> parse_kernel("rbf:gamma=0.5")
        Kernel(name='rbf', gamma=0.5, degree=None, coef0=1.0)
        >>> str(parse_kernel("cosine"))
        'cosine'
    """
    if isinstance(spec, Kernel):
        return spec
    if not isinstance(spec, str):
        raise InvalidInputError(f"`kernel` must be {KERNEL_EXPECT}; got {type(spec).__name__}.")
    name, *items = spec.strip().split(":")
    if name not in _KEYS:
        raise InvalidInputError(f"`kernel` must be {KERNEL_EXPECT}; got {spec!r}.")
    values: dict[str, float] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or key not in _KEYS[name] or key in values:
            raise InvalidInputError(
                f"`kernel` {spec!r}: {name} takes "
                + (", ".join(f"{k}=..." for k in _KEYS[name]) or "no settings")
                + f"; got {item!r}."
            )
        try:
            value = float(raw)
        except ValueError:
            raise InvalidInputError(
                f"`kernel` {spec!r}: {key} must be a number; got {raw!r}."
            ) from None
        if not math.isfinite(value) or (key != "coef0" and value <= 0):
            raise InvalidInputError(
                f"`kernel` {spec!r}: {key} must be a finite number"
                + ("" if key == "coef0" else " > 0") + f"; got {raw!r}."
            )
        if key == "degree" and not value.is_integer():
            raise InvalidInputError(f"`kernel` {spec!r}: degree must be an integer; got {raw!r}.")
        values[key] = value
    missing = [k for k, req in _KEYS[name].items() if req and k not in values]
    if missing:
        raise InvalidInputError(
            f"`kernel` {spec!r}: {name} needs {missing[0]}, e.g. {name}:{missing[0]}="
            + ("3" if missing[0] == "degree" else "0.5") + "."
        )
    return Kernel(name, values.get("gamma"),
                  int(values["degree"]) if "degree" in values else None,
                  values.get("coef0", 1.0))


def kernel_ok(spec: object) -> bool:
    """Whether ``spec`` parses (the declared parameters' predicate)."""
    try:
        parse_kernel(spec)  # type: ignore[arg-type]
    except InvalidInputError:
        return False
    return True


def unit_rows(X: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm (rows must be non-zero), on the last axis.

    Example:
        >>> unit_rows(np.array([[[3.0, 4.0]]])).tolist()
        [[[0.6, 0.8]]]
    """
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def _gram(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return np.matmul(A, np.swapaxes(B, -1, -2))


def sq_distances(X: np.ndarray, *, gram: np.ndarray | None = None,
                 sq: np.ndarray | None = None) -> np.ndarray:
    """``|x_i|^2 + |x_j|^2 - 2 x_i . x_j`` clipped at 0, diagonal exactly 0 (``(B, n, n)``).

    ``gram`` (``X X^T``) and ``sq`` (squared row norms) are reused when given."""
    if sq is None:
        sq = np.einsum("bij,bij->bi", X, X)
    D = -2.0 * (_gram(X, X) if gram is None else gram)
    D += sq[:, :, None]
    D += sq[:, None, :]
    np.maximum(D, 0.0, out=D)
    idx = np.arange(X.shape[1])
    D[:, idx, idx] = 0.0
    return D


def l1_distances(X: np.ndarray) -> np.ndarray:
    """Manhattan distances ``sum_k |x_ik - x_jk|`` of every pair (``(B, n, n)``)."""
    B, n, _ = X.shape
    out = np.empty((B, n, n))
    for i in range(n):  # one row of pairs at a time: memory B * n * d
        out[:, i, :] = np.abs(X[:, i : i + 1, :] - X).sum(axis=-1)
    return out


def kernel_matrix(X: np.ndarray, kernel: str | Kernel, *, gram: np.ndarray | None = None,
                  sq: np.ndarray | None = None) -> np.ndarray:
    """The kernel of every set of a stack: ``(B, n, d) -> (B, n, n)`` (float64).

    ``cosine`` needs non-zero rows (callers check); ``precomputed`` is not a function of
    vectors and is refused here. ``gram`` (``X X^T``) and ``sq`` (squared row norms) are reused
    when given (a new array is returned either way).

    Example:
        >>> X = np.array([[[1.0, 0.0], [0.0, 2.0]]])
        >>> kernel_matrix(X, "cosine")[0].tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        >>> kernel_matrix(X, "linear")[0].tolist()
        [[1.0, 0.0], [0.0, 4.0]]
        >>> round(float(kernel_matrix(X, "rbf:gamma=0.5")[0, 0, 1]), 6)  # exp(-0.5 * 5)
        0.082085
    """
    k = parse_kernel(kernel)
    X = np.asarray(X, dtype=np.float64)
    if k.name == "laplacian":
        assert k.gamma is not None
        K = l1_distances(X)
        K *= -k.gamma
        return np.exp(K, out=K)
    if k.name != "precomputed":
        if gram is None:
            gram = _gram(X, X)
        if sq is None:
            sq = np.einsum("bij,bij->bi", X, X)
        return gram_kernel(gram, sq, X.shape[-1], k)
    raise InvalidInputError(
        "kernel 'precomputed' takes similarity matrices as input, not vectors: pass an "
        "(n, n) matrix per set (divmeter.score(K, ...), or a .npy of matrices)."
    )


def gram_kernel(gram: np.ndarray, sq: np.ndarray, dim: int, kernel: str | Kernel) -> np.ndarray:
    """A kernel that is a function of inner products, from the Gram matrices ``gram``
    ``(B, n, n)``, the squared norms ``sq`` ``(B, n)`` and the vectors' width ``dim``:
    ``cosine``, ``linear``, ``rbf`` and ``polynomial`` (a new array; ``gram`` is not modified).

    Example:
        >>> G = np.array([[[1.0, 0.0], [0.0, 4.0]]])
        >>> gram_kernel(G, np.array([[1.0, 4.0]]), 2, "cosine")[0].tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    k = parse_kernel(kernel)
    if k.name == "cosine":
        norms = np.sqrt(sq)
        return gram / (norms[:, :, None] * norms[:, None, :])  # type: ignore[no-any-return]
    if k.name == "linear":
        return gram.copy()
    if k.name == "rbf":
        assert k.gamma is not None
        K = sq_distances(gram, gram=gram, sq=sq)
        K *= -k.gamma
        return np.exp(K, out=K)
    if k.name == "polynomial":
        assert k.degree is not None
        gamma = 1.0 / dim if k.gamma is None else k.gamma
        K = gamma * gram
        K += k.coef0
        return K**k.degree  # type: ignore[no-any-return]
    raise InvalidInputError(f"kernel {k.name!r} is not a function of inner products.")
