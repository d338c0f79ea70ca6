"""Eigenvalues of large dense symmetric matrices, for the exact paths of the kernel metrics.

The Vendi score needs every eigenvalue of an ``m x m`` kernel and no eigenvector. LAPACK's
two-stage solver (``?syevd_2stage``, LAPACK 3.7+) reduces the matrix to a band with
matrix-matrix products first and then to tridiagonal form, and is the fastest LAPACK route to
eigenvalues alone: measured here on a 10,000 x 10,000 float32 kernel, 21 s against 38 s for
``?syevr`` (scipy's default) and 57 s for ``?syevd``, on 2 cores.

scipy does not wrap the two-stage routines, but the OpenBLAS it ships (``scipy.libs``) exports
them through LAPACKE, so :func:`eigvalsh_inplace` calls them with :mod:`ctypes` after a check on
a matrix with known eigenvalues. Where that library or symbol is absent (another scipy build,
another platform), it uses ``scipy.linalg.eigh(..., driver="evr")``: the same eigenvalues up to
rounding, only slower.
"""

from __future__ import annotations

import ctypes
import glob
import os
from typing import Any

import numpy as np

__all__ = ["eigvalsh_inplace", "solver_name"]

_COL_MAJOR = 102
_SYMBOLS = {np.dtype(np.float32): "scipy_LAPACKE_ssyevd_2stage",
            np.dtype(np.float64): "scipy_LAPACKE_dsyevd_2stage"}
_cache: dict[str, Any] = {}


def _library() -> Any:
    """scipy's bundled OpenBLAS (32-bit LAPACK integers), or ``None``."""
    if "lib" not in _cache:
        _cache["lib"] = None
        try:
            import scipy

            folder = os.path.dirname(scipy.__file__) + ".libs"
            # the ILP64 build (``openblas64_``) takes 64-bit integers: not this one
            paths = [p for p in glob.glob(os.path.join(folder, "libscipy_openblas*.so*"))
                     if not os.path.basename(p).startswith("libscipy_openblas64")]
            if paths:
                _cache["lib"] = ctypes.CDLL(paths[0])
        except OSError:
            pass
    return _cache["lib"]


def _two_stage(dtype: np.dtype) -> Any:
    """The LAPACKE two-stage routine for ``dtype``, checked on a 2 x 2 matrix, or ``None``."""
    key = str(dtype)
    if key not in _cache:
        _cache[key] = None
        lib = _library()
        fn = getattr(lib, _SYMBOLS[dtype], None) if lib is not None else None
        if fn is not None:
            fn.restype = ctypes.c_int
            w = _call(fn, np.array([[2.0, 1.0], [1.0, 2.0]], dtype=dtype))
            if w is not None and np.allclose(w, [1.0, 3.0]):
                _cache[key] = fn
    return _cache[key]


def _call(fn: Any, a: np.ndarray) -> np.ndarray | None:
    """Eigenvalues (ascending) by the LAPACKE routine ``fn`` from the lower triangle of ``a``
    (``a[i, j]``, ``j <= i``); ``a`` is overwritten."""
    m = a.shape[0]
    w = np.empty(m, dtype=a.dtype)
    # LAPACK sees a C-ordered array transposed, so our lower triangle is its upper one
    uplo = b"U" if a.flags.c_contiguous else b"L"
    info = fn(ctypes.c_int(_COL_MAJOR), ctypes.c_char(b"N"), ctypes.c_char(uplo),
              ctypes.c_int(m), a.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(max(m, 1)),
              w.ctypes.data_as(ctypes.c_void_p))
    return w if info == 0 else None


def solver_name(dtype: Any = np.float64) -> str:
    """``"syevd_2stage"`` when the two-stage LAPACK routine is used for ``dtype``, else
    ``"syevr"``."""
    return "syevd_2stage" if _two_stage(np.dtype(dtype)) is not None else "syevr"


def eigvalsh_inplace(a: np.ndarray) -> np.ndarray:
    """All eigenvalues (ascending) of a symmetric float32 or float64 matrix given by its lower
    triangle (``a[i, j]`` for ``j <= i``; the rest is not read), which is destroyed.

    Args:
        a: ``m x m`` matrix, C- or Fortran-contiguous.

    Returns:
        The ``m`` eigenvalues, ascending, in ``a``'s dtype.

    Example:
        >>> eigvalsh_inplace(np.array([[2.0, np.nan], [1.0, 2.0]])).tolist()
        [1.0, 3.0]
    """
    dtype = np.dtype(a.dtype)
    fn = _two_stage(dtype) if dtype in _SYMBOLS else None
    if fn is not None and (a.flags.c_contiguous or a.flags.f_contiguous):
        w = _call(fn, a)
        if w is not None:
            return w
    import scipy.linalg as sla

    if a.flags.c_contiguous:  # the transpose is Fortran-ordered: no copy; our lower = its upper
        return np.asarray(sla.eigh(a.T, lower=False, eigvals_only=True, overwrite_a=True,
                                   check_finite=False, driver="evr"))
    return np.asarray(sla.eigh(a, lower=True, eigvals_only=True, overwrite_a=True,
                               check_finite=False, driver="evr"))
